//! The time a failure asked for (`open_until`): a store keeps it on the opening that
//! wrote it, through an election and a hand-over, and drops it with every write that
//! starts another opening or none.

use super::support::*;
use crate::protocol::{OverrideKind, RecordWrite, WriteOutcome};
use crate::store::StateStore;

/// `write` with the time a failure asked for set to `until`.
fn asking(write: RecordWrite, until: u64) -> RecordWrite {
    match write {
        RecordWrite::Trip {
            opened_by,
            failure_count,
            opened_at,
            expiration,
            ..
        } => RecordWrite::Trip {
            opened_by,
            failure_count,
            opened_at,
            expiration,
            open_until: Some(until),
        },
        RecordWrite::Reopen {
            owner,
            opened_at,
            failure_count,
            reopen_count,
            expiration,
            ..
        } => RecordWrite::Reopen {
            owner,
            opened_at,
            failure_count,
            reopen_count,
            expiration,
            open_until: Some(until),
        },
        other => panic!("only a trip or a reopen asks for a time, not {other:?}"),
    }
}

pub(super) async fn an_opening_keeps_the_time_it_asked_for_until_the_opening_changes(
    store: &dyn StateStore,
    circuit: &str,
) {
    let until = async || read(store, circuit).await.and_then(|r| r.open_until);
    let trip = asking(trip_by("env-a", T0, 1), T0 + 20);
    assert_eq!(apply(store, circuit, &trip).await, WriteOutcome::Won);
    assert_eq!(until().await, Some(T0 + 20), "written by the trip");
    let e = election("env-a", Some(T0), T0 + 20);
    assert_eq!(apply(store, circuit, &e).await, WriteOutcome::Won);
    assert_eq!(until().await, Some(T0 + 20), "kept by an election");
    let handed = hand_over("env-a", 1, T0 + 21);
    assert_eq!(apply(store, circuit, &handed).await, WriteOutcome::Won);
    assert_eq!(until().await, Some(T0 + 20), "and a hand-over");
    // The owner's probe fails again, asking for a minute: a reopen of its own time.
    let reopened = asking(reopen("env-a", T0 + 23, 1), T0 + 80);
    assert_eq!(apply(store, circuit, &reopened).await, WriteOutcome::Won);
    assert_eq!(until().await, Some(T0 + 80), "a reopen writes its own");
    let e = election("env-b", Some(T0 + 23), T0 + 80);
    assert_eq!(apply(store, circuit, &e).await, WriteOutcome::Won);
    let plain = reopen("env-b", T0 + 81, 1);
    assert_eq!(apply(store, circuit, &plain).await, WriteOutcome::Won);
    assert_eq!(
        until().await,
        None,
        "a reopen that asks for nothing drops it"
    );

    let forced = format!("{circuit}-forced");
    let trip = asking(trip_by("env-a", T0, 1), T0 + 200);
    assert_eq!(apply(store, &forced, &trip).await, WriteOutcome::Won);
    let set = an_override(OverrideKind::ForcedOpen, "ops", Some(T0 + 100));
    assert_eq!(
        apply(store, &forced, &override_with(&set, None)).await,
        WriteOutcome::Won
    );
    let kept = read(store, &forced).await.and_then(|r| r.open_until);
    assert_eq!(kept, None, "an override starts afresh, as a trip does");
}
