//! The attribute's async run with an `on_circuit_open` callback: the expansion admits
//! first (so the arguments outlive a rejection and reach the callback), then runs the body
//! here, as [`super::admitted`] describes, abandoning it at its deadline as
//! [`super::abandon`] does for `CircuitBreaker::call`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::abandon::{poll_abandoning, poll_deadline};
use super::admitted::{
    CatchUnwind, ClassifyOutput, SlowPhase, SlowSlot, catch_unwind_future, poll_admitted,
    poll_recording,
};
use super::circuit::Circuit;
use super::permit::Permit;
use crate::error::CallAbandonedError;
use crate::protocol::machine::Outcome;

pin_project_lite::pin_project! {
    /// The future of [`run_admitted`].
    #[doc(hidden)]
    #[must_use = "futures do nothing unless awaited"]
    pub struct RunAdmitted<'a, Fut, C, O> {
        circuit: &'a Circuit,
        // Some while the call runs: it admitted `running`.
        permit: Option<Permit<&'a Circuit>>,
        classify: C,
        slow: SlowSlot<'a, O>,
        #[pin]
        running: Option<CatchUnwind<Fut>>,
    }
}

/// Runs `future`, admitted by `permit`; `classify` says how its output counts. A panic
/// counts as a failure and is resumed once the outcome is recorded. A call still running at
/// its deadline (its `call_timeout`, the invocation's less the margin) is dropped, counted
/// as a failure, and ends as `Err` with what it reports (boxed: the output moves with it).
#[doc(hidden)]
#[inline]
pub fn run_admitted<'a, Fut, C>(
    permit: Permit<&'a Circuit>,
    future: Fut,
    classify: C,
) -> RunAdmitted<'a, Fut, C, Fut::Output>
where
    Fut: Future,
    // An `Fn` bound, not `ClassifyOutput`, so a closure's argument type is inferred.
    C: Fn(&Fut::Output) -> Outcome,
{
    RunAdmitted {
        circuit: permit.circuit_ref(),
        permit: Some(permit),
        classify,
        slow: None,
        running: Some(catch_unwind_future(future)),
    }
}

impl<Fut, C> Future for RunAdmitted<'_, Fut, C, Fut::Output>
where
    Fut: Future,
    C: ClassifyOutput<Fut::Output>,
{
    type Output = Result<Fut::Output, Box<CallAbandonedError>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        match this.slow.as_deref() {
            Some(SlowPhase::Recording(..)) => return poll_recording(this.slow, cx).map(Ok),
            Some(SlowPhase::Abandoning(..)) => {
                return poll_abandoning(this.circuit, this.slow, cx);
            }
            Some(SlowPhase::Running(_) | SlowPhase::Admitting(_)) | None => {}
        }
        let Some(permit) = this.permit.take() else {
            panic!("a guarded call polled after completion");
        };
        match poll_admitted(
            this.running.as_mut(),
            this.permit,
            this.slow,
            &*this.classify,
            permit,
            cx,
        ) {
            // As `CircuitBreaker::call`: only a call that waits pays for its deadline.
            Poll::Pending => poll_deadline(this.circuit, this.running, this.permit, this.slow, cx),
            polled => polled.map(Ok),
        }
    }
}
