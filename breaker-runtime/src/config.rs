//! `CircuitBreakerConfig`: thresholds, timeouts and their validation.

use std::sync::Arc;
use std::time::Duration;

use crate::CircuitBreakerConfigError;
use crate::clock::Clock;
use crate::testing::ManualClock;

/// How a circuit trips, recovers and talks to its store.
///
/// `Default` gives the Powertools defaults: 5 failures to open, 30 s before a probe,
/// 3 probe successes to close, the shared state re-read at most every 5 s.
///
/// ```
/// use std::time::Duration;
/// use breaker_runtime::CircuitBreakerConfig;
///
/// let config = CircuitBreakerConfig::builder()
///     .failure_threshold(3)
///     .recovery_timeout(Duration::from_secs(60))
///     .success_threshold(2)
///     .local_cache_max_age(Duration::from_secs(2))
///     .build()?;
/// assert_eq!(config.failure_threshold(), 3);
/// assert_eq!(CircuitBreakerConfig::default().recovery_timeout(), Duration::from_secs(30));
/// # Ok::<(), breaker_runtime::CircuitBreakerConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct CircuitBreakerConfig {
    pub(crate) failure_threshold: u32,
    pub(crate) success_threshold: u32,
    pub(crate) recovery_timeout: Duration,
    pub(crate) local_cache_max_age: Duration,
    /// `None`: [`DEFAULT_JITTER_FACTOR`] times the recovery timeout.
    pub(crate) recovery_jitter: Option<Duration>,
    pub(crate) store_timeout: Duration,
    pub(crate) store_error_backoff: Duration,
    pub(crate) probe_lease: Duration,
    pub(crate) clock: Clock,
    /// `None`: the process's environment id.
    pub(crate) environment_id: Option<Arc<str>>,
}

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        Self {
            failure_threshold: 5,
            success_threshold: 3,
            recovery_timeout: Duration::from_secs(30),
            local_cache_max_age: Duration::from_secs(5),
            recovery_jitter: None,
            store_timeout: Duration::from_millis(1000),
            store_error_backoff: Duration::from_secs(5),
            probe_lease: Duration::from_secs(30),
            clock: Clock::System,
            environment_id: None,
        }
    }
}

impl CircuitBreakerConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> CircuitBreakerConfigBuilder {
        CircuitBreakerConfigBuilder {
            config: Self::default(),
        }
    }

    /// Consecutive counted failures that open the circuit.
    pub fn failure_threshold(&self) -> u32 {
        self.failure_threshold
    }

    /// Consecutive probe successes that close the circuit.
    pub fn success_threshold(&self) -> u32 {
        self.success_threshold
    }

    /// How long the circuit stays open before one environment probes.
    pub fn recovery_timeout(&self) -> Duration {
        self.recovery_timeout
    }

    /// How long this environment trusts its copy of the shared state.
    pub fn local_cache_max_age(&self) -> Duration {
        self.local_cache_max_age
    }

    /// Upper bound of the delay, fixed per environment, that spreads the environments
    /// without the first right to probe (see the builder's
    /// [`recovery_jitter`](CircuitBreakerConfigBuilder::recovery_jitter)).
    pub fn recovery_jitter(&self) -> Duration {
        self.recovery_jitter
            .unwrap_or_else(|| self.recovery_timeout.saturating_mul(DEFAULT_JITTER_FACTOR))
    }

    /// Longest time one store call may take before the breaker fails open.
    pub fn store_timeout(&self) -> Duration {
        self.store_timeout
    }

    /// How long the environment leaves the store alone after a store error.
    pub fn store_error_backoff(&self) -> Duration {
        self.store_error_backoff
    }

    /// How long a probe owner keeps the probe before another environment may take it over.
    pub fn probe_lease(&self) -> Duration {
        self.probe_lease
    }
}

/// Builds a validated [`CircuitBreakerConfig`]; see [`CircuitBreakerConfig::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct CircuitBreakerConfigBuilder {
    config: CircuitBreakerConfig,
}

impl CircuitBreakerConfigBuilder {
    /// Consecutive counted failures that open the circuit (≥ 1; default 5).
    pub fn failure_threshold(mut self, failures: u32) -> Self {
        self.config.failure_threshold = failures;
        self
    }

    /// Consecutive probe successes that close the circuit (≥ 1; default 3).
    pub fn success_threshold(mut self, successes: u32) -> Self {
        self.config.success_threshold = successes;
        self
    }

