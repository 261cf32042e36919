//! `CircuitBreakerConfig`: thresholds, timeouts and their validation.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::policy::{MAX_WINDOW_CALLS, MAX_WINDOW_SECS};
use crate::testing::ManualClock;
use crate::{CircuitBreakerConfigError, SlidingWindow};

/// How a circuit trips, recovers and talks to its store.
///
/// `Default` gives the Powertools defaults: 5 consecutive failures to open, 30 s before a
/// probe, 3 probe successes to close, the shared state re-read at most every 5 s.
///
/// Instead of consecutive failures, a circuit may trip on a rate over a sliding window of
/// this environment's calls: a failure rate ([`failure_rate`](CircuitBreakerConfigBuilder::failure_rate)),
/// a slow-call rate ([`slow_calls`](CircuitBreakerConfigBuilder::slow_calls)), or both.
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
    /// Percent of failed calls in the window that trips; `None`: not a rate policy.
    pub(crate) failure_rate: Option<u8>,
    pub(crate) slow_calls: Option<SlowCalls>,
    /// `None`: [`DEFAULT_WINDOW`] when a rate is set.
    pub(crate) sliding_window: Option<SlidingWindow>,
    /// `None`: [`DEFAULT_MINIMUM_CALLS`], at most the window's length.
    pub(crate) minimum_calls: Option<u32>,
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
            failure_rate: None,
            slow_calls: None,
            sliding_window: None,
            minimum_calls: None,
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
            threshold_set: false,
        }
    }

    /// Consecutive counted failures that open the circuit (when no rate is set).
    pub fn failure_threshold(&self) -> u32 {
        self.failure_threshold
    }

    /// Whether the circuit trips on a rate over a sliding window rather than on
    /// consecutive failures.
    pub fn trips_on_rate(&self) -> bool {
        self.failure_rate.is_some() || self.slow_calls.is_some()
    }

    /// Percent of failed calls in the sliding window that opens the circuit, if set.
    pub fn failure_rate(&self) -> Option<u8> {
        self.failure_rate
    }

    /// The duration from which a call counts as slow, if a slow-call rate is set.
    pub fn slow_call_duration(&self) -> Option<Duration> {
        self.slow_calls.map(|slow| slow.duration)
    }

    /// Percent of slow calls in the sliding window that opens the circuit, if set.
    pub fn slow_call_rate(&self) -> Option<u8> {
        self.slow_calls.map(|slow| slow.rate)
    }

    /// The window the rates are computed over; `None` when the circuit trips on
    /// consecutive failures.
    pub fn sliding_window(&self) -> Option<SlidingWindow> {
        self.trips_on_rate()
            .then(|| self.sliding_window.unwrap_or(DEFAULT_WINDOW))
    }

    /// Calls the window must hold before a rate is judged; `None` when the circuit trips on
    /// consecutive failures.
    pub fn minimum_calls(&self) -> Option<u32> {
        let window = self.sliding_window()?;
        Some(self.minimum_calls.unwrap_or(match window {
            SlidingWindow::Calls(calls) => calls.min(DEFAULT_MINIMUM_CALLS),
            SlidingWindow::Time(_) => DEFAULT_MINIMUM_CALLS,
        }))
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
    /// `failure_threshold` was given: a rate may not be.
    threshold_set: bool,
}

impl CircuitBreakerConfigBuilder {
    /// Consecutive counted failures that open the circuit (≥ 1; default 5). Not with a
    /// rate: a circuit trips on one policy.
    pub fn failure_threshold(mut self, failures: u32) -> Self {
        self.config.failure_threshold = failures;
        self.threshold_set = true;
        self
    }

    /// Trips on a failure rate instead of consecutive failures: when at least `percent`
    /// (1 to 100) of the calls in this environment's [sliding window](Self::sliding_window)
    /// failed, once it holds the [minimum number of calls](Self::minimum_calls). Judged
    /// when a call fails, so a success never trips the circuit.
    ///
    /// ```
    /// use breaker_runtime::{CircuitBreakerConfig, SlidingWindow};
    /// let config = CircuitBreakerConfig::builder()
    ///     .failure_rate(50)
    ///     .sliding_window(SlidingWindow::Calls(20))
    ///     .minimum_calls(10)
    ///     .build()?;
    /// assert!(config.trips_on_rate());
    /// # Ok::<(), breaker_runtime::CircuitBreakerConfigError>(())
    /// ```
    pub fn failure_rate(mut self, percent: u8) -> Self {
        self.config.failure_rate = Some(percent);
        self
    }

    /// Trips on slow calls: a call that takes at least `duration` (success or failure) is
    /// slow, and when at least `percent` (1 to 100) of the calls in the window were slow
    /// the circuit opens. A slow probe counts as a failed one. Durations are measured on
    /// the circuit's clock, to its resolution (a few milliseconds).
    ///
    /// ```
    /// use std::time::Duration;
    /// use breaker_runtime::CircuitBreakerConfig;
    /// let config = CircuitBreakerConfig::builder()
    ///     .slow_calls(Duration::from_millis(800), 60)
    ///     .build()?;
    /// assert_eq!(config.slow_call_rate(), Some(60));
    /// # Ok::<(), breaker_runtime::CircuitBreakerConfigError>(())
    /// ```
    pub fn slow_calls(mut self, duration: Duration, percent: u8) -> Self {
        self.config.slow_calls = Some(SlowCalls {
            duration,
            rate: percent,
        });
        self
    }

