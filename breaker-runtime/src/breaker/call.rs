//! The futures of a whole call: admission, decided inline on the first poll when the cache
//! allows, then the caller's future, run as [`super::admitted`] describes. [`GuardedCall`] reports a
//! rejection as the circuit's [`CircuitInfo`] (the attribute's expansion turns it into the
//! callback's value or the error); [`CallWith`] turns it into the caller's error type.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use super::CircuitBreaker;
use super::abandon::{poll_abandoning, poll_deadline};
use super::admission::PermitRequest;
use super::admission::{fast_admission, request_permit_at};
use super::admitted::{
    CatchUnwind, ClassifyOutput, ErrorsThat, SlowPhase, SlowSlot, catch_unwind_future, complete,
    poll_admitted, poll_recording,
};
use super::circuit::Circuit;
use super::permit::{ErrorVerdict, Permit};
use crate::error::{CallAbandonedError, CircuitBreakerOpenError};
use crate::events::CircuitInfo;
use crate::observe::CallSpan;
use crate::protocol::machine::Outcome;

pin_project_lite::pin_project! {
    /// The future of [`guarded_call`].
    #[doc(hidden)]
    #[must_use = "futures do nothing unless awaited"]
    pub struct GuardedCall<'a, F, Fut, C, O> {
        breaker: &'a CircuitBreaker,
        classify: C,
        // Some until admitted: `make` has not run before.
        make: Option<F>,
        // Some while the caller's future runs: it admitted `running`.
        permit: Option<Permit<&'a Circuit>>,
        slow: SlowSlot<'a, O>,
        // The call's `tracing` span, if its circuit traces calls.
        span: CallSpan,
        #[pin]
        running: Option<CatchUnwind<Fut>>,
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
    // An `Fn` bound, not `ClassifyOutput`, so a closure's argument type is inferred.
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
            make: Some(make),
            permit: None,
            slow: None,
            span: CallSpan::default(),
            running: None,
        }
    }
}

impl<F, Fut, C> Future for GuardedCall<'_, F, Fut, C, Fut::Output>
where
    F: FnOnce() -> Fut,
    Fut: Future,
    C: ClassifyOutput<Fut::Output>,
{
    type Output = Result<Fut::Output, Stopped>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let circuit = &this.breaker.circuit;
        let _span = this.span.enter(circuit.config(), circuit.name());
        let admitting = match this.slow.as_deref() {
            Some(SlowPhase::Recording(..)) => return poll_recording(this.slow, cx).map(Ok),
            Some(SlowPhase::Abandoning(..)) => {
                return poll_abandoning(&this.breaker.circuit, this.slow, cx);
            }
            Some(SlowPhase::Admitting(_)) => true,
            Some(SlowPhase::Running(_)) | None => false,
        };
        let permit = if let Some(make) = this.make.take() {
            // A slow admission under way is seen through, even if the cache has meanwhile
            // turned fresh: it may hold the probe slot, which only it releases.
            // The closed path's clock read, passed on so that a rejection reads it once.
            let fast = if admitting {
                Err(None)
            } else {
                fast_admission(&this.breaker.circuit).map_err(Some)
            };
            let permit = match fast {
                Ok(permit) => permit,
                Err(now) => match admit_slow(this.breaker, this.slow, now, cx) {
                    Poll::Pending => {
                        *this.make = Some(make);
                        return Poll::Pending;
                    }
                    Poll::Ready(Ok(permit)) => permit,
                    Poll::Ready(Err(circuit)) => {
                        return Poll::Ready(Err(Stopped::Rejected(circuit)));
                    }
                },
            };
            // A panic in `make` itself counts like a panic while polling.
            match catch_unwind(AssertUnwindSafe(make)) {
                Ok(future) => this.running.set(Some(catch_unwind_future(future))),
                Err(panic) => {
                    return complete(this.slow, permit, Err(panic), &*this.classify, cx).map(Ok);
                }
            }
            permit
        } else {
            match this.permit.take() {
                Some(permit) => permit,
                None => panic!("a circuit breaker call polled after completion"),
            }
        };
        let polled = poll_admitted(
            this.running.as_mut(),
            this.permit,
            this.slow,
            &*this.classify,
            permit,
            cx,
        );
        match polled {
            // A call that waits may outlive its deadline; one done in its first poll did
            // not wait, and the closed path pays nothing for deadlines.
            Poll::Pending => poll_deadline(
                &this.breaker.circuit,
                this.running,
                this.permit,
                this.slow,
                cx,
            )
            .map_err(Stopped::Abandoned),
            polled => polled.map(Ok),
        }
    }
}

/// Why a guarded call returned without the caller's output.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// Rejected: the circuit is open (what a rejection reports).
    Rejected(CircuitInfo),
    /// Admitted, then abandoned at its deadline; counted as a failure. Boxed: the closed
    /// path moves this type's size with every output.
    Abandoned(Box<CallAbandonedError>),
}

impl From<Box<CallAbandonedError>> for Stopped {
    fn from(abandoned: Box<CallAbandonedError>) -> Self {
        Self::Abandoned(abandoned)
    }
}

impl Stopped {
    /// The error a caller gets, in its own error type.
    pub fn into_error<E>(self) -> E
    where
        E: From<CircuitBreakerOpenError> + From<CallAbandonedError>,
    {
        match self {
            Self::Rejected(circuit) => CircuitBreakerOpenError::new(circuit).into(),
            Self::Abandoned(abandoned) => (*abandoned).into(),
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`CircuitBreaker::call_with`]: a [`GuardedCall`] whose rejection is the
    /// caller's error.
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

impl<F, Fut, C, V, T, E> Future for CallWith<'_, F, Fut, C, Result<T, E>>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    C: Fn(&E) -> V,
    V: ErrorVerdict,
    E: From<CircuitBreakerOpenError> + From<CallAbandonedError>,
{
    type Output = Result<T, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(match ready!(self.project().call.poll(cx)) {
            Ok(output) => output,
            Err(stopped) => Err(stopped.into_error()),
        })
    }
}

/// Admission when the cache cannot decide alone: a rejection from the cached record, or the
/// slow path (store read, probe election), polled until it decides. `now`: the time the
/// closed path read, if it did.
#[inline(never)]
fn admit_slow<'a, O>(
    breaker: &'a CircuitBreaker,
    slow: &mut SlowSlot<'a, O>,
    now: Option<u64>,
    cx: &mut Context<'_>,
) -> Poll<Result<Permit<&'a Circuit>, CircuitInfo>> {
    let pending = match slow.as_deref_mut() {
        Some(SlowPhase::Admitting(pending)) => pending,
        _ => match request_permit_at(breaker, now) {
            PermitRequest::Rejected(circuit) => {
                return Poll::Ready(Err(
                    circuit.expect("a new PermitRequest holds its rejection")
                ));
            }
            pending => match &mut **slow.insert(Box::new(SlowPhase::Admitting(pending))) {
                SlowPhase::Admitting(pending) => pending,
                _ => unreachable!("just inserted"),
            },
        },
    };
    let decision = ready!(Pin::new(pending).poll(cx));
    *slow = None;
    Poll::Ready(decision)
}
