//! Writes the seed corpora to `fuzz/corpus/<target>/` (replacing the
//! seeds of the same name; files AFL or a person added stay), then runs
//! every target once on every file of its corpus, without AFL, so a
//! seed (or a saved crash put there) that panics shows here.
//!
//!     cd fuzz && cargo run --release --bin seed-export [-- --check-only]

use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    if !std::env::args().any(|a| a == "--check-only") {
        for (target, name, bytes) in godwit_fuzz::seeds::all() {
            let dir = root.join(target);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    for (target, run) in godwit_fuzz::TARGETS {
        let dir = root.join(target);
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            eprintln!("{}", p.display());
            run(&bytes);
            n += 1;
        }
        println!("{target}: {n} inputs ran clean");
    }
    // The auth seeds must reach the end of verification, not stop at
    // parsing: every captured request authenticates at its own clock.
    let mut ok = 0;
    let mut failed = Vec::new();
    for (name, head, _) in godwit_fuzz::seeds::captured() {
        match godwit_fuzz::auth_result(head.as_bytes()) {
            Some(Ok(_)) => ok += 1,
            other => failed.push(format!("{name}: {:?}", other.map(|r| r.err()))),
        }
    }
    println!("auth seeds that authenticate: {ok}");
    for f in &failed {
        println!("  not authenticated: {f}");
    }
}
