//! Replication verify jobs (`godwit admin replication verify`): compare a
//! bucket's source objects with what each rule's destination holds, by
//! paged listings of both sides merge-joined by key, at one of three
//! levels (after DFSR's validation levels):
//!
//! - 0: presence of every key;
//! - 1: plus size and ETag;
//! - 2: plus a full read of both sides, hashed and compared.
//!
//! A job is a record kept in meta through Raft (`meta/src/apply/verify.rs`):
//! the replication worker runs it a page at a time and saves its cursor and
//! counts after every page, so a restarted worker resumes where the last
//! one stopped. The record stays small: counts, a cursor per rule, and the
//! first [`MAX_LISTED_DIFFERENCES`] differing keys.

use serde::{Deserialize, Serialize};

/// Differing keys a job lists (the counts go on past it).
pub const MAX_LISTED_DIFFERENCES: usize = 100;
/// Jobs kept: starting one more drops the oldest finished ones.
pub const MAX_KEPT_JOBS: usize = 64;
/// The deepest level.
pub const MAX_LEVEL: u8 = 2;

/// Where a job stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    Running,
    Done,
    Failed,
    Cancelled,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }
}

/// What comparing one key found.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Both sides agree (at the job's level).
    Same,
    /// At the source, not at the destination.
    Missing,
    /// On both sides, not the same, and the destination's copy is not
    /// newer than the source's version: replication owes it.
    Differs,
    /// At the destination (within the rule's prefix), not at the source.
    Extra,
    /// On both sides, not the same, and the destination's copy was
    /// written after the source's version (a newer write there, which
    /// last-writer-wins keeps): reported, never repaired.
    ReplicaNewer,
}

impl Outcome {
    pub const ALL: [Outcome; 5] = [
        Outcome::Same,
        Outcome::Missing,
        Outcome::Differs,
        Outcome::Extra,
        Outcome::ReplicaNewer,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Same => "same",
            Outcome::Missing => "missing",
            Outcome::Differs => "differs",
            Outcome::Extra => "extra",
            Outcome::ReplicaNewer => "replica_newer",
        }
    }

    /// Whether `--repair` requeues the key's latest version.
    pub fn repairable(self) -> bool {
        matches!(self, Outcome::Missing | Outcome::Differs)
    }
}

/// Keys per outcome.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutcomeCounts {
    pub same: u64,
    pub missing: u64,
    pub differs: u64,
    pub extra: u64,
    pub replica_newer: u64,
}

impl OutcomeCounts {
    pub fn add(&mut self, o: Outcome) {
        *self.slot(o) += 1;
    }

    pub fn get(&self, o: Outcome) -> u64 {
        match o {
            Outcome::Same => self.same,
            Outcome::Missing => self.missing,
            Outcome::Differs => self.differs,
            Outcome::Extra => self.extra,
            Outcome::ReplicaNewer => self.replica_newer,
        }
    }

    fn slot(&mut self, o: Outcome) -> &mut u64 {
        match o {
            Outcome::Same => &mut self.same,
            Outcome::Missing => &mut self.missing,
            Outcome::Differs => &mut self.differs,
            Outcome::Extra => &mut self.extra,
            Outcome::ReplicaNewer => &mut self.replica_newer,
        }
    }

    pub fn merge(&mut self, other: &OutcomeCounts) {
        for o in Outcome::ALL {
            *self.slot(o) += other.get(o);
        }
    }

    /// Keys compared.
    pub fn total(&self) -> u64 {
        Outcome::ALL.iter().map(|o| self.get(*o)).sum()
    }

    /// Keys not the same.
    pub fn differing(&self) -> u64 {
        self.total() - self.same
    }
}

/// One differing key and why.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    pub rule_id: String,
    pub key: String,
    pub outcome: Outcome,
    pub reason: String,
}

/// A job's progress on one rule (one destination).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct RuleProgress {
    pub rule_id: String,
    /// `remote/bucket`.
    pub destination: String,
    /// The last key compared (source or destination side); the next page
    /// starts after it. None: not started.
    pub cursor: Option<String>,
    pub done: bool,
    pub counts: OutcomeCounts,
    /// Keys `--repair` requeued.
    pub requeued: u64,
}

/// What an operator asks for.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct VerifySpec {
    pub bucket: String,
    /// One rule only; None: every rule of the bucket.
    pub rule_id: Option<String>,
    /// Only keys under this prefix (within each rule's own prefix).
    pub prefix: String,
    pub level: u8,
    /// Requeue missing and differing keys through the rule's lanes.
    pub repair: bool,
}

/// One verify job as meta keeps it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct VerifyJob {
    pub id: String,
    pub spec: VerifySpec,
    pub state: JobState,
    pub rules: Vec<RuleProgress>,
    /// The first `MAX_LISTED_DIFFERENCES` differing keys found.
    pub differences: Vec<Difference>,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// Why the job failed.
    pub error: Option<String>,
}

impl VerifyJob {
    /// Counts over every rule.
    pub fn counts(&self) -> OutcomeCounts {
        let mut c = OutcomeCounts::default();
        for r in &self.rules {
            c.merge(&r.counts);
        }
        c
    }

    /// Keys requeued over every rule.
    pub fn requeued(&self) -> u64 {
        self.rules.iter().map(|r| r.requeued).sum()
    }
}

/// One page of a job's work on one rule, as the worker saves it. Applied
/// only while the rule's cursor is still `from` (compare-and-set), so a
/// step sent twice (a retried proposal, two workers) counts once.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct VerifyStep {
    pub job_id: String,
    pub rule_id: String,
    pub from: Option<String>,
    /// The last key this page compared.
    pub to: Option<String>,
    /// The rule has no keys after `to`.
    pub done: bool,
    pub counts: OutcomeCounts,
    pub differences: Vec<Difference>,
    pub requeued: u64,
    /// The job cannot go on (the rule or the remote went away, ...).
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_outcome() {
        let mut c = OutcomeCounts::default();
        for o in [
            Outcome::Same,
            Outcome::Same,
            Outcome::Missing,
            Outcome::Extra,
        ] {
            c.add(o);
        }
        let mut d = OutcomeCounts::default();
        d.add(Outcome::ReplicaNewer);
        c.merge(&d);
        assert_eq!(
            (c.total(), c.differing(), c.same, c.replica_newer),
            (5, 3, 2, 1)
        );
        assert!(Outcome::Differs.repairable() && !Outcome::ReplicaNewer.repairable());
    }
}
