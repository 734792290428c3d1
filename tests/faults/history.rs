//! Histories of concurrent S3 clients and the checker that judges them.
//!
//! # Recording (the harness API for a new scenario)
//!
//! A [`Workload`] runs `clients` tasks against one or more [`S3`] endpoints
//! (SigV4-signed, as any SDK), each picking a key from a small set and
//! sending a PUT (a value unique in the whole run: [`body_for`] writes its
//! number and a pattern the reader verifies) or a GET. Every operation is
//! recorded as an [`Op`]: its invoke and completion instants and its
//! [`Outcome`]: `Ok` (a 200 PUT, or a GET answering 200 with a value or
//! 404 `NoSuchKey`), `Fail` (a GET that answered an error or timed out:
//! it observed nothing), or `Unknown` (a PUT that did not answer 200: it
//! may or may not have taken effect, now or later).
//!
//! ```ignore
//! let w = Workload::start(WorkloadSpec::new("/bucket", endpoints));
//! w.wait_for_acks(20).await;          // the cluster serves before the fault
//! /* inject the fault, wait, heal */
//! let history = w.stop().await;        // stops the clients
//! let history = final_reads(history, &s3, "/bucket", deadline).await;
//! let report = check(&history);       // lost writes, stale reads, ...
//! report.print_row("my scenario");
//! report.assert_clean("my scenario");
//! ```
//!
//! # Checking
//!
//! [`check`] splits the history per key (a register each: P-compositionality,
//! so keys are checked independently) and proves, for each:
//!
//! - **no lost write**: the last reads (the final reads after healing) return
//!   a value at least as new as every acknowledged write that finished
//!   before the read began: a value written by a write that finished before
//!   an acknowledged write started is older than it, and reading it (or
//!   nothing at all) counts that acknowledged write as lost;
//! - **no stale read**: the same rule for every read: a read returning a
//!   value overwritten by an acknowledged write that finished before the read
//!   began is stale;
//! - **linearizability** of the key's register history, by the Wing & Gong
//!   search with Lowe's memoization as porcupine implements it
//!   (<https://github.com/anishathalye/porcupine>, "Faster linearizability
//!   checking via P-compositionality", Horn & Kroening 2015). PUTs of
//!   unknown outcome return at infinity; one whose value no read observed
//!   is dropped first, which is exact (it can always be linearized last)
//!   and keeps the search small. No maintained crate does this (todc-utils,
//!   2023, has no pending operations), hence this port.
//!
//! A read body that does not parse or whose pattern differs is counted as
//! corrupt.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{pattern, S3};

/// What a client asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// PUT of a value unique in the run.
    Put(u64),
    Get,
}

/// What came back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A PUT answered 200; a GET read `Some(value)` or `None` (404).
    Ok(Option<u64>),
    /// A GET that observed nothing (an error answer or a timeout).
    Fail,
    /// A PUT without a 200: it may have taken effect, at any time.
    Unknown,
    /// A GET whose body is not any value written (counted as corrupt).
    Corrupt,
}

#[derive(Clone, Debug)]
pub struct Op {
    pub client: usize,
    pub key: String,
    pub call: Call,
    pub invoke: Instant,
    pub complete: Instant,
    pub outcome: Outcome,
    /// Status or transport error, for the failure messages.
    pub note: String,
}

impl Op {
    fn acked_put(&self) -> Option<u64> {
        match (self.call, self.outcome) {
            (Call::Put(v), Outcome::Ok(_)) => Some(v),
            _ => None,
        }
    }

    fn ok(&self) -> bool {
        matches!(self.outcome, Outcome::Ok(_))
    }
}

/// A whole run: every operation of every client, in no particular order.
#[derive(Clone, Debug, Default)]
pub struct History {
    pub ops: Vec<Op>,
    /// When the clients started and stopped (the unavailability window is
    /// measured between them).
    pub window: Option<(Instant, Instant)>,
}

/// The findings of [`check`]; one results row.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub acked_writes: usize,
    pub unknown_writes: usize,
    pub reads: usize,
    /// Acknowledged writes a final read did not see (nor anything newer).
    pub lost: usize,
    /// Reads older than a write acknowledged before they began.
    pub stale_reads: usize,
    pub corrupt_reads: usize,
    /// Keys whose history is not linearizable (or the search gave up).
    pub nonlinearizable_keys: Vec<String>,
    /// Longest gap with no successful operation inside the window.
    pub longest_gap: Duration,
    /// First few findings, for the failure message.
    pub details: Vec<String>,
}

