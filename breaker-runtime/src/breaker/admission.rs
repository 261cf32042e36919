//! Admission of one call: the closed path's test inline ([`fast_permit`]); a rejection from
//! the cache at once; else the slow path ([`permit_slow`]): a refresh of a stale cache, then
//! run, reject, probe, or elect this environment to probe.

use super::CircuitBreaker;
use super::circuit::Circuit;
use super::permit::{Permit, PermitKind, PermitRequest};
use super::probe_slot::ProbeSlot;
use super::shadow;
use super::transitions::{announce, commit, commit_settled};
use crate::blocking::block_on;
use crate::events::CircuitInfo;
use crate::protocol::CircuitRecord;
use crate::protocol::CircuitState;
use crate::protocol::machine::{self, Admission};

/// The closed path's admission: a permit when the circuit is bypassed, or known closed
/// and fresh; `None` sends the call to the slow path.
#[doc(hidden)]
#[inline]
pub fn fast_permit(breaker: &CircuitBreaker) -> Option<Permit<'_>> {
    fast_admission(&breaker.circuit).ok()
}

/// [`fast_permit`] of a circuit, or the time it read (unix millis), so that the open path
/// that follows does not read the clock again. Always inlined: with `#[inline]` alone it
/// stayed out of line (it has five callers), and the closed path cost 28 more instructions.
#[inline(always)]
pub(super) fn fast_admission(circuit: &Circuit) -> Result<Permit<'_>, u64> {
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
pub fn request_permit_blocking(breaker: &CircuitBreaker) -> Result<Permit<'_>, CircuitInfo> {
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
fn admit_blocking(circuit: &Circuit, now: u64) -> Result<Permit<'_>, CircuitInfo> {
    match reject_from_cache(circuit, now) {
        Some(info) => Err(info),
        None => block_on(permit_slow(circuit)),
    }
}

/// [`Circuit::reject_from_cache`], counted in the metrics.
#[inline]
fn reject_from_cache(circuit: &Circuit, now: u64) -> Option<CircuitInfo> {
    let rejected = circuit.reject_from_cache(now);
    if let Some(info) = &rejected {
        circuit.metrics().rejected(info.state);
    }
    rejected
}

/// [`decide_slow`], its decision counted in the metrics (a rejection, or the state the
/// circuit admitted the call in).
pub(super) async fn permit_slow(circuit: &Circuit) -> Result<Permit<'_>, CircuitInfo> {
    let decision = decide_slow(circuit).await;
    match &decision {
        Ok(permit) => permit.show_state(),
        Err(info) => circuit.metrics().rejected(info.state),
    }
    decision
}

/// Admission when the cache cannot decide alone: refresh a stale cache, then run, reject,
/// probe, or elect this environment to probe (after a strongly consistent read when it has
/// no first right; locally when the store cannot be reached).
async fn decide_slow(circuit: &Circuit) -> Result<Permit<'_>, CircuitInfo> {
    if circuit.disabled() {
        return Ok(Permit::new(circuit, PermitKind::Bypass));
    }
    let now = circuit.now();
    // Judged before the refresh, which makes the copy fresh.
    let quiet = circuit.lock().quiet_at(now);
    circuit.refresh_if_stale(now).await;
    if let Some(permit) = shadow::admit(circuit, now) {
        return Ok(permit);
    }
    let (admission, record) = {
        let cache = circuit.lock();
        (
            circuit.admission(&cache, now, false, false, quiet),
            cache.record().clone(),
        )
    };
    match admission {
        Admission::Run => return Ok(Permit::new(circuit, PermitKind::Closed)),
        Admission::Reject => return Err(circuit.info_of(&record)),
        _ => {}
    }
    // One probe, election or verifying read per process at a time.
    let Some(slot) = ProbeSlot::claim(circuit) else {
        return Err(circuit.info_of(&record));
    };
    let (mut admission, mut record) = admission_with_slot(circuit, now, false, quiet);
    if admission == Admission::Verify {
        let answered = circuit.read_and_adopt(now, true).await;
        (admission, record) = admission_with_slot(circuit, now, answered, quiet);
    }
    match admission {
        Admission::Run => Ok(Permit::new(circuit, PermitKind::Closed)),
        Admission::Reject | Admission::Verify => Err(circuit.info_of(&record)),
        Admission::Probe => Ok(probe(slot, quiet)),
        Admission::ElectAlone(election) => {
            let settled = machine::settle_alone(&record, &election);
            commit_settled(circuit, &mut circuit.lock(), &election, settled, now);
            announce(
                circuit,
                record.state,
                CircuitState::HalfOpen,
                record.opened_at,
                None,
            );
            Ok(probe(slot, quiet))
        }
        Admission::Elect(election) => {
            let reply = circuit.write_store(election.clone()).await;
            let (believed, won) = {
                let mut cache = circuit.lock();
                let won = commit(circuit, &mut cache, &record, &election, reply, now);
                (cache.record().clone(), won)
            };
            if won {
                announce(
                    circuit,
                    record.state,
                    CircuitState::HalfOpen,
                    believed.opened_at,
                    None,
                );
                return Ok(probe(slot, quiet));
            }
            drop(slot);
            match believed.state {
                CircuitState::Closed => Ok(Permit::new(circuit, PermitKind::Closed)),
                _ => Err(circuit.info_of(&believed)),
            }
        }
    }
}

/// The admission of a caller that holds the probe slot, on the cached record; `verified`:
/// that record was just read strongly consistently; `quiet`: the call came after none for
/// a cache age.
fn admission_with_slot(
    circuit: &Circuit,
    now: u64,
    verified: bool,
    quiet: bool,
) -> (Admission, CircuitRecord) {
    let cache = circuit.lock();
    (
        circuit.admission(&cache, now, true, verified, quiet),
        cache.record().clone(),
    )
}

/// A probe's permit, which takes the slot over and releases it when the probe ends; a
/// probe on a `quiet` call hands the probe on when it ends.
fn probe(slot: ProbeSlot<'_>, quiet: bool) -> Permit<'_> {
    let circuit = slot.keep();
    circuit.shadow().real_probe();
    circuit.lock().note_probe(quiet);
    Permit::new(circuit, PermitKind::Probe)
}
