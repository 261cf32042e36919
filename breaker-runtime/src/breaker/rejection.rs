//! The cached rejection, published for the open path to read without the circuit's lock.
//!
//! The slow path works out, whenever it changes what the cache knows, until when the state
//! machine rejects every call on the cached record ([`rejects_until`]) and publishes
//! that instant with what a rejection reports. A rejection then costs a clock read and a few
//! atomic loads. The words are written under the circuit's mutex (one writer at a time)
//! and read as a sequence lock: a reader that overlaps a write sees the sequence change and
//! leaves the decision to the locked path, which decides the same from the record itself.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

use crate::protocol::CircuitRecord;
use crate::protocol::CircuitState;
use crate::protocol::machine::{self, Thresholds};

/// What a published rejection reports besides the circuit's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rejected {
    pub(super) state: CircuitState,
    pub(super) failure_count: u32,
    pub(super) opened_at: Option<u64>,
    /// Unix seconds from which the circuit may admit a call again (`CircuitInfo::retry_after`).
    pub(super) retry_after: Option<u64>,
}

impl Rejected {
    /// What `record` reports at `now` (unix millis): the state an override makes the
    /// circuit act on, and when it may admit a call again.
    pub(super) fn of(record: &CircuitRecord, now: u64, thresholds: &Thresholds) -> Self {
        Self {
            state: record.effective_state(now / 1000),
            failure_count: record.failure_count,
            opened_at: record.opened_at,
            retry_after: machine::retry_after(record, now / 1000, thresholds),
        }
    }
}

/// The published rejection of one circuit. `until` is 0 when the cache rejects nothing.
#[derive(Debug, Default)]
pub(super) struct PublishedRejection {
    /// Odd while a write is under way; bumped twice by each.
    sequence: AtomicU32,
    /// Unix millis until which every call is rejected.
    until: AtomicU64,
    /// `failure_count << 32 | opened_at present << 8 | state`.
    report: AtomicU64,
    opened_at: AtomicU64,
    /// `retry_after`, 0 for `None`.
    retry_after: AtomicU64,
}

impl PublishedRejection {
    /// Publishes `rejected` until `until` (0: no rejection). Callers hold the circuit's
    /// mutex, so writes never overlap.
    pub(super) fn publish(&self, until: u64, rejected: Rejected) {
        let sequence = self.sequence.load(Ordering::Relaxed);
        self.sequence
            .store(sequence.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        self.until.store(until, Ordering::Relaxed);
        self.report.store(encode(rejected), Ordering::Relaxed);
        self.opened_at
            .store(rejected.opened_at.unwrap_or(0), Ordering::Relaxed);
        self.retry_after
            .store(rejected.retry_after.unwrap_or(0), Ordering::Relaxed);
        self.sequence
            .store(sequence.wrapping_add(2), Ordering::Release);
    }

    /// The published rejection if it holds at `now`; `None` when there is none, or a write
    /// overlapped the read.
    #[inline]
    pub(super) fn at(&self, now: u64) -> Option<Rejected> {
        let sequence = self.sequence.load(Ordering::Acquire);
        if now >= self.until.load(Ordering::Relaxed) {
            return None;
        }
        let report = self.report.load(Ordering::Relaxed);
        let opened_at = self.opened_at.load(Ordering::Relaxed);
        let retry_after = self.retry_after.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        let unchanged =
            sequence.is_multiple_of(2) && self.sequence.load(Ordering::Relaxed) == sequence;
        unchanged.then(|| Rejected {
            retry_after: (retry_after != 0).then_some(retry_after),
            ..decode(report, opened_at)
        })
    }
}

fn encode(rejected: Rejected) -> u64 {
    let state = match rejected.state {
        CircuitState::Closed => 0,
        CircuitState::Open => 1,
        CircuitState::HalfOpen => 2,
    };
    u64::from(rejected.failure_count) << 32 | u64::from(rejected.opened_at.is_some()) << 8 | state
}

#[inline]
fn decode(report: u64, opened_at: u64) -> Rejected {
    Rejected {
        state: match report & 0xff {
            0 => CircuitState::Closed,
            1 => CircuitState::Open,
            _ => CircuitState::HalfOpen,
        },
        failure_count: (report >> 32) as u32,
        opened_at: (report & 1 << 8 != 0).then_some(opened_at),
        retry_after: None,
    }
}

/// Until when (unix millis) every call is rejected, from `now` on, given `rejects` (does
/// the state machine reject a call at this instant?); 0 if it does not reject at `now`.
/// Bounded by `trusted_until`, the end of the cache's trust.
///
/// On one record a rejection only ends (at the recovery timeout, a lease's end, or when
/// this environment's election is due), so the end is found by bisection.
pub(super) fn rejects_until(now: u64, trusted_until: u64, rejects: impl Fn(u64) -> bool) -> u64 {
    if now >= trusted_until || !rejects(now) {
        return 0;
    }
    // Invariant: `rejects(low)`; every instant from `high` on is past the answer.
    let (mut low, mut high) = (now, trusted_until);
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        match rejects(middle) {
            true => low = middle,
            false => high = middle,
        }
    }
    high
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_published_rejection_holds_until_its_end_and_reports_what_was_published() {
        let published = PublishedRejection::default();
        assert_eq!(published.at(0), None, "nothing published: no rejection");
        let rejected = Rejected {
            state: CircuitState::HalfOpen,
            failure_count: u32::MAX,
            opened_at: Some(1_700_000_000),
            retry_after: Some(1_700_000_031),
        };
        published.publish(5_000, rejected);
        assert_eq!(published.at(4_999), Some(rejected));
        assert_eq!(published.at(5_000), None);
        let open = Rejected {
            state: CircuitState::Open,
            failure_count: 0,
            opened_at: None,
            retry_after: None,
        };
        published.publish(9_000, open);
        assert_eq!(published.at(5_000), Some(open));
        published.publish(0, open);
        assert_eq!(published.at(0), None, "withdrawn");
    }
}
