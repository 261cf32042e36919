//! What must hold in every state the checker reaches, and the write-time checks that
//! note a breach in the state for them.

use breaker_runtime::CircuitState;
use breaker_runtime::store::RecordWrite;
use stateright::Property;

use super::{Fleet, State};
use crate::dynamodb;
use crate::item::Item;

/// A condition every reachable state meets.
type Condition = fn(&Fleet, &State) -> bool;

impl Fleet {
    /// The properties the checker verifies, each a condition every reachable state meets.
    pub(super) fn all_properties() -> Vec<Property<Self>> {
        #[rustfmt::skip]
        let always: [(&'static str, Condition); 10] = [
            ("one breaker probe in flight", |model, s| model.one_probe_in_flight(s)),
            ("DynamoDB and the in-memory store agree", |_, s| s.disagreement.is_none()),
            ("a close only after success_threshold successes", |_, s| !s.early_close),
            ("no breaker write overwrites a live override", |_, s| !s.override_overwritten),
            ("a landed trip, reopen or election is ours", |_, s| !s.own_write_unrecognised),
            ("the backed-off wait never shrinks in an opening", |_, s| !s.wait_shrank),
            ("the item decodes for breaker and Powertools", |_, s| s.item.decodes()),
            ("a live item's TTL is not in the past", |_, s| Self::ttl_not_past(s)),
            ("a healthy fleet closes in time", |model, s| model.closes_in_time(s)),
            ("refused elections: a call runs in time", |model, s| model.runs_despite_refusals(s)),
        ];
        always
            .into_iter()
            .map(|(name, holds)| Property::always(name, holds))
            .collect()
    }

    /// At most one breaker probe runs under a live lease (a revoked one, or one elected
    /// alone, is the documented exception).
    fn one_probe_in_flight(&self, state: &State) -> bool {
        self.breakers()
            .filter(|&i| {
                let mine = &state.actors[i];
                mine.probe.is_some() && !mine.revoked && !mine.alone
            })
            .count()
            <= 1
    }

    /// An item that is open, half-open or under an override is not past its TTL.
    fn ttl_not_past(s: &State) -> bool {
        let r = s.item.read();
        let live = r.state != CircuitState::Closed || r.live_override(s.t).is_some();
        !live || s.item.ttl.is_none_or(|ttl| ttl >= s.t)
    }

    /// A safety property already failed in `state`: the liveness checks leave it to that
    /// counterexample.
    pub(crate) fn flagged(state: &State) -> bool {
        state.disagreement.is_some()
            || state.early_close
            || state.override_overwritten
            || state.own_write_unrecognised
            || state.wait_shrank
    }

    /// The write-time safety checks of a breaker write that landed.
    pub(super) fn judge_breaker_write(
        &self,
        state: &mut State,
        actor: usize,
        before: &Item,
        after: &Item,
        transition: &RecordWrite,
    ) {
        let now = self.now_millis(state, actor) / 1000;
        let was = before.read();
        let is = after.read();
        if was.live_override(now).is_some() && was.operator_override != is.operator_override {
            state.override_overwritten = true;
        }
        if matches!(transition, RecordWrite::Close { .. })
            && state.successes_in_opening < self.thresholds.success_threshold
        {
            state.early_close = true;
        }
        if was.state != CircuitState::Closed
            && was.opened_at == is.opened_at
            && is.state != CircuitState::Closed
            && self.thresholds.recovery_millis_of(&is) < self.thresholds.recovery_millis_of(&was)
        {
            state.wait_shrank = true;
        }
    }

    /// `transition` on the current item as DynamoDB's request does it and as
    /// `RecordWrite::allowed`/`applied_to` say; a disagreement of the two is noted (the
    /// first one only). Returns the item DynamoDB leaves, if its condition holds.
    pub(super) fn both_readings(state: &mut State, transition: &RecordWrite) -> Option<Item> {
        let before = &state.item;
        let current = before.record.as_ref();
        let ddb = dynamodb::allows(transition, before);
        if transition.allowed(current) != ddb {
            state.disagreement.get_or_insert_with(|| {
                format!("condition of {transition:?} on {current:?}: DynamoDB {ddb}")
            });
        }
        if !ddb {
            return None;
        }
        let after = dynamodb::leaves(transition, before);
        let in_memory = transition.applied_to(current);
        if after.record.as_ref() != Some(&in_memory) {
            state.disagreement.get_or_insert_with(|| {
                format!(
                    "{transition:?} on {current:?}: DynamoDB leaves {:?}, in memory {in_memory:?}",
                    after.record
                )
            });
        }
        Some(after)
    }
}