    /// The calls a rate is computed over, per environment (default: the last 100 calls).
    /// Only with a rate.
    pub fn sliding_window(mut self, window: SlidingWindow) -> Self {
        self.config.sliding_window = Some(window);
        self
    }

    /// Calls the window must hold before a rate is judged (≥ 1, at most a count window's
    /// length; default 10, or the window's length if shorter). Only with a rate.
    pub fn minimum_calls(mut self, calls: u32) -> Self {
        self.config.minimum_calls = Some(calls);
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
        self.check_rate_policy()?;
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

impl CircuitBreakerConfigBuilder {
    /// A rate policy is whole (a rate, a window in range, a reachable minimum) and alone
    /// (no `failure_threshold`).
    fn check_rate_policy(&self) -> Result<(), CircuitBreakerConfigError> {
        let c = &self.config;
        if !c.trips_on_rate() {
            return match (c.sliding_window, c.minimum_calls) {
                (None, None) => Ok(()),
                _ => Err(CircuitBreakerConfigError::Conflict(
                    "sliding_window and minimum_calls need failure_rate or slow_calls".into(),
                )),
            };
        }
        if self.threshold_set {
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
                Duration::from_millis(1),
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
                at_least("sliding_window", span, Duration::from_secs(1))?;
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
                && minimum > calls
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
}

/// A slow-call rate policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlowCalls {
    /// From this duration on, a call is slow.
    pub(crate) duration: Duration,
    /// Percent of slow calls in the window that trips.
    pub(crate) rate: u8,
}

/// The window of a rate policy that names none.
pub(crate) const DEFAULT_WINDOW: SlidingWindow = SlidingWindow::Calls(100);

/// The minimum number of calls of a rate policy that names none.
pub(crate) const DEFAULT_MINIMUM_CALLS: u32 = 10;

fn percent(field: &'static str, value: u8) -> Result<(), CircuitBreakerConfigError> {
    at_least_one(field, u32::from(value))?;
    if value <= 100 {
        return Ok(());
    }
    Err(CircuitBreakerConfigError::TooLarge {
        field,
        maximum: "100 (percent)".into(),
        value: value.to_string(),
    })
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
    fn rate_policies_are_checked_whole() {
        let b = CircuitBreakerConfig::builder;
        let cases = [
            (
                b().failure_rate(0),
                "failure_rate must be at least 1, got 0",
            ),
            (
                b().failure_rate(101),
                "failure_rate must be at most 100 (percent), got 101",
            ),
            (
                b().slow_calls(Duration::from_secs(1), 0),
                "slow_call_rate must be at least 1, got 0",
            ),
            (
                b().slow_calls(Duration::ZERO, 50),
                "slow_call_duration must be at least 1ms, got 0ns",
            ),
            (
                b().failure_rate(50).sliding_window(SlidingWindow::Calls(0)),
                "sliding_window must be at least 1, got 0",
            ),
            (
                b().failure_rate(50)
                    .sliding_window(SlidingWindow::Calls(10_001)),
                "sliding_window must be at most 10000 calls, got 10001 calls",
            ),
            (
                b().failure_rate(50)
                    .sliding_window(SlidingWindow::Time(Duration::ZERO)),
                "sliding_window must be at least 1s, got 0ns",
            ),
            (
                b().failure_rate(50)
                    .sliding_window(SlidingWindow::Time(Duration::from_millis(1500))),
                "sliding_window must be whole seconds, got 1.5s",
            ),
            (
                b().failure_rate(50)
                    .sliding_window(SlidingWindow::Calls(5))
                    .minimum_calls(6),
                "minimum_calls must be at most 5 (the window's length), got 6",
            ),
            (
                b().failure_rate(50).failure_threshold(3),
                "failure_threshold cannot be combined with failure_rate or slow_calls: a \
                 circuit trips on consecutive failures or on a rate",
            ),
            (
                b().minimum_calls(3),
                "sliding_window and minimum_calls need failure_rate or slow_calls",
            ),
        ];
        for (builder, message) in cases {
            assert_eq!(builder.build().unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn rate_policy_defaults() {
        let consecutive = CircuitBreakerConfig::default();
        assert_eq!(
            (consecutive.sliding_window(), consecutive.minimum_calls()),
            (None, None)
        );
        let rate = CircuitBreakerConfig::builder()
            .failure_rate(50)
            .build()
            .unwrap();
        assert_eq!(rate.sliding_window(), Some(SlidingWindow::Calls(100)));
        assert_eq!(rate.minimum_calls(), Some(10));
        let short = CircuitBreakerConfig::builder()
            .failure_rate(50)
            .sliding_window(SlidingWindow::Calls(4))
            .build()
            .unwrap();
        assert_eq!(short.minimum_calls(), Some(4));
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
