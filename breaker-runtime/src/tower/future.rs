//! [`ResponseFuture`]: the inner call, its outcome recorded, and the phases that wait on
//! the store (admission, a transition being written) boxed behind one pointer.

use std::any::Any;
use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tower_service::Service;

use crate::breaker::CircuitBreaker;
use crate::breaker::{Owned, OwnedFuture, Permit, Recording};
use crate::events::{CircuitInfo, FailureKind};

use super::classify::Classify;
use super::error::{BoxError, open_error};

/// What a panic in the inner service carries until it is resumed.
type Panic = Box<dyn Any + Send>;

/// The phases of a request that wait on the store or are done early, boxed: one pointer,
/// null on the closed path.
pub(super) enum Slow<S: Service<Req>, Req, B: Borrow<CircuitBreaker>> {
    /// Admission by the store (a refresh, a probe election); then the inner call.
    Admitting {
        admission: OwnedFuture<Result<Permit<Owned<B>>, CircuitInfo>>,
        service: S,
        request: Req,
    },
    /// The inner call ended; the transition its outcome caused, if any, is being written.
    Recording {
        writing: Recording<'static>,
        output: Result<Result<S::Response, S::Error>, Panic>,
    },
    /// Rejected from the cached record.
    Rejected(CircuitInfo),
}

pin_project_lite::pin_project! {
    /// The future of [`CircuitBreakerService`]'s `call`.
    ///
    /// On the closed path it holds the permit and the inner future; the other phases sit
    /// behind one pointer (the same shape as [`CircuitBreaker::call`]'s future).
    #[must_use = "futures do nothing unless awaited"]
    pub struct ResponseFuture<S, Req, C, B>
    where
        S: Service<Req>,
        B: Borrow<CircuitBreaker>,
    {
        classifier: C,
        // Some while `running` runs: it admitted that call.
        permit: Option<Permit<Owned<B>>>,
        slow: Option<Box<Slow<S, Req, B>>>,
        #[pin]
        running: Option<S::Future>,
    }
}

impl<S: Service<Req>, Req, C, B: Borrow<CircuitBreaker>> ResponseFuture<S, Req, C, B> {
    /// The closed path: the inner call admitted by `permit` runs.
    #[inline]
    pub(super) fn running(classifier: C, permit: Permit<Owned<B>>, future: S::Future) -> Self {
        Self {
            classifier,
            permit: Some(permit),
            slow: None,
            running: Some(future),
        }
    }

    /// A phase that waits on the store, or a rejection.
    pub(super) fn slow(classifier: C, slow: Slow<S, Req, B>) -> Self {
        Self {
            classifier,
            permit: None,
            slow: Some(Box::new(slow)),
            running: None,
        }
    }
}

impl<S, Req, C, B> fmt::Debug for ResponseFuture<S, Req, C, B>
where
    S: Service<Req>,
    B: Borrow<CircuitBreaker>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match self.slow.as_deref() {
            Some(Slow::Admitting { .. }) => "admitting",
            Some(Slow::Recording { .. }) => "recording",
            Some(Slow::Rejected(_)) => "rejected",
            None if self.running.is_some() => "running",
            None => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("phase", &phase)
            .finish_non_exhaustive()
    }
}

impl<S, Req, C, B> ResponseFuture<S, Req, C, B>
where
    S: Service<Req>,
    C: Classify<S::Response, S::Error>,
    B: Borrow<CircuitBreaker> + Send + Sync + 'static,
{
    /// A future whose call already ended (a panic in the inner `call`): record, then
    /// return or resume.
    #[cold]
    pub(super) fn finishing(
        classifier: C,
        permit: Permit<Owned<B>>,
        output: Result<Result<S::Response, S::Error>, Panic>,
    ) -> Self {
        let writing = record(permit, &classifier, &output);
        Self {
            classifier,
            permit: None,
            slow: Some(Box::new(Slow::Recording { writing, output })),
            running: None,
        }
    }
}

/// Records how the inner call ended on `permit`: as the classifier says, or a panic as a
/// failure of its own kind (as the breaker's own futures record it). Inlined always, so
/// that the closed path costs what recording the classifier's outcome alone did.
#[inline(always)]
fn record<'h, B, Res, E>(
    permit: Permit<Owned<B>>,
    classifier: &impl Classify<Res, E>,
    output: &Result<Result<Res, E>, Panic>,
) -> Recording<'h>
where
    B: Borrow<CircuitBreaker> + Send + Sync + 'static,
{
    match output {
        Ok(result) => permit.record(classifier.classify(result)),
        Err(_) => panicked(permit),
    }
}

