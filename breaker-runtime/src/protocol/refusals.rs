//! `RefusedElections`: a store that answers reads but refuses every election (an IAM role
//! without `dynamodb:UpdateItem`, sustained write throttling) must not keep a circuit open
//! for ever. After a bound, and while the refusals go on, the environment elects on its
//! own, as when it cannot reach the store, and the record the store keeps answering no
//! longer undoes what it decided.

use super::machine::Thresholds;
use super::record::CircuitRecord;

/// The store has refused this environment's elections (the write failed, it did not lose)
/// on one stored record since a first refusal. From that refusal plus
/// [`Thresholds::refused_elections_millis`] and the environment's fallback (its cache age,
/// a second and its jitter, so that a fleet's environments do not all start at once), the
/// environment acts alone while the refusals go on: until a recovery timeout and the
/// fallback after the last one. Then it sends its next election to the store again (once
/// per recovery window while it acts alone): refused, it acts alone on; answered, the
/// refusals end. While it acts alone it elects itself locally and probes, and a record the
/// store answers that is still the one the elections were refused on (a read, or the
/// record a write lost to) is no news, so it keeps what it decided alone. Any other record
/// the store answers, or an election the store answered, ends the refusals; so does a
/// refusal that comes more than the bound after the refusals stopped being recent (one
/// refused election, then a quiet spell, is not a store that refuses).
///
/// ```
/// use breaker_runtime::__protocol::RefusedElections;
/// use breaker_runtime::store::implement::CircuitRecord;
/// # let thresholds = breaker_runtime::__protocol::Thresholds {
/// #     failure_threshold: 1, success_threshold: 1, recovery_millis: 30_000,
/// #     fallback_millis: 6_000, probe_lease_secs: 30, probe_secs: 15, recovery_secs: 30,
/// #     refused_elections_millis: 90_000, backoff: breaker_runtime::RecoveryBackoff::none(),
/// #     max_open_for_secs: 300,
/// # };
/// let stored = CircuitRecord::open(1_700_000_000, 5);
/// let at = |secs: u64| 1_700_000_000_000 + secs * 1000;
/// let first = RefusedElections::after(None, &stored, at(30), &thresholds);
/// let mut refused = first.clone();
/// for secs in (35..=125).step_by(5) {
///     refused = RefusedElections::after(Some(refused), &stored, at(secs), &thresholds);
/// }
/// assert_eq!(refused.alone_from, first.alone_from, "the same record: the refusals go on");
/// assert!(!refused.alone(at(125) + 999));
/// assert!(refused.alone(at(126)), "90 s of refusals and the 6 s fallback");
/// assert!(refused.no_news(&stored, at(126)));
/// assert!(!refused.no_news(&CircuitRecord::closed(), at(126)));
/// assert!(!refused.alone(at(161)), "no refusal for a recovery timeout and the fallback");
///
/// // One refusal, then a quiet spell: the next election goes to the store.
/// let once = RefusedElections::after(None, &stored, at(130), &thresholds);
/// assert!(!once.alone(at(300)));
/// let again = RefusedElections::after(Some(once.clone()), &stored, at(300), &thresholds);
/// assert!(again.alone_from > once.alone_from, "refused again much later: a new start");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedElections {
    /// The record the refused elections were made on: the store's, as far as this
    /// environment knows.
    pub stored: CircuitRecord,
    /// Unix millis from which the environment may act alone: the first refusal, the bound
    /// and the fallback.
    pub alone_from: u64,
    /// Unix millis until which the refusals are recent: the last refusal, a recovery
    /// timeout and the fallback. Past it, the next election goes to the store.
    pub recent_until: u64,
}

