//! Admission of one call: the closed path's test inline ([`fast_permit`]); a rejection from
//! the cache at once; else the slow path ([`permit_slow`]): a refresh of a stale cache, then
//! run, reject, probe, or elect this environment to probe.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::CircuitBreaker;
use super::circuit::Circuit;
use super::commit::Change;
use super::dispatch::{Event, dispatch};
use super::permit::{Permit, PermitKind};
use super::probe_slot::ProbeSlot;
use super::seam::Seam;
use super::transitions::live_suspicion;
use super::{shedding, slow_start};
use crate::blocking::block_on;
use crate::events::CircuitInfo;
use crate::protocol::machine::Admission;
use crate::protocol::{CircuitRecord, CircuitState};

/// The closed path's admission: a permit when the circuit is bypassed, or known closed
/// and fresh; `None` sends the call to the slow path.
#[doc(hidden)]
#[inline]
pub fn fast_permit(breaker: &CircuitBreaker) -> Option<Permit<&'_ Circuit>> {
    fast_admission(&breaker.circuit).ok()
}

/// [`fast_permit`] of a circuit, or the time it read (unix millis), so that the open path
/// that follows does not read the clock again. Always inlined: with `#[inline]` alone it
/// stayed out of line (it has five callers), and the closed path cost 28 more instructions.
#[inline(always)]
pub(super) fn fast_admission(circuit: &Circuit) -> Result<Permit<&'_ Circuit>, u64> {
    if circuit.disabled() {
        return Ok(Permit::new(circuit, PermitKind::Bypass));
    }
    let closed_until = circuit.closed_until();
    // A recent time, not the clock: an atomic load instead of a clock read per call.
    let now = circuit.recent_now();
    match now < closed_until {
        true => Ok(Permit::new_at(circuit, PermitKind::Closed, now)),
        false => Err(circuit.known(now)),
    }
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
    match reject_from_cache(circuit, now) {
        Some(info) => PermitRequest::Rejected(Some(info)),
        None => PermitRequest::Pending(Box::pin(permit_slow(circuit))),
    }
}

/// The blocking admission: [`fast_permit`], else [`request_permit`] driven to its end.
#[doc(hidden)]
#[inline]
pub fn request_permit_blocking(
    breaker: &CircuitBreaker,
) -> Result<Permit<&'_ Circuit>, CircuitInfo> {
    let circuit = &*breaker.circuit;
    match fast_admission(circuit) {
        Ok(permit) => Ok(permit),
        Err(now) => admit_blocking(circuit, now),
    }
}

/// The blocking admission after the closed path said no at `now`: a rejection from the
/// cache, else the slow path driven to its end. Out of line, so that the closed path's
/// caller stays as small as it was.
#[cold]
#[inline(never)]
pub(super) fn admit_blocking(
    circuit: &Circuit,
    now: u64,
) -> Result<Permit<&'_ Circuit>, CircuitInfo> {
    match reject_from_cache(circuit, now) {
        Some(info) => Err(info),
        None => block_on(permit_slow(circuit)),
    }
}

/// [`Circuit::reject_from_cache`], a rejection counted (what [`dispatch`] does with
/// [`Event::Rejected`], without its call: the open path's share of a rejection).
#[inline]
pub(super) fn reject_from_cache(circuit: &Circuit, now: u64) -> Option<CircuitInfo> {
    let rejected = circuit.reject_from_cache(now);
    if let Some(info) = &rejected {
        circuit.metrics().rejected(info.state);
    }
    rejected
}

/// The blocking slow path, once the cache did not reject: [`permit_slow`] driven to its
/// end.
#[cold]
#[inline(never)]
pub(super) fn permit_slow_blocking(circuit: &Circuit) -> Result<Permit<&'_ Circuit>, CircuitInfo> {
    block_on(permit_slow(circuit))
}

/// [`decide_slow`], its decision shown: a rejection dispatched, or the state the circuit
/// admitted the call in shown in the metrics.
pub(super) async fn permit_slow(circuit: &Circuit) -> Result<Permit<&'_ Circuit>, CircuitInfo> {
    let decision = decide_slow(circuit).await;
    match &decision {
        Ok(permit) => permit.show_state(),
        Err(info) => dispatch(circuit, Event::Rejected(info.state)),
    }
    decision
}

