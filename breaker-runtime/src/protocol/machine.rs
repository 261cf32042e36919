//! The circuit's state machine as pure data: given the shared record, what this
//! environment knows locally and `now`, it returns the decision and the [`RecordWrite`] to
//! write, and after the store answered, what to believe. No clock, lock, async or SDK type
//! in here; `breaker` combines it with the store.

use std::time::Duration;

use breaker_rules::TTL_GRACE_SECS;

use super::backoff::RecoveryBackoff;
use super::rates::{Counts, Rates};
use super::record::{CircuitRecord, OverrideKind};
use super::state::CircuitState;
use super::write::{RecordWrite, WriteOutcome};

/// The numbers the machine needs, derived once per circuit from its config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thresholds {
    /// Consecutive failures that trip the circuit.
    pub failure_threshold: u32,
    /// Probe successes in a row that close it.
    pub success_threshold: u32,
    /// Recovery timeout, in milliseconds.
    pub recovery_millis: u64,
    /// How much longer than the first right's holder every other environment waits before
    /// it may elect itself: the cache age, a second of replica lag, and this environment's
    /// jitter, in milliseconds.
    pub fallback_millis: u64,
    /// How long an election's lease lasts, in seconds.
    pub probe_lease_secs: u64,
    /// How much of its lease a probe needs left to start, in whole seconds: the probe's
    /// `call_timeout` and the two store writes around it (`store_timeout` each), rounded
    /// up; without a call timeout, half the lease. The config requires an election's lease
    /// to cover it; a lease kept over a hand-over is judged by the same rule.
    pub probe_secs: u64,
    /// Recovery timeout rounded up to seconds, for the TTL.
    pub recovery_secs: u64,
    /// How long the store may refuse this environment's elections on one record before it
    /// elects on its own (after its fallback too), in milliseconds: three recovery
    /// timeouts, at least a minute ([`RefusedElections`](super::refusals::RefusedElections)).
    pub refused_elections_millis: u64,
    /// How the wait grows with the record's reopens.
    pub backoff: RecoveryBackoff,
}

impl Thresholds {
    /// How long `record`'s opening stays open before its probe, in milliseconds: the
    /// recovery timeout, backed off by the record's reopens. Every environment computes
    /// the same from the same record.
    pub fn recovery_millis_of(&self, record: &CircuitRecord) -> u64 {
        if record.reopen_count == 0 {
            return self.recovery_millis;
        }
        let wait = self.backoff.wait(
            Duration::from_millis(self.recovery_millis),
            record.reopen_count,
            record.failure_count,
            record.opened_at.unwrap_or(0),
        );
        u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)
    }
}

/// What this environment knows besides the shared record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Local {
    /// A probe of this circuit is running in this process, so no second one may start.
    pub probe_in_flight: bool,
    /// The opening (`opened_at`) this environment committed itself, by a trip or a reopen:
    /// it holds the first right to probe that opening, at the recovery timeout.
    pub committed_opening: Option<u64>,
    /// The record was just read strongly consistently: an election may be written on it.
    pub verified: bool,
    /// The environment elects without the store: its last read could not reach the store
    /// (an error other than throttling), or the store has refused its elections for the
    /// bound ([`RefusedElections`](super::refusals::RefusedElections)).
    pub store_unreachable: bool,
    /// This environment had made no call of the circuit for at least its cache age before
    /// this one, so its copy was read for this call: it is no part of a herd of busy
    /// environments whose copies all turn due at once, and may elect at the recovery
    /// timeout (after a strongly consistent read) instead of waiting the fallback.
    pub quiet: bool,
}

/// What to do with a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// The circuit is closed: run the call normally.
    Run,
    /// The circuit is open (or someone else probes): do not run it.
    Reject,
    /// This environment may elect itself, but only on a record it has just read strongly
    /// consistently: read, then decide again.
    Verify,
    /// Recovery elapsed: try to win the probe election with this write, then probe.
    Elect(RecordWrite),
    /// Recovery elapsed and the store cannot be reached: elect this environment locally,
    /// without a write, and probe on its own.
    ElectAlone(RecordWrite),
    /// This environment owns the probe: run the call as a probe.
    Probe,
}

/// How a call ended, as far as the circuit is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `Ok` (or a response a tower classifier accepts).
    Success,
    /// An error the classifier counts (or a response it rejects, such as a 503), or a
    /// panic.
    Failure,
    /// An error the classifier ignores: changes nothing.
    Ignored,
}

/// What this environment believes after a transition write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// The record to adopt.
    pub record: CircuitRecord,
    /// The transition counts as this environment's: it won, or (store down) it was applied
    /// locally, or an election of ours had landed before.
    pub committed: bool,
    /// The store said the write won: the record is as fresh as a read.
    pub won: bool,
}

