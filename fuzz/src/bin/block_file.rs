//! AFL++ target `block_file` (see `godwit_fuzz::block_file` and docs/fuzzing.md).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        godwit_fuzz::block_file(data);
    });
}
