//! Liveness as bounded safety: from a state, one fair continuation (every environment
//! calls every second, probes succeed at once, the store answers) must reach the goal
//! within a stated number of seconds. stateright's `eventually` can miss cycles; this
//! cannot, for the continuation it runs.

use breaker_runtime::CircuitState;

use crate::fleet::{Action, Actor, Fleet, Reply, State, Store};

/// The fleet's calls in one second: every probe ends with a success (a failure at its
/// limit), every other environment calls (busy), in the model's order.
fn one_second(model: &Fleet, state: &State) -> State {
    let mut state = state.clone();
    for (i, actor) in model.actors.iter().enumerate() {
        let actions = match (actor, state.actors[i].probe.is_some()) {
            (Actor::Breaker { .. }, _) => breaker_second(model, &state, i),
            (Actor::Powertools { .. }, true) => vec![Action::PtEnd {
                actor: i,
                success: true,
            }],
            (Actor::Powertools { .. }, false) => vec![Action::PtCall(i)],
            (Actor::Operator, _) => continue,
        };
        for action in actions {
            if let Some(next) = model.step(&state, action) {
                state = next;
            }
        }
    }
    state.t += 1;
    state
}

/// A breaker's steps in one second: its closed calls in flight succeed (fail at their
/// limit), its probe ends, or its invocations call, the one with the most time left
/// first (the others find the slot taken).
fn breaker_second(model: &Fleet, state: &State, i: usize) -> Vec<Action> {
    let mine = &state.actors[i];
    let due: Vec<usize> = model.calls_due(state, i).collect();
    let mut actions: Vec<Action> = (0..mine.calls.len())
        .filter(|&n| mine.calls[n].is_some())
        .map(|invocation| match due.contains(&invocation) {
            true => Action::Trip {
                actor: i,
                invocation,
                reply: Reply::Answered,
            },
            false => Action::Return {
                actor: i,
                invocation,
            },
        })
        .collect();
    if let Some(started) = mine.probe {
        actions.push(Action::EndProbe {
            actor: i,
            invocation: mine.prober,
            success: state.t < model.limit(mine.prober, started),
            reply: Reply::Answered,
        });
        return actions;
    }
    let mut callers: Vec<usize> = (0..model.invocations(i)).collect();
    callers.sort_by_key(|&n| std::cmp::Reverse(model.limit(n, state.t)));
    actions.extend(callers.into_iter().map(|invocation| Action::Call {
        actor: i,
        invocation,
        quiet: false,
        reply: Reply::Answered,
    }));
    actions
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
