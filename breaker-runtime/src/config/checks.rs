//! The checks of [`build`](super::CircuitBreakerConfigBuilder::build) that judge several
//! settings together: the probe lease against the call, the backoff against the recovery
//! timeout, a fleet policy, a rate policy, the adaptive policy.

use std::time::Duration;

use breaker_rules::{
    MAX_BACKOFF_FACTOR, MAX_DURATION, MAX_FLEET_WINDOW_SECS, MAX_MAX_OPEN_FOR_SECS,
    MAX_RECOVERY_BACKOFF_SECS, MAX_SLOW_START_SECS, MAX_WINDOW_CALLS, MAX_WINDOW_SECS,
    MIN_BACKOFF_FACTOR, MIN_FLEET_WINDOW_SECS, MIN_SLOW_CALL_MILLIS, MIN_SLOW_START_SECS,
    MIN_WINDOW_SECS, backoff_factor_ok, deadline_margin_covers_store_call, minimum_fits_window,
    one_trip_policy, probe_lease_covers_call, report_interval_fits_window, window_has_rate,
};

use super::limits::{at_least, at_least_one, at_most, percent};
use super::{CircuitBreakerConfig, DEFAULT_WINDOW, FleetPolicy, millis};
use crate::error::CircuitBreakerConfigError;
use crate::policy::{AdaptivePolicy, SlidingWindow};

/// The settings that bound one another: the probe lease covers a guarded call and its
/// store writes, the deadline margin a store write. Each error names both settings.
pub(super) fn check_against_each_other(
    c: &CircuitBreakerConfig,
) -> Result<(), CircuitBreakerConfigError> {
    let store = c.store_timeout;
    if let Some(call) = c.call_timeout
        && !probe_lease_covers_call(millis(c.probe_lease), millis(call), millis(store))
    {
        return Err(CircuitBreakerConfigError::Conflict(format!(
            "probe_lease ({:?}) must cover call_timeout ({call:?}) and two store_timeout \
             ({store:?}) calls, the election's write and the outcome's: at least {:?}; a \
             lease that ends under a running probe lets a second environment probe too",
            c.probe_lease,
            call.saturating_add(store.saturating_mul(2)),
        )));
    }
    let margin = c.deadline_margin();
    if !deadline_margin_covers_store_call(millis(margin), millis(store)) {
        return Err(CircuitBreakerConfigError::Conflict(format!(
            "deadline_margin ({margin:?}) must be at least store_timeout ({store:?}): a call \
             is abandoned that long before the invocation's deadline so that the store write \
             its failure causes lands first, and that write may take the store timeout"
        )));
    }
    Ok(())
}

/// An exponential backoff's factor from 2 to 10 and its cap from the recovery timeout to a
/// day.
pub(super) fn check_backoff(c: &CircuitBreakerConfig) -> Result<(), CircuitBreakerConfigError> {
    let Some((factor, max)) = c.recovery_backoff.exponential_parts() else {
        return Ok(());
    };
    if !backoff_factor_ok(factor.into()) {
        return Err(CircuitBreakerConfigError::OutOfRange {
            field: "recovery_backoff_factor",
            minimum: format!("{MIN_BACKOFF_FACTOR} (at most {MAX_BACKOFF_FACTOR})"),
            value: factor.to_string(),
        });
    }
    if let Some(max) = max {
        at_least("recovery_backoff_max", max, c.recovery_timeout)?;
        at_most(
            "recovery_backoff_max",
            max,
            Duration::from_secs(MAX_RECOVERY_BACKOFF_SECS),
        )?;
    }
    Ok(())
}

/// A slow start's ramp: whole seconds, from [`MIN_SLOW_START_SECS`] to
/// [`MAX_SLOW_START_SECS`].
pub(super) fn check_slow_start(ramp: Duration) -> Result<(), CircuitBreakerConfigError> {
    at_least("slow_start", ramp, Duration::from_secs(MIN_SLOW_START_SECS))?;
    at_most("slow_start", ramp, Duration::from_secs(MAX_SLOW_START_SECS))?;
    if ramp.subsec_nanos() != 0 {
        return Err(CircuitBreakerConfigError::Conflict(format!(
            "slow_start must be whole seconds, got {ramp:?}"
        )));
    }
    Ok(())
}

/// The longest opening a failure may ask for: whole seconds, from 1 s to
/// [`MAX_MAX_OPEN_FOR_SECS`].
pub(super) fn check_max_open_for(longest: Duration) -> Result<(), CircuitBreakerConfigError> {
    at_least("max_open_for", longest, Duration::from_secs(1))?;
    at_most(
        "max_open_for",
        longest,
        Duration::from_secs(MAX_MAX_OPEN_FOR_SECS),
    )?;
    if longest.subsec_nanos() != 0 {
        return Err(CircuitBreakerConfigError::Conflict(format!(
            "max_open_for must be whole seconds, got {longest:?}"
        )));
    }
    Ok(())
}

