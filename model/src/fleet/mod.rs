//! The fleet as a stateright model: breaker environments deciding with the runtime's own
//! `protocol::machine`, a Powertools environment with its write rules, an operator, and
//! the item, which every write changes as DynamoDB would (checked against the in-memory
//! store's `RecordWrite::applied_to` on the way).

mod breaker;
mod invocations;
mod operator;
mod powertools;
mod properties;

use breaker_runtime::__protocol::{self as machine, Thresholds};
use breaker_runtime::store::OverrideKind;
use stateright::{Model, Property};

use crate::item::{Cached, Item, Refusals};

/// Who takes part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Actor {
    /// A `CircuitBreaker` value in a process (`process` is the environment id it probes
    /// under: two values in one process share it), its clock `skew` seconds ahead.
    Breaker {
        /// The environment id.
        process: &'static str,
        /// Seconds its clock runs ahead of the true time (0 or 1).
        skew: u64,
        /// The invocations it runs at once: 1, one at a time; more, a Lambda Managed
        /// Instances environment, whose invocations share the value's cache and its one
        /// probe slot, and whose closed calls run across each other's steps.
        invocations: usize,
    },
    /// A Powertools (Python) environment. `resets_count`: 3.37.0, which forgets its probe
    /// successes when it wins an election (3.34.0 does not).
    Powertools {
        /// Seconds its clock runs ahead.
        skew: u64,
        /// 3.37.0's reset of its in-process count at an election.
        resets_count: bool,
    },
    /// An operator with the `breaker` CLI: one override (forced open or disabled, for a
    /// few seconds) and its release.
    Operator,
}

/// What became of a write's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reply {
    /// The store answered.
    Answered,
    /// The write landed (or lost), and its answer never came back.
    Lost,
    /// The write landed, its answer was lost, and the SDK's retry came back with the
    /// retry's own answer (lost, to the item the first attempt left).
    Retried,
}

/// The store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// Every request is served.
    Answers,
    /// Reads work; every election write fails (an IAM role without `UpdateItem`,
    /// sustained write throttling).
    RefusesElections,
}

/// When a breaker environment's invocations must end: each runs `secs`, and the next
/// starts at its deadline; invocation `i` started `i × stagger` seconds after the first,
/// so one invocation's deadline may cut its call short while another's runs on.
#[derive(Clone, Copy, Debug)]
pub struct Deadlines {
    /// An invocation's time, whole seconds.
    pub secs: u64,
    /// How much later each invocation started than the one before it.
    pub stagger: u64,
}

/// One model: who, with which thresholds, for how long.
#[derive(Clone, Debug)]
pub struct Fleet {
    /// The actors.
    pub actors: Vec<Actor>,
    /// The machine's thresholds (the same for every breaker environment).
    pub thresholds: Thresholds,
    /// A breaker probe's `call_timeout`, whole seconds: it ends (as a failure) by then.
    pub call_timeout: u64,
    /// The invocations' deadlines, which end a breaker's call (as a failure) before its
    /// timeout when they come first; `None`: only the timeout.
    pub deadlines: Option<Deadlines>,
    /// The longest a Powertools probe runs (it has no timeout of its own).
    pub powertools_call: u64,
    /// The last second the model explores.
    pub horizon: u64,
    /// The answers a write may get.
    pub replies: Vec<Reply>,
    /// The store.
    pub store: Store,
    /// Start closed (so trips are explored), else open since 0, tripped by actor 0.
    pub start_closed: bool,
    /// How many seconds of a healthy fleet (downstream up, store answering, a call every
    /// second in every environment) the bounded liveness allows to close the circuit.
    pub closes_within: u64,
    /// Every breaker failure (a trip, a probe's failure) asks for this many seconds (a
    /// `Retry-After`: `Outcome::OpenFor`); `None`: ordinary failures.
    pub open_for: Option<u64>,
}

