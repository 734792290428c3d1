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
}
