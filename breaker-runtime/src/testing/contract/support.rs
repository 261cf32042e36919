//! What the contract's cases share: fixed instants, transition and record builders, and
//! the checked write every sequential case goes through.

use crate::protocol::{CircuitRecord, Override, OverrideKind, RecordWrite, WriteOutcome};
use crate::store::{StateStore, StoreFuture};

pub(super) const T0: u64 = 1_700_000_000;
const TTL: u64 = T0 + 3_630;

pub(super) fn trip_at(opened_at: u64, failure_count: u32) -> RecordWrite {
    RecordWrite::Trip {
        opened_by: None,
        failure_count,
        opened_at,
        expiration: TTL,
        open_until: None,
    }
}

/// `writer`'s trip (a breaker's trip names its writer).
pub(super) fn trip_by(writer: &str, opened_at: u64, failure_count: u32) -> RecordWrite {
    match trip_at(opened_at, failure_count) {
        RecordWrite::Trip {
            failure_count,
            opened_at,
            expiration,
            ..
        } => RecordWrite::Trip {
            opened_by: Some(writer.to_owned()),
            failure_count,
            opened_at,
            expiration,
            open_until: None,
        },
        other => other,
    }
}

pub(super) fn election(owner: &str, expected_opened_at: Option<u64>, now: u64) -> RecordWrite {
    RecordWrite::Elect {
        owner: owner.to_owned(),
        expected_opened_at,
        expected_successes: 0,
        now,
        lease_expiry: now + 30,
        expiration: TTL,
    }
}

/// A takeover of a handed-over probe by `owner` at `now`, expecting the fleet's `successes`.
pub(super) fn takeover(owner: &str, successes: u32, now: u64) -> RecordWrite {
    match election(owner, Some(T0), now) {
        RecordWrite::Elect {
            owner,
            expected_opened_at,
            now,
            lease_expiry,
            expiration,
            ..
        } => RecordWrite::Elect {
            owner,
            expected_opened_at,
            expected_successes: successes,
            now,
            lease_expiry,
            expiration,
        },
        other => other,
    }
}

pub(super) fn close(owner: &str) -> RecordWrite {
    RecordWrite::Close {
        owner: owner.to_owned(),
        expiration: TTL,
    }
}

/// `owner` counts the fleet's `successes` and hands the probe over: its lease ended at
/// `now - 1`.
pub(super) fn hand_over(owner: &str, successes: u32, now: u64) -> RecordWrite {
    RecordWrite::HandOver {
        owner: owner.to_owned(),
        probe_successes: successes,
        lease_expiry: now - 1,
        expiration: TTL,
    }
}

/// A reopen that records no reopen count (the count's own cases are in `backoff`).
pub(super) fn reopen(owner: &str, opened_at: u64, failure_count: u32) -> RecordWrite {
    reopen_counting(owner, opened_at, failure_count, 0)
}

/// A reopen that makes `reopen_count` reopens without a close.
pub(super) fn reopen_counting(
    owner: &str,
    opened_at: u64,
    failure_count: u32,
    reopen_count: u32,
) -> RecordWrite {
    RecordWrite::Reopen {
        owner: owner.to_owned(),
        opened_at,
        failure_count,
        reopen_count,
        expiration: TTL,
        open_until: None,
    }
}

/// An operator's override set at `T0 + 10` by `by`, ending at `until` if given.
pub(super) fn an_override(kind: OverrideKind, by: &str, until: Option<u64>) -> Override {
    let set = Override::new(kind, by, T0 + 10).reason("contract");
    match until {
        Some(until) => set.until(until),
        None => set,
    }
}

/// Sets `set`, replacing `replaces`; with an end, the TTL outlives it.
pub(super) fn override_with(set: &Override, replaces: Option<&Override>) -> RecordWrite {
    RecordWrite::Override {
        set: set.clone(),
        replaces: replaces.cloned(),
        expiration: set.until.map(|until| until + 3_600),
    }
}

pub(super) fn release(released: &Override, now: u64) -> RecordWrite {
    RecordWrite::Release {
        released: released.clone(),
        now,
        expiration: now + 86_400,
    }
}

pub(super) fn reset(now: u64) -> RecordWrite {
    RecordWrite::Reset {
        now,
        expiration: now + 3_630,
    }
}

pub(super) fn open_record(opened_at: u64, failure_count: u32) -> CircuitRecord {
    CircuitRecord::open(opened_at, failure_count)
}

pub(super) fn half_open_record(
    opened_at: u64,
    failure_count: u32,
    owner: &str,
    lease: u64,
) -> CircuitRecord {
    CircuitRecord::half_open(opened_at, failure_count, owner, lease)
}

/// The answer to a fleet report of either kind, which must come (`None` from a store that
/// keeps no fleet counters).
pub(super) async fn answered<T>(report: StoreFuture<'_, Option<T>>) -> Option<T> {
    report.await.expect("the report answers")
}

pub(super) async fn read(store: &dyn StateStore, circuit: &str) -> Option<CircuitRecord> {
    store.read(circuit).await.expect("read answers")
}

/// Applies `transition`, checked against its own condition on the record before it: a
/// win must be allowed and leave the record the transition describes; a loss must be
/// disallowed, change nothing, and return the record that was there.
pub(super) async fn apply(
    store: &dyn StateStore,
    circuit: &str,
    transition: &RecordWrite,
) -> WriteOutcome {
    let before = read(store, circuit).await;
    let outcome = store
        .apply(circuit, transition)
        .await
        .expect("the write answers");
    let expected_win = transition.allowed(before.as_ref());
    match &outcome {
        WriteOutcome::Won => {
            assert!(
                expected_win,
                "{transition:?} won although its condition fails on {before:?}"
            );
            assert_eq!(
                read(store, circuit).await,
                Some(transition.applied_to(before.as_ref())),
                "a won write leaves the record its transition describes"
            );
        }
        WriteOutcome::Lost(current) => {
            assert!(
                !expected_win,
                "{transition:?} lost although its condition holds on {before:?}"
            );
            assert_eq!(
                current, &before,
                "a lost write returns the record that beat it"
            );
            assert_eq!(
                read(store, circuit).await,
                before,
                "a lost write changes nothing"
            );
        }
    }
    outcome
}

/// Trips `circuit` at `T0` and elects `owner` at `T0 + 30` (lease until `T0 + 60`).
pub(super) async fn half_open_by(store: &dyn StateStore, circuit: &str, owner: &str) {
    assert_eq!(
        apply(store, circuit, &trip_at(T0, 5)).await,
        WriteOutcome::Won
    );
    let e = election(owner, Some(T0), T0 + 30);
    assert_eq!(apply(store, circuit, &e).await, WriteOutcome::Won);
}

pub(super) fn lost(outcome: WriteOutcome) -> Option<CircuitRecord> {
    match outcome {
        WriteOutcome::Lost(record) => record,
        WriteOutcome::Won => panic!("expected the write to lose"),
    }
}