impl Report {
    pub fn clean(&self) -> bool {
        self.lost == 0
            && self.stale_reads == 0
            && self.corrupt_reads == 0
            && self.nonlinearizable_keys.is_empty()
    }

    pub fn print_row(&self, scenario: &str) {
        crate::results::row(
            scenario,
            &format!(
                "{} acked, {} unknown, {} reads",
                self.acked_writes, self.unknown_writes, self.reads
            ),
            self.acked_writes,
            self.lost,
            self.stale_reads + self.corrupt_reads,
            !self.nonlinearizable_keys.is_empty(),
            self.longest_gap,
            if self.clean() { "ok" } else { "FAIL" },
        );
    }

    /// Panics with the findings unless the history is clean.
    pub fn assert_clean(&self, scenario: &str) {
        assert!(
            self.acked_writes > 0,
            "{scenario}: no write was acknowledged at all"
        );
        assert!(
            self.clean(),
            "{scenario}: {} lost, {} stale, {} corrupt, non-linearizable keys {:?}:\n{}",
            self.lost,
            self.stale_reads,
            self.corrupt_reads,
            self.nonlinearizable_keys,
            self.details.join("\n")
        );
    }
}

/// Checks a history; see the module documentation.
pub fn check(h: &History) -> Report {
    let mut r = Report::default();
    let mut per_key: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in &h.ops {
        per_key.entry(op.key.as_str()).or_default().push(op);
    }
    for (key, ops) in &per_key {
        check_key(key, ops, &mut r);
    }
    r.longest_gap = longest_gap(h);
    r
}

fn check_key(key: &str, ops: &[&Op], r: &mut Report) {
    // The write of each value (values are unique in the run).
    let writes: HashMap<u64, &Op> = ops
        .iter()
        .filter_map(|op| match op.call {
            Call::Put(v) => Some((v, *op)),
            Call::Get => None,
        })
        .collect();
    let acked: Vec<&Op> = ops.iter().copied().filter(|o| o.ok()).collect();
    let acked_writes: Vec<&Op> = acked
        .iter()
        .copied()
        .filter(|o| o.acked_put().is_some())
        .collect();
    r.acked_writes += acked_writes.len();
    r.unknown_writes += ops
        .iter()
        .filter(|o| matches!(o.call, Call::Put(_)) && o.outcome == Outcome::Unknown)
        .count();

    // Reads: stale ones, and the last ones (no later read of this key
    // began after they completed) decide the lost writes.
    let reads: Vec<&Op> = ops
        .iter()
        .copied()
        .filter(|o| o.call == Call::Get && o.outcome != Outcome::Fail)
        .collect();
    r.reads += reads.len();
    let last_read_start = reads.iter().map(|o| o.invoke).max();
    let mut lost: HashSet<u64> = HashSet::new();
    for read in &reads {
        let value = match read.outcome {
            Outcome::Ok(v) => v,
            Outcome::Corrupt => {
                r.corrupt_reads += 1;
                r.details
                    .push(format!("{key}: corrupt read ({})", read.note));
                continue;
            }
            _ => continue,
        };
        if let Some(v) = value {
            if !writes.contains_key(&v) {
                r.corrupt_reads += 1;
                r.details
                    .push(format!("{key}: read value {v} that no client wrote"));
                continue;
            }
        }
        // Acknowledged writes that finished before the read began and that
        // certainly came after the write of the value read.
        let overwritten_by: Vec<u64> = acked_writes
            .iter()
            .filter(|w| w.complete < read.invoke)
            .filter(|w| match value.and_then(|v| writes.get(&v)) {
                // Nothing read: any earlier acknowledged write is newer.
                None => true,
                // Only a write that answered 200 has a known end; one of
                // unknown outcome may take effect at any later time.
                Some(src) => src.ok() && src.complete < w.invoke,
            })
            .filter_map(|w| w.acked_put())
            .collect();
        if overwritten_by.is_empty() {
            continue;
        }
        let is_last = Some(read.invoke) == last_read_start;
        if is_last {
            lost.extend(overwritten_by.iter().copied());
        }
        r.stale_reads += 1;
        if r.details.len() < 20 {
            r.details.push(format!(
                "{key}: {} read {value:?} after acknowledged write(s) {:?} had completed",
                if is_last { "final" } else { "a" },
                &overwritten_by[..overwritten_by.len().min(5)]
            ));
        }
    }
    // A final read showing old data is a lost write, not also a stale read.
    if !lost.is_empty() {
        r.stale_reads -= 1;
    }
    r.lost += lost.len();

    match crate::linearizable::register(ops) {
        Some(true) => {}
        Some(false) => {
            r.nonlinearizable_keys.push(key.to_string());
            r.details
                .push(format!("{key}: the register history is not linearizable"));
        }
        None => {
            r.nonlinearizable_keys
                .push(format!("{key} (search gave up)"));
            r.details
                .push(format!("{key}: the linearizability search gave up"));
        }
    }
}

