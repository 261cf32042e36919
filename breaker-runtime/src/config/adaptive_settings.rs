//! The builder's adaptive policy: its setter and the checks of its settings.

use std::time::Duration;

use super::CircuitBreakerConfig;
use super::builder::CircuitBreakerConfigBuilder;
use super::limits::{at_least, at_least_one, at_most};
use crate::error::CircuitBreakerConfigError;
use crate::policy::AdaptivePolicy;

/// The multipliers' range: below 1 the formula sheds calls the downstream would serve.
const MULTIPLIERS: std::ops::RangeInclusive<f64> = 1.0..=10.0;

/// The longest adaptive window.
const MAX_WINDOW: Duration = Duration::from_secs(600);

impl CircuitBreakerConfigBuilder {
    /// Sheds a share of the calls in a brownout instead of all or nothing (opt-in; see
    /// [`AdaptivePolicy`] and `docs/design.md`, "Brownouts"). Each environment sheds with
    /// the probability Google's client-side throttling gives, from its recent successes,
    /// failures and load sheds ([`Outcome::Overloaded`](crate::Outcome::Overloaded)) and
    /// from the fleet's counters of a suspicion; shed calls take the open path with
    /// [`StopReason::Shed`](crate::StopReason::Shed). It replaces the consecutive
    /// failures' trip: the circuit opens for the whole fleet on a total outage, after
    /// [`consecutive_failures`](AdaptivePolicy::consecutive_failures) failures in a row
    /// (15), or by the fleet rule. Not with a rate policy nor `failure_threshold`.
    ///
    /// ```
    /// use breaker_runtime::{AdaptivePolicy, CircuitBreakerConfig};
    /// let config = CircuitBreakerConfig::builder().adaptive(AdaptivePolicy::default()).build()?;
    /// assert!(config.adaptive().is_some());
    /// let err = CircuitBreakerConfig::builder()
    ///     .adaptive(AdaptivePolicy::default())
    ///     .failure_rate(50)
    ///     .build()
    ///     .unwrap_err();
    /// assert!(err.to_string().contains("adaptive"));
    /// # Ok::<(), breaker_runtime::CircuitBreakerConfigError>(())
    /// ```
    pub fn adaptive(mut self, policy: AdaptivePolicy) -> Self {
        self.config.adaptive = Some(policy);
        self
    }

    /// The attribute's `adaptive = true`: the recommended setting; `false` leaves the
    /// config as it is.
    pub(crate) fn adaptive_enabled(self, enabled: bool) -> Self {
        match enabled {
            true => self.adaptive(AdaptivePolicy::default()),
            false => self,
        }
    }
}

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