fn secs(millis: u64) -> u64 {
    millis / 1000
}

/// The TTL of a write at `now_millis` that leaves a record waiting `wait_millis` (its
/// backed-off recovery): the record outlives the wait by the grace.
fn expiration(now_millis: u64, wait_millis: u64, thresholds: &Thresholds) -> u64 {
    secs(now_millis)
        .saturating_add(thresholds.recovery_secs.max(wait_millis.div_ceil(1000)))
        .saturating_add(TTL_GRACE_SECS)
}

/// A lease is live until (and including) its expiry second; the store's takeover
/// condition is `lease < now`.
fn lease_live(record: &CircuitRecord, now_millis: u64) -> bool {
    record
        .probe_lease_expiry
        .is_some_and(|lease| secs(now_millis) <= lease)
}

fn election(
    record: &CircuitRecord,
    me: &str,
    now_millis: u64,
    thresholds: &Thresholds,
) -> RecordWrite {
    RecordWrite::Elect {
        owner: me.to_owned(),
        expected_opened_at: record.opened_at,
        expected_successes: match record.state {
            CircuitState::HalfOpen => record.probe_successes,
            _ => 0,
        },
        now: secs(now_millis),
        lease_expiry: secs(now_millis).saturating_add(thresholds.probe_lease_secs),
        expiration: expiration(
            now_millis,
            thresholds.recovery_millis_of(record),
            thresholds,
        ),
    }
}

/// When this environment may elect itself (unix millis). The environment with the first
/// right (the one that committed the opening, or the owner of an expired lease) may at
/// once: at the record's recovery (the timeout, backed off by its reopens), or when its
/// lease runs out; so may a quiet environment that can reach the store, which then
/// verifies first. Every other environment waits the fallback longer (its cache age, a
/// second, and its jitter), so that in a fleet of busy environments, whose cached copies
/// all turn due at the same instant, one environment probes and the rest learn of it from
/// their next read instead of racing for the election.
fn election_due(record: &CircuitRecord, me: &str, local: &Local, thresholds: &Thresholds) -> u64 {
    let since = match record.state {
        // The lease runs through its expiry second.
        CircuitState::HalfOpen => record
            .probe_lease_expiry
            .unwrap_or(0)
            .saturating_add(1)
            .saturating_mul(1000),
        _ => record
            .opened_at
            .unwrap_or(0)
            .saturating_mul(1000)
            .saturating_add(thresholds.recovery_millis_of(record)),
    };
    if has_first_right(record, me, local) || (local.quiet && !local.store_unreachable) {
        since
    } else {
        since.saturating_add(thresholds.fallback_millis)
    }
}

/// Unix seconds from which `record` may next admit a call at `now_secs`, for the
/// environment with the first right (see [`election_due`]; every other one waits its
/// fallback more): the backed-off recovery of an opening, the end of a probe's lease, and
/// for a forced open with an end the later of that end and the record's own due time.
/// `None` while calls run (closed, disabled, shadowed) or under a forced open until released.
pub(crate) fn retry_after(
    record: &CircuitRecord,
    now_secs: u64,
    thresholds: &Thresholds,
) -> Option<u64> {
    let own = match record.state {
        CircuitState::Closed => None,
        CircuitState::Open => record.opened_at.map(|opened_at| {
            opened_at
                .saturating_mul(1000)
                .saturating_add(thresholds.recovery_millis_of(record))
                .div_ceil(1000)
        }),
        CircuitState::HalfOpen => record
            .probe_lease_expiry
            .map(|lease| lease.saturating_add(1)),
    };
    match record.live_override(now_secs).map(|o| (o.kind, o.until)) {
        None => own,
        Some((OverrideKind::ForcedOpen, Some(until))) => {
            Some(own.map_or(until, |own| own.max(until)))
        }
        Some(_) => None,
    }
}

/// The first right to probe: the owner of a (now expired) lease, or the environment that
/// committed the current opening.
fn has_first_right(record: &CircuitRecord, me: &str, local: &Local) -> bool {
    match record.state {
        CircuitState::HalfOpen => record.half_open_owner.as_deref() == Some(me),
        _ => record.opened_at.is_some() && record.opened_at == local.committed_opening,
    }
}

