//! The key index protocol of keyed circuits as a stateright model: environments trip,
//! elect, close and read the keys of one keyed circuit, each store call they make
//! (`keyed::KeyStore` and `keyed::IndexCopy`) a step of its own, so the checker explores
//! every interleaving of the index item's writes with the keys' item writes.
//!
//! The index item changes by the runtime's own `KeyIndexWrite::apply` (the in-memory
//! store's, the reference DynamoDB's conditions match), a key's item by
//! `RecordWrite::allowed`/`applied_to`, and a reader decides whether a key needs reading
//! with the runtime's `needs_reading`. What the model writes itself is the order of the
//! calls, which mirrors `KeyStore` and `IndexCopy` (a change there must change this).
//!
//! Time is abstract. Every add or refresh writes a new token, numbered in the order they
//! land; the grace (`2 × store_timeout + 1 s`) and the stale age (an hour and the longest
//! recovery wait) pass token by token, oldest first (`GraceEnds`, `StaleAgeEnds`). The
//! runtime's assumption is the model's rule: a key's trip write lands within the grace of
//! the index write that named the key, or never (the grace of a token does not end while
//! a trip named by it is on its way). [`Landing::Late`] drops the rule: a write whose
//! answer was lost and that the SDK retried may land after the grace.

mod in_flight;
mod index_copy;
mod properties;

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use breaker_runtime::CircuitState;
use breaker_runtime::store::{KeyIndex, RecordWrite};
use stateright::{Model, Property};

use crate::item::Item;

/// The keys, as encoded in the index (plain: nothing to encode).
pub const KEYS: [&str; 2] = ["a", "b"];

/// The records' clock, unix seconds: constant, as time is abstract (no lease expires, no
/// suspicion or override is modelled).
const NOW: u64 = 1_000;

/// When a key's trip write may land.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Landing {
    /// Within the grace of the index write that named the key, or never: the runtime's
    /// assumption.
    WithinGrace,
    /// Also after it (a lost answer retried by the SDK).
    Late,
}

/// From when the grace of an entry is counted when deciding to remove it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraceFrom {
    /// From before the call the removal rests on was sent (the close, or the key's read):
    /// the runtime.
    Sent,
    /// From when its answer came back: the runtime before the fix, kept so that the
    /// checker shows the race it had.
    Answered,
}

/// One model: who, with which cap, for how many naming writes.
#[derive(Clone, Debug)]
pub struct KeyedFleet {
    /// The environments' ids.
    pub environments: Vec<&'static str>,
    /// `max_open_keys`.
    pub cap: u32,
    /// How many adds and refreshes may win (the model's horizon).
    pub tokens: u64,
    /// When trip writes may land.
    pub landing: Landing,
    /// When the grace is counted from.
    pub grace_from: GraceFrom,
    /// A key read (eventually consistent) may miss its item's last write while that write
    /// is recent: the item as it was before it.
    pub stale_reads: bool,
    /// What a removal on a key read rests on.
    pub confirm: Confirm,
}

/// What an environment checks before it removes the entry of a key it read settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confirm {
    /// A strongly consistent read of the key's item: the runtime.
    Consistent,
    /// Nothing more than the (eventually consistent) read: the runtime before its fix,
    /// kept so that the checker shows the race it had.
    Nothing,
}

/// A key item's last write, while reads may still miss it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Recent {
    /// The item before the write.
    pub before: Item,
    /// The first token made after the write: the write is recent until that token has
    /// passed the grace.
    pub at: u64,
}

/// An index (the item, or an environment's copy), hashable.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Index(pub KeyIndex);

impl Hash for Index {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.entries.hash(state);
        self.0.open_keys.hash(state);
    }
}