/// A fleet policy's counts in range and its report interval within its window.
pub(super) fn check_fleet_policy(fleet: &FleetPolicy) -> Result<(), CircuitBreakerConfigError> {
    at_least_one("fleet_failure_threshold", fleet.failure_threshold)?;
    percent("fleet_failure_rate", fleet.failure_rate)?;
    at_least(
        "fleet_window",
        fleet.window,
        Duration::from_secs(MIN_FLEET_WINDOW_SECS),
    )?;
    at_most(
        "fleet_window",
        fleet.window,
        Duration::from_secs(MAX_FLEET_WINDOW_SECS),
    )?;
    if fleet.window.subsec_nanos() != 0 {
        return Err(CircuitBreakerConfigError::Conflict(format!(
            "fleet_window must be whole seconds, got {:?}",
            fleet.window
        )));
    }
    if !report_interval_fits_window(millis(fleet.report_interval), fleet.window.as_secs()) {
        return Err(CircuitBreakerConfigError::TooLarge {
            field: "report_interval",
            maximum: format!("{:?} (the fleet window)", fleet.window),
            value: format!("{:?}", fleet.report_interval),
        });
    }
    Ok(())
}

/// A rate policy is whole (a rate, a window in range, a reachable minimum) and alone (no
/// `failure_threshold`, which `threshold_set` says was given).
pub(super) fn check_rate_policy(
    c: &CircuitBreakerConfig,
    threshold_set: bool,
) -> Result<(), CircuitBreakerConfigError> {
    if !c.trips_on_rate() {
        let window_or_minimum = c.sliding_window.is_some() || c.minimum_calls.is_some();
        return match window_has_rate(window_or_minimum, false) {
            true => Ok(()),
            false => Err(CircuitBreakerConfigError::Conflict(
                "sliding_window and minimum_calls need failure_rate or slow_calls".into(),
            )),
        };
    }
    if !one_trip_policy(threshold_set, true) {
        return Err(CircuitBreakerConfigError::Conflict(
            "failure_threshold cannot be combined with failure_rate or slow_calls: a \
                 circuit trips on consecutive failures or on a rate"
                .into(),
        ));
    }
    if let Some(rate) = c.failure_rate {
        percent("failure_rate", rate)?;
    }
    if let Some(slow) = c.slow_calls {
        percent("slow_call_rate", slow.rate)?;
        at_least(
            "slow_call_duration",
            slow.duration,
            Duration::from_millis(MIN_SLOW_CALL_MILLIS),
        )?;
        at_most("slow_call_duration", slow.duration, MAX_DURATION)?;
    }
    let window = c.sliding_window.unwrap_or(DEFAULT_WINDOW);
    match window {
        SlidingWindow::Calls(calls) => {
            at_least_one("sliding_window", calls)?;
            if calls > MAX_WINDOW_CALLS {
                return Err(CircuitBreakerConfigError::TooLarge {
                    field: "sliding_window",
                    maximum: format!("{MAX_WINDOW_CALLS} calls"),
                    value: format!("{calls} calls"),
                });
            }
        }
        SlidingWindow::Time(span) => {
            at_least("sliding_window", span, Duration::from_secs(MIN_WINDOW_SECS))?;
            at_most("sliding_window", span, Duration::from_secs(MAX_WINDOW_SECS))?;
            if span.subsec_nanos() != 0 {
                return Err(CircuitBreakerConfigError::Conflict(format!(
                    "sliding_window must be whole seconds, got {span:?}"
                )));
            }
        }
    }
    if let Some(minimum) = c.minimum_calls {
        at_least_one("minimum_calls", minimum)?;
        if let SlidingWindow::Calls(calls) = window
            && !minimum_fits_window(minimum, calls)
        {
            return Err(CircuitBreakerConfigError::TooLarge {
                field: "minimum_calls",
                maximum: format!("{calls} (the window's length)"),
                value: minimum.to_string(),
            });
        }
    }
    Ok(())
}

/// The multipliers' range: below 1 the formula sheds calls the downstream would serve.
const MULTIPLIERS: std::ops::RangeInclusive<f64> = 1.0..=10.0;

/// The longest adaptive window.
const MAX_WINDOW: Duration = Duration::from_secs(600);

/// The adaptive policy's settings in range, and no rate policy beside it.
pub(super) fn check_adaptive(
    policy: &AdaptivePolicy,
    c: &CircuitBreakerConfig,
    threshold_set: bool,
) -> Result<(), CircuitBreakerConfigError> {
    for (field, k) in [
        ("adaptive multiplier", policy.multiplier),
        ("adaptive overload_multiplier", policy.overload_multiplier),
    ] {
        if !MULTIPLIERS.contains(&k) {
            return Err(CircuitBreakerConfigError::Conflict(format!(
                "{field} must be from 1 to 10, got {k}"
            )));
        }
    }
    at_least("adaptive window", policy.window, Duration::from_secs(1))?;
    at_most("adaptive window", policy.window, MAX_WINDOW)?;
    if policy.window.subsec_nanos() != 0 {
        return Err(CircuitBreakerConfigError::Conflict(format!(
            "adaptive window must be whole seconds, got {:?}",
            policy.window
        )));
    }
    at_least_one("adaptive minimum_requests", policy.minimum_requests)?;
    at_least_one("adaptive consecutive_failures", policy.consecutive_failures)?;
    if c.failure_rate.is_some() || c.slow_calls.is_some() || threshold_set {
        return Err(CircuitBreakerConfigError::Conflict(
            "adaptive, consecutive failures (failure_threshold) and a rate policy \
             (failure_rate, slow_calls) are ways to trip: choose one (the adaptive policy \
             opens after its own consecutive_failures)"
                .to_owned(),
        ));
    }
    Ok(())
}
