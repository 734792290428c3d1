//! AFL++ target `block_header` (see `godwit_fuzz::block_header` and docs/fuzzing.md).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        godwit_fuzz::block_header(data);
    });
}
