//! An environment's copy of the index and its writes to the index item, in the order
//! `keyed::IndexCopy` makes them.

use breaker_runtime::store::{KeyIndex, KeyIndexOutcome, KeyIndexWrite};

use super::{GraceFrom, Index, KEYS, KeyedFleet, Op, OwnWrite, State};

impl KeyedFleet {
    /// Sends an index write as `IndexCopy::write` does: the item changes by the runtime's
    /// `KeyIndexWrite::apply`, the copy and own writes follow the answer.
    pub(super) fn write_index(
        state: &mut State,
        env: usize,
        write: &KeyIndexWrite,
    ) -> KeyIndexOutcome {
        let mut index = state.index.take().map(|i| i.0);
        let outcome = write.apply(&mut index);
        state.index = index.map(Index);
        let at = state.next_token.saturating_sub(1);
        let key = KEYS
            .iter()
            .position(|k| *k == write.key())
            .expect("a model key");
        let e = &mut state.envs[env];
        let copy = &mut e.copy.0;
        match (write, &outcome) {
            (
                KeyIndexWrite::Add { token, .. } | KeyIndexWrite::Refresh { token, .. },
                KeyIndexOutcome::Won,
            ) => {
                name(copy, write.key(), *token);
                let (token, named) = (*token, true);
                e.own.insert(key, OwnWrite { token, named, at });
            }
            (KeyIndexWrite::Remove { token, .. }, KeyIndexOutcome::Won) => {
                unname(copy, write.key());
                let (token, named) = (*token, false);
                e.own.insert(key, OwnWrite { token, named, at });
            }
            (_, KeyIndexOutcome::Exists(Some(token))) => name(copy, write.key(), *token),
            (_, KeyIndexOutcome::Lost(index)) => {
                match index.as_ref().and_then(|i| i.token(write.key())) {
                    Some(token) => name(copy, write.key(), token),
                    None => unname(copy, write.key()),
                }
                copy.open_keys = index.as_ref().map_or(0, |i| i.open_keys);
            }
            _ => {}
        }
        outcome
    }

    /// `IndexCopy::name`'s next write (the first or a retry): the op that follows.
    pub(super) fn naming(&self, state: &mut State, env: usize, key: usize, known: bool, tries: u8) {
        state.envs[env].op = None;
        // The runtime gives up after four writes; the model, past its tokens.
        if tries >= 4 || state.next_token > self.tokens {
            return;
        }
        let token = state.next_token;
        let k = KEYS[key].to_owned();
        let write = match known {
            true => KeyIndexWrite::Refresh { key: k, token },
            false => KeyIndexWrite::Add {
                key: k,
                token,
                cap: Some(self.cap),
            },
        };
        let outcome = Self::write_index(state, env, &write);
        let tries = tries + 1;
        state.envs[env].op = match outcome {
            KeyIndexOutcome::Won => {
                state.next_token += 1;
                Some(Op::Tripping { key, token })
            }
            KeyIndexOutcome::Exists(_) => Some(Op::Naming {
                key,
                known: true,
                tries,
            }),
            KeyIndexOutcome::Lost(_) => Some(Op::Naming {
                key,
                known: false,
                tries,
            }),
            KeyIndexOutcome::CapReached(open) => {
                state.envs[env].copy.0.open_keys = open;
                None
            }
        };
    }

    /// `IndexCopy::refresh_if_stale`'s index read, merged with the own writes still within
    /// the grace; then the stale entry's check or the key's token.
    pub(super) fn read_index(&self, state: &mut State, env: usize, key: usize) {
        let mut read = Self::index_of(state).cloned().unwrap_or_default();
        let old_below = state.old_below;
        let e = &mut state.envs[env];
        e.own.retain(|_, w| w.at >= old_below);
        for (k, w) in &e.own {
            let shown = read.token(KEYS[*k]);
            match w.named {
                true if shown.is_none() => name(&mut read, KEYS[*k], w.token),
                false if shown == Some(w.token) => unname(&mut read, KEYS[*k]),
                _ => {}
            }
        }
        e.copy = Index(read);
        e.fresh = true;
        let stale = e
            .copy
            .0
            .entries
            .iter()
            .filter(|(_, token)| **token < state.stale_below)
            .min_by_key(|(_, token)| **token)
            .map(|(k, token)| {
                (
                    KEYS.iter().position(|x| x == k).expect("a model key"),
                    *token,
                )
            });
        e.op = stale.map(|(stale, token)| Op::StaleReading {
            key: stale,
            token,
            then: key,
        });
        if e.op.is_none() {
            self.token_answered(state, env, key);
        }
    }

    /// `KeyStore::read` once the copy is fresh: a key the copy names is read.
    pub(super) fn token_answered(&self, state: &mut State, env: usize, key: usize) {
        let e = &mut state.envs[env];
        e.op = e
            .copy
            .0
            .token(KEYS[key])
            .map(|token| Op::Reading { key, token });
    }

    /// The grace of `token` has passed as the runtime counts it when a removal is decided.
    pub(super) fn old(state: &State, token: u64) -> bool {
        token < state.old_below
    }

    /// Whether a trip named by `token` is on its way.
    pub(super) fn tripping(state: &State, token: u64) -> bool {
        state
            .envs
            .iter()
            .any(|e| matches!(e.op, Some(Op::Tripping { token: t, .. }) if t == token))
    }

    /// The removal of `key`'s entry `token` if its grace had passed by `old_below` (the
    /// moment the removal's call was sent), as `IndexCopy::remove_if_settled` decides.
    pub(super) fn removal(&self, key: usize, token: u64, old_below: u64) -> Option<Op> {
        let old = match self.grace_from {
            GraceFrom::Sent => token < old_below,
            // Decided at the remove itself.
            GraceFrom::Answered => true,
        };
        old.then_some(Op::Removing { key, token })
    }
}

/// The copy names `key` with `token` (`Believed::name`).
pub(super) fn name(index: &mut KeyIndex, key: &str, token: u64) {
    if index.entries.insert(key.to_owned(), token).is_none() {
        index.open_keys = index.open_keys.saturating_add(1);
    }
}

/// The copy no longer names `key` (`Believed::unname`).
pub(super) fn unname(index: &mut KeyIndex, key: &str) {
    if index.entries.remove(key).is_some() {
        index.open_keys = index.open_keys.saturating_sub(1);
    }
}
