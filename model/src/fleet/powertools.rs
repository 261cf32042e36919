//! A Powertools (Python) environment: its own write rules, on the item every breaker
//! reads.

use breaker_runtime::CircuitState;

use super::{Action, Actor, Fleet, RECOVERY_TTL_GRACE, State};
use crate::dynamodb;

impl Fleet {
    pub(super) fn powertools_probe_limit(&self, state: &State, actor: usize) -> bool {
        state.actors[actor]
            .probe
            .is_some_and(|started| state.t >= started + self.powertools_call)
    }

    /// Applies a Powertools election or probe start at its call.
    pub(super) fn powertools_call(&self, state: &mut State, actor: usize) -> bool {
        let Actor::Powertools { resets_count, .. } = self.actors[actor] else {
            return false;
        };
        let now = state.t + self.skew(actor);
        let r = state.item.read();
        let lease = now + self.thresholds.probe_lease_secs;
        let ttl = now + self.thresholds.recovery_secs + RECOVERY_TTL_GRACE;
        let elect = match r.state {
            CircuitState::Closed => return false,
            CircuitState::Open => {
                let opened_at = r.opened_at.unwrap_or(now);
                now >= opened_at + self.thresholds.recovery_secs
            }
            CircuitState::HalfOpen if r.half_open_owner.as_deref() == Some("P") => {
                state.actors[actor].probe = Some(state.t);
                return true;
            }
            CircuitState::HalfOpen => r.probe_lease_expiry.is_some_and(|l| now >= l),
        };
        if !elect {
            return false;
        }
        let Some(after) =
            dynamodb::powertools_elect(&state.item, "P", r.opened_at.unwrap_or(0), now, lease, ttl)
        else {
            return false;
        };
        state.item = after;
        if resets_count {
            state.actors[actor].successes = 0;
        }
        state.actors[actor].probe = Some(state.t);
        true
    }

    /// The steps a Powertools environment may take now.
    pub(super) fn powertools_actions(&self, state: &State, i: usize, actions: &mut Vec<Action>) {
        match state.actors[i].probe {
            Some(_) => {
                if !self.powertools_probe_limit(state, i) {
                    actions.push(Action::PtEnd {
                        actor: i,
                        success: true,
                    });
                }
                actions.push(Action::PtEnd {
                    actor: i,
                    success: false,
                });
            }
            None => {
                actions.push(Action::PtCall(i));
                if self.start_closed && state.item.read().state == CircuitState::Closed {
                    actions.push(Action::PtTrip(i));
                }
            }
        }
    }

    /// Its probe ended.
    pub(super) fn powertools_end(
        &self,
        state: &mut State,
        actor: usize,
        success: bool,
    ) -> Option<()> {
        let now = state.t + self.skew(actor);
        let ttl = now + self.thresholds.recovery_secs + RECOVERY_TTL_GRACE;
        state.actors[actor].probe = None;
        match success {
            true => {
                state.successes_in_opening += 1;
                let count = state.actors[actor].successes + 1;
                match count >= self.thresholds.success_threshold {
                    true => {
                        state.actors[actor].successes = 0;
                        state.item = dynamodb::powertools_end(&state.item, None, ttl);
                        Self::opened_or_closed(state);
                    }
                    false => state.actors[actor].successes = count,
                }
            }
            false => {
                state.actors[actor].successes = 0;
                state.item = dynamodb::powertools_end(&state.item, Some(now), ttl);
                Self::opened_or_closed(state);
            }
        }
        Some(())
    }

    /// It trips a circuit it reads closed.
    pub(super) fn powertools_trip(&self, state: &mut State, actor: usize) -> Option<()> {
        let now = state.t + self.skew(actor);
        let ttl = now + self.thresholds.recovery_secs + RECOVERY_TTL_GRACE;
        state.item = dynamodb::powertools_trip(self.thresholds.failure_threshold, now, ttl);
        Self::opened_or_closed(state);
        Some(())
    }
}
