//! The reopen count: a reopen records it, an election and a hand-over keep it, and every
//! other write (a close, a trip, an operator's override or reset) leaves none behind.

use super::support::*;
use crate::protocol::{CircuitRecord, OverrideKind, WriteOutcome};
use crate::store::StateStore;

/// `record` with `reopens` reopens counted.
fn counting(record: CircuitRecord, reopens: u32) -> CircuitRecord {
    CircuitRecord {
        reopen_count: reopens,
        ..record
    }
}

pub(super) async fn a_reopen_counts_and_an_election_and_a_hand_over_keep_the_count(
    store: &dyn StateStore,
    circuit: &str,
) {
    half_open_by(store, circuit, "env-a").await;
    let reopened = apply(store, circuit, &reopen_counting("env-a", T0 + 40, 1, 3)).await;
    assert_eq!(reopened, WriteOutcome::Won);
    assert_eq!(
        read(store, circuit).await,
        Some(counting(open_record(T0 + 40, 1), 3))
    );
    let elected = apply(store, circuit, &election("env-b", Some(T0 + 40), T0 + 200)).await;
    assert_eq!(elected, WriteOutcome::Won);
    let probing = counting(half_open_record(T0 + 40, 1, "env-b", T0 + 230), 3);
    assert_eq!(read(store, circuit).await, Some(probing.clone()));
    assert_eq!(
        apply(store, circuit, &hand_over("env-b", 1, T0 + 201)).await,
        WriteOutcome::Won
    );
    let handed = read(store, circuit).await.expect("a record");
    assert_eq!((handed.probe_successes, handed.reopen_count), (1, 3));
    // A reopen's count is the one it names, not the stored one plus one.
    let taken = apply(store, circuit, &takeover("env-c", 1, T0 + 202)).await;
    assert_eq!(taken, WriteOutcome::Won);
    assert_eq!(
        apply(store, circuit, &reopen_counting("env-c", T0 + 203, 1, 4)).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await.map(|r| r.reopen_count), Some(4));
}

/// Trips `circuit`, reopens it twice and elects `env-a` again.
async fn reopened_twice(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    let reopen = reopen_counting("env-a", T0 + 40, 1, 2);
    assert_eq!(apply(store, circuit, &reopen).await, WriteOutcome::Won);
    let e = election("env-a", Some(T0 + 40), T0 + 200);
    assert_eq!(apply(store, circuit, &e).await, WriteOutcome::Won);
}

pub(super) async fn a_close_a_trip_an_override_and_a_reset_leave_no_count(
    store: &dyn StateStore,
    circuit: &str,
) {
    reopened_twice(store, circuit).await;
    assert_eq!(
        apply(store, circuit, &close("env-a")).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(CircuitRecord::closed()));
    assert_eq!(
        apply(store, circuit, &trip_at(T0 + 300, 5)).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(open_record(T0 + 300, 5)));

    let forced = format!("{circuit}-forced");
    reopened_twice(store, &forced).await;
    let set = an_override(OverrideKind::ForcedOpen, "ops", Some(T0 + 900));
    assert_eq!(
        apply(store, &forced, &override_with(&set, None)).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, &forced).await.map(|r| r.reopen_count), Some(0));
    let released = apply(store, &forced, &release(&set, T0 + 400)).await;
    assert_eq!(released, WriteOutcome::Won);
    assert_eq!(
        read(store, &forced).await,
        Some(open_record(T0 + 400, 1)),
        "a released forced open is a fresh opening"
    );

    let reset_circuit = format!("{circuit}-reset");
    reopened_twice(store, &reset_circuit).await;
    assert_eq!(
        apply(store, &reset_circuit, &reset(T0 + 500)).await,
        WriteOutcome::Won
    );
    assert_eq!(
        read(store, &reset_circuit).await,
        Some(CircuitRecord::closed())
    );
}
