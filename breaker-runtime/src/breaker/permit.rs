//! Admission of one call ([`Permit`]) and the report of how it ended
//! ([`Permit::record`]). The closed path decides both inline; everything else (a rejection
//! from the cache, a refresh, an election, a trip, a probe outcome) is out of line.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::CircuitBreaker;
use super::circuit::Circuit;
use crate::CircuitInfo;
use crate::blocking::block_on;
use crate::protocol::machine::Outcome;

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
            .field("circuit", &self.circuit.name)
            .field("kind", &self.kind)
            .finish()
    }
}

impl<'a> Permit<'a> {
    /// A permit admitted now; reads the clock only if the policy times calls.
    #[inline]
    pub(super) fn new(circuit: &'a Circuit, kind: PermitKind) -> Self {
        let started = match circuit.times_calls() {
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
            && self.circuit.note_closed_success(self.started);
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
            PermitKind::Closed => match circuit.count_closed(outcome, self.started) {
                Some(failures) => Recording::Writing(Box::pin(circuit.trip(failures))),
                None => Recording::Done,
            },
            PermitKind::Probe => {
                let outcome = circuit.probe_outcome(outcome, self.started);
                Recording::Writing(Box::pin(circuit.end_probe(outcome)))
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

/// The closed path's admission, decided inline; `None` means [`request_permit`] must
/// decide (open, half-open, stale cache).
#[doc(hidden)]
#[inline]
pub fn fast_permit(breaker: &CircuitBreaker) -> Option<Permit<'_>> {
    breaker.circuit.fast_permit()
}

/// Asks to run one call once [`fast_permit`] said no. `Err` carries what a rejection
/// reports. A rejection from the cached record is ready at once; only the slow path is a
/// (boxed) future. (Called first, it still decides right, by the slow path.)
#[doc(hidden)]
pub fn request_permit(breaker: &CircuitBreaker) -> PermitRequest<'_> {
    request_permit_at(breaker, None)
}

/// [`request_permit`] with the time the closed path read (`None`: read it here).
#[inline]
pub(super) fn request_permit_at(breaker: &CircuitBreaker, now: Option<u64>) -> PermitRequest<'_> {
    let circuit = &*breaker.circuit;
    let now = now.unwrap_or_else(|| circuit.now());
    match circuit.reject_from_cache(now) {
        Some(info) => PermitRequest::Rejected(Some(info)),
        None => PermitRequest::Pending(Box::pin(circuit.permit_slow())),
    }
}

/// The blocking admission: [`fast_permit`], else [`request_permit`] driven to its end.
#[doc(hidden)]
#[inline]
pub fn request_permit_blocking(breaker: &CircuitBreaker) -> Result<Permit<'_>, CircuitInfo> {
    let circuit = &*breaker.circuit;
    match circuit.fast_admission() {
        Ok(permit) => Ok(permit),
        Err(now) => admit_blocking(circuit, now),
    }
}

/// The blocking admission after the closed path said no at `now`: a rejection from the
/// cache, else the slow path driven to its end. Out of line, so that the closed path's
/// caller stays as small as it was.
#[cold]
#[inline(never)]
fn admit_blocking(circuit: &Circuit, now: u64) -> Result<Permit<'_>, CircuitInfo> {
    match circuit.reject_from_cache(now) {
        Some(info) => Err(info),
        None => block_on(circuit.permit_slow()),
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
