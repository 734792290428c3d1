//! The SLA report's hourly figures (`godwit_common::sla`), kept in
//! `repl_state` under `h \0 HOUR \0 bucket \0 rule` (HOUR: hours since the
//! epoch, ten digits, so rows sort by hour). `ack_tasks` records each
//! outcome in the row of the hour its entry was proposed in; the proposer's
//! clock is carried in the command, so every meta node writes the same rows.
//!
//! Hour first, so that the rows older than [`KEEP_HOURS`] are the first of
//! the kind: when a row for a new hour is made, up to [`PRUNE_STEP`] rows
//! older than the window are dropped from the front. Rules and buckets that
//! went away age out with the rest; a rule ID reused by the OSS API starts
//! afresh (`forget`).

use std::collections::BTreeMap;

use godwit_common::replication::ReplicationTask;
use godwit_common::sla::{hour_of, SlaHour, DEFAULT_THRESHOLD_MINUTES, KEEP_HOURS};
use godwit_common::MetaError;

use crate::store::overlay::Overlay;
use crate::store::*;

/// Rows dropped at most per new hour row: pruning keeps up as long as
/// fewer rows age out per hour than rules start a new hour, by far.
const PRUNE_STEP: usize = 64;

/// The prefix of every SLA row.
pub(crate) const SLA_PREFIX: &[u8] = b"h\0";

pub(crate) fn sla_key(hour: i64, bucket: &str, rule_id: &str) -> Vec<u8> {
    joined(&["h", &format!("{hour:010}"), bucket, rule_id])
}

/// The first key of `hour`'s rows.
pub(crate) fn hour_start_key(hour: i64) -> Vec<u8> {
    let mut k = joined(&["h", &format!("{:010}", hour.max(0))]);
    k.push(0);
    k
}

/// (hour, bucket, rule) of an SLA row key.
pub(crate) fn parse_sla_key(k: &[u8]) -> Option<(i64, &str, &str)> {
    let text = std::str::from_utf8(k.strip_prefix(SLA_PREFIX)?).ok()?;
    let mut parts = text.splitn(3, '\0');
    let hour = parts.next()?.parse().ok()?;
    Some((hour, parts.next()?, parts.next()?))
}

/// The threshold a task is held to: its RTC rule's, or the default for
/// rules without RTC.
pub(crate) fn threshold_minutes(task: &ReplicationTask) -> u32 {
    task.rtc_minutes.unwrap_or(DEFAULT_THRESHOLD_MINUTES)
}

/// The rows one `ack_tasks` touches, decoded once and written once at the
/// end (an hour's histogram is decoded and encoded per entry, not per task).
pub(crate) struct SlaBatch {
    hour: i64,
    rows: BTreeMap<(String, String), SlaHour>,
}

impl SlaBatch {
    pub fn new(now_ms: i64) -> Self {
        SlaBatch {
            hour: hour_of(now_ms),
            rows: BTreeMap::new(),
        }
    }

    fn row(&mut self, tx: &Overlay, task: &ReplicationTask) -> Result<&mut SlaHour, MetaError> {
        let id = (task.bucket.clone(), task.rule_id.clone());
        if !self.rows.contains_key(&id) {
            let stored = match tx.get(CF_REPL_STATE, &sla_key(self.hour, &id.0, &id.1))? {
                Some(b) => decode(&b)?,
                None => SlaHour::default(),
            };
            self.rows.insert(id.clone(), stored);
        }
        Ok(self.rows.get_mut(&id).expect("inserted above"))
    }

    /// A task acknowledged done, `latency_ms` after its source commit (the
    /// worker's measure); `missed`: past its threshold by the entry's clock
    /// (as `rtc_threshold_missed_total` counts it).
    pub fn done(
        &mut self,
        tx: &Overlay,
        task: &ReplicationTask,
        latency_ms: u64,
        missed: bool,
    ) -> Result<(), MetaError> {
        let threshold = threshold_minutes(task);
        self.row(tx, task)?
            .record_done(latency_ms, task.size, missed, threshold);
        Ok(())
    }

    /// A task that ended FAILED.
    pub fn failed(
        &mut self,
        tx: &Overlay,
        task: &ReplicationTask,
        cause: &str,
    ) -> Result<(), MetaError> {
        self.row(tx, task)?.record_failure(cause);
        Ok(())
    }

    /// Writes the rows; a row that starts a new hour first drops rows that
    /// left the window.
    pub fn flush(self, tx: &mut Overlay) -> Result<(), MetaError> {
        for ((bucket, rule), figures) in self.rows {
            let k = sla_key(self.hour, &bucket, &rule);
            if tx.get(CF_REPL_STATE, &k)?.is_none() {
                prune(tx, self.hour - KEEP_HOURS + 1)?;
            }
            tx.put(CF_REPL_STATE, k, tx.encode(&figures));
        }
        Ok(())
    }
}

/// Drops up to `PRUNE_STEP` rows of hours before `first_kept`.
pub(crate) fn prune(tx: &mut Overlay, first_kept: i64) -> Result<usize, MetaError> {
    let mut n = 0;
    for (k, _) in tx.scan_prefix_limit(CF_REPL_STATE, SLA_PREFIX, PRUNE_STEP)? {
        match parse_sla_key(&k) {
            Some((hour, _, _)) if hour >= first_kept => break,
            _ => {
                tx.delete(CF_REPL_STATE, k);
                n += 1;
            }
        }
    }
    Ok(n)
}