/// [`record`] of a panic, out of the closed path's way.
#[cold]
#[inline(never)]
fn panicked<'h, B>(permit: Permit<Owned<B>>) -> Recording<'h>
where
    B: Borrow<CircuitBreaker> + Send + Sync + 'static,
{
    permit.record_failure(FailureKind::Panic)
}

/// The response, the inner error boxed, or the panic resumed.
#[inline]
fn finish<Res, E: Into<BoxError>>(output: Result<Result<Res, E>, Panic>) -> Result<Res, BoxError> {
    match output {
        Ok(result) => result.map_err(Into::into),
        Err(panic) => resume_unwind(panic),
    }
}

impl<S, Req, C, B> Future for ResponseFuture<S, Req, C, B>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    C: Classify<S::Response, S::Error>,
    B: Borrow<CircuitBreaker> + Send + Sync + 'static,
{
    type Output = Result<S::Response, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if this.slow.is_some() {
            return poll_slow(this.running, this.permit, this.slow, &*this.classifier, cx);
        }
        let Some(future) = this.running.as_mut().as_pin_mut() else {
            panic!("a circuit breaker service's future polled after completion");
        };
        let output = match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(result)) => Ok(result),
            Err(panic) => Err(panic),
        };
        this.running.set(None);
        let permit = this.permit.take().expect("a running call holds its permit");
        match record(permit, &*this.classifier, &output) {
            Recording::Done => Poll::Ready(finish(output)),
            writing => {
                *this.slow = Some(Box::new(Slow::Recording { writing, output }));
                poll_slow(this.running, this.permit, this.slow, &*this.classifier, cx)
            }
        }
    }
}

/// Drives the boxed phases: admission (then the inner call, polled by the closed path's
/// code on the next loop), a transition being written, a rejection.
#[inline(never)]
fn poll_slow<S, Req, C, B>(
    mut running: Pin<&mut Option<S::Future>>,
    permit: &mut Option<Permit<Owned<B>>>,
    slow: &mut Option<Box<Slow<S, Req, B>>>,
    classifier: &C,
    cx: &mut Context<'_>,
) -> Poll<Result<S::Response, BoxError>>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    C: Classify<S::Response, S::Error>,
    B: Borrow<CircuitBreaker> + Send + Sync + 'static,
{
    loop {
        match slow.as_deref_mut() {
            Some(Slow::Admitting { admission, .. }) => {
                let admitted = ready!(admission.as_mut().poll(cx));
                let Some(Slow::Admitting {
                    mut service,
                    request,
                    ..
                }) = slow.take().map(|phase| *phase)
                else {
                    unreachable!("matched above");
                };
                let admitted = match admitted {
                    Ok(admitted) => admitted,
                    Err(circuit) => return Poll::Ready(Err(open_error(circuit))),
                };
                match catch_unwind(AssertUnwindSafe(|| service.call(request))) {
                    Ok(future) => {
                        running.set(Some(future));
                        *permit = Some(admitted);
                    }
                    Err(panic) => {
                        let output = Err(panic);
                        let writing = record(admitted, classifier, &output);
                        *slow = Some(Box::new(Slow::Recording { writing, output }));
                    }
                }
            }
            Some(Slow::Recording { writing, .. }) => {
                ready!(Pin::new(writing).poll(cx));
                let Some(Slow::Recording { output, .. }) = slow.take().map(|phase| *phase) else {
                    unreachable!("matched above");
                };
                return Poll::Ready(finish(output));
            }
            Some(Slow::Rejected(_)) => {
                let Some(Slow::Rejected(circuit)) = slow.take().map(|phase| *phase) else {
                    unreachable!("matched above");
                };
                return Poll::Ready(Err(open_error(circuit)));
            }
            None => {
                let Some(future) = running.as_mut().as_pin_mut() else {
                    panic!("a circuit breaker service's future polled after completion");
                };
                let output = match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
                    Ok(Poll::Pending) => return Poll::Pending,
                    Ok(Poll::Ready(result)) => Ok(result),
                    Err(panic) => Err(panic),
                };
                running.set(None);
                let admitted = permit.take().expect("a running call holds its permit");
                let writing = record(admitted, classifier, &output);
                *slow = Some(Box::new(Slow::Recording { writing, output }));
            }
        }
    }
}