    /// How long the circuit stays open before a probe (≥ 1 s; default 30 s).
    pub fn recovery_timeout(mut self, timeout: Duration) -> Self {
        self.config.recovery_timeout = timeout;
        self
    }

    /// How long a copy of the shared state is trusted (≥ 0; default 5 s). Zero reads the
    /// store before every call. Longer ages mean fewer reads but a slower fleet: an
    /// environment may keep calling a downstream up to this long after another one opened
    /// the circuit. An age above the recovery timeout is allowed; it trades reaction time
    /// for store traffic.
    pub fn local_cache_max_age(mut self, max_age: Duration) -> Self {
        self.config.local_cache_max_age = max_age;
        self
    }

    /// Spreads the fallback probes of a fleet (default: 4 × the recovery timeout).
    ///
    /// The environment that opened the circuit has the first right to probe, at the
    /// recovery timeout; every other environment waits its cache age and a second longer
    /// plus a delay in `[0, jitter]` fixed per environment, and reads the record strongly
    /// consistently before it writes an election. In a healthy fleet they learn of the
    /// first probe from their next read and never write; when the first environment is gone
    /// (or the store cannot be reached and each environment probes on its own) the jitter
    /// spreads their probes so that the item's write limit and the downstream are not hit
    /// at once. A small fleet may set it low: it only delays the others' probe when the
    /// environment that opened the circuit has no traffic.
    pub fn recovery_jitter(mut self, jitter: Duration) -> Self {
        self.config.recovery_jitter = Some(jitter);
        self
    }

    /// Longest time one store call may take (> 0; default 1 s). Past it the call fails open.
    pub fn store_timeout(mut self, timeout: Duration) -> Self {
        self.config.store_timeout = timeout;
        self
    }

    /// How long to leave the store alone after a store error (≥ 0; default 5 s). After
    /// throttling, between half and one and a half times this (from the environment's id),
    /// so a fleet throttled at once does not come back at once.
    pub fn store_error_backoff(mut self, backoff: Duration) -> Self {
        self.config.store_error_backoff = backoff;
        self
    }

    /// How long the probe owner holds the probe before another environment may take it
    /// over (≥ 1 s; default 30 s). Make it longer than your slowest protected call.
    pub fn probe_lease(mut self, lease: Duration) -> Self {
        self.config.probe_lease = lease;
        self
    }

    /// The id this circuit's environment writes as probe owner, instead of the process's
    /// (a random uuid). For simulations that run many execution environments in one
    /// process; a Lambda function leaves it unset. It also seeds the recovery jitter.
    ///
    /// ```
    /// let config = breaker_runtime::CircuitBreakerConfig::builder()
    ///     .environment_id("sim-env-42")
    ///     .build()
    ///     .unwrap();
    /// # drop(config);
    /// ```
    pub fn environment_id(mut self, id: impl Into<String>) -> Self {
        self.config.environment_id = Some(id.into().into());
        self
    }

    /// Replaces the system clock, for deterministic tests.
    pub fn clock(mut self, clock: ManualClock) -> Self {
        self.config.clock = clock.as_clock();
        self
    }

    /// Checks every value and returns the config, or an error naming the first bad field.
    ///
    /// ```
    /// use std::time::Duration;
    /// use breaker_runtime::CircuitBreakerConfig;
    /// let err = CircuitBreakerConfig::builder()
    ///     .recovery_timeout(Duration::from_millis(200))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "recovery_timeout must be at least 1s, got 200ms");
    /// ```
    pub fn build(self) -> Result<CircuitBreakerConfig, CircuitBreakerConfigError> {
        let c = &self.config;
        at_least_one("failure_threshold", c.failure_threshold)?;
        at_least_one("success_threshold", c.success_threshold)?;
        at_least(
            "recovery_timeout",
            c.recovery_timeout,
            Duration::from_secs(1),
        )?;
        at_least("store_timeout", c.store_timeout, Duration::from_millis(1))?;
        at_least("probe_lease", c.probe_lease, Duration::from_secs(1))?;
        for (field, value) in [
            ("recovery_timeout", c.recovery_timeout),
            ("local_cache_max_age", c.local_cache_max_age),
            ("recovery_jitter", c.recovery_jitter()),
            ("store_timeout", c.store_timeout),
            ("store_error_backoff", c.store_error_backoff),
        ] {
            at_most(field, value, MAX_DURATION)?;
        }
        // The lease must not outlive the record: every write sets its TTL to
        // now + recovery timeout + the grace, and an election is such a write.
        at_most("probe_lease", c.probe_lease, TTL_GRACE)?;
        Ok(self.config)
    }
}

