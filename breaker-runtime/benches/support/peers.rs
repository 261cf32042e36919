//! breaker and its peers configured alike, each tripping on 5 consecutive failures and
//! never recovering during a run. Included by the hot-path benches (through `support`)
//! and the closed-path comparison (`user-bench/`).

use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder};
use failsafe::backoff::Constant;
use failsafe::failure_policy::ConsecutiveFailures;

use super::calls::Failure;

/// Trips on 5 consecutive failures; an hour's recovery and cache, so neither ends during a
/// run.
pub fn config() -> CircuitBreakerConfig {
    policy_config(|builder| builder.failure_threshold(5))
}

/// [`config`] tripping on `policy` instead of consecutive failures.
pub fn policy_config(
    policy: impl FnOnce(CircuitBreakerConfigBuilder) -> CircuitBreakerConfigBuilder,
) -> CircuitBreakerConfig {
    policy(CircuitBreakerConfig::builder())
        .recovery_timeout(Duration::from_secs(3600))
        .local_cache_max_age(Duration::from_secs(3600))
        .build()
        .expect("valid config")
}

/// Circuit `name` on `config` over an in-memory store, its cache warm: the first call reads
/// the store, the measured ones do not.
pub fn warmed(name: &str, config: CircuitBreakerConfig) -> CircuitBreaker {
    let breaker = CircuitBreaker::new(name, Arc::new(InMemoryStore::new()), config);
    let _: Result<(), Failure> = breaker.call_blocking(|| Ok(()));
    breaker
}

/// failsafe, tripping on 5 consecutive failures.
pub fn failsafe_breaker() -> failsafe::StateMachine<ConsecutiveFailures<Constant>, ()> {
    let backoff = failsafe::backoff::constant(Duration::from_secs(3600));
    let policy = failsafe::failure_policy::consecutive_failures(5, backoff);
    failsafe::Config::new().failure_policy(policy).build()
}

/// recloser trips on a failure rate over a ring buffer; a buffer of 5 at rate 1.0 is
/// "5 consecutive failures".
pub fn recloser_breaker() -> recloser::Recloser {
    recloser::Recloser::custom()
        .error_rate(1.0)
        .closed_len(5)
        .half_open_len(3)
        .open_wait(Duration::from_secs(3600))
        .build()
}
