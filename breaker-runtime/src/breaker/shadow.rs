//! Shadow mode: the circuit's verdicts without their effect. A circuit in shadow (its
//! config, or an operator's `SHADOW` override) runs every call, and drives a would-be
//! record of its own through the same state machine: a trip its policies make opens the
//! would-be record, not the shared one; while it would be open, calls are reported as
//! would-be rejections; at the recovery timeout the next call is the would-be probe, whose
//! outcomes close or reopen it. Nothing of it is written to the store, so the rest of the
//! fleet sees the circuit as its shared record says. Every verdict is logged and handed to
//! the `on_shadow` hooks ([`report`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::CircuitBreaker;
use super::circuit::Circuit;
use super::hooks::Hooks;
use super::permit::{Permit, PermitKind};
use super::probe_slot::ProbeSlot;
use crate::events::{FailureKind, ShadowDecision, ShadowEvent, TransitionCause};
use crate::protocol::CircuitState;
use crate::protocol::machine::{self, Admission, Outcome};
use crate::protocol::{CircuitRecord, RecordWrite};

/// What a circuit in shadow keeps: its would-be record and its `on_shadow` hooks.
#[derive(Default)]
pub(super) struct Shadow {
    /// The record this environment would have written; closed until a would-be trip.
    would_be: Mutex<CircuitRecord>,
    /// A would-be probe's permit is out: its outcome settles the would-be record.
    probing: AtomicBool,
    hooks: Hooks<ShadowEvent>,
}

impl Shadow {
    fn would_be(&self) -> MutexGuard<'_, CircuitRecord> {
        self.would_be.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the would-be record is closed: the closed path may run its calls.
    pub(super) fn would_be_closed(&self) -> bool {
        self.would_be().state == CircuitState::Closed
    }

    /// A real probe starts: no would-be probe's outcome is pending any more.
    pub(super) fn real_probe(&self) {
        self.probing.store(false, Ordering::Release);
    }
}

impl CircuitBreaker {
    /// Adds a hook that runs with each verdict of the circuit while it is in shadow
    /// ([`CircuitBreakerConfigBuilder::shadow`](crate::CircuitBreakerConfigBuilder::shadow),
    /// or an operator's `breaker shadow`): a call it would have rejected (and ran), an
    /// opening, a probe or a close it would have made. Hooks run outside every lock, each
    /// with its panic caught, like `on_transition` hooks.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, emf};
    /// use breaker_runtime::store::InMemoryStore;
    /// let config = CircuitBreakerConfig::builder().shadow(true).build().unwrap();
    /// let breaker = CircuitBreaker::new("ce", Arc::new(InMemoryStore::new()), config)
    ///     .with_on_shadow(|event| println!("{} {}", event.name, event.decision))
    ///     .with_on_shadow(emf::log_shadow);
    /// # drop(breaker);
    /// ```
    pub fn with_on_shadow(self, hook: impl Fn(ShadowEvent) + Send + Sync + 'static) -> Self {
        self.circuit.shadow().hooks.push(Arc::new(hook));
        self
    }
}

/// The permit of a call at `now` if the circuit is in shadow (`None`: it is not): every
/// call runs; the would-be record says whether it would have been rejected, or would
/// have been the probe.
pub(super) fn admit(circuit: &Circuit, now: u64) -> Option<Permit<'_>> {
    if !circuit.shadowed(&circuit.lock(), now) {
        return None;
    }
    let shadow = circuit.shadow();
    let would_be = shadow.would_be().clone();
    let admission = machine::would_admit(
        &would_be,
        circuit.environment_id(),
        now,
        circuit.thresholds(),
        circuit.probe_in_flight(),
    );
    let election = match admission {
        Admission::Run => return Some(Permit::new(circuit, PermitKind::Closed)),
        Admission::Elect(election) | Admission::ElectAlone(election) => Some(election),
        Admission::Probe => None,
        Admission::Reject | Admission::Verify => {
            report(circuit, ShadowDecision::WouldReject, &would_be, None);
            return Some(Permit::new(circuit, PermitKind::Closed));
        }
    };
    let Some(slot) = ProbeSlot::claim(circuit) else {
        report(circuit, ShadowDecision::WouldReject, &would_be, None);
        return Some(Permit::new(circuit, PermitKind::Closed));
    };
    let probing = match election {
        Some(election) => settle(circuit, &election),
        None => would_be,
    };
    shadow.probing.store(true, Ordering::Release);
    report(circuit, ShadowDecision::WouldProbe, &probing, None);
    Some(Permit::new(slot.keep(), PermitKind::Probe))
}

/// A trip of this environment's policies while the circuit is in shadow: it opens the
/// would-be record (if closed) instead of the shared one. Returns false when the circuit
/// is not in shadow, and the trip is to be written.
pub(super) fn trip(circuit: &Circuit, failures: u32, cause: TransitionCause, now: u64) -> bool {
    if !circuit.shadowed(&circuit.lock(), now) {
        return false;
    }
    circuit.counts().reset();
    if circuit.shadow().would_be_closed() {
        let opened = settle(circuit, &machine::trip(failures, now, circuit.thresholds()));
        report(circuit, ShadowDecision::WouldOpen, &opened, Some(cause));
    }
    true
}

/// A would-be probe ended with `outcome`: the would-be record closes, reopens or counts
/// the success, as the shared one would. Returns false when the probe was a real one.
pub(super) fn end_probe(circuit: &Circuit, outcome: Outcome, kind: FailureKind, now: u64) -> bool {
    let shadow = circuit.shadow();
    if !shadow.probing.swap(false, Ordering::AcqRel) {
        return false;
    }
    let would_be = shadow.would_be().clone();
    let transition = machine::on_probe_outcome(
        outcome,
        &would_be,
        circuit.environment_id(),
        now,
        circuit.thresholds(),
        false,
    );
    let settled = settle(circuit, &transition);
    match transition {
        RecordWrite::Close { .. } => report(circuit, ShadowDecision::WouldClose, &settled, None),
        RecordWrite::Reopen { .. } => {
            let cause = TransitionCause::Failures { kind, count: 1 };
            report(circuit, ShadowDecision::WouldOpen, &settled, Some(cause));
        }
        _ => {}
    }
    true
}

/// Applies `transition` to the would-be record, and republishes the circuit so that the
/// closed path runs only while the would-be record is closed. Returns the new record.
fn settle(circuit: &Circuit, transition: &RecordWrite) -> CircuitRecord {
    let settled = {
        let mut would_be = circuit.shadow().would_be();
        *would_be = transition.applied_to(Some(&would_be));
        would_be.clone()
    };
    circuit.counts().reset();
    circuit.publish(&circuit.lock());
    settled
}

/// Logs a verdict and runs the `on_shadow` hooks, outside every lock: the one place every
/// verdict passes, for whatever counts them.
fn report(
    circuit: &Circuit,
    decision: ShadowDecision,
    would_be: &CircuitRecord,
    cause: Option<TransitionCause>,
) {
    let name = circuit.name();
    circuit.metrics().shadow_decision(decision);
    let why = cause.as_ref().map_or("", TransitionCause::as_str);
    match decision {
        ShadowDecision::WouldReject => {
            tracing::debug!(circuit = %name, verdict = %decision, "shadow: the call ran");
        }
        _ => tracing::info!(circuit = %name, verdict = %decision, cause = why, "shadow verdict"),
    }
    let event = ShadowEvent {
        name: Arc::clone(name),
        decision,
        opened_at: would_be.opened_at,
        cause,
    };
    circuit.shadow().hooks.run(&event, name);
}
