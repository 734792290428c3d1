//! The linearizability search for one key's register history: Wing &
//! Gong's algorithm with Lowe's memoization of (linearized set, state), as
//! porcupine's `checkSingle` does it (<https://github.com/anishathalye/porcupine>;
//! Horn & Kroening, "Faster linearizability checking via
//! P-compositionality", 2015). The history's calls and returns form a
//! doubly linked list in time order; the search linearizes the first call
//! it can, lifting it and its return out of the list, and backtracks when
//! it meets a return whose call is not linearized yet.

use std::collections::HashSet;
use std::time::Instant;

use crate::history::{Call, Op, Outcome};

/// Operations the search visits at most before it gives up.
const SEARCH_BUDGET: usize = 2_000_000;

/// One key's register history, in the Wing & Gong / porcupine search.
/// `None` when the search gave up.
pub fn register(ops: &[&Op]) -> Option<bool> {
    // Values some read observed: only those PUTs of unknown outcome matter.
    let observed: HashSet<u64> = ops
        .iter()
        .filter_map(|o| match (o.call, o.outcome) {
            (Call::Get, Outcome::Ok(Some(v))) => Some(v),
            _ => None,
        })
        .collect();
    // (call, output, invoke, return); `None` returns never.
    let mut lin: Vec<(Call, Option<u64>, Instant, Option<Instant>)> = Vec::new();
    for o in ops {
        match (o.call, o.outcome) {
            (Call::Put(_), Outcome::Ok(_)) => lin.push((o.call, None, o.invoke, Some(o.complete))),
            (Call::Put(v), Outcome::Unknown) if observed.contains(&v) => {
                lin.push((o.call, None, o.invoke, None))
            }
            (Call::Get, Outcome::Ok(v)) => lin.push((o.call, v, o.invoke, Some(o.complete))),
            // Corrupt reads are counted apart; failed reads saw nothing.
            _ => {}
        }
    }
    let n = lin.len();
    if n == 0 {
        return Some(true);
    }
    // Events: (time, is_return, op). Calls sort before returns at the same
    // instant (the operations overlap); never-returning ops go last.
    let base = lin.iter().map(|o| o.2).min().unwrap();
    let mut events: Vec<(u128, bool, usize)> = Vec::with_capacity(2 * n);
    for (i, o) in lin.iter().enumerate() {
        events.push(((o.2 - base).as_nanos(), false, i));
        let ret = o.3.map(|t| (t - base).as_nanos()).unwrap_or(u128::MAX);
        events.push((ret, true, i));
    }
    events.sort();
    // A doubly linked list over the events, index 0 the head sentinel.
    let len = events.len() + 1;
    let mut next: Vec<usize> = (1..=len).collect();
    next[len - 1] = usize::MAX;
    let mut prev: Vec<usize> = (0..len).map(|i| i.wrapping_sub(1)).collect();
    let mut ret_of = vec![0usize; n];
    for (pos, e) in events.iter().enumerate() {
        if e.1 {
            ret_of[e.2] = pos + 1;
        }
    }
    let is_call = |node: usize| !events[node - 1].1;
    let op_of = |node: usize| events[node - 1].2;
    let unlink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, node: usize| {
        let (p, nx) = (prev[node], next[node]);
        next[p] = nx;
        if nx != usize::MAX {
            prev[nx] = p;
        }
    };
    let relink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, node: usize| {
        let (p, nx) = (prev[node], next[node]);
        next[p] = node;
        if nx != usize::MAX {
            prev[nx] = node;
        }
    };
    // The register's model: state is the value held.
    let step = |state: Option<u64>, op: usize| -> Option<Option<u64>> {
        match lin[op].0 {
            Call::Put(v) => Some(Some(v)),
            Call::Get => (lin[op].1 == state).then_some(state),
        }
    };
    let mut linearized = vec![0u64; n.div_ceil(64)];
    let mut cache: HashSet<(Vec<u64>, Option<u64>)> = HashSet::new();
    let mut stack: Vec<(usize, Option<u64>)> = Vec::new();
    let mut state: Option<u64> = None;
    let mut entry = next[0];
    let mut steps = 0usize;
    while next[0] != usize::MAX {
        steps += 1;
        if steps > SEARCH_BUDGET {
            return None;
        }
        if entry == usize::MAX {
            // Ran off the end with no return to backtrack on: cannot happen
            // with a return after every call, but be safe.
            return Some(false);
        }
        if is_call(entry) {
            let op = op_of(entry);
            if let Some(new_state) = step(state, op) {
                let mut bits = linearized.clone();
                bits[op / 64] |= 1 << (op % 64);
                if cache.insert((bits.clone(), new_state)) {
                    stack.push((entry, state));
                    state = new_state;
                    linearized = bits;
                    unlink(&mut next, &mut prev, entry);
                    unlink(&mut next, &mut prev, ret_of[op]);
                    entry = next[0];
                    continue;
                }
            }
            entry = next[entry];
        } else {
            // A return whose call is not linearized yet: backtrack.
            let Some((call, old_state)) = stack.pop() else {
                return Some(false);
            };
            let op = op_of(call);
            state = old_state;
            linearized[op / 64] &= !(1 << (op % 64));
            relink(&mut next, &mut prev, ret_of[op]);
            relink(&mut next, &mut prev, call);
            entry = next[call];
        }
    }
    Some(true)
}
