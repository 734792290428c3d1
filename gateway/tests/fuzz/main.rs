//! Property-based fuzz targets for every parser the gateway runs on
//! client input (docs/fuzzing.md). Each target mixes arbitrary bytes with
//! structured mutations of real inputs captured in the unit tests (botocore,
//! oss2 and alibabacloud-oss-v2 requests, the XML documents of the
//! `xml::*_tests`), and checks that nothing panics, plus a round-trip or
//! known-answer property where one is cheap.
//!
//! The case count per target is sized for CI (each target a few seconds,
//! all of them well under two minutes on two cores);
//! `GODWIT_FUZZ_SCALE=N` multiplies every count for a long run and
//! `GODWIT_FUZZ_CASES=N` sets them all to N. A failure prints the
//! minimal input; each one found so far is a regression test next to its
//! target (or a unit test beside the fixed parser).

mod auth;
mod chunked;
mod headers;
mod mutate;
mod xml;

use proptest::test_runner::Config;

/// The proptest configuration of a target: `ci_cases` cases, times
/// `GODWIT_FUZZ_SCALE`, unless `GODWIT_FUZZ_CASES` sets the count. No
/// failure files are written: a failure found becomes a named
/// regression test instead.
pub fn config(ci_cases: u32) -> Config {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
    let cases = env("GODWIT_FUZZ_CASES")
        .unwrap_or_else(|| ci_cases.saturating_mul(env("GODWIT_FUZZ_SCALE").unwrap_or(1)));
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}
