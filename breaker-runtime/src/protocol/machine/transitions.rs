//! The transitions an environment writes: a trip when closed counts say so, and the
//! write that ends a probe (a close, a reopen or a hand-over).

use std::time::Duration;

use super::{Outcome, Thresholds, expiration, secs};
use crate::protocol::rates::{Counts, Rates};
use crate::protocol::record::CircuitRecord;
use crate::protocol::write::RecordWrite;

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

/// `me`'s trip after `consecutive_failures` failures; only once `trips` says so, or on a
/// failure that asked to stay away `open_for` (bounded by the config's maximum).
pub fn trip(
    me: &str,
    consecutive_failures: u32,
    now_millis: u64,
    thresholds: &Thresholds,
    open_for: Option<Duration>,
) -> RecordWrite {
    let open_until = asked_until(open_for, now_millis, thresholds);
    let wait = open_until.map_or(thresholds.recovery_millis, |until| {
        until.saturating_sub(secs(now_millis)).saturating_mul(1000)
    });
    RecordWrite::Trip {
        opened_by: Some(me.to_owned()),
        failure_count: consecutive_failures,
        opened_at: secs(now_millis),
        expiration: expiration(now_millis, wait, thresholds),
        open_until,
    }
}

/// The end of an opening a failure asked for at `now_millis`: `open_for` from the opening's
/// second, rounded up to a whole second, at most the config's maximum; `None` when it asked
/// for nothing (or for no time at all).
pub(crate) fn asked_until(
    open_for: Option<Duration>,
    now_millis: u64,
    thresholds: &Thresholds,
) -> Option<u64> {
    let open_for = open_for.filter(|d| !d.is_zero())?;
    let secs_asked = open_for
        .as_millis()
        .div_ceil(1000)
        .min(u128::from(thresholds.max_open_for_secs));
    Some(secs(now_millis).saturating_add(u64::try_from(secs_asked).unwrap_or(u64::MAX)))
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
        Outcome::Failure | Outcome::OpenFor(_) | Outcome::Overloaded => {
            let reopened = CircuitRecord {
                reopen_count: record.reopen_count.saturating_add(1),
                open_until: asked_until(outcome.asked_open_for(), now_millis, thresholds),
                ..CircuitRecord::open(secs(now_millis), 1)
            };
            let wait = thresholds.recovery_millis_of(&reopened);
            RecordWrite::Reopen {
                owner: me.to_owned(),
                opened_at: secs(now_millis),
                failure_count: reopened.failure_count,
                reopen_count: reopened.reopen_count,
                expiration: expiration(now_millis, wait, thresholds),
                open_until: reopened.open_until,
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