fn longest_gap(h: &History) -> Duration {
    let Some((start, end)) = h.window else {
        return Duration::ZERO;
    };
    let mut done: Vec<Instant> = h
        .ops
        .iter()
        .filter(|o| o.ok() && o.complete >= start && o.complete <= end)
        .map(|o| o.complete)
        .collect();
    done.sort();
    let mut gap = Duration::ZERO;
    let mut prev = start;
    for t in done.into_iter().chain([end]) {
        gap = gap.max(t - prev);
        prev = t;
    }
    gap
}

// ---------------------------------------------------------------------------
// Recording.

/// What a [`Workload`] does.
#[derive(Clone)]
pub struct WorkloadSpec {
    /// `/bucket` the keys live in (it must exist).
    pub bucket: String,
    /// Clients round-robin over these endpoints (client `i` uses
    /// `endpoints[i % len]`).
    pub endpoints: Vec<Arc<S3>>,
    pub clients: usize,
    pub keys: usize,
    /// Per-client pause between operations (bounds the history).
    pub pause: Duration,
    /// A client gives up on a request after this long (outcome unknown).
    pub timeout: Duration,
    /// Stop a key's history growing past this many operations.
    pub max_ops_per_key: usize,
    /// Key prefix, so two workloads in one bucket do not mix.
    pub prefix: String,
    /// On a transport error or timeout, the client moves to the next
    /// endpoint (as a load balancer would); off, each client keeps its own.
    pub failover: bool,
}

impl WorkloadSpec {
    pub fn new(bucket: &str, endpoints: Vec<Arc<S3>>) -> Self {
        WorkloadSpec {
            bucket: bucket.to_string(),
            endpoints,
            clients: 4,
            keys: 4,
            pause: Duration::from_millis(20),
            timeout: Duration::from_secs(5),
            max_ops_per_key: 1500,
            prefix: "k".into(),
            failover: true,
        }
    }
}

/// Body of value `v`: a header the reader parses, then a pattern it
/// verifies. Every third value is 20-60 KiB, above the inline threshold,
/// so it is stored as a block on the datanodes.
pub fn body_for(v: u64) -> Vec<u8> {
    let len = if v.is_multiple_of(3) {
        20_000 + (v as usize * 7919) % 40_000
    } else {
        64 + (v as usize * 31) % 900
    };
    let mut body = format!("godwit-faults value={v} len={len}\n").into_bytes();
    body.extend(pattern(len, v));
    body
}

/// The value a body carries, or `None` if it is not intact.
pub fn parse_body(body: &[u8]) -> Option<u64> {
    let nl = body.iter().position(|b| *b == b'\n')?;
    let head = std::str::from_utf8(&body[..nl]).ok()?;
    let mut it = head.strip_prefix("godwit-faults ")?.split(' ');
    let v: u64 = it.next()?.strip_prefix("value=")?.parse().ok()?;
    let len: usize = it.next()?.strip_prefix("len=")?.parse().ok()?;
    (body[nl + 1..] == pattern(len, v)[..]).then_some(v)
}

/// Unique values across every workload of the process.
static NEXT_VALUE: AtomicU64 = AtomicU64::new(1);

