//! A breaker environment's invocations: one at a time, or several at once (Lambda Managed
//! Instances), which share the process's cached record and its one probe slot, each with
//! its own deadline. A closed call of one invocation may run across the other's election,
//! probe and trip, and its failure is judged on the cache as it is when the call fails.

use breaker_runtime::__protocol as machine;

use super::{Action, Deadlines, Fleet, Reply, State};
use crate::item::Cached;

impl Fleet {
    /// The second by which a call that `invocation` started at `started` ends: its call
    /// timeout, or the invocation's deadline when that comes first (then the call is
    /// abandoned, a failure).
    pub(crate) fn limit(&self, invocation: usize, started: u64) -> u64 {
        let timeout = started + self.call_timeout;
        let Some(Deadlines { secs, stagger }) = self.deadlines else {
            return timeout;
        };
        // The invocation's deadlines fall on `offset + k × secs`; a call started on one
        // belongs to the invocation that starts there.
        let offset = (invocation as u64 * stagger) % secs;
        let after = started + 1;
        let deadline = after + (offset + secs - after % secs) % secs;
        timeout.min(deadline)
    }

    /// Whether an invocation of a breaker is free to call: its probe does not hold the
    /// slot, and no closed call of its own is in flight.
    pub(super) fn idle(&self, state: &State, actor: usize, invocation: usize) -> bool {
        let mine = &state.actors[actor];
        invocation < self.invocations(actor)
            && !(mine.probe.is_some() && mine.prober == invocation)
            && mine.calls.get(invocation).is_none_or(Option::is_none)
    }

    /// Whether a breaker's probe or closed call has reached its limit: time stands still
    /// until it ends.
    pub(super) fn breaker_due(&self, state: &State, actor: usize) -> bool {
        self.breaker_probe_limit(state, actor) || self.calls_due(state, actor).next().is_some()
    }

    /// The invocations of a breaker whose closed call has reached its limit.
    pub(crate) fn calls_due<'a>(
        &'a self,
        state: &'a State,
        actor: usize,
    ) -> impl Iterator<Item = usize> + 'a {
        let calls = &state.actors[actor].calls;
        (0..calls.len()).filter(move |&n| calls[n].is_some_and(|s| state.t >= self.limit(n, s)))
    }

    /// The steps of a breaker's closed calls in flight: a success before its limit, a
    /// failure at any time up to it.
    pub(super) fn call_ends(&self, state: &State, i: usize, actions: &mut Vec<Action>) {
        for (invocation, started) in state.actors[i].calls.iter().enumerate() {
            let Some(started) = *started else { continue };
            if state.t < self.limit(invocation, started) {
                actions.push(Action::Return {
                    actor: i,
                    invocation,
                });
            }
            for &reply in &self.replies {
                actions.push(Action::Trip {
                    actor: i,
                    invocation,
                    reply,
                });
            }
        }
    }

    /// An idle invocation starts a closed call on the circuit it reads closed; the read is
    /// the process's (adopted into the shared cache).
    pub(super) fn run(&self, state: &mut State, actor: usize, invocation: usize) -> Option<()> {
        let now = self.now_millis(state, actor);
        if !self.idle(state, actor, invocation)
            || state.actors[actor].calls.is_empty()
            || !machine::may_trip(&state.item.read(), now)
        {
            return None;
        }
        if !self.alone(state, actor) {
            state.actors[actor].cache = Cached(state.item.read());
        }
        state.actors[actor].calls[invocation] = Some(state.t);
        Some(())
    }

    /// The closed call in flight succeeds, before its limit.
    pub(super) fn finish(&self, state: &mut State, actor: usize, invocation: usize) -> Option<()> {
        let started = (*state.actors[actor].calls.get(invocation)?)?;
        if state.t >= self.limit(invocation, started) {
            return None;
        }
        state.actors[actor].calls[invocation] = None;
        Some(())
    }

    /// A closed call fails: one at a time, on the item it just read; with several
    /// invocations, the call in flight (by its deadline, its timeout, or before), which
    /// trips only if the shared cache, which the other invocation may have changed since,
    /// still may trip (`store::opening`).
    pub(super) fn fail(
        &self,
        state: &mut State,
        actor: usize,
        invocation: usize,
        reply: Reply,
    ) -> Option<()> {
        if state.actors[actor].calls.is_empty() {
            if invocation != 0 || !self.idle(state, actor, 0) {
                return None;
            }
            return self.trip(state, actor, state.item.read(), reply);
        }
        state.actors[actor].calls.get(invocation)?.as_ref()?;
        state.actors[actor].calls[invocation] = None;
        let base = state.actors[actor].cache.0.clone();
        match machine::may_trip(&base, self.now_millis(state, actor)) {
            true => self.trip(state, actor, base, reply),
            false => Some(()),
        }
    }
}