/// Decides what a call does. An operator's override that holds decides alone: forced open
/// rejects (no probe, no election), disabled runs.
pub fn admit(
    record: &CircuitRecord,
    me: &str,
    now_millis: u64,
    thresholds: &Thresholds,
    local: &Local,
) -> Admission {
    match record.live_override(secs(now_millis)).map(|o| o.kind) {
        Some(OverrideKind::ForcedOpen) => return Admission::Reject,
        Some(OverrideKind::Disabled | OverrideKind::Shadow) => return Admission::Run,
        None => {}
    }
    match record.state {
        CircuitState::Closed => return Admission::Run,
        _ if local.probe_in_flight => return Admission::Reject,
        CircuitState::HalfOpen if lease_live(record, now_millis) => {
            // A lease kept over a probe's success covers the next probe only while the
            // probe's time is left (as an election's lease must); then the owner waits for
            // it to run out and elects itself again, so no taker probes beside it.
            let covers_a_probe = record.probe_lease_expiry.is_some_and(|lease| {
                secs(now_millis).saturating_add(thresholds.probe_secs) <= lease
            });
            return match record.half_open_owner.as_deref() == Some(me) && covers_a_probe {
                true => Admission::Probe,
                false => Admission::Reject,
            };
        }
        CircuitState::Open | CircuitState::HalfOpen => {}
    }
    if now_millis < election_due(record, me, local, thresholds) {
        return Admission::Reject;
    }
    let election = election(record, me, now_millis, thresholds);
    if local.store_unreachable {
        Admission::ElectAlone(election)
    } else if has_first_right(record, me, local) || local.verified {
        Admission::Elect(election)
    } else {
        Admission::Verify
    }
}

/// Whether this environment runs the circuit in shadow at `now`: an operator's shadow
/// holds, or the circuit is configured so and no other override holds (forced open
/// rejects, disabled runs without a verdict). In shadow every call runs, and the circuit's
/// verdicts are the would-be record's: [`would_admit`] instead of [`admit`].
pub(crate) fn shadowed(configured: bool, record: &CircuitRecord, now_millis: u64) -> bool {
    match record.live_override(secs(now_millis)).map(|o| o.kind) {
        Some(OverrideKind::Shadow) => true,
        Some(_) => false,
        None => configured,
    }
}

/// What a shadowed environment's own would-be record says of a call: the decision
/// [`admit`] makes for an environment that committed every opening itself and reads a
/// store that always answers, so that at the recovery timeout it elects itself at once.
pub(crate) fn would_admit(
    would_be: &CircuitRecord,
    me: &str,
    now_millis: u64,
    thresholds: &Thresholds,
    probe_in_flight: bool,
) -> Admission {
    let local = Local {
        probe_in_flight,
        committed_opening: would_be.opened_at,
        verified: true,
        ..Local::default()
    };
    admit(would_be, me, now_millis, thresholds, &local)
}

/// Whether calls may take the closed path without asking [`admit`]: the record says closed
/// and no forced open holds, or a disable holds; and no suspicion of the fleet's holds (its
/// calls are sampled for the fleet's counters, on the slow path).
pub(crate) fn runs_closed(record: &CircuitRecord, now_millis: u64) -> bool {
    let now = secs(now_millis);
    record.effective_state(now) == CircuitState::Closed && record.live_suspicion(now).is_none()
}

/// Whether this environment may trip the circuit it believes closed: not while an
/// operator's override holds (a disabled circuit never trips; the store would refuse the
/// trip anyway).
pub fn may_trip(record: &CircuitRecord, now_millis: u64) -> bool {
    record.state == CircuitState::Closed && record.live_override(secs(now_millis)).is_none()
}

/// Whether `consecutive_failures` counted failures while closed trip the circuit.
#[inline]
pub(crate) fn trips(consecutive_failures: u32, thresholds: &Thresholds) -> bool {
    consecutive_failures >= thresholds.failure_threshold
}

/// Whether a sliding window's counts trip the circuit: it holds at least the minimum
/// number of calls, and failed (or slow) calls make at least the configured percentage of
/// them. Judged when a call failed or was slow: a good call cannot raise a rate.
#[inline]
pub(crate) fn trips_on_rate(counts: Counts, rates: &Rates) -> bool {
    let reached = |bad: u32, percent: Option<u8>| {
        percent.is_some_and(|percent| {
            u64::from(bad) * 100 >= u64::from(percent) * u64::from(counts.calls)
        })
    };
    counts.calls >= rates.minimum_calls
        && counts.calls > 0
        && (reached(counts.failures, rates.failure) || reached(counts.slow, rates.slow))
}

/// `me`'s trip after `consecutive_failures` failures; only once `trips` says so.
pub fn trip(
    me: &str,
    consecutive_failures: u32,
    now_millis: u64,
    thresholds: &Thresholds,
) -> RecordWrite {
    RecordWrite::Trip {
        opened_by: Some(me.to_owned()),
        failure_count: consecutive_failures,
        opened_at: secs(now_millis),
        expiration: expiration(now_millis, thresholds.recovery_millis, thresholds),
    }
}

