//! `Permit`: one admitted call, and the report of how it ended ([`Permit::record`]). The
//! closed path records inline; a trip or a probe's outcome is a boxed future. One type for
//! every path: the call futures and the attribute hold their circuit borrowed (`&Circuit`),
//! a tower service's future through a handle it owns ([`super::owned`]).

use std::fmt;

use super::circuit::Circuit;
use super::seam::Seam;
use super::transitions::{FollowUp, count_closed, count_sampled, end_probe, follow_up};
use crate::blocking::block_on;
use crate::deadline;
use crate::events::FailureKind;
use crate::observe::CallClock;
use crate::protocol::CircuitState;
use crate::protocol::machine::Outcome;

pub use super::recording::Recording;

/// Which kind of call a [`Permit`] admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PermitKind {
    /// The circuit is closed.
    Closed,
    /// The circuit is closed and suspected by the fleet: the call was sampled, and its
    /// success is reported to the suspicion's counters too.
    Sampled,
    /// This environment's one probe, admitted through the seam its outcome goes to.
    Probe(Seam),
    /// Every circuit is disabled (`CIRCUIT_BREAKER_DISABLED`).
    Bypass,
    /// The outcome was recorded; nothing is left to do.
    Spent,
}

/// How a [`Permit`] reaches its circuit: borrowed (`&Circuit`), or through a handle the
/// permit owns, so that a future holding it need not borrow the breaker.
#[doc(hidden)]
pub trait CircuitHandle {
    /// The circuit the permit admitted its call to.
    fn circuit(&self) -> &Circuit;
}

impl CircuitHandle for &Circuit {
    #[inline(always)]
    fn circuit(&self) -> &Circuit {
        self
    }
}

/// Admission of one call, reaching its circuit through `H`. Report how it ended with
/// [`Permit::record`] (or its blocking twin); a permit dropped unrecorded (a cancelled
/// future) counts as ignored and frees the probe slot it holds.
#[doc(hidden)]
#[must_use = "report the call's outcome with `record`"]
pub struct Permit<H: CircuitHandle> {
    handle: H,
    kind: PermitKind,
    /// When the call was admitted (unix millis), if the circuit's policy times calls;
    /// else 0.
    started: u64,
    /// When the call started, if its duration goes to the metrics.
    call_clock: CallClock,
}

impl<H: CircuitHandle> fmt::Debug for Permit<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("circuit", self.circuit().name())
            .field("kind", &self.kind)
            .finish()
    }
}

impl<'a> Permit<&'a Circuit> {
    /// A permit admitted now; reads the clock only if the policy times calls.
    #[inline]
    pub(super) fn new(circuit: &'a Circuit, kind: PermitKind) -> Self {
        let started = match circuit.counts().times_calls() || circuit.call_timeout_millis() != 0 {
            true => circuit.now(),
            false => 0,
        };
        Self::new_at(circuit, kind, started)
    }

    /// A permit admitted at `now` (unix millis), read by the caller.
    #[inline]
    pub(super) fn new_at(circuit: &'a Circuit, kind: PermitKind, now: u64) -> Self {
        Self {
            handle: circuit,
            kind,
            started: now,
            call_clock: circuit.metrics().start(),
        }
    }
}

impl<'a> Permit<&'a Circuit> {
    /// The circuit, for as long as the permit's borrow of it.
    #[inline(always)]
    pub(super) fn circuit_ref(&self) -> &'a Circuit {
        self.handle
    }
}

impl<H: CircuitHandle> Permit<H> {
    #[inline(always)]
    fn circuit(&self) -> &Circuit {
        self.handle.circuit()
    }

    /// The same admission, reaching its circuit through `handle` (which must lead to the
    /// same circuit): the probe slot, if any, goes with it.
    #[cfg(feature = "tower")]
    #[inline]
    pub(super) fn through<O: CircuitHandle>(mut self, handle: O) -> Permit<O> {
        debug_assert!(std::ptr::eq(self.circuit(), handle.circuit()));
        Permit {
            handle,
            kind: std::mem::replace(&mut self.kind, PermitKind::Spent),
            started: self.started,
            call_clock: self.call_clock,
        }
    }

    /// Shows in the metrics the state this permit admitted its call in.
    pub(super) fn show_state(&self) {
        let state = match self.kind {
            PermitKind::Closed | PermitKind::Sampled => CircuitState::Closed,
            PermitKind::Probe(_) => CircuitState::HalfOpen,
            PermitKind::Bypass | PermitKind::Spent => return,
        };
        self.circuit().metrics().show(state);
    }