impl RefusedElections {
    /// After an election on `stored` was refused at `now` (unix millis): the refusals go on
    /// from `previous` when they were on the same record and were recent within the bound,
    /// else they start now.
    pub fn after(
        previous: Option<Self>,
        stored: &CircuitRecord,
        now: u64,
        thresholds: &Thresholds,
    ) -> Self {
        let recent_until = now
            .saturating_add(thresholds.recovery_millis)
            .saturating_add(thresholds.fallback_millis);
        match previous {
            Some(previous)
                if previous.stored == *stored
                    && now
                        < previous
                            .recent_until
                            .saturating_add(thresholds.refused_elections_millis) =>
            {
                Self {
                    recent_until,
                    ..previous
                }
            }
            _ => Self {
                stored: stored.clone(),
                alone_from: now
                    .saturating_add(thresholds.refused_elections_millis)
                    .saturating_add(thresholds.fallback_millis),
                recent_until,
            },
        }
    }

    /// Whether the environment acts alone at `now` (unix millis): the refusals have lasted
    /// the bound, and are recent.
    pub fn alone(&self, now: u64) -> bool {
        now >= self.alone_from && now < self.recent_until
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RecoveryBackoff;

    /// 30 s recovery, 6 s fallback, 90 s bound.
    fn thresholds() -> Thresholds {
        Thresholds {
            failure_threshold: 1,
            success_threshold: 1,
            recovery_millis: 30_000,
            fallback_millis: 6_000,
            probe_lease_secs: 30,
            probe_secs: 15,
            recovery_secs: 30,
            refused_elections_millis: 90_000,
            backoff: RecoveryBackoff::none(),
            max_open_for_secs: 300,
        }
    }

    const T0: u64 = 1_700_000_000_000;

    fn first(stored: &CircuitRecord) -> RefusedElections {
        RefusedElections::after(None, stored, T0, &thresholds())
    }

    #[test]
    fn a_first_refusal_starts_the_bound_and_is_recent_for_a_recovery_and_the_fallback() {
        let stored = CircuitRecord::open(1_700_000_000, 5);
        let refused = first(&stored);
        assert_eq!(refused.alone_from, T0 + 90_000 + 6_000);
        assert_eq!(refused.recent_until, T0 + 30_000 + 6_000);
        assert_eq!(refused.stored, stored);
    }

    #[test]
    fn refusals_on_the_same_record_go_on_and_stay_recent_from_the_last() {
        let stored = CircuitRecord::open(1_700_000_000, 5);
        let start = first(&stored);
        let at = T0 + 20_000;
        let on = RefusedElections::after(Some(start.clone()), &stored, at, &thresholds());
        assert_eq!(on.alone_from, start.alone_from, "the refusals go on");
        assert_eq!(on.recent_until, at + 36_000, "recent from the last refusal");
    }

    #[test]
    fn a_refusal_on_another_record_or_past_the_bound_starts_again() {
        let stored = CircuitRecord::open(1_700_000_000, 5);
        let start = first(&stored);
        let other = CircuitRecord::open(1_700_000_100, 5);
        let at = T0 + 1_000;
        let moved = RefusedElections::after(Some(start.clone()), &other, at, &thresholds());
        assert_eq!((moved.alone_from, &moved.stored), (at + 96_000, &other));
        // The last moment the refusals still go on, and the first they start again.
        let limit = start.recent_until + 90_000;
        let just = RefusedElections::after(Some(start.clone()), &stored, limit - 1, &thresholds());
        assert_eq!(just.alone_from, start.alone_from);
        let past = RefusedElections::after(Some(start), &stored, limit, &thresholds());
        assert_eq!(past.alone_from, limit + 96_000);
    }

    #[test]
    fn alone_from_the_bound_until_the_refusals_stop_being_recent() {
        let stored = CircuitRecord::open(1_700_000_000, 5);
        let refused = RefusedElections {
            stored: stored.clone(),
            alone_from: T0 + 100,
            recent_until: T0 + 200,
        };
        assert!(!refused.alone(T0 + 99));
        assert!(refused.alone(T0 + 100));
        assert!(refused.alone(T0 + 199));
        assert!(!refused.alone(T0 + 200));
        assert!(refused.on(&stored));
        assert!(!refused.on(&CircuitRecord::closed()));
        assert!(refused.no_news(&stored, T0 + 150));
        assert!(!refused.no_news(&stored, T0 + 250), "not alone: news");
        assert!(
            !refused.no_news(&CircuitRecord::closed(), T0 + 150),
            "another record"
        );
    }
}
