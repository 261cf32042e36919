//! The builder's adaptive policy: its setters (their checks are in `checks`).

use super::builder::CircuitBreakerConfigBuilder;
use crate::policy::AdaptivePolicy;

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