/// One PUT, recorded.
pub async fn put(s3: &S3, client: usize, bucket: &str, key: &str, timeout: Duration) -> Op {
    let v = NEXT_VALUE.fetch_add(1, Ordering::Relaxed);
    let invoke = Instant::now();
    let res = tokio::time::timeout(
        timeout,
        s3.try_send("PUT", &format!("{bucket}/{key}"), &[], body_for(v)),
    )
    .await;
    let (outcome, note) = match res {
        Ok(Ok(r)) if r.status() == 200 => (Outcome::Ok(None), "200".to_string()),
        Ok(Ok(r)) => (Outcome::Unknown, r.status().to_string()),
        Ok(Err(e)) => (Outcome::Unknown, transport(&e)),
        Err(_) => (Outcome::Unknown, "client timeout".into()),
    };
    Op {
        client,
        key: key.to_string(),
        call: Call::Put(v),
        invoke,
        complete: Instant::now(),
        outcome,
        note,
    }
}

/// One GET, recorded.
pub async fn get(s3: &S3, client: usize, bucket: &str, key: &str, timeout: Duration) -> Op {
    let invoke = Instant::now();
    let res = tokio::time::timeout(timeout, async {
        let r = s3
            .try_send("GET", &format!("{bucket}/{key}"), &[], Vec::new())
            .await?;
        let status = r.status();
        let body = r.bytes().await?;
        Ok::<_, reqwest::Error>((status, body))
    })
    .await;
    let (outcome, note) = match res {
        Ok(Ok((st, body))) if st == 200 => match parse_body(&body) {
            Some(v) => (Outcome::Ok(Some(v)), "200".to_string()),
            None => (
                Outcome::Corrupt,
                format!("200 with {} bytes not matching any value", body.len()),
            ),
        },
        Ok(Ok((st, body)))
            if st == 404
                && crate::support::error_code(&String::from_utf8_lossy(&body)) == "NoSuchKey" =>
        {
            (Outcome::Ok(None), "404 NoSuchKey".to_string())
        }
        Ok(Ok((st, _))) => (Outcome::Fail, st.to_string()),
        Ok(Err(e)) => (Outcome::Fail, transport(&e)),
        Err(_) => (Outcome::Fail, "client timeout".into()),
    };
    Op {
        client,
        key: key.to_string(),
        call: Call::Get,
        invoke,
        complete: Instant::now(),
        outcome,
        note,
    }
}

fn transport(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "transport timeout".into()
    } else if e.is_connect() {
        "connect error".into()
    } else {
        "transport error".into()
    }
}

/// Concurrent clients recording a history until stopped.
pub struct Workload {
    stop: Arc<AtomicBool>,
    ops: Arc<Mutex<Vec<Op>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    started: Instant,
    pub spec: WorkloadSpec,
}

