//! What the hot-path bench (`hot_path.rs`) and the instruction counter (`hot_path_calls.rs`)
//! share, so both measure the same thing: the error of the guarded calls and a one-poll
//! executor (`calls.rs`, which the allocation test and `user-bench/` include too), and
//! breaker and its peers configured alike, each tripping on 5 consecutive failures.

use std::future::Future;
use std::hint::black_box;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder};

mod calls;

pub use calls::Failure;

/// Polls a future that completes without waiting: inline (`DYN` false), as when it is
/// awaited inside the caller's async fn (where a `CircuitBreaker::call` future always is),
/// or through `dyn Future`, as an executor polls a task (which a guarded async fn can meet),
/// where its poll is never inlined into the caller.
pub fn ready<const DYN: bool, F: Future>(future: F) -> F::Output {
    if DYN {
        let mut future = pin!(future);
        let future: Pin<&mut dyn Future<Output = F::Output>> = black_box(future.as_mut());
        calls::ready(future)
    } else {
        calls::ready(future)
    }
}

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

pub fn failsafe_breaker()
-> impl failsafe::CircuitBreaker + failsafe::futures::CircuitBreaker + Clone {
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

/// [`warmed`], its metrics registered with `recorder` (feature `metrics`): the recorder is
/// the circuit's for good, since the circuit resolves its handles when built.
#[cfg(feature = "metrics")]
pub fn counted(
    name: &str,
    config: CircuitBreakerConfig,
    recorder: &metrics_util::debugging::DebuggingRecorder,
) -> CircuitBreaker {
    metrics::with_local_recorder(recorder, || warmed(name, config))
}

/// [`config`] recording each call's duration (feature `metrics`).
#[cfg(feature = "metrics")]
pub fn timed_config() -> CircuitBreakerConfig {
    policy_config(|builder| builder.failure_threshold(5).record_call_durations(true))
}