    /// Reports how the admitted call ended. The closed path completes inline; only a
    /// transition (trip, probe outcome) or a report to the fleet is a boxed future, which
    /// holds this permit (its handle, and a probe's slot until the future takes it over).
    // Always, with the metrics: their increment made it just too big to inline.
    #[cfg_attr(feature = "metrics", inline(always))]
    #[cfg_attr(not(feature = "metrics"), inline)]
    pub fn record<'h>(mut self, outcome: Outcome) -> Recording<'h>
    where
        H: Send + 'h,
    {
        if self.record_inline(outcome) {
            return Recording::Done;
        }
        self.record_transition(outcome, FailureKind::Error)
    }

    /// [`record`](Self::record) of a failure of `kind` (a panic, a late blocking call).
    #[inline(never)]
    pub fn record_failure<'h>(self, kind: FailureKind) -> Recording<'h>
    where
        H: Send + 'h,
    {
        self.record_transition(Outcome::Failure, kind)
    }

    /// [`record`](Self::record) of a call abandoned at its deadline (`kind`), admitted
    /// when the circuit had counted `calls_at_start` closed calls.
    #[inline(never)]
    pub(super) fn record_abandoned<'h>(
        mut self,
        kind: FailureKind,
        calls_at_start: u64,
    ) -> Recording<'h>
    where
        H: Send + 'h,
    {
        match std::mem::replace(&mut self.kind, PermitKind::Spent) {
            PermitKind::Closed | PermitKind::Sampled => {
                self.report_end(Outcome::Failure, kind);
                let next = count_closed(
                    self.circuit(),
                    Outcome::Failure,
                    self.started,
                    kind,
                    Some(calls_at_start),
                );
                match next {
                    Some(next) => self.writing(next),
                    None => Recording::Done,
                }
            }
            other => {
                self.kind = other;
                self.record_transition(Outcome::Failure, kind)
            }
        }
    }

    /// The blocking twin of [`record`](Self::record). A blocking call cannot be
    /// abandoned: one that returns after its call timeout, or near the invocation's
    /// deadline, counts as a failure of that kind whatever it returned.
    // Always, with the metrics: their increment made it just too big to inline.
    #[cfg_attr(feature = "metrics", inline(always))]
    #[cfg_attr(not(feature = "metrics"), inline)]
    pub fn record_blocking(mut self, outcome: Outcome)
    where
        H: Send,
    {
        if deadline::raw() | self.circuit().call_timeout_millis() != 0 {
            return self.record_late_blocking(outcome);
        }
        if !self.record_inline(outcome) {
            self.record_transition_blocking(outcome, FailureKind::Error);
        }
    }

    /// [`record_blocking`](Self::record_blocking) under a deadline.
    #[cold]
    #[inline(never)]
    fn record_late_blocking(mut self, outcome: Outcome)
    where
        H: Send,
    {
        let circuit = self.circuit();
        let now = circuit.now();
        let timed_out = match circuit.call_timeout_millis() {
            0 => false,
            timeout => now.saturating_sub(self.started) >= timeout,
        };
        let margin = circuit.deadline_margin_millis();
        // Late: it ran into the margin before the deadline, having started before it (a
        // call that starts inside the margin had no room to begin with).
        let near_deadline = deadline::current_unix_millis().is_some_and(|deadline| {
            let at = deadline.saturating_sub(margin);
            now >= at && (self.started == 0 || self.started < at)
        });
        let late = match (timed_out, near_deadline) {
            (true, _) => Some(FailureKind::CallTimeout),
            (false, true) => Some(FailureKind::InvocationDeadline),
            (false, false) => None,
        };
        match late {
            Some(kind) if outcome != Outcome::Ignored => {
                self.record_transition_blocking(Outcome::Failure, kind)
            }
            _ if self.record_inline(outcome) => {}
            _ => self.record_transition_blocking(outcome, FailureKind::Error),
        }
    }

    /// The blocking twin of [`record_transition`](Self::record_transition), out of line
    /// for the same reason.
    #[inline(never)]
    fn record_transition_blocking(self, outcome: Outcome, kind: FailureKind)
    where
        H: Send,
    {
        // Only a transition is waited for: parking needs a waker, which allocates.
        if let writing @ Recording::Writing(_) = self.record_transition(outcome, kind) {
            block_on(writing);
        }
    }

    /// Records the closed path's success, the one outcome that needs no lock and no
    /// store, inline in the caller; false for any other outcome.
    // Always, with the metrics: their increment made it just too big to inline.
    #[cfg_attr(feature = "metrics", inline(always))]
    #[cfg_attr(not(feature = "metrics"), inline)]
    fn record_inline(&mut self, outcome: Outcome) -> bool {
        let inline = self.kind == PermitKind::Closed
            && outcome == Outcome::Success
            && self.circuit().counts().note_success(self.started);
        if inline {
            self.kind = PermitKind::Spent;
            self.circuit().metrics().succeeded(self.call_clock);
        }
        inline
    }

    /// Reports to the metrics how the call ended, other than by the closed path's success.
    #[inline]
    fn report_end(&self, outcome: Outcome, kind: FailureKind) {
        let circuit = self.circuit();
        let now = || circuit.now();
        let metrics = circuit.metrics();
        metrics.ended(outcome, kind, self.call_clock, self.started, now);
    }

    /// Every outcome but the closed path's success, out of line so that the hot path inlines.
    #[inline(never)]
    fn record_transition<'h>(mut self, outcome: Outcome, kind: FailureKind) -> Recording<'h>
    where
        H: Send + 'h,
    {
        if self.kind != PermitKind::Spent {
            self.report_end(outcome, kind);
        }
        match self.kind {
            PermitKind::Closed => {
                self.kind = PermitKind::Spent;
                match count_closed(self.circuit(), outcome, self.started, kind, None) {
                    Some(next) => self.writing(next),
                    None => Recording::Done,
                }
            }
            PermitKind::Sampled => {
                self.kind = PermitKind::Spent;
                match count_sampled(self.circuit(), outcome, self.started, kind) {
                    Some(next) => self.writing(next),
                    None => Recording::Done,
                }
            }
            PermitKind::Probe(seam) => {
                let outcome = self.circuit().counts().probe_outcome(outcome, self.started);
                // Reported: spent for the metrics. The probe slot is the ending's until the
                // outcome's future takes it over (a future dropped unpolled frees it).
                self.kind = PermitKind::Spent;
                let ending = ProbeEnding {
                    permit: self,
                    holds_slot: true,
                };
                Recording::Writing(Box::pin(async move {
                    let mut ending = ending;
                    let write = end_probe(ending.permit.handle.circuit(), seam, outcome, kind);
                    ending.holds_slot = false;
                    write.await;
                }))
            }
            PermitKind::Bypass | PermitKind::Spent => {
                self.kind = PermitKind::Spent;
                Recording::Done
            }
        }
    }

    /// The future that writes a closed call's `next` step, holding this permit: the handle it reaches the
    /// circuit through travels with it, borrowed or owned alike.
    fn writing<'h>(self, next: FollowUp) -> Recording<'h>
    where
        H: Send + 'h,
    {
        Recording::Writing(Box::pin(async move {
            let mut permit = self;
            permit.kind = PermitKind::Spent;
            follow_up(permit.circuit(), next).await;
        }))
    }
}

