//! Running a call admitted beforehand: [`RunAdmitted`] is the attribute's async expansion
//! with an `on_circuit_open` callback (it admits first, so the callback can still take the
//! arguments). Also the pieces every guarded call shares: how an output counts
//! ([`Classify`]), and catching a panic of the caller's future.
//!
//! Written by hand rather than as `async fn`s for the closed path's sake: the poll inlines,
//! and the phases that wait on the store are boxed, so the finished future's drop inlines
//! too.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::permit::{Permit, classify};
use super::phase::Phase;
use crate::machine::Outcome;

/// What a panic in the caller's code carries until it is resumed.
pub(super) type Panic = Box<dyn Any + Send>;

/// How a finished call counts.
#[doc(hidden)]
pub trait Classify<O> {
    /// The outcome of a call that returned `output`.
    fn outcome(&self, output: &O) -> Outcome;
}

impl<O, F: Fn(&O) -> Outcome> Classify<O> for F {
    #[inline]
    fn outcome(&self, output: &O) -> Outcome {
        self(output)
    }
}

/// `call_with`'s rule: an `Err` counts when the predicate says so.
#[derive(Debug)]
pub(super) struct ErrorsThat<C>(pub(super) C);

impl<T, E, C: Fn(&E) -> bool> Classify<Result<T, E>> for ErrorsThat<C> {
    #[inline]
    fn outcome(&self, output: &Result<T, E>) -> Outcome {
        classify(output, &self.0)
    }
}

pin_project_lite::pin_project! {
    /// The future of [`run_admitted`].
    #[doc(hidden)]
    #[must_use = "futures do nothing unless awaited"]
    pub struct RunAdmitted<'a, Fut, C, O> {
        classify: C,
        #[pin]
        phase: Phase<'a, (), Fut, O>,
    }
}

/// Runs `future`, admitted by `permit`; `classify` says how its output counts. A panic
/// counts as a failure and is resumed once the outcome is recorded.
#[doc(hidden)]
#[inline]
pub fn run_admitted<'a, Fut, C>(
    permit: Permit<'a>,
    future: Fut,
    classify: C,
) -> RunAdmitted<'a, Fut, C, Fut::Output>
where
    Fut: Future,
    // An `Fn` bound, not `Classify`, so a closure's argument type is inferred.
    C: Fn(&Fut::Output) -> Outcome,
{
    RunAdmitted {
        classify,
        phase: Phase::running(permit, future),
    }
}

impl<Fut, C> Future for RunAdmitted<'_, Fut, C, Fut::Output>
where
    Fut: Future,
    C: Classify<Fut::Output>,
{
    type Output = Fut::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        this.phase.poll_admitted(&*this.classify, cx)
    }
}

pin_project_lite::pin_project! {
    /// The caller's future, with a panic turned into `Err(payload)`. One plain future
    /// around the caller's: no allocation and no extra state machine.
    #[derive(Debug)]
    #[must_use = "futures do nothing unless awaited"]
    pub(super) struct CatchUnwind<F> {
        #[pin]
        future: F,
    }
}

impl<F> CatchUnwind<F> {
    #[inline]
    pub(super) fn new(future: F) -> Self {
        Self { future }
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
pub(super) fn resume<O>(output: Result<O, Panic>) -> O {
    output.unwrap_or_else(|panic| resume_unwind(panic))
}
