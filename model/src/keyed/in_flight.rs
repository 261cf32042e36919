//! A store call on its way lands: the op an environment has in flight takes its step,
//! and a key's item changes as the in-memory store applies the write.

use breaker_runtime::__protocol::needs_reading;
use breaker_runtime::store::{CircuitRecord, KeyIndexOutcome, KeyIndexWrite, RecordWrite};

use crate::item::Item;

use super::{Confirm, GraceFrom, KEYS, KeyedFleet, NOW, Op, Recent, State};

impl KeyedFleet {
    /// A key item write, as the in-memory store applies it; with stale reads, the item
    /// before it is kept while reads may miss it.
    pub(super) fn write_item(&self, state: &mut State, key: usize, write: &RecordWrite) -> bool {
        let item = &mut state.items[key];
        let won = write.allowed(item.record.as_ref());
        if won && !self.stale_reads {
            item.record = Some(write.applied_to(item.record.as_ref()));
        } else if won {
            let before = Item {
                record: item.record.replace(write.applied_to(item.record.as_ref())),
                ttl: item.ttl,
            };
            let at = state.next_token;
            state.recent[key] = Some(Recent { before, at });
        }
        won
    }

    /// The record a read of `key` that misses its item's last write answers, while that
    /// write is recent and the model reads stale.
    pub(super) fn misses(&self, state: &State, key: usize) -> Option<Option<CircuitRecord>> {
        let recent = state.recent[key].as_ref().filter(|_| self.stale_reads)?;
        (state.old_below <= recent.at).then(|| recent.before.record.clone())
    }

    /// `env`'s key read answers the item before its recent last write.
    pub(super) fn stale_read(&self, s: &mut State, env: usize) -> Option<()> {
        let Some(Op::Reading { key, token }) = s.envs[env].op.clone() else {
            return None;
        };
        let record = self.misses(s, key)?;
        s.envs[env].op = None;
        self.read_answered(s, env, key, token, record.as_ref());
        Some(())
    }

    /// `env`'s read of `key`, named with `token`, found `record`: settled, the entry goes
    /// once a consistent read agrees (or at once, before the fix).
    fn read_answered(
        &self,
        s: &mut State,
        env: usize,
        key: usize,
        token: u64,
        record: Option<&CircuitRecord>,
    ) {
        if needs_reading(record, NOW) {
            return;
        }
        s.envs[env].op = match self.confirm {
            Confirm::Consistent => Some(Op::Confirming { key, token }),
            Confirm::Nothing => self.removal(key, token, s.old_below),
        };
    }

    pub(super) fn step_op(&self, s: &mut State, env: usize) -> Option<()> {
        let op = s.envs[env].op.clone()?;
        s.envs[env].op = None;
        match op {
            Op::Naming { key, known, tries } => self.naming(s, env, key, known, tries),
            Op::Tripping { key, .. } => {
                let trip = RecordWrite::Trip {
                    opened_by: Some(self.environments[env].to_owned()),
                    failure_count: 1,
                    opened_at: NOW,
                    expiration: 0,
                    open_until: None,
                };
                self.write_item(s, key, &trip);
            }
            Op::ClosedReading { key, old_below } => {
                if let Some(token) = Self::index_of(s).and_then(|i| i.token(KEYS[key])) {
                    s.envs[env].op = self.removal(key, token, old_below);
                }
            }
            Op::Reading { key, token } => {
                let record = s.items[key].record.clone();
                self.read_answered(s, env, key, token, record.as_ref());
            }
            Op::Confirming { key, token } => {
                let record = s.items[key].record.clone();
                if !needs_reading(record.as_ref(), NOW) {
                    s.envs[env].op = self.removal(key, token, s.old_below);
                }
            }
            Op::Removing { key, token } => {
                if self.grace_from == GraceFrom::Answered && !Self::old(s, token) {
                    return Some(());
                }
                let remove = KeyIndexWrite::Remove {
                    key: KEYS[key].to_owned(),
                    token,
                };
                Self::write_index(s, env, &remove);
            }
            Op::StaleReading { key, token, then } => {
                let record: Option<CircuitRecord> = s.items[key].record.clone();
                let needed = needs_reading(record.as_ref(), NOW);
                s.envs[env].op = Some(Op::StaleWriting {
                    key,
                    token,
                    needed,
                    then,
                });
            }
            Op::StaleWriting {
                key,
                token,
                needed,
                then,
            } => {
                let k = KEYS[key].to_owned();
                match needed {
                    true if s.next_token <= self.tokens => {
                        let token = s.next_token;
                        let refresh = KeyIndexWrite::Refresh { key: k, token };
                        if Self::write_index(s, env, &refresh) == KeyIndexOutcome::Won {
                            s.next_token += 1;
                        }
                    }
                    true => {}
                    false => {
                        let remove = KeyIndexWrite::Remove { key: k, token };
                        Self::write_index(s, env, &remove);
                    }
                }
                self.token_answered(s, env, then);
            }
        }
        Some(())
    }
}
