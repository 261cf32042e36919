//! Liveness as bounded safety: from a state, one fair continuation (every environment
//! calls every second, probes succeed at once, the store answers) must reach the goal
//! within a stated number of seconds. stateright's `eventually` can miss cycles; this
//! cannot, for the continuation it runs.

use breaker_runtime::CircuitState;

use crate::fleet::{Action, Actor, Fleet, Reply, State, Store};

/// The fleet's calls in one second: every probe ends with a success, every other
/// environment calls (busy), in the model's order.
fn one_second(model: &Fleet, state: &State) -> State {
    let mut state = state.clone();
    for (i, actor) in model.actors.iter().enumerate() {
        let action = match (actor, state.actors[i].probe.is_some()) {
            (Actor::Breaker { .. }, true) => Action::EndProbe {
                actor: i,
                success: true,
                reply: Reply::Answered,
            },
            (Actor::Breaker { .. }, false) => Action::Call {
                actor: i,
                quiet: false,
                reply: Reply::Answered,
            },
            (Actor::Powertools { .. }, true) => Action::PtEnd {
                actor: i,
                success: true,
            },
            (Actor::Powertools { .. }, false) => Action::PtCall(i),
            (Actor::Operator, _) => continue,
        };
        if let Some(next) = model.step(&state, action) {
            state = next;
        }
    }
    state.t += 1;
    state
}

// The properties as methods of the model, so that `fleet` lists them without importing
// this module (which builds on its types).
impl Fleet {
    /// With a healthy downstream and a store that answers, the circuit acts closed within
    /// `closes_within` seconds (an operator's override aside: it decides alone).
    pub fn closes_in_time(&self, state: &State) -> bool {
        closes_in_time(self, state)
    }

    /// With a store that refuses every election, some breaker environment runs a call (a
    /// probe, or a call of a circuit it closed alone) within `closes_within` seconds.
    pub fn runs_despite_refusals(&self, state: &State) -> bool {
        runs_despite_refusals(self, state)
    }
}

fn closes_in_time(model: &Fleet, state: &State) -> bool {
    if model.store != Store::Answers || Fleet::flagged(state) || model.closes_within == 0 {
        return true;
    }
    let mut state = state.clone();
    for _ in 0..=model.closes_within {
        let record = state.item.read();
        if record.live_override(state.t).is_some()
            || record.effective_state(state.t) == CircuitState::Closed
        {
            return true;
        }
        state = one_second(model, &state);
    }
    false
}

fn runs_despite_refusals(model: &Fleet, state: &State) -> bool {
    if model.store != Store::RefusesElections || Fleet::flagged(state) {
        return true;
    }
    let mut state = state.clone();
    for _ in 0..=model.closes_within {
        if state.actors.iter().any(|a| a.probe.is_some())
            || model
                .breakers()
                .any(|i| model.effective(&state, i).state == CircuitState::Closed)
        {
            return true;
        }
        state = one_second(model, &state);
    }
    false
}
