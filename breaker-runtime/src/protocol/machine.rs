//! The circuit's state machine as pure data: given the shared record, what this
//! environment knows locally and `now`, it returns the decision and the [`RecordWrite`] to
//! write, and after the store answered, what to believe. No clock, lock, async or SDK type
//! in here; `breaker` combines it with the store.

use std::time::Duration;

use breaker_rules::TTL_GRACE_SECS;

use super::backoff::RecoveryBackoff;
use super::record::CircuitRecord;
use super::write::RecordWrite;

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
    /// The longest opening a failure may ask for ([`Outcome::OpenFor`]), in seconds.
    pub max_open_for_secs: u64,
}

impl Thresholds {
    /// How long `record`'s opening stays open before its probe, in milliseconds: the
    /// recovery timeout, backed off by the record's reopens. Every environment computes
    /// the same from the same record.
    pub fn recovery_millis_of(&self, record: &CircuitRecord) -> u64 {
        // The downstream said how long: its time replaces the recovery, backed off or not.
        if let (Some(until), Some(opened_at)) = (record.asked_open_until(), record.opened_at) {
            return until.saturating_sub(opened_at).saturating_mul(1000);
        }
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
///
/// `#[non_exhaustive]`: later versions add outcomes (a match needs a `_` arm).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// `Ok` (or a response a tower classifier accepts).
    Success,
    /// An error the classifier counts (or a response it rejects, such as a 503), or a
    /// panic.
    Failure,
    /// An error the classifier ignores: changes nothing.
    Ignored,
    /// A failure that says how long the downstream wants no calls: a 429 or 503 with
    /// `Retry-After`, a throttling error's hint. It counts as a failure and opens the
    /// circuit at once (this environment's own trip, whatever its count; a probe's
    /// reopen), and the opening lasts this long for every breaker environment, at most the
    /// config's [`max_open_for`](crate::CircuitBreakerConfigBuilder::max_open_for), instead
    /// of the recovery timeout.
    OpenFor(Duration),
    /// A failure that says the downstream turned the call away for load, without a hint:
    /// a 429 or 503 load shed, a throttling error. Every policy counts it as a
    /// [`Failure`](Self::Failure); the adaptive policy
    /// ([`adaptive`](crate::CircuitBreakerConfigBuilder::adaptive)) sheds calls in
    /// proportion to it instead of opening the circuit (`docs/design.md`, "Brownouts").
    Overloaded,
}

impl Outcome {
    /// Whether the outcome counts as a failure ([`Failure`](Self::Failure),
    /// [`OpenFor`](Self::OpenFor) or [`Overloaded`](Self::Overloaded)).
    ///
    /// ```
    /// use breaker_runtime::Outcome;
    /// assert!(Outcome::Overloaded.is_failure() && !Outcome::Ignored.is_failure());
    /// ```
    #[inline]
    pub fn is_failure(self) -> bool {
        matches!(self, Self::Failure | Self::OpenFor(_) | Self::Overloaded)
    }

    /// The time a failure asked for ([`OpenFor`](Self::OpenFor)); `None` for any other
    /// outcome, and for a hint of no time (`Retry-After: 0`), which asks for nothing.
    #[inline]
    pub(crate) fn asked_open_for(self) -> Option<Duration> {
        match self {
            Self::OpenFor(asked) if !asked.is_zero() => Some(asked),
            _ => None,
        }
    }
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

mod admission;
mod settle;
mod transitions;

pub use admission::{admit, may_trip};
pub(crate) use admission::{retry_after, runs_closed, shadowed, would_admit};
pub use settle::{committed_opening, settle, settle_alone};
pub use transitions::{on_probe_outcome, trip};
pub(crate) use transitions::{trips, trips_on_rate};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod backoff_tests;

#[cfg(test)]
mod shadow_tests;
