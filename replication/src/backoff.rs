//! Retry delays: exponential backoff with full jitter
//! (<https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/>):
//! the delay is uniform in `[0, min(max, base * 2^attempts)]`, so workers
//! that failed together do not come back together.

use rand::Rng;

/// The upper bound of the delay after `attempts` failures, ms.
pub fn backoff_cap_ms(base_ms: u64, max_ms: u64, attempts: u32) -> u64 {
    // 2^attempts overflows past 63; saturate instead.
    let factor = 1u64.checked_shl(attempts.min(63)).unwrap_or(u64::MAX);
    base_ms.saturating_mul(factor).min(max_ms)
}

/// A random delay in `[0, backoff_cap_ms(..)]`, ms.
pub fn backoff_delay_ms<R: Rng + ?Sized>(
    rng: &mut R,
    base_ms: u64,
    max_ms: u64,
    attempts: u32,
) -> u64 {
    let cap = backoff_cap_ms(base_ms, max_ms, attempts);
    rng.gen_range(0..=cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn cap_doubles_then_saturates_at_max() {
        assert_eq!(backoff_cap_ms(200, 60_000, 0), 200);
        assert_eq!(backoff_cap_ms(200, 60_000, 1), 400);
        assert_eq!(backoff_cap_ms(200, 60_000, 8), 51_200);
        assert_eq!(backoff_cap_ms(200, 60_000, 9), 60_000);
        assert_eq!(backoff_cap_ms(200, 60_000, 63), 60_000);
        assert_eq!(backoff_cap_ms(200, 60_000, u32::MAX), 60_000);
        assert_eq!(backoff_cap_ms(0, 60_000, 5), 0);
    }

    #[test]
    fn delays_stay_within_bounds_and_spread_out() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for attempts in 0..40 {
            let cap = backoff_cap_ms(200, 60_000, attempts);
            let delays: Vec<u64> = (0..500)
                .map(|_| backoff_delay_ms(&mut rng, 200, 60_000, attempts))
                .collect();
            assert!(delays.iter().all(|d| *d <= cap), "attempt {attempts}");
            // Full jitter: both halves of the range are used.
            assert!(delays.iter().any(|d| *d < cap / 2), "attempt {attempts}");
            assert!(delays.iter().any(|d| *d > cap / 2), "attempt {attempts}");
        }
    }
}
