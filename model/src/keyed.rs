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

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use breaker_runtime::__protocol::needs_reading;
use breaker_runtime::CircuitState;
use breaker_runtime::store::{
    CircuitRecord, KeyIndex, KeyIndexOutcome, KeyIndexWrite, RecordWrite,
};
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

    /// Sends an index write as `IndexCopy::write` does: the item changes by the runtime's
    /// `KeyIndexWrite::apply`, the copy and own writes follow the answer.
    fn write_index(state: &mut State, env: usize, write: &KeyIndexWrite) -> KeyIndexOutcome {
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

    /// A key item write, as the in-memory store applies it.
    fn write_item(state: &mut State, key: usize, write: &RecordWrite) -> bool {
        let item = &mut state.items[key];
        let won = write.allowed(item.record.as_ref());
        if won {
            item.record = Some(write.applied_to(item.record.as_ref()));
        }
        won
    }

    /// `IndexCopy::name`'s next write (the first or a retry): the op that follows.
    fn naming(&self, state: &mut State, env: usize, key: usize, known: bool, tries: u8) {
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
    fn read_index(&self, state: &mut State, env: usize, key: usize) {
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
    fn token_answered(&self, state: &mut State, env: usize, key: usize) {
        let e = &mut state.envs[env];
        e.op = e
            .copy
            .0
            .token(KEYS[key])
            .map(|token| Op::Reading { key, token });
    }

    /// The grace of `token` has passed as the runtime counts it when a removal is decided.
    fn old(state: &State, token: u64) -> bool {
        token < state.old_below
    }

    /// Whether a trip named by `token` is on its way.
    fn tripping(state: &State, token: u64) -> bool {
        state
            .envs
            .iter()
            .any(|e| matches!(e.op, Some(Op::Tripping { token: t, .. }) if t == token))
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
                if !Self::write_item(&mut s, key, &elect) {
                    return None;
                }
            }
            Action::Close { env, key } => {
                let close = RecordWrite::Close {
                    owner: self.environments[env].to_owned(),
                    expiration: 0,
                };
                if !Self::write_item(&mut s, key, &close) {
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
            Action::Drop(env) => s.envs[env].op = None,
            Action::CopyAges(env) => s.envs[env].fresh = false,
            Action::GraceEnds => s.old_below += 1,
            Action::StaleAgeEnds => s.stale_below += 1,
        }
        Some(s)
    }

    /// The removal of `key`'s entry `token` if its grace had passed by `old_below` (the
    /// moment the removal's call was sent), as `IndexCopy::remove_if_settled` decides.
    fn removal(&self, key: usize, token: u64, old_below: u64) -> Option<Op> {
        let old = match self.grace_from {
            GraceFrom::Sent => token < old_below,
            // Decided at the remove itself.
            GraceFrom::Answered => true,
        };
        old.then_some(Op::Removing { key, token })
    }

    fn step_op(&self, s: &mut State, env: usize) -> Option<()> {
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
                };
                Self::write_item(s, key, &trip);
            }
            Op::ClosedReading { key, old_below } => {
                if let Some(token) = Self::index_of(s).and_then(|i| i.token(KEYS[key])) {
                    s.envs[env].op = self.removal(key, token, old_below);
                }
            }
            Op::Reading { key, token } => {
                let old_below = s.old_below;
                let record = s.items[key].record.clone();
                if !needs_reading(record.as_ref(), NOW) {
                    s.envs[env].op = self.removal(key, token, old_below);
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
    fn closed_entries(state: &State) -> bool {
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

/// The copy names `key` with `token` (`Believed::name`).
fn name(index: &mut KeyIndex, key: &str, token: u64) {
    if index.entries.insert(key.to_owned(), token).is_none() {
        index.open_keys = index.open_keys.saturating_add(1);
    }
}

/// The copy no longer names `key` (`Believed::unname`).
fn unname(index: &mut KeyIndex, key: &str) {
    if index.entries.remove(key).is_some() {
        index.open_keys = index.open_keys.saturating_sub(1);
    }
}

impl Model for KeyedFleet {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State {
            index: None,
            items: vec![Item::default(); KEYS.len()],
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
}