/// What one actor holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ActorState {
    /// A breaker's cached record (the one it last read or wrote).
    pub cache: Cached,
    /// The opening this breaker committed (trip or reopen), its first right.
    pub committed: Option<u64>,
    /// The second its probe started, while one runs: a breaker's one probe slot.
    pub probe: Option<u64>,
    /// The invocation whose probe holds the slot (0 while none does).
    pub prober: usize,
    /// For each invocation of a breaker that runs several at once, the second its closed
    /// call in flight started (empty for one at a time: its closed calls end as they
    /// start).
    pub calls: Vec<Option<u64>>,
    /// The running probe hands over at its end (it was a quiet call).
    pub hand_over: bool,
    /// An operator's write or a Powertools close, reopen or trip took the running probe's
    /// lease away: it runs on, its outcome's write will lose, and it no longer counts as
    /// a probe under a live lease (the documented exception).
    pub revoked: bool,
    /// The running probe was elected alone (the store refused the elections for the
    /// bound): no lease in the store covers it (the documented exception, as for a store
    /// that cannot be reached).
    pub alone: bool,
    /// The elections the store refused this breaker, and since when.
    pub refused: Option<Refusals>,
    /// A Powertools environment's in-process probe successes.
    pub successes: u32,
    /// The operator has set its override.
    pub used: bool,
}

/// What the checker looks at.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// The true time, unix seconds.
    pub t: u64,
    /// The shared item.
    pub item: Item,
    /// Every actor's own state, in the model's order.
    pub actors: Vec<ActorState>,
    /// Probe successes (any environment's) since the circuit last opened or closed.
    pub successes_in_opening: u32,
    /// A breaker write on which DynamoDB and the in-memory store disagree.
    pub disagreement: Option<String>,
    /// A close without `success_threshold` probe successes in this opening.
    pub early_close: bool,
    /// A breaker write that overwrote a live override.
    pub override_overwritten: bool,
    /// A trip, reopen or election of ours that landed, which we did not count as ours.
    pub own_write_unrecognised: bool,
    /// A breaker write shortened the opening's wait.
    pub wait_shrank: bool,
}

/// One step.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A second passes.
    Tick,
    /// A breaker's call on an open or half-open circuit that elects or probes.
    Call {
        /// The breaker.
        actor: usize,
        /// Its invocation that calls.
        invocation: usize,
        /// The call came after none for a cache age.
        quiet: bool,
        /// The election's answer.
        reply: Reply,
    },
    /// A breaker's probe ended.
    EndProbe {
        /// The breaker.
        actor: usize,
        /// Its invocation whose probe it is.
        invocation: usize,
        /// Success, or failure (at the latest at `call_timeout` or the invocation's
        /// deadline).
        success: bool,
        /// The write's answer.
        reply: Reply,
    },
    /// A breaker that reads the circuit closed, and no suspicion on it, raises one (the
    /// fleet's window counters looked like an outage) until the model's horizon is past.
    Suspect(usize),
    /// A breaker's closed call fails: one at a time, a call that reads the circuit closed
    /// and trips it; with several invocations, the invocation's call in flight, which
    /// trips the circuit if the shared cache says it may (`store::opening`).
    Trip {
        /// The breaker.
        actor: usize,
        /// Its invocation whose call failed.
        invocation: usize,
        /// The trip's answer.
        reply: Reply,
    },
    /// An invocation of a breaker that runs several at once starts a closed call on the
    /// circuit it reads closed (the read is adopted into the shared cache).
    Run {
        /// The breaker.
        actor: usize,
        /// Its invocation.
        invocation: usize,
    },
    /// That closed call succeeds.
    Return {
        /// The breaker.
        actor: usize,
        /// Its invocation.
        invocation: usize,
    },
    /// The Powertools environment's call elects it or probes.
    PtCall(usize),
    /// Its probe ended.
    PtEnd {
        /// The environment.
        actor: usize,
        /// The outcome.
        success: bool,
    },
    /// It trips a circuit it reads closed.
    PtTrip(usize),
    /// The operator sets an override for two seconds.
    SetOverride(OverrideKind),
    /// The operator releases the override it set.
    Release,
}

const RECOVERY_TTL_GRACE: u64 = 3600;

impl Fleet {
    fn id(&self, actor: usize) -> &'static str {
        match self.actors[actor] {
            Actor::Breaker { process, .. } => process,
            Actor::Powertools { .. } => "P",
            Actor::Operator => "ops",
        }
    }

    /// How many invocations an actor runs at once.
    pub(crate) fn invocations(&self, actor: usize) -> usize {
        match self.actors[actor] {
            Actor::Breaker { invocations, .. } => invocations,
            _ => 1,
        }
    }

    fn skew(&self, actor: usize) -> u64 {
        match self.actors[actor] {
            Actor::Breaker { skew, .. } | Actor::Powertools { skew, .. } => skew,
            Actor::Operator => 0,
        }
    }

    /// The actor's clock, unix millis.
    fn now_millis(&self, state: &State, actor: usize) -> u64 {
        (state.t + self.skew(actor)) * 1000
    }

    pub(crate) fn breakers(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.actors.len()).filter(|&i| matches!(self.actors[i], Actor::Breaker { .. }))
    }

    fn opened_or_closed(state: &mut State) {
        state.successes_in_opening = 0;
    }
}