impl Workload {
    pub fn start(spec: WorkloadSpec) -> Workload {
        let stop = Arc::new(AtomicBool::new(false));
        let ops: Arc<Mutex<Vec<Op>>> = Arc::default();
        let per_key: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let mut tasks = Vec::new();
        for c in 0..spec.clients {
            let (stop, ops, per_key, spec) =
                (stop.clone(), ops.clone(), per_key.clone(), spec.clone());
            tasks.push(tokio::spawn(async move {
                use rand::{Rng, SeedableRng};
                let mut rng = rand::rngs::StdRng::seed_from_u64(c as u64 * 7 + 1);
                let mut e = c % spec.endpoints.len();
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("{}{}", spec.prefix, rng.gen_range(0..spec.keys));
                    let full = {
                        let mut pk = per_key.lock().unwrap();
                        let n = pk.entry(key.clone()).or_default();
                        *n += 1;
                        *n > spec.max_ops_per_key
                    };
                    if full {
                        tokio::time::sleep(spec.pause).await;
                        continue;
                    }
                    let s3 = &spec.endpoints[e];
                    let op = if rng.gen_bool(0.5) {
                        put(s3, c, &spec.bucket, &key, spec.timeout).await
                    } else {
                        get(s3, c, &spec.bucket, &key, spec.timeout).await
                    };
                    let failed = !op.ok();
                    if spec.failover && failed && !op.note.starts_with(|c: char| c.is_ascii_digit())
                    {
                        e = (e + 1) % spec.endpoints.len();
                    }
                    ops.lock().unwrap().push(op);
                    // Back off a little on errors, as an SDK does.
                    let pause = if failed {
                        spec.pause.max(Duration::from_millis(100))
                    } else {
                        spec.pause
                    };
                    tokio::time::sleep(pause).await;
                }
            }));
        }
        Workload {
            stop,
            ops,
            tasks,
            started: Instant::now(),
            spec,
        }
    }

    /// Acknowledged writes so far.
    pub fn acked(&self) -> usize {
        self.ops
            .lock()
            .unwrap()
            .iter()
            .filter(|o| o.acked_put().is_some())
            .count()
    }

    /// Successful operations completed after `since`.
    pub fn ok_since(&self, since: Instant) -> usize {
        self.ops
            .lock()
            .unwrap()
            .iter()
            .filter(|o| o.ok() && o.complete > since)
            .count()
    }

    /// Waits until `n` more writes are acknowledged (panics after `limit`).
    pub async fn wait_for_acks(&self, n: usize, limit: Duration) {
        let target = self.acked() + n;
        let deadline = Instant::now() + limit;
        while self.acked() < target {
            assert!(
                Instant::now() < deadline,
                "{} acknowledged writes, waited for {target} within {limit:?}: {:?}",
                self.acked(),
                self.last_notes(5)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until some operation succeeds after `since` (the cluster
    /// serves again); false after `limit`.
    pub async fn wait_serving(&self, since: Instant, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while self.ok_since(since) < 3 {
            if Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        true
    }

    /// The notes of the last `n` operations (what clients saw).
    pub fn last_notes(&self, n: usize) -> Vec<String> {
        let ops = self.ops.lock().unwrap();
        ops.iter()
            .rev()
            .take(n)
            .map(|o| format!("{:?} {}: {}", o.call, o.key, o.note))
            .collect()
    }

    /// Stops the clients (waiting for their requests in flight) and
    /// returns the history.
    pub async fn stop(self) -> History {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            let _ = t.await;
        }
        let end = Instant::now();
        let ops = std::mem::take(&mut *self.ops.lock().unwrap());
        History {
            ops,
            window: Some((self.started, end)),
        }
    }
}

/// After healing: reads every key of the workload through `s3` until each
/// answers (200 or 404) or `limit` passes, and adds the reads to the
/// history. A key that never answers gets a `Corrupt` read: the report
/// counts it (the data cannot be shown to be there).
pub async fn final_reads(mut h: History, s3: &S3, spec: &WorkloadSpec, limit: Duration) -> History {
    let deadline = Instant::now() + limit;
    for k in 0..spec.keys {
        let key = format!("{}{k}", spec.prefix);
        loop {
            let op = get(s3, usize::MAX, &spec.bucket, &key, spec.timeout).await;
            let done = op.outcome != Outcome::Fail;
            let note = op.note.clone();
            h.ops.push(op);
            if done {
                break;
            }
            if Instant::now() > deadline {
                // Nothing readable: every acknowledged write to the key is
                // lost as far as a client can tell.
                eprintln!("final read of {key} never answered: {note}");
                h.ops.push(Op {
                    client: usize::MAX,
                    key: key.clone(),
                    call: Call::Get,
                    invoke: Instant::now(),
                    complete: Instant::now(),
                    outcome: Outcome::Corrupt,
                    note: format!("final read never answered: {note}"),
                });
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-made history: (client, key, call, invoke ms, complete ms,
    /// outcome).
    fn h(ops: &[(usize, &str, Call, u64, u64, Outcome)]) -> History {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        History {
            ops: ops
                .iter()
                .map(|&(client, key, call, a, b, outcome)| Op {
                    client,
                    key: key.into(),
                    call,
                    invoke: at(a),
                    complete: at(b),
                    outcome,
                    note: String::new(),
                })
                .collect(),
            window: Some((at(0), at(100))),
        }
    }

    use Call::{Get, Put};
    use Outcome::{Ok as Done, Unknown};

    #[test]
    fn a_linearizable_history_passes() {
        let r = check(&h(&[
            (0, "a", Put(1), 0, 10, Done(None)),
            // Overlaps the write of 2: may see 1 or 2.
            (1, "a", Get, 5, 30, Done(Some(1))),
            (0, "a", Put(2), 12, 20, Done(None)),
            (2, "a", Get, 21, 25, Done(Some(2))),
            // A write of unknown outcome may land late, or never.
            (1, "a", Put(3), 31, 40, Unknown),
            (2, "a", Get, 41, 45, Done(Some(2))),
            (2, "a", Get, 46, 50, Done(Some(3))),
            (0, "b", Get, 0, 1, Done(None)),
            (0, "b", Put(4), 2, 3, Unknown),
            (0, "b", Get, 60, 61, Done(None)),
        ]));
        assert!(r.clean(), "{r:?}");
        assert_eq!(r.acked_writes, 2);
        assert_eq!(r.unknown_writes, 2);
        assert_eq!(r.reads, 6);
        assert_eq!(r.longest_gap, Duration::from_millis(39));
    }

    #[test]
    fn a_lost_write_fails() {
        let r = check(&h(&[
            (0, "a", Put(1), 0, 10, Done(None)),
            (0, "a", Put(2), 11, 20, Done(None)),
            // The final read, after healing, sees the older value.
            (9, "a", Get, 50, 51, Done(Some(1))),
        ]));
        assert_eq!(r.lost, 1, "{r:?}");
        assert_eq!(r.stale_reads, 0);
        assert_eq!(r.nonlinearizable_keys, vec!["a".to_string()]);
        assert!(!r.clean());

        // Nothing at all where a write was acknowledged.
        let r = check(&h(&[
            (0, "a", Put(1), 0, 10, Done(None)),
            (9, "a", Get, 50, 51, Done(None)),
        ]));
        assert_eq!(r.lost, 1, "{r:?}");
    }

    #[test]
    fn a_stale_read_fails() {
        let r = check(&h(&[
            (0, "a", Put(1), 0, 10, Done(None)),
            (0, "a", Put(2), 11, 20, Done(None)),
            (1, "a", Get, 21, 30, Done(Some(1))),
            (9, "a", Get, 50, 51, Done(Some(2))),
        ]));
        assert_eq!(r.stale_reads, 1, "{r:?}");
        assert_eq!(r.lost, 0);
        assert!(!r.clean());
    }

    #[test]
    fn reads_going_back_in_time_are_not_linearizable() {
        // Both writes are concurrent with everything, so no single read is
        // stale by the simple rule, but a read of 2 followed by a read of
        // 1 (after 2's read finished) cannot be linearized: 1 would have to
        // be written twice.
        let r = check(&h(&[
            (0, "a", Put(1), 0, 100, Done(None)),
            (1, "a", Put(2), 0, 100, Done(None)),
            (2, "a", Get, 10, 20, Done(Some(2))),
            (2, "a", Get, 30, 40, Done(Some(1))),
            (3, "a", Get, 50, 60, Done(Some(2))),
        ]));
        assert_eq!(r.stale_reads, 0, "{r:?}");
        assert_eq!(r.nonlinearizable_keys, vec!["a".to_string()]);
    }

    #[test]
    fn a_value_nobody_wrote_is_corrupt() {
        let r = check(&h(&[
            (0, "a", Put(1), 0, 10, Done(None)),
            (1, "a", Get, 20, 30, Done(Some(77))),
            (1, "a", Get, 40, 50, Outcome::Corrupt),
        ]));
        assert_eq!(r.corrupt_reads, 2, "{r:?}");
    }

    #[test]
    fn bodies_round_trip_and_damage_shows() {
        for v in [1u64, 3, 10, 12345] {
            let b = body_for(v);
            assert_eq!(parse_body(&b), Some(v));
            let mut bad = b.clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            assert_eq!(parse_body(&bad), None);
            assert_eq!(parse_body(&b[..b.len() - 1]), None);
        }
        assert!(body_for(3).len() > 20_000, "every third body is a block");
    }

    #[test]
    fn a_long_concurrent_history_checks_fast() {
        // 4 clients, 1500 operations on one key, writes and reads
        // overlapping their neighbours: the search must not explode.
        let mut ops = Vec::new();
        let mut value = 0u64;
        let mut current = None;
        for i in 0..1500u64 {
            let c = (i % 4) as usize;
            let t = i * 10;
            if i % 2 == 0 {
                value += 1;
                current = Some(value);
                ops.push((c, "a", Put(value), t, t + 25, Done(None)));
            } else {
                ops.push((c, "a", Get, t, t + 25, Done(current)));
            }
        }
        ops.push((1, "a", Put(9999), 5, 6, Unknown));
        let started = Instant::now();
        let r = check(&h(&ops));
        assert!(r.clean(), "{r:?}");
        eprintln!("1500 operations checked in {:?}", started.elapsed());
    }
}
