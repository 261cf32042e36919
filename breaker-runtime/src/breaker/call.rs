//! The future of a whole guarded call: admission, decided inline on the first poll when the
//! cache allows, then the caller's future, run as [`super::phase`] describes.
//! [`GuardedCall`] reports a rejection as the circuit's [`CircuitInfo`] (the attribute's
//! expansion turns it into the callback's value or the error); [`CallWith`] turns it into
//! the caller's error type.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use super::CircuitBreaker;
use super::admitted::{Classify, ErrorsThat};
use super::permit::{Permit, PermitRequest, fast_permit, request_permit};
use super::phase::{Phase, PhaseOwned, PhaseProj};
use crate::machine::Outcome;
use crate::{CircuitBreakerOpenError, CircuitInfo};

pin_project_lite::pin_project! {
    /// The future of [`guarded_call`].
    #[doc(hidden)]
    #[must_use = "futures do nothing unless awaited"]
    pub struct GuardedCall<'a, F, Fut, C, O> {
        breaker: &'a CircuitBreaker,
        classify: C,
        #[pin]
        phase: Phase<'a, F, Fut, O>,
    }
}

/// Admits a call to `breaker`, then runs `make()`'s future; `classify` says how its output
/// counts. A rejection is `Err` with what it reports; nothing runs before the first poll.
#[doc(hidden)]
#[inline]
pub fn guarded_call<'a, F, Fut, C>(
    breaker: &'a CircuitBreaker,
    make: F,
    classify: C,
) -> GuardedCall<'a, F, Fut, C, Fut::Output>
where
    F: FnOnce() -> Fut,
    Fut: Future,
    // An `Fn` bound, not `Classify`, so a closure's argument type is inferred.
    C: Fn(&Fut::Output) -> Outcome,
{
    GuardedCall::new(breaker, make, classify)
}

impl<'a, F, Fut, C, O> GuardedCall<'a, F, Fut, C, O> {
    #[inline]
    fn new(breaker: &'a CircuitBreaker, make: F, classify: C) -> Self {
        Self {
            breaker,
            classify,
            phase: Phase::Start { make },
        }
    }
}

impl<F, Fut, C> Future for GuardedCall<'_, F, Fut, C, Fut::Output>
where
    F: FnOnce() -> Fut,
    Fut: Future,
    C: Classify<Fut::Output>,
{
    type Output = Result<Fut::Output, CircuitInfo>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let admitted = match this.phase.as_mut().project() {
            PhaseProj::Start { .. } => match fast_permit(this.breaker) {
                Some(permit) => Ok(permit),
                None => ready!(admit_slow(this.phase.as_mut(), this.breaker, cx)),
            },
            // An admission under way is seen through, even if the cache has meanwhile
            // turned fresh: it may hold the probe slot, which only it releases.
            PhaseProj::Admitting { .. } => {
                ready!(admit_slow(this.phase.as_mut(), this.breaker, cx))
            }
            _ => return this.phase.poll_admitted(&*this.classify, cx).map(Ok),
        };
        let permit = match admitted {
            Ok(permit) => permit,
            Err(info) => return Poll::Ready(Err(info)),
        };
        let make = match this.phase.as_mut().project_replace(Phase::Done) {
            PhaseOwned::Start { make } | PhaseOwned::Admitting { make, .. } => make,
            _ => unreachable!("matched Start or Admitting above"),
        };
        // A panic in `make` itself counts like a panic while polling.
        match catch_unwind(AssertUnwindSafe(make)) {
            Ok(future) => this.phase.set(Phase::running(permit, future)),
            Err(panic) => {
                return this
                    .phase
                    .complete(permit, Err(panic), &*this.classify, cx)
                    .map(Ok);
            }
        }
        this.phase.poll_admitted(&*this.classify, cx).map(Ok)
    }
}

/// Admission when the cache cannot decide alone: a rejection from the cached record, or the
/// slow path (store read, probe election), polled until it decides. Leaves the phase
/// `Admitting` (with `make`) until then, and `Done` after a rejection.
#[inline(never)]
fn admit_slow<'a, F, Fut, O>(
    mut phase: Pin<&mut Phase<'a, F, Fut, O>>,
    breaker: &'a CircuitBreaker,
    cx: &mut Context<'_>,
) -> Poll<Result<Permit<'a>, CircuitInfo>> {
    if let PhaseProj::Start { .. } = phase.as_mut().project() {
        let request = match request_permit(breaker) {
            PermitRequest::Rejected(Some(info)) => {
                phase.set(Phase::Done);
                return Poll::Ready(Err(info));
            }
            request => request,
        };
        let PhaseOwned::Start { make } = phase.as_mut().project_replace(Phase::Done) else {
            unreachable!("matched Start above");
        };
        phase.set(Phase::Admitting { make, request });
    }
    let PhaseProj::Admitting { request, .. } = phase.as_mut().project() else {
        unreachable!("only called in Start or Admitting");
    };
    let decision = ready!(Pin::new(request).poll(cx));
    if decision.is_err() {
        phase.set(Phase::Done);
    }
    Poll::Ready(decision)
}

pin_project_lite::pin_project! {
    /// The future of [`CircuitBreaker::call_with`]: a [`GuardedCall`] whose rejection is
    /// the caller's error.
    #[must_use = "futures do nothing unless awaited"]
    pub(super) struct CallWith<'a, F, Fut, C, O> {
        #[pin]
        call: GuardedCall<'a, F, Fut, ErrorsThat<C>, O>,
    }
}

impl<'a, F, Fut, C, O> CallWith<'a, F, Fut, C, O> {
    #[inline]
    pub(super) fn new(breaker: &'a CircuitBreaker, counts: C, make: F) -> Self {
        Self {
            call: GuardedCall::new(breaker, make, ErrorsThat(counts)),
        }
    }
}

impl<F, Fut, C, T, E> Future for CallWith<'_, F, Fut, C, Result<T, E>>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    C: Fn(&E) -> bool,
    E: From<CircuitBreakerOpenError>,
{
    type Output = Result<T, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(match ready!(self.project().call.poll(cx)) {
            Ok(output) => output,
            Err(circuit) => Err(CircuitBreakerOpenError { circuit }.into()),
        })
    }
}
