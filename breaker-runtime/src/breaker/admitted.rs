//! Running an admitted call: poll it under `catch_unwind`, record the outcome, wait for a
//! transition that outcome causes (trip, probe outcome), then return the output or resume
//! the panic. [`super::run_admitted`] does this for the attribute's async expansion with
//! an `on_circuit_open` callback; `CircuitBreaker::call`'s future does it after its own
//! admission, with the same functions. Both abandon a call still running at its deadline
//! as [`super::abandon`] says.
//!
//! Written by hand rather than as `async fn`s for the closed path's sake: the poll inlines,
//! and the phases that wait on the store sit behind one pointer that is null on the closed
//! path, which keeps the finished future's drop small enough to inline too.
//!
//! Why the state is a few `Option`s and not one enum of phases: an enum (start, admitting,
//! running, recording, done, with pin-project-lite's `project_replace`) was measured with
//! `scripts/count-instructions.sh` and made the async closed path cost 138 instructions per
//! call instead of 83 (233 instead of 132 polled through `dyn Future`): its drop glue,
//! which includes the caller's future, is too big to inline, and every phase change and
//! the final drop called it. Here each `Option` is dropped on its own, and on the closed
//! path all of them are `None` by the time the future is dropped. Which combinations are
//! valid is said where each field is declared.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::admission::PermitRequest;
use super::circuit::Circuit;
use super::permit::{ErrorVerdict, Permit, Recording, classify};
use crate::error::Abandoned;
use crate::events::FailureKind;
use crate::protocol::machine::Outcome;
use crate::timer::Timer;

/// What a panic in the caller's code carries until it is resumed.
pub(super) type Panic = Box<dyn Any + Send>;

/// How a finished call counts.
#[doc(hidden)]
pub trait ClassifyOutput<O> {
    /// The outcome of a call that returned `output`.
    fn outcome(&self, output: &O) -> Outcome;
}

impl<O, F: Fn(&O) -> Outcome> ClassifyOutput<O> for F {
    #[inline]
    fn outcome(&self, output: &O) -> Outcome {
        self(output)
    }
}

/// `call_with`'s rule: an `Err` counts when the predicate says so.
#[derive(Debug)]
pub(super) struct ErrorsThat<C>(pub(super) C);

impl<T, E, V: ErrorVerdict, C: Fn(&E) -> V> ClassifyOutput<Result<T, E>> for ErrorsThat<C> {
    #[inline]
    fn outcome(&self, output: &Result<T, E>) -> Outcome {
        classify(output, &self.0)
    }
}

/// A phase that waits on the store or a timer, boxed: one pointer, null on the closed
/// path without a deadline.
pub(super) enum SlowPhase<'a, O> {
    /// The slow path's admission: a cache refresh or a probe election.
    Admitting(PermitRequest<'a>),
    /// The call runs under a deadline.
    Running(CallDeadline),
    /// A transition being written, and the call's output waiting for it.
    Recording(Recording<'a>, Result<O, Panic>),
    /// The call was abandoned at its deadline; its failure is being written.
    Abandoning(Recording<'a>, Abandoned),
}

/// The deadline of a running call: when it is abandoned, and as what kind of failure.
#[derive(Debug)]
pub(super) struct CallDeadline {
    pub(super) timer: Timer,
    pub(super) kind: FailureKind,
    /// When the deadline was armed (unix millis on the circuit's clock).
    pub(super) started: u64,
    /// The deadline (unix millis on the circuit's clock).
    pub(super) at: u64,
    /// The circuit's closed calls counted then.
    pub(super) calls_at_start: u64,
}

/// The slow phase of a call in progress, if any.
pub(super) type SlowSlot<'a, O> = Option<Box<SlowPhase<'a, O>>>;

/// Polls the call in `running`, admitted by `permit`: the permit goes back to `held` while
/// the call waits; once it is done, the outcome is recorded.
#[inline]
pub(super) fn poll_admitted<'a, Fut: Future>(
    mut running: Pin<&mut Option<CatchUnwind<Fut>>>,
    held: &mut Option<Permit<&'a Circuit>>,
    slow: &mut SlowSlot<'a, Fut::Output>,
    classify: &impl ClassifyOutput<Fut::Output>,
    permit: Permit<&'a Circuit>,
    cx: &mut Context<'_>,
) -> Poll<Fut::Output> {
    let Some(future) = running.as_mut().as_pin_mut() else {
        unreachable!("a permit is held only while its call runs");
    };
    let Poll::Ready(output) = future.poll(cx) else {
        *held = Some(permit);
        return Poll::Pending;
    };
    running.set(None);
    complete(slow, permit, output, classify, cx)
}

/// Records how the call ended and returns its output, once a transition that causes is
/// written.
#[inline]
pub(super) fn complete<'a, O>(
    slow: &mut SlowSlot<'a, O>,
    permit: Permit<&'a Circuit>,
    output: Result<O, Panic>,
    classify: &impl ClassifyOutput<O>,
    cx: &mut Context<'_>,
) -> Poll<O> {
    let recording = match &output {
        Ok(output) => permit.record(classify.outcome(output)),
        Err(_) => permit.record_failure(FailureKind::Panic),
    };
    match recording {
        Recording::Done => Poll::Ready(resume(output)),
        transition => {
            *slow = Some(Box::new(SlowPhase::Recording(transition, output)));
            poll_recording(slow, cx)
        }
    }
}

/// Waits for the transition being written, then returns the call's output.
#[inline(never)]
pub(super) fn poll_recording<O>(slow: &mut SlowSlot<'_, O>, cx: &mut Context<'_>) -> Poll<O> {
    let Some(SlowPhase::Recording(transition, _)) = slow.as_deref_mut() else {
        unreachable!("only called while a transition is written");
    };
    std::task::ready!(Pin::new(transition).poll(cx));
    match slow.take().map(|slow| *slow) {
        Some(SlowPhase::Recording(_, output)) => Poll::Ready(resume(output)),
        _ => unreachable!("checked above"),
    }
}

/// Polls `future`, turning a panic into `Err(payload)`. One plain future around the
/// caller's: no allocation and no extra state machine.
#[inline]
pub(super) fn catch_unwind_future<F: Future>(future: F) -> CatchUnwind<F> {
    CatchUnwind { future }
}

pin_project_lite::pin_project! {
    /// The future of [`catch_unwind_future`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless awaited"]
    pub(super) struct CatchUnwind<F> {
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Panic>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = self.project().future;
        match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// The call's output, or its panic resumed.
fn resume<O>(output: Result<O, Panic>) -> O {
    output.unwrap_or_else(|panic| resume_unwind(panic))
}
