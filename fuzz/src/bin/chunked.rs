//! AFL++ target `chunked` (see `godwit_fuzz::chunked` and docs/fuzzing.md).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        godwit_fuzz::chunked(data);
    });
}
