//! `RecordCache`: this environment's copy of a circuit's shared record, and what it knows
//! besides: until when the copy is trusted, when the store may be called again after an
//! error, its version (so a read that started before a local transition is not adopted),
//! and whose opening the record is. (The probe successes are the fleet's: in the record.) Guarded by the circuit's mutex.

use crate::protocol::CircuitRecord;
use crate::protocol::CircuitState;
use crate::protocol::machine::{Local, Thresholds};
use crate::protocol::refusals::RefusedElections;

/// What the slow path knows of the shared record.
#[derive(Debug)]
pub(super) struct RecordCache {
    record: CircuitRecord,
    /// How long a record read or written is trusted (milliseconds).
    max_age_millis: u64,
    /// The cached record is trusted until then (unix millis).
    fresh_until: u64,
    /// After a store error, the store is left alone until then (unix millis).
    store_retry_at: u64,
    /// Bumped on every local transition, so a read that started before it is not adopted.
    version: u64,
    /// The `opened_at` of an opening this environment committed (its trip or reopen won):
    /// the first right to probe it.
    committed_opening: Option<u64>,
    /// The `opened_at` of an opening this environment applied on its own (its trip or reopen
    /// got no answer), until a read answers: then the item says who opened it. (Openings
    /// are in whole seconds; many environments of a fleet open in the same one.)
    local_opening: Option<u64>,
    /// The last read could not reach the store: elections are made locally.
    store_unreachable: bool,
    /// The store refuses this environment's elections on the record it keeps: after a
    /// bound, elections are made locally, and that record, read again, is no news.
    refused: Option<RefusedElections>,
    /// The probe running in this process came after no call for a cache age: its outcome
    /// hands the probe over instead of keeping the lease for this environment's next call.
    probe_hands_over: bool,
    /// When this environment saw the circuit close (unix millis), while a slow start
    /// ramps from it; 0: no ramp.
    ramp_from: u64,
}

impl RecordCache {
    /// An empty cache (the record of a circuit never written), trusted for nothing yet.
    pub(super) fn new(max_age_millis: u64) -> Self {
        Self {
            record: CircuitRecord::default(),
            max_age_millis,
            fresh_until: 0,
            store_retry_at: 0,
            version: 0,
            committed_opening: None,
            local_opening: None,
            store_unreachable: false,
            refused: None,
            probe_hands_over: true,
            ramp_from: 0,
        }
    }

    /// The believed record.
    pub(super) fn record(&self) -> &CircuitRecord {
        &self.record
    }

    /// Until when the cached record is used without reading the store: while it is fresh,
    /// or while the store backs off after an error (unix millis).
    pub(super) fn trusted_until(&self) -> u64 {
        self.fresh_until.max(self.store_retry_at)
    }

    /// Whether the store is left alone at `now` after an error.
    pub(super) fn backing_off(&self, now: u64) -> bool {
        now < self.store_retry_at
    }

    /// The store failed: it is left alone until `retry_at`, and the cache trusted as long.
    pub(super) fn back_off_until(&mut self, retry_at: u64) {
        self.store_retry_at = retry_at;
        self.fresh_until = self.fresh_until.max(retry_at);
    }

    /// The version a read starts at: adopted only if no local transition bumps it.
    pub(super) fn version(&self) -> u64 {
        self.version
    }

    /// A local transition happened: reads that started before it are not adopted.
    pub(super) fn bump_version(&mut self) {
        self.version += 1;
    }

    /// A read answered `record` at `now`: it is fresh, and the store reachable. An opening
    /// this environment applied on its own is settled by it: ours (its first right) when
    /// the record is that opening and names this environment (`me`) as its writer, so its
    /// trip landed though the answer was lost; else another's.
    pub(super) fn read_answered(&mut self, record: &CircuitRecord, me: &str, now: u64) {
        self.store_unreachable = false;
        if let Some(opened_at) = self.local_opening.take()
            && record.opened_at == Some(opened_at)
            && record.opened_by.as_deref() == Some(me)
        {
            self.committed_opening = Some(opened_at);
        }
        self.refreshed(now);
    }

    /// A read could not reach the store: elections are made locally from now on.
    pub(super) fn read_unreachable(&mut self) {
        self.store_unreachable = true;
    }

    /// Whether `answered`, a record the store returned at `now` (read, or the record a
    /// write lost to), is no news: this environment acts alone against that very record
    /// ([`RefusedElections`]), and keeps what it decided.
    pub(super) fn no_news(&self, answered: &CircuitRecord, now: u64) -> bool {
        self.refused
            .as_ref()
            .is_some_and(|refused| refused.no_news(answered, now))
    }

