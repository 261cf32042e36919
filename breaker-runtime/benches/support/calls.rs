//! What every measurement of guarded calls shares, so all of them measure the same calls:
//! the calls' error type and a one-poll executor. Included by the hot-path benches
//! (through `support`), the allocation test (`tests/tests/core_alloc.rs`) and the
//! closed-path comparison (`user-bench/`).

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use breaker_runtime::{CallAbandonedError, CircuitBreakerOpenError};

/// The guarded calls' error type, as a user's would be.
#[derive(Debug)]
pub struct Failure;

impl From<CircuitBreakerOpenError> for Failure {
    fn from(_: CircuitBreakerOpenError) -> Self {
        Failure
    }
}

impl From<CallAbandonedError> for Failure {
    fn from(_: CallAbandonedError) -> Self {
        Failure
    }
}

/// Polls a future that completes without waiting, inline, with a no-op waker: no
/// executor.
pub fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the measured future must not wait"),
    }
}
