//! A breaker environment: it decides with the runtime's own `protocol::machine` on the
//! item it reads, and every write it makes is DynamoDB's request, checked against the
//! in-memory store's reading.

use std::time::Duration;

use breaker_runtime::__protocol::{self as machine, Admission, Local, Outcome, RefusedElections};
use breaker_runtime::store::{CircuitRecord, RecordWrite, WriteOutcome};

use super::{Action, Fleet, RECOVERY_TTL_GRACE, Reply, State, Store};
use crate::dynamodb;
use crate::item::{Cached, Refusals};

impl Fleet {
    /// The refusals of a breaker's elections that the item it reads still bears out (a
    /// read of any other record ends them, as in `RecordCache::store_answered`).
    pub(super) fn refusals(&self, state: &State, actor: usize) -> Option<RefusedElections> {
        let stored = state.item.read();
        state.actors[actor]
            .refused
            .as_ref()
            .map(|r| r.0.clone())
            .filter(|r| r.on(&stored))
    }

    /// Whether a breaker elects alone now: its elections were refused for the bound.
    pub(super) fn alone(&self, state: &State, actor: usize) -> bool {
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

    /// What a breaker's call decides on the item it just read; while another invocation's
    /// probe holds the process's slot, the machine rejects it (`probe_in_flight`).
    pub(super) fn admission(&self, state: &State, actor: usize, quiet: bool) -> Admission {
        let record = self.effective(state, actor);
        let now = self.now_millis(state, actor);
        let mut local = Local {
            probe_in_flight: state.actors[actor].probe.is_some(),
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
    pub(super) fn write(
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

    /// Adopts what the machine settles a breaker write to; returns whether it counts as
    /// the breaker's own (and checks that a landed trip, reopen or election does).
    pub(super) fn settle(
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

    /// Whether a breaker's probe has reached its limit: it may only fail now.
    pub(super) fn breaker_probe_limit(&self, state: &State, actor: usize) -> bool {
        let mine = &state.actors[actor];
        mine.probe
            .is_some_and(|started| state.t >= self.limit(mine.prober, started))
    }

    /// The steps a breaker may take now: its probe's end, its closed calls' ends, and each
    /// idle invocation's call (one at a time: the one invocation, idle while no probe runs).
    pub(super) fn breaker_actions(&self, state: &State, i: usize, actions: &mut Vec<Action>) {
        let mine = &state.actors[i];
        self.call_ends(state, i, actions);
        if mine.probe.is_some() {
            for success in [true, false] {
                if success && self.breaker_probe_limit(state, i) {
                    continue;
                }
                for &reply in &self.replies {
                    actions.push(Action::EndProbe {
                        actor: i,
                        invocation: mine.prober,
                        success,
                        reply,
                    });
                }
            }
        }
        let idle: Vec<usize> = (0..self.invocations(i))
            .filter(|&n| self.idle(state, i, n))
            .collect();
        for &invocation in &idle {
            for quiet in [false, true] {
                let replies: &[Reply] = match self.admission(state, i, quiet) {
                    Admission::Probe | Admission::ElectAlone(_) => &[Reply::Answered],
                    Admission::Elect(_) => &self.replies,
                    _ => &[],
                };
                for &reply in replies {
                    actions.push(Action::Call {
                        actor: i,
                        invocation,
                        quiet,
                        reply,
                    });
                }
            }
        }
        let now = self.now_millis(state, i);
        if idle.is_empty() || !self.start_closed || !machine::may_trip(&state.item.read(), now) {
            return;
        }
        match self.invocations(i) {
            1 => {
                for &reply in &self.replies {
                    actions.push(Action::Trip {
                        actor: i,
                        invocation: 0,
                        reply,
                    });
                }
            }
            _ => {
                for &invocation in &idle {
                    actions.push(Action::Run {
                        actor: i,
                        invocation,
                    });
                }
            }
        }
        if state.item.read().live_suspicion(now / 1000).is_none() {
            actions.push(Action::Suspect(i));
        }
    }

    /// A call on an open or half-open circuit by an idle invocation: it elects, or probes.
    pub(super) fn call(
        &self,
        state: &mut State,
        actor: usize,
        invocation: usize,
        quiet: bool,
        reply: Reply,
    ) -> Option<()> {
        // The slot is taken: the claim fails (`ProbeSlot::claim`), the call is rejected.
        if !self.idle(state, actor, invocation) || state.actors[actor].probe.is_some() {
            return None;
        }
        let base = self.effective(state, actor);
        let admission = self.admission(state, actor, quiet);
        state.actors[actor].refused = self.refusals(state, actor).map(Refusals);
        let mut alone = false;
        match admission {
            Admission::Probe => {
                alone = self.alone(state, actor);
                state.actors[actor].cache = Cached(base);
            }
            Admission::ElectAlone(election) => {
                let settled = machine::settle_alone(&base, &election);
                state.actors[actor].cache = Cached(settled.record);
                alone = true;
            }
            Admission::Elect(election) => {
                let landed =
                    dynamodb::allows(&election, &state.item) && self.store == Store::Answers;
                let heard = self.write(state, actor, &election, reply);
                let now = self.now_millis(state, actor);
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
                if self.alone(state, actor) {
                    // Refused, and the refusals have lasted the bound: the
                    // election is made alone (`commit::store::heard`).
                    let settled = machine::settle_alone(&base, &election);
                    state.actors[actor].cache = Cached(settled.record);
                    alone = true;
                } else if !self.settle(state, actor, &base, &election, heard, landed) {
                    return Some(());
                }
            }
            _ => return None,
        }
        state.actors[actor].alone = alone;
        state.actors[actor].probe = Some(state.t);
        state.actors[actor].prober = invocation;
        state.actors[actor].hand_over = quiet;
        state.actors[actor].revoked = false;
        Some(())
    }

    /// The running probe ended: its outcome's write, on the record the shared cache holds
    /// now (`store::probe_base`).
    pub(super) fn end_probe(
        &self,
        state: &mut State,
        actor: usize,
        invocation: usize,
        success: bool,
        reply: Reply,
    ) -> Option<()> {
        let mine = &state.actors[actor];
        if mine.probe.is_none()
            || mine.prober != invocation
            || (success && self.breaker_probe_limit(state, actor))
        {
            return None;
        }
        let base = mine.cache.0.clone();
        let outcome = match (success, self.open_for) {
            (true, _) => Outcome::Success,
            (false, Some(secs)) => Outcome::OpenFor(Duration::from_secs(secs)),
            (false, None) => Outcome::Failure,
        };
        if success {
            state.successes_in_opening += 1;
        }
        let transition = machine::on_probe_outcome(
            outcome,
            &base,
            self.id(actor),
            self.now_millis(state, actor),
            &self.thresholds,
            state.actors[actor].hand_over,
        );
        let landed = dynamodb::allows(&transition, &state.item);
        let alone = self.alone(state, actor);
        let mut heard = self.write(state, actor, &transition, reply);
        // Lost to the record the store refuses elections on, while acting alone:
        // no news (as `commit::store::heard`), settled as if unanswered.
        if alone && matches!(heard, Some(WriteOutcome::Lost(_))) && !landed {
            heard = None;
        }
        if landed && !matches!(transition, RecordWrite::HandOver { .. }) {
            Self::opened_or_closed(state);
        }
        self.settle(state, actor, &base, &transition, heard, landed);
        state.actors[actor].probe = None;
        state.actors[actor].prober = 0;
        state.actors[actor].revoked = false;
        state.actors[actor].alone = false;
        Some(())
    }

    /// A trip of a circuit that `base` shows closed.
    pub(super) fn trip(
        &self,
        state: &mut State,
        actor: usize,
        base: CircuitRecord,
        reply: Reply,
    ) -> Option<()> {
        let now = self.now_millis(state, actor);
        let trip = machine::trip(
            self.id(actor),
            self.thresholds.failure_threshold,
            now,
            &self.thresholds,
            self.open_for.map(Duration::from_secs),
        );
        let landed = dynamodb::allows(&trip, &state.item);
        let heard = self.write(state, actor, &trip, reply);
        if landed {
            Self::opened_or_closed(state);
        }
        self.settle(state, actor, &base, &trip, heard, landed);
        Some(())
    }

    /// A suspicion raised on a circuit it reads closed.
    pub(super) fn suspect(&self, state: &mut State, actor: usize) -> Option<()> {
        let base = state.item.read();
        let now = self.now_millis(state, actor) / 1000;
        // Longer than the horizon: the suspicion outlasts the run unless a write
        // drops it.
        let until = now + self.horizon + 10;
        let suspect = RecordWrite::Suspect {
            now,
            until,
            expiration: until + RECOVERY_TTL_GRACE,
        };
        let landed = dynamodb::allows(&suspect, &state.item);
        let heard = self.write(state, actor, &suspect, Reply::Answered);
        self.settle(state, actor, &base, &suspect, heard, landed);
        Some(())
    }
}
