//! [`CircuitBreakerConfigBuilder`]: every setting, and [`build`](CircuitBreakerConfigBuilder::build), which checks each one (the checks of several at once are in `checks`).

use std::time::Duration;

use breaker_rules::{
    MAX_DURATION, MIN_CALL_TIMEOUT_MILLIS, MIN_PROBE_LEASE_SECS, MIN_RECOVERY_TIMEOUT_SECS,
    MIN_STORE_TIMEOUT_MILLIS, TTL_GRACE,
};

use super::checks::{
    check_adaptive, check_against_each_other, check_backoff, check_fleet_policy,
    check_max_open_for, check_rate_policy, check_slow_start,
};
use super::limits::{at_least, at_least_one, at_most};
use super::{CircuitBreakerConfig, FleetPolicy, SlowCalls};
use crate::clock::ManualClock;
use crate::error::CircuitBreakerConfigError;
use crate::policy::SlidingWindow;
use crate::protocol::RecoveryBackoff;

/// Builds a validated [`CircuitBreakerConfig`]; see [`CircuitBreakerConfig::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct CircuitBreakerConfigBuilder {
    pub(super) config: CircuitBreakerConfig,
    /// `failure_threshold` was given: a rate may not be.
    threshold_set: bool,
}

impl CircuitBreakerConfigBuilder {
    pub(super) fn starting_from(config: CircuitBreakerConfig) -> Self {
        Self {
            config,
            threshold_set: false,
        }
    }

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

    /// The duration half of [`slow_calls`](Self::slow_calls), for the attribute's
    /// `slow_call_duration_ms`; until the rate half is given the rate is 0, which `build`
    /// refuses.
    pub(crate) fn slow_call_duration(mut self, duration: Duration) -> Self {
        let rate = self.config.slow_calls.map_or(0, |slow| slow.rate);
        self.config.slow_calls = Some(SlowCalls { duration, rate });
        self
    }

