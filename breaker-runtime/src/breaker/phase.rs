//! The phases of a guarded call, as one enum: the call future ([`super::call`]) goes through
//! all of them, the attribute's run of an admitted call ([`super::admitted`]) starts at
//! `Running`. Once admitted, both poll the same way: the caller's future under its permit,
//! then, if its outcome causes a transition, the wait for that write, then the output.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use super::admitted::{CatchUnwind, Classify, Panic, resume};
use super::permit::{Permit, PermitRequest, Recording};
use crate::machine::Outcome;

pin_project_lite::pin_project! {
    /// Where a guarded call is. `O` is `Fut::Output`.
    #[project = PhaseProj]
    #[project_replace = PhaseOwned]
    pub(super) enum Phase<'a, F, Fut, O> {
        /// Not yet admitted; `make` has not run.
        Start { make: F },
        /// The slow path decides the admission (a cache refresh, a probe election).
        Admitting { make: F, request: PermitRequest<'a> },
        /// The caller's future runs under its permit.
        Running { permit: Permit<'a>, #[pin] future: CatchUnwind<Fut> },
        /// The call ended; the transition its outcome caused is being written (boxed: the
        /// closed path never gets here, and a small phase keeps its drop inline).
        Recording { waiting: Box<Waiting<'a, O>> },
        /// The output was returned (or the call was rejected).
        Done,
    }
}

/// A call's output, held until the transition its outcome caused is written.
pub(super) struct Waiting<'a, O> {
    recording: Recording<'a>,
    /// Taken when the write is done.
    output: Option<Result<O, Panic>>,
}

impl<O> Waiting<'_, O> {
    #[inline(never)]
    fn poll_output(&mut self, cx: &mut Context<'_>) -> Poll<O> {
        ready!(Pin::new(&mut self.recording).poll(cx));
        let output = self
            .output
            .take()
            .expect("a circuit breaker call polled after completion");
        Poll::Ready(resume(output))
    }
}

impl<'a, F, Fut: Future> Phase<'a, F, Fut, Fut::Output> {
    /// A call admitted by `permit`, about to run `future`.
    #[inline]
    pub(super) fn running(permit: Permit<'a>, future: Fut) -> Self {
        Phase::Running {
            permit,
            future: CatchUnwind::new(future),
        }
    }

    /// Polls an admitted call (`Running` or `Recording`) towards its output.
    #[inline]
    pub(super) fn poll_admitted(
        mut self: Pin<&mut Self>,
        classify: &impl Classify<Fut::Output>,
        cx: &mut Context<'_>,
    ) -> Poll<Fut::Output> {
        match self.as_mut().project() {
            PhaseProj::Running { permit, future } => {
                let output = ready!(future.poll(cx));
                let permit = permit.take();
                self.as_mut().set(Phase::Done);
                self.complete(permit, output, classify, cx)
            }
            PhaseProj::Recording { waiting } => {
                let output = ready!(waiting.poll_output(cx));
                self.set(Phase::Done);
                Poll::Ready(output)
            }
            PhaseProj::Done => panic!("a circuit breaker call polled after completion"),
            PhaseProj::Start { .. } | PhaseProj::Admitting { .. } => {
                unreachable!("a call is polled as admitted only after its admission")
            }
        }
    }

    /// Records how the call admitted by `permit` ended: its output at once, or (a trip, a
    /// probe outcome) the wait for that write, polled here for the first time.
    #[inline]
    pub(super) fn complete(
        mut self: Pin<&mut Self>,
        permit: Permit<'a>,
        output: Result<Fut::Output, Panic>,
        classify: &impl Classify<Fut::Output>,
        cx: &mut Context<'_>,
    ) -> Poll<Fut::Output> {
        let outcome = match &output {
            Ok(output) => classify.outcome(output),
            Err(_) => Outcome::Failure,
        };
        match permit.record(outcome) {
            Recording::Done => Poll::Ready(resume(output)),
            recording => {
                let waiting = Box::new(Waiting {
                    recording,
                    output: Some(output),
                });
                self.as_mut().set(Phase::Recording { waiting });
                self.poll_admitted(classify, cx)
            }
        }
    }
}
