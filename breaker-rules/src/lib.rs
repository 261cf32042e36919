//! The settings of a circuit breaker's config and their limits, in one place: the table of
//! settings ([`knobs`](mod@knobs)) and the numbers and cross-field rules it names. `breaker-runtime`'s
//! config builder checks them at run time and the `#[circuit_breaker]` attribute at compile
//! time. Each side words its own errors (a field and a `Duration` for the builder, a key
//! and a literal for the attribute); the numbers and the rules are these.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::time::Duration;

pub mod knobs;

/// The least value of a count: the thresholds, a window's length, the minimum calls.
pub const MIN_COUNT: u32 = 1;

/// The least percentage a rate may be.
pub const MIN_PERCENT: u8 = 1;
/// The greatest percentage a rate may be.
pub const MAX_PERCENT: u8 = 100;

/// The most calls a count-based sliding window holds.
pub const MAX_WINDOW_CALLS: u32 = 10_000;
/// The shortest time-based sliding window, in seconds.
pub const MIN_WINDOW_SECS: u64 = 1;
/// The longest time-based sliding window, in seconds.
pub const MAX_WINDOW_SECS: u64 = 3600;

/// The longest duration any setting takes, in seconds (365 days): far beyond any sensible
/// value, and small enough that sums of settings in milliseconds cannot overflow.
pub const MAX_DURATION_SECS: u64 = 365 * 24 * 3600;
/// [`MAX_DURATION_SECS`] as a duration.
pub const MAX_DURATION: Duration = Duration::from_secs(MAX_DURATION_SECS);

/// The shortest recovery timeout, in seconds.
pub const MIN_RECOVERY_TIMEOUT_SECS: u64 = 1;
/// The default longest opening a failure may ask for (`Retry-After`), in seconds.
pub const DEFAULT_MAX_OPEN_FOR_SECS: u64 = 300;
/// The largest longest opening a failure may ask for, in seconds: a bad header must not
/// open a circuit for a day.
pub const MAX_MAX_OPEN_FOR_SECS: u64 = 3600;
/// The shortest slow start after a close, in seconds.
pub const MIN_SLOW_START_SECS: u64 = 1;
/// The longest slow start after a close, in seconds: an hour of turning calls away is
/// longer than any downstream needs to warm up.
pub const MAX_SLOW_START_SECS: u64 = 3600;
/// The shortest cache age, in seconds: zero reads the store before every call.
pub const MIN_LOCAL_CACHE_MAX_AGE_SECS: u64 = 0;
/// The shortest duration from which a call is slow, in milliseconds.
pub const MIN_SLOW_CALL_MILLIS: u64 = 1;
/// The shortest store timeout, in milliseconds.
pub const MIN_STORE_TIMEOUT_MILLIS: u64 = 1;
/// The shortest probe lease, in seconds.
pub const MIN_PROBE_LEASE_SECS: u64 = 1;

/// The shortest call timeout, in milliseconds.
pub const MIN_CALL_TIMEOUT_MILLIS: u64 = 1;
/// The shortest call timeout given in whole seconds (the attribute's `call_timeout`).
pub const MIN_CALL_TIMEOUT_SECS: u64 = 1;

/// The default consecutive failures that open a circuit.
pub const DEFAULT_FAILURE_THRESHOLD: u32 = 5;
/// The default consecutive probe successes that close a circuit.
pub const DEFAULT_SUCCESS_THRESHOLD: u32 = 3;
/// The default recovery timeout, in seconds.
pub const DEFAULT_RECOVERY_TIMEOUT_SECS: u64 = 30;
/// The default cache age, in seconds.
pub const DEFAULT_LOCAL_CACHE_MAX_AGE_SECS: u64 = 5;

/// The default probe lease, in seconds.
pub const DEFAULT_PROBE_LEASE_SECS: u64 = 30;
/// The default store timeout, in milliseconds.
pub const DEFAULT_STORE_TIMEOUT_MILLIS: u64 = 1000;