    /// The rate half of [`slow_calls`](Self::slow_calls), for the attribute's
    /// `slow_call_rate`; until the duration half is given it is zero, which `build` refuses.
    pub(crate) fn slow_call_rate(mut self, percent: u8) -> Self {
        let duration = self
            .config
            .slow_calls
            .map_or(Duration::ZERO, |slow| slow.duration);
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

    /// How the open duration grows with each reopen (a failed probe) without a close, the
    /// same for the whole fleet: the count travels in the shared record. Default:
    /// [`RecoveryBackoff::none`], the recovery timeout every time (the close comes within
    /// one window of the downstream's return); opt in with [`RecoveryBackoff::doubling`]
    /// (factor 2, a cap of 10 × the recovery timeout) or [`RecoveryBackoff::exponential`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use breaker_runtime::{CircuitBreakerConfig, RecoveryBackoff};
    /// let config = CircuitBreakerConfig::builder()
    ///     .recovery_backoff(RecoveryBackoff::exponential(3, Duration::from_secs(600)))
    ///     .build()?;
    /// assert_eq!(config.recovery_backoff(), &RecoveryBackoff::exponential(3, Duration::from_secs(600)));
    /// # Ok::<(), breaker_runtime::CircuitBreakerConfigError>(())
    /// ```
    pub fn recovery_backoff(mut self, backoff: RecoveryBackoff) -> Self {
        self.config.recovery_backoff = backoff;
        self
    }

    /// A backoff of the user's: after the n-th reopen without a close the circuit stays
    /// open `wait(n, failure_count)` (see [`RecoveryBackoff::from_fn`]).
    pub fn recovery_backoff_fn(
        self,
        wait: impl Fn(u32, u32) -> Duration + Send + Sync + 'static,
    ) -> Self {
        self.recovery_backoff(RecoveryBackoff::from_fn(wait))
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
    /// over (≥ 1 s, ≤ 1 h; default 30 s). Make it longer than your slowest protected call:
    /// with a [`call_timeout`](Self::call_timeout) it must cover that timeout and two
    /// store timeouts (the election's write and the outcome's), or `build` fails.
    ///
    /// ```
    /// use std::time::Duration;
    /// use breaker_runtime::CircuitBreakerConfig;
    /// let error = CircuitBreakerConfig::builder()
    ///     .call_timeout(Duration::from_secs(30))
    ///     .build()
    ///     .unwrap_err();
    /// assert!(error.to_string().starts_with("probe_lease (30s) must cover call_timeout (30s)"));
    /// let config = CircuitBreakerConfig::builder()
    ///     .call_timeout(Duration::from_secs(30))
    ///     .probe_lease(Duration::from_secs(32))
    ///     .build()?;
    /// assert_eq!(config.probe_lease(), Duration::from_secs(32));
    /// # Ok::<(), breaker_runtime::CircuitBreakerConfigError>(())
    /// ```
    pub fn probe_lease(mut self, lease: Duration) -> Self {
        self.config.probe_lease = lease;
        self
    }

    /// Abandons a guarded async call still running `timeout` after it was admitted (≥ 1 ms;
    /// default: none). The call's future is dropped, the call counts as a failure
    /// ([`FailureKind::CallTimeout`](crate::FailureKind::CallTimeout)) and the caller gets a
    /// [`CallAbandonedError`](crate::CallAbandonedError). A blocking call
    /// cannot be abandoned: one that returns after its timeout counts as a failure of that
    /// kind, and its result is returned.
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = breaker_runtime::CircuitBreakerConfig::builder()
    ///     .call_timeout(Duration::from_secs(2))
    ///     .build()?;
    /// assert_eq!(config.call_timeout(), Some(Duration::from_secs(2)));
    /// # Ok::<(), breaker_runtime::CircuitBreakerConfigError>(())
    /// ```
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.config.call_timeout = Some(timeout);
        self
    }

    /// How long before the invocation deadline ([`deadline::scope`](crate::deadline::scope))
    /// a guarded async call is abandoned (default: the store timeout), so the trip or
    /// report its failure causes is written before Lambda ends the invocation. At least the
    /// store timeout, which that write may take.
    ///
    /// ```
    /// use std::time::Duration;
    /// let error = breaker_runtime::CircuitBreakerConfig::builder()
    ///     .deadline_margin(Duration::from_millis(500))
    ///     .build()
    ///     .unwrap_err();
    /// assert!(error.to_string().starts_with("deadline_margin (500ms) must be at least store_timeout (1s)"));
    /// ```
    pub fn deadline_margin(mut self, margin: Duration) -> Self {
        self.config.deadline_margin = Some(margin);
        self
    }

    /// The fleet-wide failure policy (default [`FleetPolicy::default`]).
    pub fn fleet_policy(mut self, policy: FleetPolicy) -> Self {
        self.config.fleet = Some(policy);
        self
    }

    /// The fleet policy's [`failure_threshold`](FleetPolicy::failure_threshold), its other
    /// fields as they were (the defaults), for the attribute's `fleet_failure_threshold`.
    pub(crate) fn fleet_failure_threshold(self, failures: u32) -> Self {
        let fleet = self.config.fleet.unwrap_or_default();
        self.fleet_policy(fleet.with_failure_threshold(failures))
    }

    /// The fleet policy's [`failure_rate`](FleetPolicy::failure_rate), its other fields as
    /// they were (the defaults), for the attribute's `fleet_failure_rate`.
    pub(crate) fn fleet_failure_rate(self, percent: u8) -> Self {
        let fleet = self.config.fleet.unwrap_or_default();
        self.fleet_policy(fleet.with_failure_rate(percent))
    }

    /// Whether this circuit reports its failures for the fleet-wide policy (default
    /// true). Without it the circuit trips on this environment's own counts only.
    pub fn fleet_detection(mut self, enabled: bool) -> Self {
        self.config.fleet = match enabled {
            true => Some(self.config.fleet.unwrap_or_default()),
            false => None,
        };
        self
    }

    /// The id this circuit's environment writes as probe owner, instead of the process's
    /// (a random uuid). For simulations that run many execution environments in one
    /// process; a Lambda function leaves it unset. It also seeds the recovery jitter. A
    /// hook for tests and the simulator, hidden from the docs and outside the stable API.
    ///
    /// ```
    /// let config = breaker_runtime::CircuitBreakerConfig::builder()
    ///     .environment_id("sim-env-42")
    ///     .build()
    ///     .unwrap();
    /// # drop(config);
    /// ```
    #[doc(hidden)]
    pub fn environment_id(mut self, id: impl Into<String>) -> Self {
        self.config.environment_id = Some(id.into().into());
        self
    }

    /// Records how long each admitted call ran, in the histogram
    /// `circuitbreaker_call_duration_seconds` (feature `metrics`; default off: it reads the
    /// monotonic clock when the call is admitted and when it ends, where the closed path
    /// otherwise reads none, and records into the histogram on every call).
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn record_call_durations(mut self, enabled: bool) -> Self {
        self.config.record_call_durations = enabled;
        self
    }

    /// Runs each async guarded call (`call`, `call_with`) in a `tracing` span
    /// `circuitbreaker.call` with the field `circuitbreaker.name` (default off: a span per
    /// call costs what the subscriber makes of it). Feature `call-spans`.
    #[cfg(feature = "call-spans")]
    #[cfg_attr(docsrs, doc(cfg(feature = "call-spans")))]
    pub fn trace_calls(mut self, enabled: bool) -> Self {
        self.config.trace_calls = enabled;
        self
    }

    /// Runs the circuit in shadow (default false): every call runs, whatever the policies
    /// say, and the circuit reports what it would have done (`on_shadow` hooks, logs,
    /// [`emf::log_shadow`](crate::emf::log_shadow)): a call it would have rejected, an
    /// opening, a probe, a close. Its would-be state is this environment's own: a trip is
    /// not written to the shared record, which stays closed for the rest of the fleet. An
    /// operator's override (forced open, disabled) still decides.
    ///
    /// ```
    /// let config = breaker_runtime::CircuitBreakerConfig::builder().shadow(true).build()?;
    /// assert!(config.shadow());
    /// # Ok::<(), breaker_runtime::CircuitBreakerConfigError>(())
    /// ```
    pub fn shadow(mut self, enabled: bool) -> Self {
        self.config.shadow = enabled;
        self
    }

    /// Replaces the system clock with a [`ManualClock`], for deterministic tests. A hook
    /// for tests and the simulator, hidden from the docs and outside the stable API.
    #[doc(hidden)]
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
        check_rate_policy(c, self.threshold_set)?;
        at_least_one("success_threshold", c.success_threshold)?;
        at_least(
            "recovery_timeout",
            c.recovery_timeout,
            Duration::from_secs(MIN_RECOVERY_TIMEOUT_SECS),
        )?;
        at_least(
            "store_timeout",
            c.store_timeout,
            Duration::from_millis(MIN_STORE_TIMEOUT_MILLIS),
        )?;
        at_least(
            "probe_lease",
            c.probe_lease,
            Duration::from_secs(MIN_PROBE_LEASE_SECS),
        )?;
        for (field, value) in [
            ("recovery_timeout", c.recovery_timeout),
            ("local_cache_max_age", c.local_cache_max_age),
            ("recovery_jitter", c.recovery_jitter()),
            ("store_timeout", c.store_timeout),
            ("store_error_backoff", c.store_error_backoff),
        ] {
            at_most(field, value, MAX_DURATION)?;
        }
        check_backoff(c)?;
        // The lease must not outlive the record (see `TTL_GRACE`).
        at_most("probe_lease", c.probe_lease, TTL_GRACE)?;
        if let Some(timeout) = c.call_timeout {
            at_least(
                "call_timeout",
                timeout,
                Duration::from_millis(MIN_CALL_TIMEOUT_MILLIS),
            )?;
            at_most("call_timeout", timeout, MAX_DURATION)?;
        }
        at_most("deadline_margin", c.deadline_margin(), MAX_DURATION)?;
        if let Some(ramp) = c.slow_start {
            check_slow_start(ramp)?;
        }
        check_max_open_for(c.max_open_for)?;
        if let Some(adaptive) = &c.adaptive {
            check_adaptive(adaptive, c, self.threshold_set)?;
        }
        check_against_each_other(c)?;
        if let Some(fleet) = c.fleet {
            check_fleet_policy(&fleet)?;
        }
        Ok(self.config)
    }
}