    /// A read answered at `now` with the record the store refuses elections on, while this
    /// environment acts alone: the store is reachable, the record it keeps is trusted as
    /// read, and what this environment decided alone stays.
    pub(super) fn read_no_news(&mut self, now: u64) {
        self.store_unreachable = false;
        self.refreshed(now);
    }

    /// The store answered with `record` (a read, or the record a write lost to): refusals
    /// made on another record end, since the store took a write since.
    pub(super) fn store_answered(&mut self, record: &CircuitRecord) {
        if self.refused.as_ref().is_some_and(|r| !r.on(record)) {
            self.refused = None;
        }
    }

    /// An election on `base` failed at `now` (the store refused it, it did not lose).
    pub(super) fn election_refused(&mut self, base: &CircuitRecord, now: u64, t: &Thresholds) {
        self.refused = Some(RefusedElections::after(self.refused.take(), base, now, t));
    }

    /// The store answered a write (it won, or an election lost): it does not refuse them.
    pub(super) fn write_answered(&mut self) {
        self.refused = None;
    }

    /// Whether this environment elects without the store at `now`: its reads cannot reach
    /// it, or the store has refused its elections for the bound.
    pub(super) fn alone(&self, now: u64) -> bool {
        self.store_unreachable || self.refused.as_ref().is_some_and(|r| r.alone(now))
    }

    /// The record was read or written at `now`: trusted for the cache's age from then.
    pub(super) fn refreshed(&mut self, now: u64) {
        self.fresh_until = now.saturating_add(self.max_age_millis);
    }

    /// Whether a warm-up's record may be taken: the cache has neither read nor written
    /// anything yet, so what it knows is not newer.
    pub(super) fn untouched(&self) -> bool {
        self.trusted_until() == 0 && self.version == 0
    }

    /// Trusts the record until `fresh_until` (a warm-up read's own trust).
    pub(super) fn trust_until(&mut self, fresh_until: u64) {
        self.fresh_until = fresh_until;
    }

    /// Makes `record` the believed state. Returns whether the closed state's counts start
    /// again (the circuit closed or left the closed state).
    pub(super) fn adopt(&mut self, record: CircuitRecord) -> bool {
        let reset_counts = record.state != self.record.state
            && (record.state == CircuitState::Closed || self.record.state == CircuitState::Closed);
        self.record = record;
        reset_counts
    }

    /// When the slow start's ramp began (unix millis; 0: none).
    pub(super) fn ramp_from(&self) -> u64 {
        self.ramp_from
    }

    /// This environment saw the circuit close at `now`: a slow start ramps from it.
    pub(super) fn start_ramp(&mut self, now: u64) {
        self.ramp_from = now.max(1);
    }

    /// The ramp has ended (or the circuit left the closed state).
    pub(super) fn end_ramp(&mut self) {
        self.ramp_from = 0;
    }

    /// Whether a call at `now` comes after this environment made no call of the circuit
    /// for at least the cache age: any call after the copy went stale would have read it
    /// again, so the copy is stale by a whole cache age only if none came.
    pub(super) fn quiet_at(&self, now: u64) -> bool {
        now >= self.trusted_until().saturating_add(self.max_age_millis)
    }

    /// What this environment knows besides the record at `now`, for the machine:
    /// `probe_in_flight` in this process, `verified`: the record was just read strongly
    /// consistently, `quiet`: the call came after none for a cache age
    /// ([`quiet_at`](Self::quiet_at)).
    pub(super) fn local(
        &self,
        now: u64,
        probe_in_flight: bool,
        verified: bool,
        quiet: bool,
    ) -> Local {
        let alone = self.alone(now);
        Local {
            probe_in_flight,
            // An opening applied on its own gives the first right only to an environment
            // that elects without the store: one that was merely throttled cannot tell whose
            // trip landed, and waits, reads and verifies like any other.
            committed_opening: match alone {
                true => self.local_opening.or(self.committed_opening),
                false => self.committed_opening,
            },
            verified,
            store_unreachable: alone,
            quiet,
        }
    }

    /// A probe starts, admitted on a call that was `quiet` (or not).
    pub(super) fn note_probe(&mut self, quiet: bool) {
        self.probe_hands_over = quiet;
    }

    /// Whether the running probe's outcome hands the probe over (see [`note_probe`](Self::note_probe)).
    pub(super) fn probe_hands_over(&self) -> bool {
        self.probe_hands_over
    }

    /// Notes an opening at `opened_at` this environment made: committed when its write
    /// `won`, else applied on its own.
    pub(super) fn note_opening(&mut self, opened_at: u64, won: bool) {
        match won {
            true => self.committed_opening = Some(opened_at),
            false => self.local_opening = Some(opened_at),
        }
    }
}
