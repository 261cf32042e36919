//! What must hold in every state the checker reaches, and the write-time checks that
//! note a breach in the state for them.

use breaker_runtime::CircuitState;
use breaker_runtime::store::RecordWrite;
use stateright::Property;

use super::{Fleet, State};
use crate::dynamodb;
use crate::item::Item;

impl Fleet {
    /// The properties the checker verifies.
    pub(super) fn all_properties() -> Vec<Property<Self>> {
        vec![
            Property::always(
                "one breaker probe in flight",
                |model: &Fleet, state: &State| {
                    model
                        .breakers()
                        .filter(|&i| {
                            let mine = &state.actors[i];
                            mine.probe.is_some() && !mine.revoked && !mine.alone
                        })
                        .count()
                        <= 1
                },
            ),
            Property::always(
                "DynamoDB and the in-memory store agree",
                |_, state: &State| state.disagreement.is_none(),
            ),
            Property::always(
                "a close only after success_threshold successes",
                |_, s: &State| !s.early_close,
            ),
            Property::always(
                "no breaker write overwrites a live override",
                |_, s: &State| !s.override_overwritten,
            ),
            Property::always(
                "a landed trip, reopen or election is ours",
                |_, s: &State| !s.own_write_unrecognised,
            ),
            Property::always(
                "the backed-off wait never shrinks in an opening",
                |_, s: &State| !s.wait_shrank,
            ),
            Property::always(
                "the item decodes for breaker and Powertools",
                |_, s: &State| s.item.decodes(),
            ),
            Property::always("a live item's TTL is not in the past", |_, s: &State| {
                let r = s.item.read();
                let live = r.state != CircuitState::Closed || r.live_override(s.t).is_some();
                !live || s.item.ttl.is_none_or(|ttl| ttl >= s.t)
            }),
            Property::always(
                "a healthy fleet closes in time",
                |model: &Fleet, state: &State| model.closes_in_time(state),
            ),
            Property::always(
                "refused elections: a call runs in time",
                |model: &Fleet, s: &State| model.runs_despite_refusals(s),
            ),
        ]
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