/// One store call or decision an environment has before it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// A trip's index write, `tries` made so far (`known`: a refresh, else an add).
    Naming {
        /// The key.
        key: usize,
        /// The copy names the key.
        known: bool,
        /// Writes made.
        tries: u8,
    },
    /// The index names the key with `token`: the key's trip write is on its way.
    Tripping {
        /// The key.
        key: usize,
        /// The token its naming wrote.
        token: u64,
    },
    /// A won close found no entry in the copy: the consistent index read is next.
    /// `old_below`: the grace as of the close's sending.
    ClosedReading {
        /// The key.
        key: usize,
        /// Tokens below this were past the grace when the close was sent.
        old_below: u64,
    },
    /// A key the copy names with `token` is read: its item next.
    Reading {
        /// The key.
        key: usize,
        /// The entry's token.
        token: u64,
    },
    /// The key's read found it settled: a strongly consistent read of its item next.
    Confirming {
        /// The key.
        key: usize,
        /// The entry's token.
        token: u64,
    },
    /// The remove of `key`'s entry `token` (with [`GraceFrom::Answered`], the grace is
    /// checked now).
    Removing {
        /// The key.
        key: usize,
        /// The token read.
        token: u64,
    },
    /// An index read found `key`'s entry past the stale age: its item's consistent read
    /// next, then the read of `then` goes on.
    StaleReading {
        /// The stale entry's key.
        key: usize,
        /// Its token.
        token: u64,
        /// The key being read.
        then: usize,
    },
    /// The stale entry's remove (`needed`: its key needs reading, so a refresh).
    StaleWriting {
        /// The stale entry's key.
        key: usize,
        /// Its token.
        token: u64,
        /// The key's item must be read: refresh, else remove.
        needed: bool,
        /// The key being read.
        then: usize,
    },
}

/// An environment's own index write, laid over its index reads while recent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OwnWrite {
    /// The token named or removed.
    pub token: u64,
    /// Named (add, refresh) or removed.
    pub named: bool,
    /// The newest token when it was written: the write is recent while this one is within
    /// the grace.
    pub at: u64,
}

/// What one environment holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Env {
    /// Its copy of the index.
    pub copy: Index,
    /// The copy is within its cache age.
    pub fresh: bool,
    /// Its recent index writes, by key.
    pub own: BTreeMap<usize, OwnWrite>,
    /// What it does next, if anything.
    pub op: Option<Op>,
}

/// What the checker looks at.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// The index item (`None`: none).
    pub index: Option<Index>,
    /// The keys' items, in [`KEYS`] order.
    pub items: Vec<Item>,
    /// Each key item's last write, while a read may miss it ([`KeyedFleet::stale_reads`]).
    pub recent: Vec<Option<Recent>>,
    /// The next token an add or refresh writes; tokens start at 1.
    pub next_token: u64,
    /// Tokens below this are past the grace.
    pub old_below: u64,
    /// Tokens below this are past the stale age.
    pub stale_below: u64,
    /// The environments, in the model's order.
    pub envs: Vec<Env>,
}

/// One step.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A failure trips `key` in `env` (its first index write).
    Trip {
        /// The environment.
        env: usize,
        /// The key.
        key: usize,
    },
    /// `env` reads `key` (its index read if the copy is stale, else the copy's answer).
    Read {
        /// The environment.
        env: usize,
        /// The key.
        key: usize,
    },
    /// `env` elects itself on an open `key` (read and conditional write).
    Elect {
        /// The environment.
        env: usize,
        /// The key.
        key: usize,
    },
    /// `env`'s probe of `key` succeeds: its close write.
    Close {
        /// The environment.
        env: usize,
        /// The key.
        key: usize,
    },
    /// The environment's next store call.
    Step(usize),
    /// The environment's key read answers from a replica that missed the item's recent
    /// last write.
    StaleRead(usize),
    /// The environment's trip write never lands (it failed).
    Drop(usize),
    /// The environment's copy passes its cache age.
    CopyAges(usize),
    /// The oldest token within the grace passes it.
    GraceEnds,
    /// The oldest token within the stale age passes it.
    StaleAgeEnds,
}

