//! What the hot-path bench (`hot_path.rs`) and the instruction counter (`hot_path_calls.rs`)
//! share, so both measure the same thing: the error of the guarded calls and a one-poll
//! executor (`calls.rs`, which the allocation test and `user-bench/` include too), and
//! breaker and its peers configured alike (`peers.rs`, which `user-bench/` includes too).

use std::future::Future;
use std::hint::black_box;
use std::pin::{Pin, pin};

#[cfg(feature = "metrics")]
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig};

mod calls;
mod peers;

pub use calls::Failure;
pub use peers::{config, failsafe_breaker, policy_config, recloser_breaker, warmed};

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
