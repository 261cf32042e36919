//! A tiny seeded PRNG (SplitMix64), so a run is a pure function of its seed: no crate whose
//! streams could change between versions, and one independent stream per purpose (traffic,
//! store latencies, downstream errors, skews), so adding a draw to one does not shift the
//! others.

/// SplitMix64: 64 bits of state, statistically fine for a simulation, not for secrets.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// The stream `stream` of `seed`: different streams of one seed are independent.
    ///
    /// ```
    /// use breaker_sim::rng::Rng;
    /// let (mut a, mut b) = (Rng::new(7, 1), Rng::new(7, 1));
    /// assert_eq!(a.next_u64(), b.next_u64());
    /// assert_ne!(Rng::new(7, 1).next_u64(), Rng::new(7, 2).next_u64());
    /// ```
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut mixer = Self {
            state: seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03),
        };
        Self {
            state: mixer.next_u64(),
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi]` (both included); `lo` when `hi <= lo`.
    ///
    /// ```
    /// let mut rng = breaker_sim::rng::Rng::new(1, 0);
    /// assert!((0..1000).map(|_| rng.between(5, 20)).all(|x| (5..=20).contains(&x)));
    /// ```
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// Uniform in `[-span, span]`.
    pub fn symmetric(&mut self, span: u64) -> i64 {
        let span = span.min(i64::MAX as u64 / 2);
        self.between(0, 2 * span) as i64 - span as i64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// An exponentially distributed gap with mean `mean_millis`, rounded to whole
    /// milliseconds and at least 1: the gaps of a Poisson process.
    pub fn exponential_millis(&mut self, mean_millis: f64) -> u64 {
        let gap = -(1.0 - self.unit()).ln() * mean_millis;
        (gap.round() as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_gaps_have_the_requested_mean() {
        let mut rng = Rng::new(3, 0);
        let n = 100_000;
        let total: u64 = (0..n).map(|_| rng.exponential_millis(100.0)).sum();
        let mean = total as f64 / n as f64;
        assert!((mean - 100.0).abs() < 2.0, "mean {mean}");
    }

    #[test]
    fn symmetric_stays_in_its_span() {
        let mut rng = Rng::new(3, 1);
        let draws: Vec<i64> = (0..10_000).map(|_| rng.symmetric(1000)).collect();
        assert!(draws.iter().all(|d| (-1000..=1000).contains(d)));
        assert!(draws.iter().any(|d| *d < -900) && draws.iter().any(|d| *d > 900));
    }
}
