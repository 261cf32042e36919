//! `RecoveryBackoff`: how long a circuit stays open after each reopen without a close.
//!
//! The wait depends only on what the record holds (its `reopen_count`, `failure_count` and
//! `opened_at`) and on the config, so every environment of the fleet computes the same due
//! time for the same opening: the first right to probe stays with the environment that
//! committed the opening, and the jitter, derived from the opening, is the fleet's, not an
//! environment's.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use breaker_rules::{
    BACKOFF_JITTER_DIVISOR, DEFAULT_BACKOFF_FACTOR, MAX_RECOVERY_BACKOFF_SECS,
    MIN_RECOVERY_TIMEOUT_SECS, default_backoff_cap_secs,
};

/// A user's wait: given the reopens without a close (≥ 1) and the failures the record
/// holds, how long the circuit stays open.
type WaitFn = dyn Fn(u32, u32) -> Duration + Send + Sync;

/// How the open duration grows while probes keep failing.
///
/// The first opening (a trip) always waits the recovery timeout. Each reopen (a failed
/// probe) counts in the record, and the next wait is the backoff's for that count, the same
/// for every environment of the fleet; a close, or a trip from closed, starts again.
///
/// The default is [`none`](Self::none): every opening waits the recovery timeout, as
/// resilience4j, Polly and Powertools do unless asked otherwise. With the fleet's single
/// prober a recovery window costs one failed call, so a growing wait saves a handful of
/// failed probes in a long outage, and costs up to the whole grown wait after the
/// downstream is back. [`doubling`](Self::doubling) and [`exponential`](Self::exponential)
/// are opt-in.
///
/// ```
/// use std::time::Duration;
/// use breaker_runtime::RecoveryBackoff;
/// let base = Duration::from_secs(30);
/// let backoff = RecoveryBackoff::exponential(2, Duration::from_secs(300));
/// assert_eq!(backoff.wait(base, 0, 5, 1_700_000_000), base, "the first opening: the timeout");
/// let second = backoff.wait(base, 1, 1, 1_700_000_000);
/// assert!(second > Duration::from_secs(45) && second <= Duration::from_secs(60));
/// assert!(backoff.wait(base, 20, 1, 1_700_000_000) <= Duration::from_secs(300));
/// assert_eq!(RecoveryBackoff::none().wait(base, 7, 1, 1_700_000_000), base);
///
/// let custom = RecoveryBackoff::from_fn(|reopens, _failures| Duration::from_secs(30 + 60 * u64::from(reopens)));
/// assert_eq!(custom.wait(base, 2, 1, 0), Duration::from_secs(150));
/// ```
#[derive(Clone)]
pub struct RecoveryBackoff(Kind);

#[derive(Clone)]
enum Kind {
    None,
    Exponential {
        factor: u32,
        /// `None`: the default cap for the recovery timeout.
        max: Option<Duration>,
    },
    Custom(Arc<WaitFn>),
}

impl RecoveryBackoff {
    /// Every opening waits the recovery timeout, however often the probe fails (the
    /// Powertools behaviour).
    pub fn none() -> Self {
        Self(Kind::None)
    }

    /// [`exponential`](Self::exponential) with factor 2 and a cap of 10 × the recovery
    /// timeout (at most a day): what `recovery_backoff = "doubling"` and `CIRCUIT_RECOVERY_BACKOFF=doubling`
    /// give.
    ///
    /// ```
    /// use std::time::Duration;
    /// use breaker_runtime::RecoveryBackoff;
    /// let wait = RecoveryBackoff::doubling().wait(Duration::from_secs(30), 9, 1, 0);
    /// assert!(wait <= Duration::from_secs(300));
    /// ```
    pub fn doubling() -> Self {
        Self(Kind::Exponential {
            factor: DEFAULT_BACKOFF_FACTOR,
            max: None,
        })
    }

    /// The n-th reopen without a close waits the recovery timeout × `factor`ⁿ (2 to 10),
    /// at most `max` (from the recovery timeout to a day), less a jitter of up to a quarter
    /// that the opening (`opened_at`) decides, so the whole fleet waits the same and
    /// circuits that reopened together spread out.
    pub fn exponential(factor: u32, max: Duration) -> Self {
        Self(Kind::Exponential {
            factor,
            max: Some(max),
        })
    }

    /// After the n-th reopen without a close, the circuit stays open for `wait(n,
    /// failure_count)` (n ≥ 1; the first opening waits the recovery timeout), kept within
    /// 1 s and a day. Called on every environment with the record's numbers: it must be a
    /// pure function of them, or environments disagree on when the probe is due.
    pub fn from_fn(wait: impl Fn(u32, u32) -> Duration + Send + Sync + 'static) -> Self {
        Self(Kind::Custom(Arc::new(wait)))
    }

