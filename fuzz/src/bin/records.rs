//! AFL++ target `records` (see `godwit_fuzz::records` and docs/fuzzing.md).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        godwit_fuzz::records(data);
    });
}