/// The rule of a probe lease: the probe owner holds it from its election on, through the
/// election's write, the guarded call and the write of the call's outcome, so it must
/// cover the call timeout and two store calls. A lease that ends under a running probe
/// lets a second environment elect itself and probe too.
pub const fn probe_lease_covers_call(
    lease_millis: u64,
    call_timeout_millis: u64,
    store_timeout_millis: u64,
) -> bool {
    call_timeout_millis.saturating_add(store_timeout_millis.saturating_mul(2)) <= lease_millis
}

/// The longest call timeout a probe lease covers with a store timeout (see
/// [`probe_lease_covers_call`]), in milliseconds.
pub const fn longest_call_timeout_millis(lease_millis: u64, store_timeout_millis: u64) -> u64 {
    lease_millis.saturating_sub(store_timeout_millis.saturating_mul(2))
}

/// The rule of a deadline margin: a call is abandoned this long before the invocation's
/// deadline so that the store write its failure causes lands first, and that write may
/// take the store timeout.
pub const fn deadline_margin_covers_store_call(
    margin_millis: u64,
    store_timeout_millis: u64,
) -> bool {
    store_timeout_millis <= margin_millis
}

/// The shortest fleet window, in seconds.
pub const MIN_FLEET_WINDOW_SECS: u64 = 1;
/// The longest fleet window, in seconds.
pub const MAX_FLEET_WINDOW_SECS: u64 = 3600;

/// The rule of a report interval: an environment reports at most once per interval, and
/// the fleet counts per window, so an interval longer than the window would leave windows
/// without this environment's failures.
pub const fn report_interval_fits_window(interval_millis: u64, window_secs: u64) -> bool {
    interval_millis <= window_secs.saturating_mul(1000)
}

/// How long a record outlives its recovery timeout before DynamoDB's TTL may delete it, in
/// seconds. Every write sets its TTL to now + recovery timeout + this grace, and an
/// election is such a write, so the probe lease may be at most this long.
pub const TTL_GRACE_SECS: u64 = 3600;
/// [`TTL_GRACE_SECS`] as a duration: the longest probe lease.
pub const TTL_GRACE: Duration = Duration::from_secs(TTL_GRACE_SECS);

/// The default recovery jitter, as a multiple of the recovery timeout: wide enough that a
/// fleet probing on its own (the store unreachable) has under 1 % of its environments
/// start a probe in any one second.
pub const DEFAULT_JITTER_FACTOR: u32 = 4;

/// The rule of a recovery timeout without a jitter of its own: the default jitter
/// ([`DEFAULT_JITTER_FACTOR`] times the timeout) is a setting too, and stays within
/// [`MAX_DURATION_SECS`].
pub const fn default_jitter_fits(recovery_timeout_secs: u64) -> bool {
    recovery_timeout_secs.saturating_mul(DEFAULT_JITTER_FACTOR as u64) <= MAX_DURATION_SECS
}

/// The default growth of the open duration: each reopen without a close doubles the wait.
pub const DEFAULT_BACKOFF_FACTOR: u32 = 2;
/// The least growth factor of an exponential backoff (1 would not grow).
pub const MIN_BACKOFF_FACTOR: u32 = 2;
/// The greatest growth factor of an exponential backoff.
pub const MAX_BACKOFF_FACTOR: u32 = 10;
/// The default longest backed-off wait, as a multiple of the recovery timeout.
pub const DEFAULT_BACKOFF_CAP_FACTOR: u32 = 10;
/// The longest wait any backoff gives, in seconds (one day): a downstream down longer is
/// still probed daily, and the record's TTL (now + wait + grace) stays short.
pub const MAX_RECOVERY_BACKOFF_SECS: u64 = 24 * 3600;
/// A backed-off wait loses up to this fraction (1 / divisor) of itself to the jitter.
pub const BACKOFF_JITTER_DIVISOR: u64 = 4;

/// Whether an exponential backoff's factor is from [`MIN_BACKOFF_FACTOR`] to
/// [`MAX_BACKOFF_FACTOR`].
pub const fn backoff_factor_ok(factor: u64) -> bool {
    factor >= MIN_BACKOFF_FACTOR as u64 && factor <= MAX_BACKOFF_FACTOR as u64
}

