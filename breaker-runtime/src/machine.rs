//! The circuit's state machine as pure data: given the shared record, what this
//! environment knows locally and `now`, it returns the decision and the [`Transition`] to
//! write, and after the store answered, what to believe. No clock, lock, async or SDK type
//! in here; `breaker` combines it with the store.

use crate::CircuitState;
use crate::store::{CircuitRecord, Transition, WriteOutcome};

/// Seconds added to every write's TTL beyond the recovery timeout.
const TTL_GRACE_SECS: u64 = crate::config::TTL_GRACE.as_secs();

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
    Elect(Transition),
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

/// What this environment believes after a transition write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settled {
    /// The record to adopt.
    pub(crate) record: CircuitRecord,
    /// The transition counts as this environment's: it won, or (store down) it was applied
    /// locally, or an election of ours had landed before.
    pub(crate) committed: bool,
    /// The store said the write won: the record is as fresh as a read.
    pub(crate) won: bool,
    /// The store did not answer: the environment carries on alone until it reads again.
    pub(crate) standalone: bool,
}

fn secs(millis: u64) -> u64 {
    millis / 1000
}

fn expiration(now_millis: u64, policy: &Policy) -> u64 {
    secs(now_millis)
        .saturating_add(policy.recovery_secs)
        .saturating_add(TTL_GRACE_SECS)
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

fn election(record: &CircuitRecord, me: &str, now_millis: u64, policy: &Policy) -> Transition {
    Transition::Elect {
        owner: me.to_owned(),
        expected_opened_at: record.opened_at,
        now: secs(now_millis),
        lease_expiry: secs(now_millis).saturating_add(policy.probe_lease_secs),
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

/// Whether `consecutive_failures` counted failures while closed trip the circuit.
#[inline]
pub(crate) fn trips(consecutive_failures: u32, policy: &Policy) -> bool {
    consecutive_failures >= policy.failure_threshold
}

/// The trip after `consecutive_failures` failures; only once [`trips`] says so.
pub(crate) fn trip(consecutive_failures: u32, now_millis: u64, policy: &Policy) -> Transition {
    Transition::Trip {
        failure_count: consecutive_failures,
        opened_at: secs(now_millis),
        expiration: expiration(now_millis, policy),
    }
}

/// After a probe ended: the close or reopen to write, or `None` to stay half-open (the next
/// call probes again). `successes` counts consecutive probe successes including this one.
pub(crate) fn on_probe_outcome(
    outcome: Outcome,
    successes: u32,
    me: &str,
    now_millis: u64,
    policy: &Policy,
) -> Option<Transition> {
    match outcome {
        Outcome::Ignored => None,
        Outcome::Success if successes < policy.success_threshold => None,
        Outcome::Success => Some(Transition::Close {
            owner: me.to_owned(),
            expiration: expiration(now_millis, policy),
        }),
        Outcome::Failure => Some(Transition::Reopen {
            owner: me.to_owned(),
            opened_at: secs(now_millis),
            failure_count: 1,
            expiration: expiration(now_millis, policy),
        }),
    }
}

/// What to believe after writing `transition` from `base`: the written record if it won,
/// the one that beat it if it lost; `None` (the store did not answer) applies the write
/// locally and the environment carries on alone.
pub(crate) fn settle(
    base: &CircuitRecord,
    transition: &Transition,
    reply: Option<WriteOutcome>,
    me: &str,
    now_millis: u64,
    policy: &Policy,
) -> Settled {
    match reply {
        Some(WriteOutcome::Won) => Settled {
            record: transition.applied_to(Some(base)),
            committed: true,
            won: true,
            standalone: false,
        },
        Some(WriteOutcome::Lost(current)) => {
            let record = current.unwrap_or_default();
            // An election lost to a record naming this environment the owner: an election of
            // ours landed earlier but its reply never came back (a cancelled call, a timeout).
            let own_landed = matches!(transition, Transition::Elect { .. })
                && admit(&record, me, now_millis, policy, false) == Admission::Probe;
            Settled {
                record,
                committed: own_landed,
                won: false,
                standalone: false,
            }
        }
        None => Settled {
            record: transition.applied_to(Some(base)),
            committed: true,
            won: false,
            standalone: true,
        },
    }
}

#[cfg(test)]
mod tests;
