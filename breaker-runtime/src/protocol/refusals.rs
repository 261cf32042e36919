//! `RefusedElections`: a store that answers reads but refuses every election (an IAM role
//! without `dynamodb:UpdateItem`, sustained write throttling) must not keep a circuit open
//! for ever. After a bound, the environment elects on its own, as when it cannot reach the
//! store, and the record the store keeps answering no longer undoes what it decided.

use super::machine::Thresholds;
use super::record::CircuitRecord;

/// The store has refused this environment's elections (the write failed, it did not lose)
/// on one stored record since a first refusal. From that refusal plus
/// [`Thresholds::refused_elections_millis`] and the environment's fallback (its cache age,
/// a second and its jitter, so that a fleet's environments do not all start at once), the
/// environment acts alone: it elects itself locally and probes, and a record the store
/// answers that is still the one the elections were refused on (a read, or the record a
/// write lost to) is no news, so it keeps what it decided alone. Any other record the store
/// answers, or an election the store answered, ends the refusals.
///
/// ```
/// use breaker_runtime::__protocol::RefusedElections;
/// use breaker_runtime::store::CircuitRecord;
/// # let thresholds = breaker_runtime::__protocol::Thresholds {
/// #     failure_threshold: 1, success_threshold: 1, recovery_millis: 30_000,
/// #     fallback_millis: 6_000, probe_lease_secs: 30, probe_secs: 15, recovery_secs: 30,
/// #     refused_elections_millis: 90_000, backoff: breaker_runtime::RecoveryBackoff::none(),
/// # };
/// let stored = CircuitRecord::open(1_700_000_000, 5);
/// let first = RefusedElections::after(None, &stored, 1_700_000_030_000, &thresholds);
/// let again = RefusedElections::after(Some(first.clone()), &stored, 1_700_000_040_000, &thresholds);
/// assert_eq!(again, first, "refused on the same record: the refusals go on");
/// assert!(!again.alone(1_700_000_125_999));
/// assert!(again.alone(1_700_000_126_000), "90 s of refusals and the 6 s fallback");
/// assert!(again.no_news(&stored, 1_700_000_126_000));
/// assert!(!again.no_news(&CircuitRecord::closed(), 1_700_000_126_000));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedElections {
    /// The record the refused elections were made on: the store's, as far as this
    /// environment knows.
    pub stored: CircuitRecord,
    /// Unix millis from which the environment acts alone.
    pub alone_from: u64,
}

impl RefusedElections {
    /// After an election on `stored` was refused at `now` (unix millis): the refusals go on
    /// from `previous` when they were on the same record, else they start now.
    pub fn after(
        previous: Option<Self>,
        stored: &CircuitRecord,
        now: u64,
        thresholds: &Thresholds,
    ) -> Self {
        match previous {
            Some(previous) if previous.stored == *stored => previous,
            _ => Self {
                stored: stored.clone(),
                alone_from: now
                    .saturating_add(thresholds.refused_elections_millis)
                    .saturating_add(thresholds.fallback_millis),
            },
        }
    }

    /// Whether the environment acts alone at `now` (unix millis).
    pub fn alone(&self, now: u64) -> bool {
        now >= self.alone_from
    }

    /// Whether the elections were refused on `answered`: the store still holds that record.
    pub fn on(&self, answered: &CircuitRecord) -> bool {
        self.stored == *answered
    }

    /// Whether `answered`, a record the store returned at `now`, is no news to an
    /// environment acting alone: the record its elections were refused on.
    pub fn no_news(&self, answered: &CircuitRecord, now: u64) -> bool {
        self.alone(now) && self.on(answered)
    }
}