/// Admission when the cache cannot decide alone: refresh a stale cache, then run, reject,
/// probe, or elect this environment to probe (after a strongly consistent read when it has
/// no first right; locally when the store cannot be reached), on the record of the seam
/// the circuit chose.
async fn decide_slow(circuit: &Circuit) -> Result<Permit<&'_ Circuit>, CircuitInfo> {
    if circuit.disabled() {
        return Ok(Permit::new(circuit, PermitKind::Bypass));
    }
    let now = circuit.now();
    // Judged before the refresh, which makes the copy fresh.
    let quiet = circuit.lock().quiet_at(now);
    circuit.refresh_if_stale(now).await;
    let seam = circuit.seam(&circuit.lock(), now);
    let (admission, record) = seam.admission(circuit, now, false, false, quiet);
    match admission {
        Admission::Run => {
            slow_start::admit(circuit, seam, &record, now)?;
            shedding::admit(circuit, seam, &record, now)?;
            return Ok(closed(circuit, seam, &record, now));
        }
        Admission::Reject => return reject(circuit, seam, &record),
        _ => {}
    }
    // One probe, election or verifying read per process at a time.
    let Some(slot) = ProbeSlot::claim(circuit) else {
        return reject(circuit, seam, &record);
    };
    let (mut admission, mut record) = seam.admission(circuit, now, true, false, quiet);
    if admission == Admission::Verify {
        let answered = circuit.read_and_adopt(now, true).await;
        (admission, record) = seam.admission(circuit, now, true, answered, quiet);
    }
    let (election, alone) = match admission {
        Admission::Run => {
            slow_start::admit(circuit, seam, &record, now)?;
            shedding::admit(circuit, seam, &record, now)?;
            return Ok(Permit::new(circuit, PermitKind::Closed));
        }
        Admission::Reject | Admission::Verify => return reject(circuit, seam, &record),
        Admission::Probe => return Ok(probe(seam, slot, quiet)),
        Admission::ElectAlone(election) => (election, true),
        Admission::Elect(election) => (election, false),
    };
    let change = Change {
        from: record.state,
        base: record,
        transition: election,
        cause: None,
    };
    let elected = seam.commit(circuit, change, alone, now).await;
    if elected.counts {
        return Ok(probe(seam, slot, quiet));
    }
    drop(slot);
    match elected.record.state {
        CircuitState::Closed => {
            slow_start::admit(circuit, seam, &elected.record, now)?;
            shedding::admit(circuit, seam, &elected.record, now)?;
            Ok(Permit::new(circuit, PermitKind::Closed))
        }
        _ => reject(circuit, seam, &elected.record),
    }
}

/// A closed call's permit on `record` at `now`: sampled, one in
/// [`SAMPLE_WEIGHT`](crate::protocol::SAMPLE_WEIGHT), while the shared record shows a
/// suspicion of the fleet that this environment takes part in. A suspicion that ended is taken off the closed path's horizon.
fn closed<'a>(
    circuit: &'a Circuit,
    seam: Seam,
    record: &CircuitRecord,
    now: u64,
) -> Permit<&'a Circuit> {
    let Some(until) = record.suspected_until else {
        return Permit::new(circuit, PermitKind::Closed);
    };
    if record.live_suspicion(now / 1000).is_none() {
        if until <= now / 1000 && circuit.closed_until() == 0 {
            circuit.publish(&circuit.lock());
        }
        return Permit::new(circuit, PermitKind::Closed);
    }
    let takes_part = || live_suspicion(circuit, now).is_some();
    match seam == Seam::Store && takes_part() && circuit.reports().sampled(now) {
        true => Permit::new(circuit, PermitKind::Sampled),
        false => Permit::new(circuit, PermitKind::Closed),
    }
}

/// A call `seam`'s `record` rejects: rejected, or run as a closed call when the seam says
/// it runs all the same.
fn reject<'a>(
    circuit: &'a Circuit,
    seam: Seam,
    record: &CircuitRecord,
) -> Result<Permit<&'a Circuit>, CircuitInfo> {
    match seam.rejection(circuit, record) {
        Some(info) => Err(info),
        None => Ok(Permit::new(circuit, PermitKind::Closed)),
    }
}

/// A probe's permit, which takes the slot over and releases it when the probe ends; a
/// probe on a `quiet` call hands the probe over when it ends.
fn probe(seam: Seam, slot: ProbeSlot<'_>, quiet: bool) -> Permit<&'_ Circuit> {
    let circuit = slot.keep();
    seam.probe_started(circuit, quiet);
    Permit::new(circuit, PermitKind::Probe(seam))
}

/// A borrowed permit, or what the rejection reports.
type Admitted<'a> = Result<Permit<&'a Circuit>, CircuitInfo>;

/// The future of [`request_permit`]: ready at once when the cache rejects.
#[doc(hidden)]
#[must_use = "futures do nothing unless awaited"]
pub enum PermitRequest<'a> {
    /// Rejected from the cached record, decided inline (taken by the poll that returns it).
    Rejected(Option<CircuitInfo>),
    /// The slow path: cache refresh, election.
    Pending(Pin<Box<dyn Future<Output = Admitted<'a>> + Send + 'a>>),
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
    type Output = Admitted<'a>;

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
