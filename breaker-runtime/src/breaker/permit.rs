//! `Permit`: one admitted call, and the report of how it ended ([`Permit::record`]). The
//! closed path records inline; a trip or a probe's outcome is a boxed future.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::circuit::Circuit;
use super::transitions::{end_probe, trip};
use crate::blocking::block_on;
use crate::protocol::machine::Outcome;
use crate::state::CircuitInfo;

/// Which kind of call a [`Permit`] admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PermitKind {
    /// The circuit is closed.
    Closed,
    /// This environment's one probe.
    Probe,
    /// Every circuit is disabled (`CIRCUIT_BREAKER_DISABLED`).
    Bypass,
    /// The outcome was recorded; nothing is left to do.
    Spent,
}

/// Admission of one call. Report how it ended with [`Permit::record`] (or its blocking
/// twin); a permit dropped unrecorded (a cancelled future) counts as ignored.
#[doc(hidden)]
#[must_use = "report the call's outcome with `record`"]
pub struct Permit<'a> {
    circuit: &'a Circuit,
    kind: PermitKind,
    /// When the call was admitted (unix millis), if the circuit's policy times calls;
    /// else 0.
    started: u64,
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("circuit", self.circuit.name())
            .field("kind", &self.kind)
            .finish()
    }
}

impl<'a> Permit<'a> {
    /// A permit admitted now; reads the clock only if the policy times calls.
    #[inline]
    pub(super) fn new(circuit: &'a Circuit, kind: PermitKind) -> Self {
        let started = match circuit.counts().times_calls() {
            true => circuit.now(),
            false => 0,
        };
        Self::new_at(circuit, kind, started)
    }

    /// A permit admitted at `now` (unix millis), read by the caller.
    #[inline]
    pub(super) fn new_at(circuit: &'a Circuit, kind: PermitKind, now: u64) -> Self {
        Self {
            circuit,
            kind,
            started: now,
        }
    }

    /// The kind of call this permit admitted and when, taken out of it: a future that owns
    /// its breaker holds them and records through the circuit ([`super::owned`]). The
    /// probe slot, if any, goes with the kind.
    #[cfg(feature = "tower")]
    #[inline]
    pub(super) fn detach(mut self) -> (PermitKind, u64) {
        (
            std::mem::replace(&mut self.kind, PermitKind::Spent),
            self.started,
        )
    }

    /// Reports how the admitted call ended. The closed path completes inline; only a
    /// transition (trip, probe outcome) is a boxed future.
    #[inline]
    pub fn record(mut self, outcome: Outcome) -> Recording<'a> {
        if self.record_inline(outcome) {
            return Recording::Done;
        }
        self.record_transition(outcome)
    }

    /// The blocking twin of [`record`](Self::record).
    #[inline]
    pub fn record_blocking(mut self, outcome: Outcome) {
        if !self.record_inline(outcome) {
            self.record_transition_blocking(outcome);
        }
    }

    /// The blocking twin of [`record_transition`](Self::record_transition), out of line
    /// for the same reason.
    #[inline(never)]
    fn record_transition_blocking(self, outcome: Outcome) {
        // Only a transition is waited for: parking needs a waker, which allocates.
        if let writing @ Recording::Writing(_) = self.record_transition(outcome) {
            block_on(writing);
        }
    }

    /// Records the closed path's success, the one outcome that needs no lock and no
    /// store, inline in the caller; false for any other outcome.
    #[inline]
    fn record_inline(&mut self, outcome: Outcome) -> bool {
        let inline = self.kind == PermitKind::Closed
            && outcome == Outcome::Success
            && self.circuit.counts().note_success(self.started);
        if inline {
            self.kind = PermitKind::Spent;
        }
        inline
    }

    /// Every outcome but the closed path's success, out of line so that the hot path inlines.
    #[inline(never)]
    fn record_transition(mut self, outcome: Outcome) -> Recording<'a> {
        let circuit = self.circuit;
        // Spent from here on: the transition's future takes over the probe slot.
        match std::mem::replace(&mut self.kind, PermitKind::Spent) {
            PermitKind::Closed => {
                match circuit
                    .counts()
                    .count(outcome, self.started, circuit.thresholds())
                {
                    Some(failures) => Recording::Writing(Box::pin(trip(circuit, failures))),
                    None => Recording::Done,
                }
            }
            PermitKind::Probe => {
                let outcome = circuit.counts().probe_outcome(outcome, self.started);
                Recording::Writing(Box::pin(end_probe(circuit, outcome)))
            }
            PermitKind::Bypass | PermitKind::Spent => Recording::Done,
        }
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if self.kind == PermitKind::Probe {
            // Cancelled mid-probe: free the slot so the next call can probe.
            self.circuit.release_probe();
        }
    }
}

/// Counts an `Err` only if the classifier says so.
#[doc(hidden)]
pub fn classify<T, E>(result: &Result<T, E>, counts: impl Fn(&E) -> bool) -> Outcome {
    match result {
        Ok(_) => Outcome::Success,
        Err(e) if counts(e) => Outcome::Failure,
        Err(_) => Outcome::Ignored,
    }
}

/// The future of [`request_permit`]: ready at once when the cache rejects.
#[doc(hidden)]
#[must_use = "futures do nothing unless awaited"]
pub enum PermitRequest<'a> {
    /// Rejected from the cached record, decided inline (taken by the poll that returns it).
    Rejected(Option<CircuitInfo>),
    /// The slow path: cache refresh, election.
    Pending(Pin<Box<dyn Future<Output = Result<Permit<'a>, CircuitInfo>> + Send + 'a>>),
}

impl fmt::Debug for PermitRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Rejected(_) => "PermitRequest::Rejected",
            Self::Pending(_) => "PermitRequest::Pending",
        })
    }
}

impl<'a> Future for PermitRequest<'a> {
    type Output = Result<Permit<'a>, CircuitInfo>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Self::Rejected(info) => Poll::Ready(Err(info
                .take()
                .expect("PermitRequest polled after completion"))),
            Self::Pending(pending) => pending.as_mut().poll(cx),
        }
    }
}

/// The future of [`Permit::record`]: done at once unless the outcome is a transition.
#[doc(hidden)]
#[must_use = "futures do nothing unless awaited"]
pub enum Recording<'a> {
    /// Recorded inline.
    Done,
    /// A trip or a probe outcome being written.
    Writing(Pin<Box<dyn Future<Output = ()> + Send + 'a>>),
}

impl fmt::Debug for Recording<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Done => "Recording::Done",
            Self::Writing(_) => "Recording::Writing",
        })
    }
}

impl Future for Recording<'_> {
    type Output = ();

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.get_mut() {
            Self::Done => Poll::Ready(()),
            Self::Writing(writing) => writing.as_mut().poll(cx),
        }
    }
}
