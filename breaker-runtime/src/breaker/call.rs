//! The future behind [`CircuitBreaker::call_with`], written by hand.
//!
//! An `async fn` would behave the same; this one costs less on the closed path. Admission,
//! the caller's future and the outcome are handled in one poll that the compiler can
//! inline, and the slow phases (admission through the store, a transition being written)
//! sit behind pointers that are null on the closed path, so dropping the finished future
//! costs next to nothing.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{Acquire, CatchUnwind, CircuitBreaker, Finish, Permit, catch_unwind_future, classify};
use crate::machine::Outcome;
use crate::{CircuitBreakerOpenError, CircuitInfo};

/// What a panic in the caller's code carries until it is resumed.
type Panic = Box<dyn Any + Send>;

/// A phase that waits on the store. Boxed in [`CallWith`]: one pointer, null on the closed
/// path, keeps the finished future's drop small enough to inline.
enum Slow<'a, O> {
    /// The slow path's admission: a cache refresh or a probe election.
    Admitting(Acquire<'a>),
    /// A transition being written (trip, probe outcome), and the caller's output waiting.
    Recording(Finish<'a>, Result<O, Panic>),
}

pin_project_lite::pin_project! {
    /// Admits the call, runs `make()`'s future under the permit, records the outcome.
    #[must_use = "futures do nothing unless awaited"]
    #[project = CallWithProj]
    pub(super) struct CallWith<'a, F, Fut, C, O> {
        breaker: &'a CircuitBreaker,
        counts: C,
        // Some until the first poll: nothing is admitted and `make` has not run before.
        make: Option<F>,
        // Some while the caller's future runs: it admitted `running`.
        permit: Option<Permit<'a>>,
        slow: Option<Box<Slow<'a, O>>>,
        #[pin]
        running: Option<CatchUnwind<Fut>>,
    }
}

impl<'a, F, Fut, C, O> CallWith<'a, F, Fut, C, O> {
    #[inline]
    pub(super) fn new(breaker: &'a CircuitBreaker, counts: C, make: F) -> Self {
        Self {
            breaker,
            counts,
            make: Some(make),
            permit: None,
            slow: None,
            running: None,
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
        let mut this = self.project();
        if let Some(Slow::Recording(..)) = this.slow.as_deref() {
            return poll_recording(this.slow, cx);
        }
        if let Some(make) = this.make.take() {
            let permit = match this.breaker.fast_permit() {
                Some(permit) => permit,
                None => match admit_slow(this.breaker, this.slow, cx) {
                    Poll::Pending => {
                        *this.make = Some(make);
                        return Poll::Pending;
                    }
                    Poll::Ready(Ok(permit)) => permit,
                    Poll::Ready(Err(circuit)) => {
                        return Poll::Ready(Err(CircuitBreakerOpenError { circuit }.into()));
                    }
                },
            };
            if let Err(panic) = start(this.running.as_mut(), make) {
                return finish(this.slow, permit, Err(panic), &*this.counts, cx);
            }
            // Polled at once: a call that completes now never stores its permit.
            return poll_running(this, permit, cx);
        }
        // Later polls: a permit is held only while the caller's future runs.
        let Some(permit) = this.permit.take() else {
            panic!("CircuitBreaker::call polled after completion");
        };
        poll_running(this, permit, cx)
    }
}

/// Polls the caller's future, admitted by `permit`: keeps the permit while it waits,
/// records the outcome when it is done.
#[inline]
fn poll_running<'a, F, Fut, C, T, E>(
    mut this: CallWithProj<'_, 'a, F, Fut, C, Result<T, E>>,
    permit: Permit<'a>,
    cx: &mut Context<'_>,
) -> Poll<Result<T, E>>
where
    Fut: Future<Output = Result<T, E>>,
    C: Fn(&E) -> bool,
{
    let Some(future) = this.running.as_mut().as_pin_mut() else {
        unreachable!("a permit is held only while the caller's future runs");
    };
    let Poll::Ready(output) = future.poll(cx) else {
        *this.permit = Some(permit);
        return Poll::Pending;
    };
    this.running.set(None);
    finish(this.slow, permit, output, &*this.counts, cx)
}

/// Admission when the cache cannot decide alone: a rejection from the cached record, or the
/// slow path (store read, probe election), polled until it decides.
#[inline(never)]
fn admit_slow<'a, O>(
    breaker: &'a CircuitBreaker,
    slow: &mut Option<Box<Slow<'a, O>>>,
    cx: &mut Context<'_>,
) -> Poll<Result<Permit<'a>, CircuitInfo>> {
    let pending = match slow.as_deref_mut() {
        Some(Slow::Admitting(pending)) => pending,
        _ => match breaker.acquire() {
            Acquire::Ready(decision) => {
                return Poll::Ready(decision.expect("a new Acquire holds its decision"));
            }
            pending => match &mut **slow.insert(Box::new(Slow::Admitting(pending))) {
                Slow::Admitting(pending) => pending,
                Slow::Recording(..) => unreachable!("just inserted"),
            },
        },
    };
    let decision = std::task::ready!(Pin::new(pending).poll(cx));
    *slow = None;
    Poll::Ready(decision)
}

/// Records the call's outcome and returns its output, once a transition it causes (trip,
/// probe outcome) is written.
#[inline]
fn finish<'a, T, E>(
    slow: &mut Option<Box<Slow<'a, Result<T, E>>>>,
    permit: Permit<'a>,
    output: Result<Result<T, E>, Panic>,
    counts: impl Fn(&E) -> bool,
    cx: &mut Context<'_>,
) -> Poll<Result<T, E>> {
    let outcome = match &output {
        Ok(result) => classify(result, counts),
        Err(_) => Outcome::Failure,
    };
    match permit.finish(outcome) {
        Finish::Done => Poll::Ready(resume(output)),
        transition => {
            *slow = Some(Box::new(Slow::Recording(transition, output)));
            poll_recording(slow, cx)
        }
    }
}

#[inline(never)]
fn poll_recording<O>(slow: &mut Option<Box<Slow<'_, O>>>, cx: &mut Context<'_>) -> Poll<O> {
    let Some(Slow::Recording(transition, _)) = slow.as_deref_mut() else {
        unreachable!("only called while a transition is written");
    };
    std::task::ready!(Pin::new(transition).poll(cx));
    match slow.take().map(|slow| *slow) {
        Some(Slow::Recording(_, output)) => Poll::Ready(resume(output)),
        _ => unreachable!("checked above"),
    }
}

/// The caller's output, or its panic resumed.
fn resume<O>(output: Result<O, Panic>) -> O {
    output.unwrap_or_else(|panic| resume_unwind(panic))
}

/// Creates the caller's future in `running`. A panic in `make` itself is returned, to be
/// counted like a panic while polling.
#[inline]
fn start<F, Fut>(mut running: Pin<&mut Option<CatchUnwind<Fut>>>, make: F) -> Result<(), Panic>
where
    F: FnOnce() -> Fut,
    Fut: Future,
{
    let future = catch_unwind(AssertUnwindSafe(make))?;
    running.set(Some(catch_unwind_future(future)));
    Ok(())
}