/// After a probe ended, the write that ends it: a close once the fleet's probe successes
/// in a row (`record.probe_successes`, plus this one) reach the threshold, a reopen on a
/// failure (one more reopen, so a longer wait), else a hand-over that counts the success
/// (an ignored outcome counts nothing).
/// With `hand_over` (the prober is quiet: its next call may be minutes away) the lease ends
/// at once, so the next call of any environment may probe; a busy prober keeps its lease
/// and probes again with its next call, without another election.
pub fn on_probe_outcome(
    outcome: Outcome,
    record: &CircuitRecord,
    me: &str,
    now_millis: u64,
    thresholds: &Thresholds,
    hand_over: bool,
) -> RecordWrite {
    let successes = match outcome {
        Outcome::Success => record.probe_successes.saturating_add(1),
        _ => record.probe_successes,
    };
    let ttl = expiration(
        now_millis,
        thresholds.recovery_millis_of(record),
        thresholds,
    );
    match outcome {
        Outcome::Failure => {
            let reopened = CircuitRecord {
                reopen_count: record.reopen_count.saturating_add(1),
                ..CircuitRecord::open(secs(now_millis), 1)
            };
            let wait = thresholds.recovery_millis_of(&reopened);
            RecordWrite::Reopen {
                owner: me.to_owned(),
                opened_at: secs(now_millis),
                failure_count: reopened.failure_count,
                reopen_count: reopened.reopen_count,
                expiration: expiration(now_millis, wait, thresholds),
            }
        }
        Outcome::Success if successes >= thresholds.success_threshold => RecordWrite::Close {
            owner: me.to_owned(),
            expiration: ttl,
        },
        Outcome::Success | Outcome::Ignored => {
            // The takeover condition is `lease < now`: a second back is free at once.
            let handed_over = secs(now_millis).saturating_sub(1);
            RecordWrite::HandOver {
                owner: me.to_owned(),
                probe_successes: successes,
                lease_expiry: match hand_over {
                    true => handed_over,
                    false => record.probe_lease_expiry.unwrap_or(handed_over),
                },
                expiration: ttl,
            }
        }
    }
}

/// What to believe after writing `transition` from `base`: the written record if it won,
/// the one that beat it if it lost. `None` (the store did not answer): an election is not
/// won (the store may still answer others); any other write is applied locally and the
/// environment carries on alone.
pub fn settle(
    base: &CircuitRecord,
    transition: &RecordWrite,
    reply: Option<WriteOutcome>,
    me: &str,
    now_millis: u64,
    thresholds: &Thresholds,
) -> Settled {
    match reply {
        Some(WriteOutcome::Won) => Settled {
            record: transition.applied_to(Some(base)),
            committed: true,
            won: true,
        },
        Some(WriteOutcome::Lost(current)) => {
            let record = current.unwrap_or_default();
            match transition {
                // Lost to a record naming this environment the owner: an election of ours
                // landed earlier but its reply never came back (a cancelled call, a timeout).
                RecordWrite::Elect { .. } => Settled {
                    committed: admit(&record, me, now_millis, thresholds, &Local::default())
                        == Admission::Probe,
                    record,
                    won: false,
                },
                // A trip or reopen lost to the very record it writes: its first attempt
                // landed and the SDK's retry met it. A reopen needs this environment's lease,
                // and a trip names its writer (`opened_by`), so no other environment's write
                // leaves that record (a busy fleet's trips in the same second with the same
                // count differ in it). The store returned the record: as fresh as a read.
                RecordWrite::Trip { .. } | RecordWrite::Reopen { .. }
                    if record == transition.applied_to(Some(base)) =>
                {
                    Settled {
                        record,
                        committed: true,
                        won: true,
                    }
                }
                _ => Settled {
                    record,
                    committed: false,
                    won: false,
                },
            }
        }
        None if matches!(transition, RecordWrite::Elect { .. }) => Settled {
            record: base.clone(),
            committed: false,
            won: false,
        },
        None => settle_alone(base, transition),
    }
}

/// A transition this environment applies on its own, without the store.
pub fn settle_alone(base: &CircuitRecord, transition: &RecordWrite) -> Settled {
    Settled {
        record: transition.applied_to(Some(base)),
        committed: true,
        won: false,
    }
}

/// The opening a committed transition gives this environment the first right to probe.
pub fn committed_opening(transition: &RecordWrite, settled: &Settled) -> Option<u64> {
    match transition {
        RecordWrite::Trip { .. } | RecordWrite::Reopen { .. } if settled.committed => {
            settled.record.opened_at
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod backoff_tests;

#[cfg(test)]
mod shadow_tests;