    /// How long an opening waits before its probe: `base` (the recovery timeout) for the
    /// first, the backoff's for the `reopens`-th reopen (with the record's `failures` and
    /// `opened_at`, unix seconds).
    pub fn wait(&self, base: Duration, reopens: u32, failures: u32, opened_at: u64) -> Duration {
        if reopens == 0 {
            return base;
        }
        match &self.0 {
            Kind::None => base,
            Kind::Exponential { factor, max } => {
                let max = max.unwrap_or_else(|| default_cap(base));
                let grown = grow(base, *factor, reopens).min(max);
                let jitter =
                    jitter_millis(opened_at, reopens, grown / BACKOFF_JITTER_DIVISOR as u32);
                grown.saturating_sub(jitter).max(base)
            }
            Kind::Custom(wait) => wait(reopens, failures).clamp(
                Duration::from_secs(MIN_RECOVERY_TIMEOUT_SECS),
                Duration::from_secs(MAX_RECOVERY_BACKOFF_SECS),
            ),
        }
    }

    /// The longest an opening may wait with `base` as the recovery timeout: the cap of an
    /// exponential backoff, a day for a user's function, `base` without a backoff.
    pub(crate) fn longest_wait(&self, base: Duration) -> Duration {
        match &self.0 {
            Kind::None => base,
            Kind::Exponential { max, .. } => max.unwrap_or_else(|| default_cap(base)).max(base),
            Kind::Custom(_) => Duration::from_secs(MAX_RECOVERY_BACKOFF_SECS).max(base),
        }
    }

    /// The factor and cap of an exponential backoff, for the builder's checks.
    pub(crate) fn exponential_parts(&self) -> Option<(u32, Option<Duration>)> {
        match &self.0 {
            Kind::Exponential { factor, max } => Some((*factor, *max)),
            _ => None,
        }
    }
}

impl Default for RecoveryBackoff {
    fn default() -> Self {
        Self::none()
    }
}

/// Two backoffs are equal when they are the same kind with the same numbers, or the very
/// same user function.
impl PartialEq for RecoveryBackoff {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Kind::None, Kind::None) => true,
            (
                Kind::Exponential { factor, max },
                Kind::Exponential {
                    factor: other_factor,
                    max: other_max,
                },
            ) => factor == other_factor && max == other_max,
            (Kind::Custom(a), Kind::Custom(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for RecoveryBackoff {}

impl fmt::Debug for RecoveryBackoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::None => f.write_str("RecoveryBackoff::none()"),
            Kind::Exponential { factor, max } => f
                .debug_struct("RecoveryBackoff::exponential")
                .field("factor", factor)
                .field("max", max)
                .finish(),
            Kind::Custom(_) => f.write_str("RecoveryBackoff::from_fn(..)"),
        }
    }
}

fn default_cap(base: Duration) -> Duration {
    Duration::from_secs(default_backoff_cap_secs(base.as_secs_f64().ceil() as u64))
}

/// `base × factor^reopens`, saturating at a day (beyond any cap).
fn grow(base: Duration, factor: u32, reopens: u32) -> Duration {
    let limit = Duration::from_secs(MAX_RECOVERY_BACKOFF_SECS);
    let mut wait = base;
    for _ in 0..reopens {
        if wait >= limit {
            break;
        }
        wait = wait.saturating_mul(factor);
    }
    wait.min(limit.max(base))
}

/// Up to `span`, to the millisecond, fixed by the opening: every environment that read the
/// same record takes the same amount off.
fn jitter_millis(opened_at: u64, reopens: u32, span: Duration) -> Duration {
    let span = u64::try_from(span.as_millis()).unwrap_or(u64::MAX);
    if span == 0 {
        return Duration::ZERO;
    }
    let mixed = splitmix64(opened_at ^ u64::from(reopens).rotate_left(32));
    Duration::from_millis(mixed % (span + 1))
}