/// The rule of a backoff's cap: no shorter than the recovery timeout (the first wait) and
/// no longer than [`MAX_RECOVERY_BACKOFF_SECS`].
pub const fn backoff_cap_fits(recovery_timeout_secs: u64, cap_secs: u64) -> bool {
    cap_secs >= recovery_timeout_secs && cap_secs <= MAX_RECOVERY_BACKOFF_SECS
}

/// The cap of a backoff that names none, in seconds: [`DEFAULT_BACKOFF_CAP_FACTOR`] times
/// the recovery timeout, within [`MAX_RECOVERY_BACKOFF_SECS`] (never below the timeout).
pub const fn default_backoff_cap_secs(recovery_timeout_secs: u64) -> u64 {
    let cap = recovery_timeout_secs.saturating_mul(DEFAULT_BACKOFF_CAP_FACTOR as u64);
    let cap = if cap > MAX_RECOVERY_BACKOFF_SECS {
        MAX_RECOVERY_BACKOFF_SECS
    } else {
        cap
    };
    if cap < recovery_timeout_secs {
        recovery_timeout_secs
    } else {
        cap
    }
}

/// Whether a count is at least [`MIN_COUNT`].
pub const fn count_ok(count: u64) -> bool {
    count >= MIN_COUNT as u64
}

/// Whether a rate is a percentage from [`MIN_PERCENT`] to [`MAX_PERCENT`].
pub const fn percent_ok(percent: u64) -> bool {
    percent >= MIN_PERCENT as u64 && percent <= MAX_PERCENT as u64
}

/// The rule of a rate policy's window and minimum: a count window can reach the minimum
/// number of calls only if it is at least that long.
pub const fn minimum_fits_window(minimum_calls: u32, window_calls: u32) -> bool {
    minimum_calls <= window_calls
}

/// The rule of a trip policy: a circuit trips on consecutive failures or on a rate, so a
/// failure threshold given with a rate is a conflict.
pub const fn one_trip_policy(threshold_given: bool, rate_given: bool) -> bool {
    !(threshold_given && rate_given)
}

/// The rule of a sliding window and a minimum number of calls: they belong to a rate
/// policy, so without a rate neither may be given.
pub const fn window_has_rate(window_or_minimum_given: bool, rate_given: bool) -> bool {
    !window_or_minimum_given || rate_given
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_hold_at_their_bounds() {
        assert!(!count_ok(0) && count_ok(1));
        assert!(!percent_ok(0) && percent_ok(1) && percent_ok(100) && !percent_ok(101));
        assert!(minimum_fits_window(5, 5) && !minimum_fits_window(6, 5));
        assert!(one_trip_policy(true, false) && !one_trip_policy(true, true));
        assert!(window_has_rate(false, false) && !window_has_rate(true, false));
        assert_eq!(MAX_DURATION, Duration::from_secs(31_536_000));
        assert!(default_jitter_fits(7_884_000) && !default_jitter_fits(7_884_001));
        assert!(
            report_interval_fits_window(10_000, 10) && !report_interval_fits_window(10_001, 10)
        );
        assert!(probe_lease_covers_call(30_000, 28_000, 1_000));
        assert!(!probe_lease_covers_call(30_000, 28_001, 1_000));
        assert!(!probe_lease_covers_call(30_000, 30_000, 1));
        assert_eq!(longest_call_timeout_millis(30_000, 1_000), 28_000);
        assert!(deadline_margin_covers_store_call(1_000, 1_000));
        assert!(!backoff_factor_ok(1) && backoff_factor_ok(2) && !backoff_factor_ok(11));
        assert!(backoff_cap_fits(30, 30) && !backoff_cap_fits(30, 29));
        assert!(!backoff_cap_fits(30, MAX_RECOVERY_BACKOFF_SECS + 1));
        assert_eq!(default_backoff_cap_secs(30), 300);
        assert_eq!(default_backoff_cap_secs(10_000), MAX_RECOVERY_BACKOFF_SECS);
        assert_eq!(default_backoff_cap_secs(100_000), 100_000);
        assert!(!deadline_margin_covers_store_call(999, 1_000));
    }
}
