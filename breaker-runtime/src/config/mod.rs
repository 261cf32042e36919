//! `CircuitBreakerConfig`: thresholds, timeouts and what they default to. The builder
//! ([`builder`]) validates them; [`limits`] words a broken limit as an error.

use std::sync::Arc;
use std::time::Duration;

use breaker_rules::{
    DEFAULT_FAILURE_THRESHOLD, DEFAULT_JITTER_FACTOR, DEFAULT_LOCAL_CACHE_MAX_AGE_SECS,
    DEFAULT_PROBE_LEASE_SECS, DEFAULT_RECOVERY_TIMEOUT_SECS, DEFAULT_STORE_TIMEOUT_MILLIS,
    DEFAULT_SUCCESS_THRESHOLD,
};

use crate::clock::Clock;
use crate::policy::{AdaptivePolicy, SlidingWindow};
pub use crate::protocol::FleetPolicy;
use crate::protocol::RecoveryBackoff;

mod adaptive_settings;
mod builder;
mod checks;
pub(crate) mod limits;
mod return_settings;

pub use builder::CircuitBreakerConfigBuilder;

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
    pub(crate) recovery_backoff: RecoveryBackoff,
    pub(crate) store_timeout: Duration,
    pub(crate) store_error_backoff: Duration,
    pub(crate) probe_lease: Duration,
    /// A guarded async call still running this long after its admission is abandoned.
    pub(crate) call_timeout: Option<Duration>,
    /// `None`: the store timeout.
    pub(crate) deadline_margin: Option<Duration>,
    /// After this environment sees the circuit close, the share of calls it admits rises
    /// from a tenth to all over this ramp; `None`: every call at once.
    pub(crate) slow_start: Option<Duration>,
    /// The longest opening a failure may ask for (`Outcome::OpenFor`).
    pub(crate) max_open_for: Duration,
    /// `None`: no fleet-wide detection.
    pub(crate) fleet: Option<FleetPolicy>,
    /// `None`: calls are not shed in proportion (all or nothing).
    pub(crate) adaptive: Option<AdaptivePolicy>,
    pub(crate) clock: Clock,
    /// `None`: the process's environment id.
    pub(crate) environment_id: Option<Arc<str>>,
    /// Every call runs; the policies' verdicts are reported, not acted on.
    pub(crate) shadow: bool,
    /// Each admitted call's duration goes to a histogram (a second clock read per call).
    #[cfg(feature = "metrics")]
    pub(crate) record_call_durations: bool,
    /// Each async guarded call runs in a `tracing` span of its own.
    #[cfg(feature = "call-spans")]
    pub(crate) trace_calls: bool,
}

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        Self {
            failure_threshold: DEFAULT_FAILURE_THRESHOLD,
            failure_rate: None,
            slow_calls: None,
            sliding_window: None,
            minimum_calls: None,
            success_threshold: DEFAULT_SUCCESS_THRESHOLD,
            recovery_timeout: Duration::from_secs(DEFAULT_RECOVERY_TIMEOUT_SECS),
            local_cache_max_age: Duration::from_secs(DEFAULT_LOCAL_CACHE_MAX_AGE_SECS),
            recovery_jitter: None,
            recovery_backoff: RecoveryBackoff::default(),
            store_timeout: Duration::from_millis(DEFAULT_STORE_TIMEOUT_MILLIS),
            store_error_backoff: Duration::from_secs(5),
            probe_lease: Duration::from_secs(DEFAULT_PROBE_LEASE_SECS),
            call_timeout: None,
            deadline_margin: None,
            slow_start: None,
            adaptive: None,
            max_open_for: Duration::from_secs(breaker_rules::DEFAULT_MAX_OPEN_FOR_SECS),
            fleet: Some(FleetPolicy::default()),
            clock: Clock::System,
            environment_id: None,
            shadow: false,
            #[cfg(feature = "metrics")]
            record_call_durations: false,
            #[cfg(feature = "call-spans")]
            trace_calls: false,
        }
    }
}

impl CircuitBreakerConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> CircuitBreakerConfigBuilder {
        CircuitBreakerConfigBuilder::starting_from(Self::default())
    }

    /// A builder starting from this config, as if none of its values had been set.
    pub(crate) fn into_builder(self) -> CircuitBreakerConfigBuilder {
        CircuitBreakerConfigBuilder::starting_from(self)
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

    /// How the open duration grows while probes keep failing (default: it does not; see
    /// [`RecoveryBackoff`]).
    pub fn recovery_backoff(&self) -> &RecoveryBackoff {
        &self.recovery_backoff
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

    /// How long a guarded async call may run before it is abandoned, if set.
    pub fn call_timeout(&self) -> Option<Duration> {
        self.call_timeout
    }

    /// How long before the invocation deadline a guarded async call is abandoned, so the
    /// store writes its failure causes land before the invocation ends (default: the
    /// store timeout).
    pub fn deadline_margin(&self) -> Duration {
        self.deadline_margin.unwrap_or(self.store_timeout)
    }

    /// The slow start after a close ([`CircuitBreakerConfigBuilder::slow_start`]); `None`:
    /// every call is admitted from the close on.
    pub fn slow_start(&self) -> Option<Duration> {
        self.slow_start
    }

    /// The longest opening a failure may ask for
    /// ([`CircuitBreakerConfigBuilder::max_open_for`]).
    pub fn max_open_for(&self) -> Duration {
        self.max_open_for
    }

    /// The adaptive policy ([`CircuitBreakerConfigBuilder::adaptive`]); `None`: calls are
    /// shed all or nothing.
    pub fn adaptive(&self) -> Option<AdaptivePolicy> {
        self.adaptive
    }

    /// The fleet-wide failure policy; `None` when this circuit does not report failures.
    pub fn fleet_policy(&self) -> Option<FleetPolicy> {
        self.fleet
    }

    /// Whether the circuit runs in shadow: every call runs and what the circuit would have
    /// done is reported (see [`CircuitBreakerConfigBuilder::shadow`]).
    pub fn shadow(&self) -> bool {
        self.shadow
    }

    /// The config each key of a keyed circuit runs with: this one, its fleet policy run by
    /// the key's rule (a longer window: a key is called far less than a circuit).
    pub(crate) fn for_keys(&self) -> Self {
        Self {
            fleet: self.fleet.map(FleetPolicy::for_keys),
            ..self.clone()
        }
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

/// A duration in milliseconds, saturating (the builder keeps durations far below that).
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
