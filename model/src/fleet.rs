//! The fleet as a stateright model: breaker environments deciding with the runtime's own
//! `protocol::machine`, a Powertools environment with its write rules, an operator, and
//! the item, which every write changes as DynamoDB would (checked against the in-memory
//! store's `RecordWrite::applied_to` on the way).

use breaker_runtime::__protocol::{
    self as machine, Admission, Local, Outcome, RefusedElections, Thresholds,
};
use breaker_runtime::CircuitState;
use breaker_runtime::store::{CircuitRecord, Override, OverrideKind, RecordWrite, WriteOutcome};
use stateright::{Model, Property};

use crate::dynamodb;
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

/// One model: who, with which thresholds, for how long.
#[derive(Clone, Debug)]
pub struct Fleet {
    /// The actors.
    pub actors: Vec<Actor>,
    /// The machine's thresholds (the same for every breaker environment).
    pub thresholds: Thresholds,
    /// A breaker probe's `call_timeout`, whole seconds: it ends (as a failure) by then.
    pub call_timeout: u64,
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
}

/// What one actor holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ActorState {
    /// A breaker's cached record (the one it last read or wrote).
    pub cache: Cached,
    /// The opening this breaker committed (trip or reopen), its first right.
    pub committed: Option<u64>,
    /// The second its probe started, while one runs.
    pub probe: Option<u64>,
    /// The running probe hands on at its end (it was a quiet call).
    pub hand_on: bool,
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
        /// The call came after none for a cache age.
        quiet: bool,
        /// The election's answer.
        reply: Reply,
    },
    /// A breaker's probe ended.
    EndProbe {
        /// The breaker.
        actor: usize,
        /// Success, or failure (a timeout at `call_timeout`).
        success: bool,
        /// The write's answer.
        reply: Reply,
    },
    /// A breaker that reads the circuit closed, and no suspicion on it, raises one (the
    /// fleet's window counters looked like an outage) until the model's horizon is past.
    Suspect(usize),
    /// A breaker that reads the circuit closed trips it.
    Trip {
        /// The breaker.
        actor: usize,
        /// The trip's answer.
        reply: Reply,
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

    /// The refusals of a breaker's elections that the item it reads still bears out (a
    /// read of any other record ends them, as in `RecordCache::store_answered`).
    fn refusals(&self, state: &State, actor: usize) -> Option<RefusedElections> {
        let stored = state.item.read();
        state.actors[actor]
            .refused
            .as_ref()
            .map(|r| r.0.clone())
            .filter(|r| r.on(&stored))
    }

    /// Whether a breaker elects alone now: its elections were refused for the bound.
    fn alone(&self, state: &State, actor: usize) -> bool {
        let now = self.now_millis(state, actor);
        self.refusals(state, actor).is_some_and(|r| r.alone(now))
    }

    /// The record a breaker acts on after reading the item: the item, unless it acts alone
    /// against the record the store keeps refusing elections on (no news): then its own.
    pub(crate) fn effective(&self, state: &State, actor: usize) -> CircuitRecord {
        match self.alone(state, actor) {
            true => state.actors[actor].cache.0.clone(),
            false => state.item.read(),
        }
    }

    /// What a breaker's call decides on the item it just read.
    fn admission(&self, state: &State, actor: usize, quiet: bool) -> Admission {
        let record = self.effective(state, actor);
        let now = self.now_millis(state, actor);
        let mut local = Local {
            probe_in_flight: false,
            committed_opening: state.actors[actor].committed,
            verified: false,
            store_unreachable: self.alone(state, actor),
            quiet,
        };
        let me = self.id(actor);
        match machine::admit(&record, me, now, &self.thresholds, &local) {
            Admission::Verify => {
                local.verified = true;
                machine::admit(&record, me, now, &self.thresholds, &local)
            }
            admission => admission,
        }
    }

    /// Writes a breaker transition: DynamoDB's request decides, the in-memory store's
    /// reading is compared; returns what the writer hears.
    fn write(
        &self,
        state: &mut State,
        actor: usize,
        transition: &RecordWrite,
        reply: Reply,
    ) -> Option<WriteOutcome> {
        if self.store == Store::RefusesElections && matches!(transition, RecordWrite::Elect { .. })
        {
            return None;
        }
        let before = state.item.clone();
        let after = Self::both_readings(state, transition);
        let ddb = after.is_some();
        if let Some(after) = after {
            self.judge_breaker_write(state, actor, &before, &after, transition);
            state.item = after;
        }
        match reply {
            Reply::Lost => None,
            Reply::Answered | Reply::Retried if !ddb => {
                Some(WriteOutcome::Lost(state.item.record.clone()))
            }
            Reply::Answered => Some(WriteOutcome::Won),
            // The retry meets the item the first attempt left.
            Reply::Retried => match dynamodb::allows(transition, &state.item) {
                true => Some(WriteOutcome::Won),
                false => Some(WriteOutcome::Lost(state.item.record.clone())),
            },
        }
    }

    /// The write-time safety checks of a breaker write that landed.
    fn judge_breaker_write(
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

    /// Adopts what the machine settles a breaker write to; returns whether it counts as
    /// the breaker's own (and checks that a landed trip, reopen or election does).
    fn settle(
        &self,
        state: &mut State,
        actor: usize,
        base: &CircuitRecord,
        transition: &RecordWrite,
        reply: Option<WriteOutcome>,
        landed: bool,
    ) -> bool {
        let now = self.now_millis(state, actor);
        let answered = reply.is_some();
        let settled = machine::settle(
            base,
            transition,
            reply,
            self.id(actor),
            now,
            &self.thresholds,
        );
        let own = matches!(
            transition,
            RecordWrite::Trip { .. } | RecordWrite::Reopen { .. } | RecordWrite::Elect { .. }
        );
        // A landed write whose answer came back (the store's, or its retry's) must count
        // as ours. Without an answer, a trip or reopen is applied locally, and an election
        // is recognised at the next read that names this environment the owner.
        if own && landed && answered && !settled.committed {
            state.own_write_unrecognised = true;
        }
        // As `commit_settled` notes it: the first right only from a write the store said
        // won (an opening applied alone counts only while the store is unreachable).
        if let Some(opened_at) = machine::committed_opening(transition, &settled)
            && settled.won
        {
            state.actors[actor].committed = Some(opened_at);
        }
        state.actors[actor].cache = Cached(settled.record.clone());
        settled.committed
    }

    fn opened_or_closed(state: &mut State) {
        state.successes_in_opening = 0;
    }

    fn breaker_probe_limit(&self, state: &State, actor: usize) -> bool {
        state.actors[actor]
            .probe
            .is_some_and(|started| state.t >= started + self.call_timeout)
    }

    fn powertools_probe_limit(&self, state: &State, actor: usize) -> bool {
        state.actors[actor]
            .probe
            .is_some_and(|started| state.t >= started + self.powertools_call)
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

    /// Applies a Powertools election or probe start at its call.
    fn powertools_call(&self, state: &mut State, actor: usize) -> bool {
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
}

impl Model for Fleet {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let actor = ActorState {
            cache: Cached::default(),
            committed: None,
            probe: None,
            hand_on: false,
            revoked: false,
            alone: false,
            refused: None,
            successes: 0,
            used: false,
        };
        let mut actors = vec![actor; self.actors.len()];
        let item = match self.start_closed {
            true => Item::default(),
            false => {
                let trip = machine::trip(
                    self.id(0),
                    self.thresholds.failure_threshold,
                    0,
                    &self.thresholds,
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
            Actor::Breaker { .. } => self.breaker_probe_limit(state, i),
            Actor::Powertools { .. } => self.powertools_probe_limit(state, i),
            Actor::Operator => false,
        });
        if state.t < self.horizon && !probes_due {
            actions.push(Action::Tick);
        }
        for (i, actor) in self.actors.iter().enumerate() {
            let mine = &state.actors[i];
            match actor {
                Actor::Breaker { .. } => match mine.probe {
                    Some(_) => {
                        for success in [true, false] {
                            if success && self.breaker_probe_limit(state, i) {
                                continue;
                            }
                            for &reply in &self.replies {
                                actions.push(Action::EndProbe {
                                    actor: i,
                                    success,
                                    reply,
                                });
                            }
                        }
                    }
                    None => {
                        for quiet in [false, true] {
                            match self.admission(state, i, quiet) {
                                Admission::Probe | Admission::ElectAlone(_) => {
                                    actions.push(Action::Call {
                                        actor: i,
                                        quiet,
                                        reply: Reply::Answered,
                                    })
                                }
                                Admission::Elect(_) => {
                                    for &reply in &self.replies {
                                        actions.push(Action::Call {
                                            actor: i,
                                            quiet,
                                            reply,
                                        });
                                    }
                                }
                                _ => {}
                            }
                        }
                        let now = self.now_millis(state, i);
                        if self.start_closed && machine::may_trip(&state.item.read(), now) {
                            for &reply in &self.replies {
                                actions.push(Action::Trip { actor: i, reply });
                            }
                            if state.item.read().live_suspicion(now / 1000).is_none() {
                                actions.push(Action::Suspect(i));
                            }
                        }
                    }
                },
                Actor::Powertools { .. } => match mine.probe {
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
                },
                Actor::Operator => {
                    let stored = state.item.read().operator_override;
                    if !mine.used && stored.is_none() {
                        actions.push(Action::SetOverride(OverrideKind::ForcedOpen));
                        actions.push(Action::SetOverride(OverrideKind::Disabled));
                    }
                    if stored.is_some() {
                        actions.push(Action::Release);
                    }
                }
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
                quiet,
                reply,
            } => {
                let base = self.effective(&state, actor);
                let admission = self.admission(&state, actor, quiet);
                state.actors[actor].refused = self.refusals(&state, actor).map(Refusals);
                let mut alone = false;
                match admission {
                    Admission::Probe => {
                        alone = self.alone(&state, actor);
                        state.actors[actor].cache = Cached(base);
                    }
                    Admission::ElectAlone(election) => {
                        let settled = machine::settle_alone(&base, &election);
                        state.actors[actor].cache = Cached(settled.record);
                        alone = true;
                    }
                    Admission::Elect(election) => {
                        let landed = dynamodb::allows(&election, &state.item)
                            && self.store == Store::Answers;
                        let heard = self.write(&mut state, actor, &election, reply);
                        let now = self.now_millis(&state, actor);
                        state.actors[actor].refused = match self.store {
                            // The write failed: one more refusal on the record read.
                            Store::RefusesElections => Some(Refusals(RefusedElections::after(
                                state.actors[actor].refused.take().map(|r| r.0),
                                &base,
                                now,
                                &self.thresholds,
                            ))),
                            Store::Answers => None,
                        };
                        if self.alone(&state, actor) {
                            // Refused, and the refusals have lasted the bound: the
                            // election is made alone (`commit::store::heard`).
                            let settled = machine::settle_alone(&base, &election);
                            state.actors[actor].cache = Cached(settled.record);
                            alone = true;
                        } else if !self.settle(&mut state, actor, &base, &election, heard, landed) {
                            return Some(state);
                        }
                    }
                    _ => return None,
                }
                state.actors[actor].alone = alone;
                state.actors[actor].probe = Some(state.t);
                state.actors[actor].hand_on = quiet;
                state.actors[actor].revoked = false;
            }
            Action::EndProbe {
                actor,
                success,
                reply,
            } => {
                let base = state.actors[actor].cache.0.clone();
                let outcome = match success {
                    true => Outcome::Success,
                    false => Outcome::Failure,
                };
                if success {
                    state.successes_in_opening += 1;
                }
                let transition = machine::on_probe_outcome(
                    outcome,
                    &base,
                    self.id(actor),
                    self.now_millis(&state, actor),
                    &self.thresholds,
                    state.actors[actor].hand_on,
                );
                let landed = dynamodb::allows(&transition, &state.item);
                let alone = self.alone(&state, actor);
                let mut heard = self.write(&mut state, actor, &transition, reply);
                // Lost to the record the store refuses elections on, while acting alone:
                // no news (as `commit::store::heard`), settled as if unanswered.
                if alone && matches!(heard, Some(WriteOutcome::Lost(_))) && !landed {
                    heard = None;
                }
                if landed && !matches!(transition, RecordWrite::HandOver { .. }) {
                    Self::opened_or_closed(&mut state);
                }
                self.settle(&mut state, actor, &base, &transition, heard, landed);
                state.actors[actor].probe = None;
                state.actors[actor].revoked = false;
                state.actors[actor].alone = false;
            }
            Action::Trip { actor, reply } => {
                let base = state.item.read();
                let now = self.now_millis(&state, actor);
                let trip = machine::trip(
                    self.id(actor),
                    self.thresholds.failure_threshold,
                    now,
                    &self.thresholds,
                );
                let landed = dynamodb::allows(&trip, &state.item);
                let heard = self.write(&mut state, actor, &trip, reply);
                if landed {
                    Self::opened_or_closed(&mut state);
                }
                self.settle(&mut state, actor, &base, &trip, heard, landed);
            }
            Action::Suspect(actor) => {
                let base = state.item.read();
                let now = self.now_millis(&state, actor) / 1000;
                // Longer than the horizon: the suspicion outlasts the run unless a write
                // drops it.
                let until = now + self.horizon + 10;
                let suspect = RecordWrite::Suspect {
                    now,
                    until,
                    expiration: until + RECOVERY_TTL_GRACE,
                };
                let landed = dynamodb::allows(&suspect, &state.item);
                let heard = self.write(&mut state, actor, &suspect, Reply::Answered);
                self.settle(&mut state, actor, &base, &suspect, heard, landed);
            }
            Action::PtCall(actor) => {
                if !self.powertools_call(&mut state, actor) {
                    return None;
                }
            }
            Action::PtEnd { actor, success } => {
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
                                Self::opened_or_closed(&mut state);
                            }
                            false => state.actors[actor].successes = count,
                        }
                    }
                    false => {
                        state.actors[actor].successes = 0;
                        state.item = dynamodb::powertools_end(&state.item, Some(now), ttl);
                        Self::opened_or_closed(&mut state);
                    }
                }
            }
            Action::PtTrip(actor) => {
                let now = state.t + self.skew(actor);
                let ttl = now + self.thresholds.recovery_secs + RECOVERY_TTL_GRACE;
                state.item = dynamodb::powertools_trip(self.thresholds.failure_threshold, now, ttl);
                Self::opened_or_closed(&mut state);
            }
            Action::SetOverride(kind) => {
                let operator = self.actors.iter().position(|a| *a == Actor::Operator)?;
                let until = state.t + 2;
                let set = Override::new(kind, "ops", state.t).until(until);
                let transition = RecordWrite::Override {
                    set,
                    replaces: None,
                    expiration: Some(until + RECOVERY_TTL_GRACE),
                };
                self.operator_write(&mut state, &transition);
                state.actors[operator].used = true;
                if kind == OverrideKind::ForcedOpen {
                    Self::opened_or_closed(&mut state);
                }
            }
            Action::Release => {
                let released = state.item.read().operator_override?;
                let transition = RecordWrite::Release {
                    released,
                    now: state.t,
                    expiration: state.t + self.thresholds.recovery_secs + RECOVERY_TTL_GRACE,
                };
                self.operator_write(&mut state, &transition);
            }
        }
        if matches!(action_kind, Kind::Operator | Kind::Powertools) {
            self.revoke_lost_leases(&mut state);
        }
        Some(state)
    }

    fn properties(&self) -> Vec<Property<Self>> {
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
}

/// Who made a step.
enum Kind {
    Breaker,
    Powertools,
    Operator,
}

impl Fleet {
    /// After an operator's or a Powertools write: every running breaker probe whose lease
    /// the item no longer holds was ended by it.
    fn revoke_lost_leases(&self, state: &mut State) {
        let owner = state.item.read().half_open_owner;
        for i in self.breakers().collect::<Vec<_>>() {
            if state.actors[i].probe.is_some() && owner.as_deref() != Some(self.id(i)) {
                state.actors[i].revoked = true;
            }
        }
    }

    /// An operator's write: both readings must agree here too.
    fn operator_write(&self, state: &mut State, transition: &RecordWrite) {
        if let Some(after) = Self::both_readings(state, transition) {
            state.item = after;
        }
    }

    /// `transition` on the current item as DynamoDB's request does it and as
    /// `RecordWrite::allowed`/`applied_to` say; a disagreement of the two is noted (the
    /// first one only). Returns the item DynamoDB leaves, if its condition holds.
    fn both_readings(state: &mut State, transition: &RecordWrite) -> Option<Item> {
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

    /// One step of the fleet in the liveness runs.
    pub(crate) fn step(&self, state: &State, action: Action) -> Option<State> {
        self.next_state(state, action)
    }
}