/// The default recovery jitter, as a multiple of the recovery timeout: wide enough that a
/// fleet probing on its own (the store unreachable) has under 1 % of its environments
/// start a probe in any one second.
pub(crate) const DEFAULT_JITTER_FACTOR: u32 = 4;

/// The longest duration any setting takes: far beyond any sensible value, and small
/// enough that sums of settings in milliseconds cannot overflow.
const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// How long a record outlives its recovery timeout before DynamoDB's TTL may delete it.
pub(crate) const TTL_GRACE: Duration = Duration::from_secs(3600);

/// A duration in milliseconds, saturating (the builder keeps durations far below that).
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn at_most(
    field: &'static str,
    value: Duration,
    maximum: Duration,
) -> Result<(), CircuitBreakerConfigError> {
    if value <= maximum {
        return Ok(());
    }
    Err(CircuitBreakerConfigError::TooLarge {
        field,
        maximum: format!("{maximum:?}"),
        value: format!("{value:?}"),
    })
}

fn at_least_one(field: &'static str, value: u32) -> Result<(), CircuitBreakerConfigError> {
    if value >= 1 {
        return Ok(());
    }
    Err(CircuitBreakerConfigError::OutOfRange {
        field,
        minimum: "1".into(),
        value: value.to_string(),
    })
}

fn at_least(
    field: &'static str,
    value: Duration,
    minimum: Duration,
) -> Result<(), CircuitBreakerConfigError> {
    if value >= minimum {
        return Ok(());
    }
    Err(CircuitBreakerConfigError::OutOfRange {
        field,
        minimum: format!("{minimum:?}"),
        value: format!("{value:?}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_powertools() {
        let c = CircuitBreakerConfig::default();
        assert_eq!(c.failure_threshold(), 5);
        assert_eq!(c.recovery_timeout(), Duration::from_secs(30));
        assert_eq!(c.success_threshold(), 3);
        assert_eq!(c.local_cache_max_age(), Duration::from_secs(5));
        assert_eq!(c.recovery_jitter(), Duration::from_secs(120));
        assert!(c.store_timeout() <= Duration::from_secs(1));
    }

    #[test]
    fn every_bad_field_is_named_with_its_value() {
        let cases = [
            (
                CircuitBreakerConfig::builder().failure_threshold(0),
                "failure_threshold must be at least 1, got 0",
            ),
            (
                CircuitBreakerConfig::builder().success_threshold(0),
                "success_threshold must be at least 1, got 0",
            ),
            (
                CircuitBreakerConfig::builder().recovery_timeout(Duration::from_millis(999)),
                "recovery_timeout must be at least 1s, got 999ms",
            ),
            (
                CircuitBreakerConfig::builder().store_timeout(Duration::ZERO),
                "store_timeout must be at least 1ms, got 0ns",
            ),
            (
                CircuitBreakerConfig::builder().probe_lease(Duration::from_millis(10)),
                "probe_lease must be at least 1s, got 10ms",
            ),
            (
                CircuitBreakerConfig::builder().probe_lease(Duration::from_secs(3601)),
                "probe_lease must be at most 3600s, got 3601s",
            ),
            (
                CircuitBreakerConfig::builder().recovery_timeout(Duration::MAX),
                "recovery_timeout must be at most 31536000s, got 18446744073709551615.999999999s",
            ),
            (
                CircuitBreakerConfig::builder().local_cache_max_age(Duration::from_secs(u64::MAX)),
                "local_cache_max_age must be at most 31536000s, got 18446744073709551615s",
            ),
            (
                CircuitBreakerConfig::builder()
                    .store_error_backoff(Duration::from_secs(400 * 86400)),
                "store_error_backoff must be at most 31536000s, got 34560000s",
            ),
        ];
        for (builder, message) in cases {
            assert_eq!(builder.build().unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn a_cache_age_above_the_recovery_timeout_is_valid() {
        let c = CircuitBreakerConfig::builder()
            .recovery_timeout(Duration::from_secs(2))
            .local_cache_max_age(Duration::from_secs(60))
            .build()
            .unwrap();
        assert_eq!(c.local_cache_max_age(), Duration::from_secs(60));
    }

    #[test]
    fn zero_cache_age_is_valid() {
        let c = CircuitBreakerConfig::builder()
            .local_cache_max_age(Duration::ZERO)
            .build()
            .unwrap();
        assert_eq!(c.local_cache_max_age(), Duration::ZERO);
    }
}