impl Model for Fleet {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let actor = |i: usize| ActorState {
            cache: Cached::default(),
            committed: None,
            probe: None,
            prober: 0,
            hand_over: false,
            revoked: false,
            alone: false,
            refused: None,
            successes: 0,
            used: false,
            calls: match self.invocations(i) {
                1 => Vec::new(),
                n => vec![None; n],
            },
        };
        let mut actors: Vec<_> = (0..self.actors.len()).map(actor).collect();
        let item = match self.start_closed {
            true => Item::default(),
            false => {
                let trip = machine::trip(
                    self.id(0),
                    self.thresholds.failure_threshold,
                    0,
                    &self.thresholds,
                    None,
                );
                actors[0].committed = Some(0);
                actors[0].cache = Cached(trip.applied_to(None));
                Item {
                    record: Some(trip.applied_to(None)),
                    ttl: trip.expiration(),
                }
            }
        };
        vec![State {
            t: 0,
            item,
            actors,
            successes_in_opening: 0,
            disagreement: None,
            early_close: false,
            override_overwritten: false,
            own_write_unrecognised: false,
            wait_shrank: false,
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        if Self::flagged(state) {
            return;
        }
        let probes_due = (0..self.actors.len()).any(|i| match self.actors[i] {
            Actor::Breaker { .. } => self.breaker_due(state, i),
            Actor::Powertools { .. } => self.powertools_probe_limit(state, i),
            Actor::Operator => false,
        });
        if state.t < self.horizon && !probes_due {
            actions.push(Action::Tick);
        }
        for (i, actor) in self.actors.iter().enumerate() {
            match actor {
                Actor::Breaker { .. } => self.breaker_actions(state, i, actions),
                Actor::Powertools { .. } => self.powertools_actions(state, i, actions),
                Actor::Operator => self.operator_actions(state, i, actions),
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut state = last.clone();
        let action_kind = match action {
            Action::PtCall(_) | Action::PtEnd { .. } | Action::PtTrip(_) => Kind::Powertools,
            Action::SetOverride(_) | Action::Release => Kind::Operator,
            _ => Kind::Breaker,
        };
        match action {
            Action::Tick => state.t += 1,
            Action::Call {
                actor,
                invocation,
                quiet,
                reply,
            } => self.call(&mut state, actor, invocation, quiet, reply)?,
            Action::EndProbe {
                actor,
                invocation,
                success,
                reply,
            } => self.end_probe(&mut state, actor, invocation, success, reply)?,
            Action::Trip {
                actor,
                invocation,
                reply,
            } => self.fail(&mut state, actor, invocation, reply)?,
            Action::Run { actor, invocation } => self.run(&mut state, actor, invocation)?,
            Action::Return { actor, invocation } => self.finish(&mut state, actor, invocation)?,
            Action::Suspect(actor) => self.suspect(&mut state, actor)?,
            Action::PtCall(actor) => {
                if !self.powertools_call(&mut state, actor) {
                    return None;
                }
            }
            Action::PtEnd { actor, success } => self.powertools_end(&mut state, actor, success)?,
            Action::PtTrip(actor) => self.powertools_trip(&mut state, actor)?,
            Action::SetOverride(kind) => self.set_override(&mut state, kind)?,
            Action::Release => self.release(&mut state)?,
        }
        if matches!(action_kind, Kind::Operator | Kind::Powertools) {
            self.revoke_lost_leases(&mut state);
        }
        Some(state)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        Self::all_properties()
    }
}

/// Who made a step.
enum Kind {
    Breaker,
    Powertools,
    Operator,
}

impl Fleet {
    /// One step of the fleet in the liveness runs.
    pub(crate) fn step(&self, state: &State, action: Action) -> Option<State> {
        self.next_state(state, action)
    }
}
