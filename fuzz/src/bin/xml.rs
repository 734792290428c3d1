//! AFL++ target `xml` (see `godwit_fuzz::xml` and docs/fuzzing.md).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        godwit_fuzz::xml(data);
    });
}
