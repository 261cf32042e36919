//! The one way out of a circuit: every event (a transition this environment committed, a
//! rejection, a verdict of shadow mode, an abandoned call) goes through [`dispatch`], which
//! feeds the metrics ([`observe`](crate::observe)), the `tracing` log and the hooks
//! (`on_transition`, `on_shadow`; EMF is opt-in as one of them: `emf::log_transition`,
//! `emf::log_shadow`). Hooks run here, outside every lock, each with its panic caught.
//!
//! How admitted calls end is no event: the closed path counts it inline, and the other
//! ends are counted where the permit records them.

use std::sync::Arc;

use super::circuit::Circuit;
use crate::error::Abandoned;
use crate::events::{CircuitTransition, ShadowDecision, ShadowEvent, TransitionCause};
use crate::protocol::CircuitState;

/// Something a circuit tells the world about.
#[derive(Debug)]
pub(super) enum Event<'a> {
    /// This environment committed a transition (never from a state to itself).
    Transition {
        from: CircuitState,
        to: CircuitState,
        /// The `opened_at` of the record after it.
        opened_at: Option<u64>,
        cause: Option<TransitionCause>,
    },
    /// A call was rejected by a circuit acting as this state.
    Rejected(CircuitState),
    /// Shadow mode's verdict: what the circuit would have done.
    Verdict {
        decision: ShadowDecision,
        /// The `opened_at` of the would-be record.
        opened_at: Option<u64>,
        cause: Option<TransitionCause>,
    },
    /// An admitted call was abandoned at its deadline (its failure is recorded apart).
    Abandoned(&'a Abandoned),
}

/// Tells the metrics, the log and the hooks about `event`.
#[inline]
pub(super) fn dispatch(circuit: &Circuit, event: Event<'_>) {
    match event {
        // The open path's: a counter, no log, no hook.
        Event::Rejected(state) => circuit.metrics().rejected(state),
        Event::Transition {
            from,
            to,
            opened_at,
            cause,
        } => transition(circuit, from, to, opened_at, cause),
        Event::Verdict {
            decision,
            opened_at,
            cause,
        } => verdict(circuit, decision, opened_at, cause),
        Event::Abandoned(abandoned) => match circuit.key() {
            None => tracing::warn!(circuit = %circuit.name(), %abandoned, "guarded call abandoned"),
            Some(key) => {
                tracing::warn!(circuit = %circuit.name(), %key, %abandoned, "guarded call abandoned");
            }
        },
    }
}

#[inline(never)]
fn transition(
    circuit: &Circuit,
    from_state: CircuitState,
    to_state: CircuitState,
    opened_at: Option<u64>,
    cause: Option<TransitionCause>,
) {
    let name = circuit.name();
    circuit.metrics().transitioned(from_state, to_state);
    let why = cause.as_ref().map_or("", TransitionCause::as_str);
    match circuit.key() {
        None => {
            tracing::info!(circuit = %name, from = %from_state, to = %to_state, cause = why, "circuit transition");
        }
        Some(key) => {
            tracing::info!(circuit = %name, %key, from = %from_state, to = %to_state, cause = why, "circuit transition");
        }
    }
    let transition = CircuitTransition {
        name: name.to_string(),
        from_state,
        to_state,
        opened_at_unix_secs: opened_at,
        cause,
        key: circuit.key().cloned(),
    };
    circuit.hooks().run(&transition, name);
}

#[inline(never)]
fn verdict(
    circuit: &Circuit,
    decision: ShadowDecision,
    opened_at: Option<u64>,
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
        opened_at_unix_secs: opened_at,
        cause,
    };
    circuit.would_be().hooks().run(&event, name);
}
