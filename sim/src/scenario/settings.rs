//! The breaker's tunables a scenario runs with.

use std::time::Duration;

/// The breaker's settings, the defaults being the runtime's.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerSettings {
    /// Consecutive failures that trip (5).
    pub failure_threshold: u32,
    /// Time open before a probe (30 s).
    pub recovery_timeout: Duration,
    /// Probe successes that close (3).
    pub success_threshold: u32,
    /// How long a copy of the record is trusted (5 s).
    pub local_cache_max_age: Duration,
    /// Per-environment jitter added to the recovery timeout (off).
    pub recovery_jitter: Duration,
    /// Quiet time after a store error (5 s).
    pub store_error_backoff: Duration,
    /// The probe owner's lease (30 s).
    pub probe_lease: Duration,
    /// A guarded call still running this long after it started is abandoned (none).
    pub call_timeout: Option<Duration>,
    /// How long before the invocation deadline a guarded call is abandoned, so its store
    /// writes land before Lambda ends the invocation.
    pub deadline_margin: Duration,
    /// The fleet-wide failure policy (`None`: each environment trips on its own counts).
    pub fleet_policy: Option<breaker_runtime::FleetPolicy>,
    /// How the open duration grows with each reopen (the runtime's default: it does not).
    pub recovery_backoff: breaker_runtime::RecoveryBackoff,
    /// The slow start after a close (the runtime's default: none).
    pub slow_start: Option<Duration>,
    /// The adaptive policy (the runtime's default: none, all or nothing).
    pub adaptive: Option<breaker_runtime::AdaptivePolicy>,
}

impl BreakerSettings {
    /// `builder` with these settings.
    pub fn apply(
        &self,
        builder: breaker_runtime::CircuitBreakerConfigBuilder,
    ) -> breaker_runtime::CircuitBreakerConfigBuilder {
        // The adaptive policy opens on its own consecutive failures, not the threshold's.
        let builder = match self.adaptive {
            Some(policy) => builder.adaptive(policy),
            None => builder.failure_threshold(self.failure_threshold),
        };
        let builder = builder
            .recovery_timeout(self.recovery_timeout)
            .success_threshold(self.success_threshold)
            .local_cache_max_age(self.local_cache_max_age)
            .recovery_jitter(self.recovery_jitter)
            .store_error_backoff(self.store_error_backoff)
            .probe_lease(self.probe_lease)
            .deadline_margin(self.deadline_margin)
            .recovery_backoff(self.recovery_backoff.clone())
            .fleet_detection(self.fleet_policy.is_some());
        let builder = match self.fleet_policy {
            Some(policy) => builder.fleet_policy(policy),
            None => builder,
        };
        let builder = match self.slow_start {
            Some(ramp) => builder.slow_start(ramp),
            None => builder,
        };
        match self.call_timeout {
            Some(timeout) => builder.call_timeout(timeout),
            None => builder,
        }
    }
}

impl Default for BreakerSettings {
    fn default() -> Self {
        let runtime = breaker_runtime::CircuitBreakerConfig::default();
        Self {
            failure_threshold: runtime.failure_threshold(),
            recovery_timeout: runtime.recovery_timeout(),
            success_threshold: runtime.success_threshold(),
            local_cache_max_age: runtime.local_cache_max_age(),
            recovery_jitter: runtime.recovery_jitter(),
            store_error_backoff: runtime.store_error_backoff(),
            probe_lease: runtime.probe_lease(),
            call_timeout: runtime.call_timeout(),
            deadline_margin: runtime.deadline_margin(),
            fleet_policy: runtime.fleet_policy(),
            recovery_backoff: runtime.recovery_backoff().clone(),
            slow_start: runtime.slow_start(),
            adaptive: runtime.adaptive(),
        }
    }
}