/// A probe's permit whose outcome was reported and whose write has not taken the probe
/// slot over yet: dropped so (a recording dropped unpolled), it frees the slot, and counts
/// nothing more in the metrics (the permit is spent).
struct ProbeEnding<H: CircuitHandle> {
    permit: Permit<H>,
    holds_slot: bool,
}

impl<H: CircuitHandle> Drop for ProbeEnding<H> {
    fn drop(&mut self) {
        if self.holds_slot {
            self.permit.circuit().release_probe();
        }
    }
}

impl<H: CircuitHandle> Drop for Permit<H> {
    /// Inline, so that the closed path's spent permit costs its caller two compares, not a
    /// call into this crate (a user's build without LTO inlines nothing else).
    #[inline]
    fn drop(&mut self) {
        if self.kind != PermitKind::Spent {
            // Never reported (a cancelled future): ignored.
            self.circuit().metrics().dropped();
        }
        if matches!(self.kind, PermitKind::Probe(_)) {
            // Cancelled mid-probe: free the slot so the next call can probe.
            self.circuit().release_probe();
        }
    }
}

/// Counts an `Err` only if the classifier says so.
#[doc(hidden)]
pub fn classify<T, E, V: ErrorVerdict>(result: &Result<T, E>, counts: impl Fn(&E) -> V) -> Outcome {
    match result {
        Ok(_) => Outcome::Success,
        Err(e) => counts(e).outcome(),
    }
}

/// What an error test (`call_with`'s, the attribute's `handled`) says of an error: a
/// `bool` (`true`: it counts as a failure; `false`: it is ignored), or an [`Outcome`], which
/// can also say how long the downstream asked to be left alone ([`Outcome::OpenFor`]: a
/// 429 with `Retry-After`).
///
/// ```
/// use std::time::Duration;
/// use breaker_runtime::{ErrorVerdict, Outcome};
/// assert_eq!(true.outcome(), Outcome::Failure);
/// assert_eq!(false.outcome(), Outcome::Ignored);
/// let asked = Outcome::OpenFor(Duration::from_secs(20));
/// assert_eq!(asked.outcome(), asked);
/// ```
pub trait ErrorVerdict {
    /// The outcome the verdict stands for.
    fn outcome(self) -> Outcome;
}

impl ErrorVerdict for bool {
    #[inline]
    fn outcome(self) -> Outcome {
        match self {
            true => Outcome::Failure,
            false => Outcome::Ignored,
        }
    }
}

impl ErrorVerdict for Outcome {
    #[inline]
    fn outcome(self) -> Outcome {
        self
    }
}