/// Drops the rows of `bucket` (of its rule `rule_id` only, when given).
/// Reads every SLA row: for the rare edits that reset a rule or a bucket.
pub(crate) fn forget(
    tx: &mut Overlay,
    bucket: &str,
    rule_id: Option<&str>,
) -> Result<(), MetaError> {
    for (k, _) in tx.scan_prefix(CF_REPL_STATE, SLA_PREFIX)? {
        let mine = parse_sla_key(&k)
            .is_some_and(|(_, b, r)| b == bucket && rule_id.is_none_or(|id| id == r));
        if mine {
            tx.delete(CF_REPL_STATE, k);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use godwit_common::clock::{Clock, ManualClock};
    use godwit_common::replication::{Lane, TaskKind};
    use godwit_common::sla::HOUR_MS;

    fn task(bucket: &str, rule: &str) -> ReplicationTask {
        ReplicationTask {
            id: "t".into(),
            bucket: bucket.into(),
            key: "k".into(),
            version_id: None,
            kind: TaskKind::NewVersion,
            rule_id: rule.into(),
            remote: "r".into(),
            destination_bucket: "d".into(),
            lane: Lane::Standard,
            created_ms: 0,
            size: 1,
            attempts: 0,
            last_error: None,
            rtc_minutes: None,
        }
    }

    /// What one `ack_tasks` entry at the clock's time writes.
    fn ack(db: &std::sync::Arc<rocksdb::DB>, now_ms: i64, tasks: &[&ReplicationTask]) {
        let mut tx = Overlay::new(db.clone());
        let mut batch = SlaBatch::new(now_ms);
        for t in tasks {
            batch.done(&tx, t, 5, false).unwrap();
        }
        batch.flush(&mut tx).unwrap();
        let mut wb = rocksdb::WriteBatch::default();
        tx.into_batch(&mut wb);
        db.write(wb).unwrap();
    }

    fn hours_stored(db: &std::sync::Arc<rocksdb::DB>) -> Vec<(i64, String, String)> {
        Overlay::new(db.clone())
            .scan_prefix(CF_REPL_STATE, SLA_PREFIX)
            .unwrap()
            .iter()
            .map(|(k, _)| {
                let (h, b, r) = parse_sla_key(k).unwrap();
                (h, b.to_string(), r.to_string())
            })
            .collect()
    }

    #[test]
    fn hours_older_than_thirty_days_are_dropped_when_a_new_hour_starts() {
        let dir = tempfile::tempdir().unwrap();
        let db = open_db(dir.path()).unwrap();
        let clock = ManualClock::new(1_000 * HOUR_MS + 60_000);
        let (a, b) = (task("b1", "r1"), task("b2", "r2"));
        // Three hours of two rules, one of which then goes quiet.
        for _ in 0..3 {
            ack(&db, clock.now_ms(), &[&a, &b]);
            clock.advance(Duration::from_secs(3600));
        }
        assert_eq!(hours_stored(&db).len(), 6);
        // Several acks in one hour share its row.
        ack(&db, clock.now_ms(), &[&a]);
        ack(&db, clock.now_ms() + 1_000, &[&a, &a]);
        let row: SlaHour = decode(
            &Overlay::new(db.clone())
                .get(CF_REPL_STATE, &sla_key(1_003, "b1", "r1"))
                .unwrap()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(row.replicated, 3);

        // 30 days after the first hour, it is still kept...
        clock.set(1_000 * HOUR_MS + KEEP_HOURS * HOUR_MS - 1);
        ack(&db, clock.now_ms(), &[&a]);
        assert_eq!(hours_stored(&db).len(), 8);
        // ...and the next hour's first row drops it, for both rules, the
        // quiet one too.
        clock.advance(Duration::from_millis(1));
        ack(&db, clock.now_ms(), &[&a]);
        let left = hours_stored(&db);
        assert_eq!(left.len(), 7, "{left:?}");
        assert!(left.iter().all(|(h, _, _)| *h >= 1_001), "{left:?}");
        assert!(left.contains(&(1_001, "b2".into(), "r2".into())));
        // A row written again in its hour prunes nothing more.
        ack(&db, clock.now_ms(), &[&a]);
        assert_eq!(hours_stored(&db).len(), 7);

        // A rule's rows go when its ID is reused (OSS), a bucket's with it.
        let mut tx = Overlay::new(db.clone());
        forget(&mut tx, "b1", Some("r1")).unwrap();
        let mut wb = rocksdb::WriteBatch::default();
        tx.into_batch(&mut wb);
        db.write(wb).unwrap();
        let left = hours_stored(&db);
        assert!(left.iter().all(|(_, b, _)| b == "b2"), "{left:?}");
        assert_eq!(left.len(), 2);
    }

    #[test]
    fn keys_sort_by_hour_and_parse_back() {
        let a = sla_key(9, "zz", "r");
        let b = sla_key(10, "aa", "r");
        assert!(a < b);
        assert!(hour_start_key(10) <= b && hour_start_key(10) > a);
        assert_eq!(parse_sla_key(&b), Some((10, "aa", "r")));
        assert_eq!(
            parse_sla_key(&sla_key(1, "b", "rule\0odd")),
            Some((1, "b", "rule\0odd"))
        );
        assert_eq!(parse_sla_key(b"c\0b\0r"), None);
    }
}
