//! AFL++ target `auth` (see `godwit_fuzz::auth` and docs/fuzzing.md).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        godwit_fuzz::auth(data);
    });
}
