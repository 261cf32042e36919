//! The circuit's state machine as pure data: given the shared record, what this
//! environment knows locally and `now`, it returns the decision and the store write to make.
//! No clock, lock, async or SDK type in here; `breaker` combines it with the store.

use crate::CircuitState;
use crate::store::{CircuitRecord, Close, ProbeElection, Reopen, Trip, WriteOutcome};

/// Seconds added to every write's TTL beyond the recovery timeout.
const TTL_GRACE_SECS: u64 = 3600;

/// The numbers the machine needs, derived once per circuit from its config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    pub(crate) failure_threshold: u32,
    pub(crate) success_threshold: u32,
    /// Recovery timeout plus this environment's jitter, in milliseconds.
    pub(crate) recovery_millis: u64,
    pub(crate) probe_lease_secs: u64,
    /// Recovery timeout rounded up to seconds, for the TTL.
    pub(crate) recovery_secs: u64,
}

/// What to do with a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admission {
    /// The circuit is closed: run the call normally.
    Run,
    /// The circuit is open (or someone else probes): do not run it.
    Reject,
    /// Recovery elapsed: try to win the probe election with this write, then probe.
    Elect(ProbeElection),
    /// This environment owns the probe: run the call as a probe.
    Probe,
}

/// How a call ended, as far as the circuit is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `Ok`.
    Success,
    /// An error the classifier counts, or a panic.
    Failure,
    /// An error the classifier ignores: changes nothing.
    Ignored,
}

/// What follows a probe's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProbeStep {
    /// Stay half-open; the next call probes again.
    Continue,
    /// Enough successes: close, conditional on ownership.
    Close(Close),
    /// The probe failed: reopen, conditional on ownership.
    Reopen(Reopen),
}

/// A store write the machine asked for, to learn what record follows it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Write<'a> {
    Trip(&'a Trip),
    Elect(&'a ProbeElection),
    Close,
    Reopen(&'a Reopen),
}

fn secs(millis: u64) -> u64 {
    millis / 1000
}

fn expiration(now_millis: u64, policy: &Policy) -> u64 {
    secs(now_millis) + policy.recovery_secs + TTL_GRACE_SECS
}

/// Whether the recovery timeout has elapsed since `opened_at`.
fn recovered(record: &CircuitRecord, now_millis: u64, policy: &Policy) -> bool {
    let opened_millis = record.opened_at.unwrap_or(0).saturating_mul(1000);
    now_millis >= opened_millis.saturating_add(policy.recovery_millis)
}

/// A lease is live until (and including) its expiry second; the store's takeover
/// condition is `lease < now`.
fn lease_live(record: &CircuitRecord, now_millis: u64) -> bool {
    record
        .probe_lease_expiry
        .is_some_and(|lease| secs(now_millis) <= lease)
}

fn election(record: &CircuitRecord, me: &str, now_millis: u64, policy: &Policy) -> ProbeElection {
    ProbeElection {
        owner: me.to_owned(),
        expected_opened_at: record.opened_at,
        now: secs(now_millis),
        lease_expiry: secs(now_millis) + policy.probe_lease_secs,
        expiration: expiration(now_millis, policy),
    }
}

/// Decides what a call does. `probe_in_flight`: a probe of this circuit is running in this
/// process, so no second one may start.
pub(crate) fn admit(
    record: &CircuitRecord,
    me: &str,
    now_millis: u64,
    policy: &Policy,
    probe_in_flight: bool,
) -> Admission {
    match record.state {
        CircuitState::Closed => Admission::Run,
        _ if probe_in_flight => Admission::Reject,
        CircuitState::Open if recovered(record, now_millis, policy) => {
            Admission::Elect(election(record, me, now_millis, policy))
        }
        CircuitState::Open => Admission::Reject,
        CircuitState::HalfOpen if !lease_live(record, now_millis) => {
            Admission::Elect(election(record, me, now_millis, policy))
        }
        CircuitState::HalfOpen if record.half_open_owner.as_deref() == Some(me) => Admission::Probe,
        CircuitState::HalfOpen => Admission::Reject,
    }
}

/// After a counted failure while closed: trip once `consecutive_failures` reaches the threshold.
pub(crate) fn on_closed_failure(
    consecutive_failures: u32,
    now_millis: u64,
    policy: &Policy,
) -> Option<Trip> {
    (consecutive_failures >= policy.failure_threshold).then(|| Trip {
        failure_count: consecutive_failures,
        opened_at: secs(now_millis),
        expiration: expiration(now_millis, policy),
    })
}

/// After a probe ended. `successes` counts consecutive probe successes including this one.
pub(crate) fn on_probe_outcome(
    outcome: Outcome,
    successes: u32,
    me: &str,
    now_millis: u64,
    policy: &Policy,
) -> ProbeStep {
    match outcome {
        Outcome::Ignored => ProbeStep::Continue,
        Outcome::Success if successes < policy.success_threshold => ProbeStep::Continue,
        Outcome::Success => ProbeStep::Close(Close {
            owner: me.to_owned(),
            expiration: expiration(now_millis, policy),
        }),
        Outcome::Failure => ProbeStep::Reopen(Reopen {
            owner: me.to_owned(),
            opened_at: secs(now_millis),
            failure_count: 1,
            expiration: expiration(now_millis, policy),
        }),
    }
}

/// The record this environment should believe after a write: the written one if it won,
/// the one that beat it if it lost. `current` is the record the write was based on.
pub(crate) fn after_write(
    current: &CircuitRecord,
    write: Write<'_>,
    outcome: WriteOutcome,
) -> CircuitRecord {
    match outcome {
        WriteOutcome::Won => applied(current, write),
        WriteOutcome::Lost(record) => record.unwrap_or_default(),
    }
}

/// The record a won write leaves behind (also used when the store is down and the
/// environment carries on alone).
pub(crate) fn applied(current: &CircuitRecord, write: Write<'_>) -> CircuitRecord {
    match write {
        Write::Trip(trip) => CircuitRecord {
            state: CircuitState::Open,
            failure_count: trip.failure_count,
            opened_at: Some(trip.opened_at),
            half_open_owner: None,
            probe_lease_expiry: None,
        },
        Write::Elect(election) => CircuitRecord {
            state: CircuitState::HalfOpen,
            half_open_owner: Some(election.owner.clone()),
            probe_lease_expiry: Some(election.lease_expiry),
            ..current.clone()
        },
        Write::Close => CircuitRecord::closed(),
        Write::Reopen(reopen) => CircuitRecord {
            state: CircuitState::Open,
            failure_count: reopen.failure_count,
            opened_at: Some(reopen.opened_at),
            half_open_owner: None,
            probe_lease_expiry: None,
        },
    }
}

#[cfg(test)]
mod tests;
