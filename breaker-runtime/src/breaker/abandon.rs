//! Abandoning an admitted call at its deadline: the earlier of the circuit's
//! `call_timeout` and the invocation's deadline less the margin. The deadline is armed only
//! once the call waits (a call done in its first poll pays nothing for it); when it comes,
//! the caller's future is dropped, the failure is written, and the call ends with a
//! [`CallAbandonedError`]. `CircuitBreaker::call`'s future and the attribute's run with a
//! callback ([`super::run_admitted`]) both end calls this way.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use super::admitted::{CallDeadline, CatchUnwind, SlowPhase, SlowSlot};
use super::circuit::Circuit;
use super::dispatch::{Event, dispatch};
use super::permit::Permit;
use crate::deadline;
use crate::error::{Abandoned, CallAbandonedError};
use crate::events::FailureKind;
use crate::timer::Timer;

/// Arms the deadline of a call just admitted: the earlier of its call timeout and the
/// invocation's deadline minus the margin.
#[cold]
#[inline(never)]
fn arm_deadline<O>(circuit: &Circuit, slow: &mut SlowSlot<'_, O>) {
    let now = circuit.now();
    let by_timeout = match circuit.call_timeout_millis() {
        0 => None,
        timeout => Some((now.saturating_add(timeout), FailureKind::CallTimeout)),
    };
    // A deadline already past is not this call's to enforce (an emulator's, or a skewed
    // clock's); one nearer than the margin leaves the call until the deadline itself.
    let by_deadline = deadline::current_unix_millis()
        .filter(|deadline| *deadline > now)
        .map(|deadline| {
            let at = match deadline.saturating_sub(circuit.deadline_margin_millis()) {
                at if at > now => at,
                _ => deadline,
            };
            (at, FailureKind::InvocationDeadline)
        });
    let Some((at, kind)) = [by_timeout, by_deadline]
        .into_iter()
        .flatten()
        .min_by_key(|(at, _)| *at)
    else {
        return;
    };
    if let Some(timer) = Timer::at(&circuit.config().clock, at, now) {
        *slow = Some(Box::new(SlowPhase::Running(CallDeadline {
            timer,
            kind,
            started: now,
            at,
            calls_at_start: circuit.counts().calls(),
        })));
    }
}

/// The call waits: the first time, arms its deadline if one applies (the call timeout
/// runs from then); then abandons it if the deadline has come.
#[inline(never)]
pub(super) fn poll_deadline<'a, Fut: Future, E: From<Box<CallAbandonedError>>>(
    circuit: &'a Circuit,
    mut running: Pin<&mut Option<CatchUnwind<Fut>>>,
    held: &mut Option<Permit<&'a Circuit>>,
    slow: &mut SlowSlot<'a, Fut::Output>,
    cx: &mut Context<'_>,
) -> Poll<Result<Fut::Output, E>> {
    if slow.is_none() && deadline::raw() | circuit.call_timeout_millis() != 0 {
        arm_deadline(circuit, slow);
    }
    let Some(SlowPhase::Running(deadline)) = slow.as_deref_mut() else {
        return Poll::Pending;
    };
    if deadline.timer.poll(cx).is_pending() {
        return Poll::Pending;
    }
    let abandoned = Abandoned {
        kind: deadline.kind,
        // The timer fired, so the deadline has passed, whatever a coarse clock says.
        after: Duration::from_millis(
            circuit
                .now()
                .max(deadline.at)
                .saturating_sub(deadline.started),
        ),
    };
    let calls_at_start = deadline.calls_at_start;
    // Dropping the caller's future is the abandonment.
    running.set(None);
    let Some(permit) = held.take() else {
        unreachable!("a running call holds its permit");
    };
    dispatch(circuit, Event::Abandoned(&abandoned));
    *slow = Some(Box::new(SlowPhase::Abandoning(
        permit.record_abandoned(abandoned.kind, calls_at_start),
        abandoned,
    )));
    poll_abandoning(circuit, slow, cx)
}

/// Writes an abandoned call's failure, then reports the abandonment.
#[inline(never)]
pub(super) fn poll_abandoning<O, E: From<Box<CallAbandonedError>>>(
    circuit: &Circuit,
    slow: &mut SlowSlot<'_, O>,
    cx: &mut Context<'_>,
) -> Poll<Result<O, E>> {
    let Some(SlowPhase::Abandoning(recording, _)) = slow.as_deref_mut() else {
        unreachable!("only called while an abandoned call's failure is written");
    };
    ready!(Pin::new(recording).poll(cx));
    match slow.take().map(|slow| *slow) {
        Some(SlowPhase::Abandoning(_, abandoned)) => {
            let abandoned = Box::new(CallAbandonedError::from_parts(circuit.info(), abandoned));
            Poll::Ready(Err(abandoned.into()))
        }
        _ => unreachable!("checked above"),
    }
}