impl KeyedFleet {
    fn index_of(state: &State) -> Option<&KeyIndex> {
        state.index.as_ref().map(|i| &i.0)
    }

    /// The state after `action`, or `None` if it changes nothing.
    pub fn step(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::Trip { env, key } => {
                let e = &s.envs[env];
                let known = e.copy.0.token(KEYS[key]).is_some();
                // A fresh copy that shows the cap reached refuses without a write.
                if !known && e.fresh && e.copy.0.open_keys >= self.cap {
                    return None;
                }
                self.naming(&mut s, env, key, known, 0);
            }
            Action::Read { env, key } => match s.envs[env].fresh {
                true => self.token_answered(&mut s, env, key),
                false => self.read_index(&mut s, env, key),
            },
            Action::Elect { env, key } => {
                let opened_at = s.items[key].record.as_ref().and_then(|r| r.opened_at);
                let elect = RecordWrite::Elect {
                    owner: self.environments[env].to_owned(),
                    expected_opened_at: opened_at,
                    expected_successes: 0,
                    now: NOW,
                    lease_expiry: NOW + 1_000,
                    expiration: 0,
                };
                if !self.write_item(&mut s, key, &elect) {
                    return None;
                }
            }
            Action::Close { env, key } => {
                let close = RecordWrite::Close {
                    owner: self.environments[env].to_owned(),
                    expiration: 0,
                };
                if !self.write_item(&mut s, key, &close) {
                    return None;
                }
                // `IndexCopy::closed`: the copy's token, else a consistent read's.
                let old_below = s.old_below;
                s.envs[env].op = match s.envs[env].copy.0.token(KEYS[key]) {
                    Some(token) => self.removal(key, token, old_below),
                    None => Some(Op::ClosedReading { key, old_below }),
                };
            }
            Action::Step(env) => self.step_op(&mut s, env)?,
            Action::StaleRead(env) => self.stale_read(&mut s, env)?,
            Action::Drop(env) => s.envs[env].op = None,
            Action::CopyAges(env) => s.envs[env].fresh = false,
            Action::GraceEnds => s.old_below += 1,
            Action::StaleAgeEnds => s.stale_below += 1,
        }
        Some(s)
    }
}

impl Model for KeyedFleet {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State {
            index: None,
            items: vec![Item::default(); KEYS.len()],
            recent: vec![None; KEYS.len()],
            next_token: 1,
            old_below: 1,
            stale_below: 1,
            envs: vec![Env::default(); self.environments.len()],
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        for (env, e) in state.envs.iter().enumerate() {
            match &e.op {
                Some(op) => {
                    actions.push(Action::Step(env));
                    if let Op::Reading { key, .. } = op
                        && self.misses(state, *key).is_some()
                    {
                        actions.push(Action::StaleRead(env));
                    }
                    if matches!(op, Op::Tripping { .. }) {
                        actions.push(Action::Drop(env));
                    }
                }
                None => {
                    for key in 0..KEYS.len() {
                        let record = state.items[key].read();
                        if state.next_token <= self.tokens {
                            actions.push(Action::Trip { env, key });
                        }
                        actions.push(Action::Read { env, key });
                        match record.state {
                            CircuitState::Open => actions.push(Action::Elect { env, key }),
                            CircuitState::HalfOpen
                                if record.half_open_owner.as_deref()
                                    == Some(self.environments[env]) =>
                            {
                                actions.push(Action::Close { env, key })
                            }
                            _ => {}
                        }
                    }
                }
            }
            if e.fresh {
                actions.push(Action::CopyAges(env));
            }
        }
        if state.old_below < state.next_token
            && (self.landing == Landing::Late || !Self::tripping(state, state.old_below))
        {
            actions.push(Action::GraceEnds);
        }
        if state.stale_below < state.old_below {
            actions.push(Action::StaleAgeEnds);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        self.step(last, action).filter(|next| next != last)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        Self::all_properties()
    }
}
