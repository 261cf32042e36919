//! An operator with the `breaker` CLI: one override and its release, which take a
//! running probe's lease away.

use breaker_runtime::store::{Override, OverrideKind, RecordWrite};

use super::{Action, Actor, Fleet, RECOVERY_TTL_GRACE, State};

impl Fleet {
    /// The steps the operator may take now.
    pub(super) fn operator_actions(&self, state: &State, i: usize, actions: &mut Vec<Action>) {
        let mine = &state.actors[i];
        let stored = state.item.read().operator_override;
        if !mine.used && stored.is_none() {
            actions.push(Action::SetOverride(OverrideKind::ForcedOpen));
            actions.push(Action::SetOverride(OverrideKind::Disabled));
        }
        if stored.is_some() {
            actions.push(Action::Release);
        }
    }

    /// It sets an override for two seconds.
    pub(super) fn set_override(&self, state: &mut State, kind: OverrideKind) -> Option<()> {
        let operator = self.actors.iter().position(|a| *a == Actor::Operator)?;
        let until = state.t + 2;
        let set = Override::new(kind, "ops", state.t).until(until);
        let transition = RecordWrite::Override {
            set,
            replaces: None,
            expiration: Some(until + RECOVERY_TTL_GRACE),
        };
        self.operator_write(state, &transition);
        state.actors[operator].used = true;
        if kind == OverrideKind::ForcedOpen {
            Self::opened_or_closed(state);
        }
        Some(())
    }

    /// It releases the override it set.
    pub(super) fn release(&self, state: &mut State) -> Option<()> {
        let released = state.item.read().operator_override?;
        let transition = RecordWrite::Release {
            released,
            now: state.t,
            expiration: state.t + self.thresholds.recovery_secs + RECOVERY_TTL_GRACE,
        };
        self.operator_write(state, &transition);
        Some(())
    }

    /// After an operator's or a Powertools write: every running breaker probe whose lease
    /// the item no longer holds was ended by it.
    pub(super) fn revoke_lost_leases(&self, state: &mut State) {
        let owner = state.item.read().half_open_owner;
        for i in self.breakers().collect::<Vec<_>>() {
            if state.actors[i].probe.is_some() && owner.as_deref() != Some(self.id(i)) {
                state.actors[i].revoked = true;
            }
        }
    }

    /// An operator's write: both readings must agree here too.
    pub(super) fn operator_write(&self, state: &mut State, transition: &RecordWrite) {
        if let Some(after) = Self::both_readings(state, transition) {
            state.item = after;
        }
    }
}
