//! AFL++ target `headers` (see `godwit_fuzz::headers` and docs/fuzzing.md).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        godwit_fuzz::headers(data);
    });
}