/// A fast, well-mixing 64-bit hash (SplitMix64's finaliser).
fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: Duration = Duration::from_secs(30);

    #[test]
    fn the_longest_wait_is_the_cap_a_day_or_the_base() {
        let minute = Duration::from_secs(60);
        assert_eq!(RecoveryBackoff::none().longest_wait(BASE), BASE);
        assert_eq!(
            RecoveryBackoff::exponential(2, minute).longest_wait(BASE),
            minute
        );
        assert_eq!(
            RecoveryBackoff::exponential(2, minute).longest_wait(2 * minute),
            2 * minute
        );
        let custom = RecoveryBackoff::from_fn(|_, _| Duration::from_secs(1));
        assert_eq!(
            custom.longest_wait(BASE),
            Duration::from_secs(MAX_RECOVERY_BACKOFF_SECS)
        );
        assert_eq!(
            RecoveryBackoff::doubling().longest_wait(BASE),
            default_cap(BASE),
            "the doubling backoff's default cap"
        );
    }

    #[test]
    fn exponential_parts_give_the_factor_and_cap() {
        let minute = Duration::from_secs(60);
        assert_eq!(
            RecoveryBackoff::exponential(3, minute).exponential_parts(),
            Some((3, Some(minute)))
        );
        assert_eq!(
            RecoveryBackoff::doubling().exponential_parts(),
            Some((DEFAULT_BACKOFF_FACTOR, None))
        );
        assert_eq!(RecoveryBackoff::none().exponential_parts(), None);
    }

    #[test]
    fn backoffs_are_equal_by_kind_and_numbers_and_shown_by_them() {
        let (minute, hour) = (Duration::from_secs(60), Duration::from_secs(3600));
        let two_minutes = RecoveryBackoff::exponential(2, minute);
        assert_eq!(two_minutes, RecoveryBackoff::exponential(2, minute));
        assert_ne!(two_minutes, RecoveryBackoff::exponential(3, minute));
        assert_ne!(two_minutes, RecoveryBackoff::exponential(2, hour));
        assert_ne!(two_minutes, RecoveryBackoff::none());
        assert_eq!(RecoveryBackoff::none(), RecoveryBackoff::none());
        let custom = RecoveryBackoff::from_fn(|_, _| Duration::from_secs(1));
        assert_eq!(custom, custom.clone());
        assert_ne!(
            custom,
            RecoveryBackoff::from_fn(|_, _| Duration::from_secs(1))
        );
        assert_eq!(
            format!("{two_minutes:?}"),
            "RecoveryBackoff::exponential { factor: 2, max: Some(60s) }"
        );
        assert_eq!(
            format!("{:?}", RecoveryBackoff::none()),
            "RecoveryBackoff::none()"
        );
        assert_eq!(format!("{custom:?}"), "RecoveryBackoff::from_fn(..)");
    }

    #[test]
    fn the_jitter_is_splitmix64_of_the_opening_and_spans_zero_to_its_whole_span() {
        // SplitMix64's reference outputs from state 0: the finaliser of 0 and of the
        // golden ratio increment.
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(splitmix64(0x9e37_79b9_7f4a_7c15), 0x6e78_9e6a_a1b9_65f4);
        let span = Duration::from_millis(1);
        let jitters: std::collections::BTreeSet<_> = (0..64)
            .map(|opened_at| jitter_millis(1_700_000_000 + opened_at, 1, span))
            .collect();
        let both: std::collections::BTreeSet<_> = [Duration::ZERO, Duration::from_millis(1)].into();
        assert_eq!(jitters, both, "0 and the whole span");
        assert_eq!(
            jitter_millis(1_700_000_000, 2, Duration::from_secs(10)),
            Duration::from_millis(splitmix64(1_700_000_000 ^ (2u64 << 32)) % 10_001)
        );
    }

    #[test]
    fn exponential_doubles_then_caps_and_keeps_within_its_jitter() {
        let backoff = RecoveryBackoff::doubling();
        for opened_at in [0, 1, 1_700_000_000, u64::MAX] {
            let waits: Vec<_> = (0..8)
                .map(|n| backoff.wait(BASE, n, 1, opened_at))
                .collect();
            assert_eq!(waits[0], BASE);
            for (n, wait) in waits.iter().enumerate().skip(1) {
                let full = BASE.saturating_mul(1 << n).min(Duration::from_secs(300));
                assert!(
                    *wait <= full && *wait >= full - full / 4,
                    "{n}: {wait:?} of {full:?}"
                );
            }
        }
    }

    #[test]
    fn the_jitter_is_the_openings_and_spreads_openings() {
        let backoff = RecoveryBackoff::doubling();
        assert_eq!(backoff.wait(BASE, 3, 1, 42), backoff.wait(BASE, 3, 9, 42));
        let spread: std::collections::HashSet<_> = (0..50)
            .map(|opened_at| backoff.wait(BASE, 3, 1, opened_at))
            .collect();
        assert!(spread.len() > 40, "{} distinct waits", spread.len());
    }

    #[test]
    fn by_default_every_opening_waits_the_recovery_timeout() {
        assert_eq!(RecoveryBackoff::default(), RecoveryBackoff::none());
        assert_eq!(RecoveryBackoff::default().wait(BASE, 9, 1, 42), BASE);
    }

    #[test]
    fn a_users_function_is_kept_within_a_second_and_a_day() {
        let backoff = RecoveryBackoff::from_fn(|reopens, failures| {
            Duration::from_secs(u64::from(reopens) * u64::from(failures))
        });
        assert_eq!(backoff.wait(BASE, 0, 0, 0), BASE);
        assert_eq!(backoff.wait(BASE, 2, 0, 0), Duration::from_secs(1));
        assert_eq!(backoff.wait(BASE, 3, 7, 0), Duration::from_secs(21));
        assert_eq!(
            backoff.wait(BASE, u32::MAX, u32::MAX, 0),
            Duration::from_secs(MAX_RECOVERY_BACKOFF_SECS)
        );
        assert_eq!(backoff, backoff.clone());
        assert_ne!(backoff, RecoveryBackoff::from_fn(|_, _| BASE));
    }

    #[test]
    fn huge_counts_saturate() {
        let backoff =
            RecoveryBackoff::exponential(10, Duration::from_secs(MAX_RECOVERY_BACKOFF_SECS));
        let wait = backoff.wait(BASE, u32::MAX, 1, 7);
        assert!(wait <= Duration::from_secs(MAX_RECOVERY_BACKOFF_SECS));
        assert!(wait >= Duration::from_secs(MAX_RECOVERY_BACKOFF_SECS * 3 / 4));
    }
}
