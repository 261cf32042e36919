//! What must hold in every state the checker reaches: open keys named, the cap kept,
//! and closed keys' entries removable.

use breaker_runtime::__protocol::needs_reading;
use breaker_runtime::CircuitState;

use super::{Action, KEYS, KeyedFleet, NOW, State};
use stateright::Property;

impl KeyedFleet {
    /// The properties the checker verifies.
    pub(super) fn all_properties() -> Vec<Property<Self>> {
        vec![
            Property::always(
                "every open or half-open key is named by the index",
                |_, s: &State| KeyedFleet::open_keys_named(s),
            ),
            Property::always("open keys never exceed the cap", |m: &Self, s: &State| {
                KeyedFleet::open_keys(s).len() <= m.cap as usize
            }),
            Property::always(
                "the index counts its entries, within the cap",
                |m: &Self, s: &State| {
                    KeyedFleet::index_of(s).is_none_or(|i| {
                        i.open_keys as usize == i.entries.len() && i.open_keys <= m.cap
                    })
                },
            ),
            Property::always(
                "an entry of a closed key is removed by a fair continuation",
                |m: &Self, s: &State| m.closed_entries_removable(s),
            ),
        ]
    }

    /// Keys whose items are open or half-open.
    pub fn open_keys(state: &State) -> Vec<usize> {
        (0..KEYS.len())
            .filter(|k| state.items[*k].read().state != CircuitState::Closed)
            .collect()
    }

    /// Every open or half-open key is named by the index.
    pub fn open_keys_named(state: &State) -> bool {
        let index = Self::index_of(state);
        Self::open_keys(state)
            .into_iter()
            .all(|k| index.is_some_and(|i| i.token(KEYS[k]).is_some()))
    }

    /// Whether an entry names a key whose item needs no reading.
    pub(super) fn closed_entries(state: &State) -> bool {
        Self::index_of(state).is_some_and(|i| {
            i.entries.keys().any(|k| {
                let key = KEYS.iter().position(|x| x == k).expect("a model key");
                !needs_reading(state.items[key].record.as_ref(), NOW)
            })
        })
    }

    /// From `state`, a fair continuation (every call on its way answered, every trip write
    /// landing, the grace passing, then every environment reading every key with a copy
    /// past its age) leaves no entry of a closed key.
    pub fn closed_entries_removable(&self, state: &State) -> bool {
        if !Self::open_keys_named(state) {
            return true; // left to that property's counterexample
        }
        let mut s = state.clone();
        let unbounded = KeyedFleet {
            tokens: u64::MAX,
            ..self.clone()
        };
        let finish = |s: &mut State| {
            for env in 0..s.envs.len() {
                for _ in 0..16 {
                    match unbounded.step(s, Action::Step(env)) {
                        Some(next) => *s = next,
                        None => break,
                    }
                }
            }
        };
        finish(&mut s);
        s.old_below = s.next_token;
        for env in 0..s.envs.len() {
            for key in 0..KEYS.len() {
                s.envs[env].fresh = false;
                if let Some(next) = unbounded.step(&s, Action::Read { env, key }) {
                    s = next;
                }
                finish(&mut s);
            }
        }
        !Self::closed_entries(&s)
    }
}
