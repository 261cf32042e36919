//! The contract's override cases: an operator's override, release and reset, and that none
//! of the breaker's own writes erases an override while it holds.

use super::support::*;
use crate::protocol::CircuitState;
use crate::protocol::{
    CircuitRecord, OPENED_AT_UNTIL_RELEASED, Override, OverrideKind, WriteOutcome,
};
use crate::store::StateStore;

const OPEN: OverrideKind = OverrideKind::ForcedOpen;
const DISABLED: OverrideKind = OverrideKind::Disabled;

fn with_override(record: CircuitRecord, set: &Override) -> CircuitRecord {
    CircuitRecord {
        operator_override: Some(set.clone()),
        ..record
    }
}

pub(super) async fn forced_open_creates_an_open_record_that_outlasts_it(
    store: &dyn StateStore,
    circuit: &str,
) {
    let forced = an_override(OPEN, "alice", Some(T0 + 1_800));
    assert_eq!(
        apply(store, circuit, &override_with(&forced, None)).await,
        WriteOutcome::Won
    );
    // `opened_at` is the override's end: no recovery elapses before it.
    assert_eq!(
        read(store, circuit).await,
        Some(with_override(open_record(T0 + 1_800, 0), &forced))
    );
    // A trip or an election while it holds loses and returns it.
    let expected = Some(with_override(open_record(T0 + 1_800, 0), &forced));
    assert_eq!(
        lost(apply(store, circuit, &trip_at(T0 + 20, 5)).await),
        expected
    );
    let stale = election("env-a", Some(T0 + 1_800), T0 + 1_799);
    assert_eq!(lost(apply(store, circuit, &stale).await), expected);
}

pub(super) async fn forced_open_until_released_keeps_failures_and_ends_the_probe(
    store: &dyn StateStore,
    circuit: &str,
) {
    half_open_by(store, circuit, "env-a").await;
    let forced = an_override(OPEN, "alice", None);
    assert_eq!(
        apply(store, circuit, &override_with(&forced, None)).await,
        WriteOutcome::Won
    );
    assert_eq!(
        read(store, circuit).await,
        Some(with_override(
            open_record(OPENED_AT_UNTIL_RELEASED, 5),
            &forced
        ))
    );
    // The prober's close and reopen lose: the override removed its ownership.
    assert!(matches!(
        apply(store, circuit, &close("env-a")).await,
        WriteOutcome::Lost(_)
    ));
    assert!(matches!(
        apply(store, circuit, &reopen("env-a", T0 + 40, 1)).await,
        WriteOutcome::Lost(_)
    ));
    // Still forced open at any time: an election far in the future loses too.
    let late = election(
        "env-b",
        Some(OPENED_AT_UNTIL_RELEASED),
        OPENED_AT_UNTIL_RELEASED + 60,
    );
    assert!(matches!(
        apply(store, circuit, &late).await,
        WriteOutcome::Lost(_)
    ));
}

pub(super) async fn disable_closes_and_no_trip_or_election_wins_under_it(
    store: &dyn StateStore,
    circuit: &str,
) {
    apply(store, circuit, &trip_at(T0, 5)).await;
    let disabled = an_override(DISABLED, "bob", Some(T0 + 600));
    assert_eq!(
        apply(store, circuit, &override_with(&disabled, None)).await,
        WriteOutcome::Won
    );
    let expected = with_override(CircuitRecord::closed(), &disabled);
    assert_eq!(read(store, circuit).await, Some(expected.clone()));
    assert_eq!(
        lost(apply(store, circuit, &trip_at(T0 + 599, 9)).await),
        Some(expected.clone())
    );
    assert_eq!(
        lost(apply(store, circuit, &election("env-a", None, T0 + 100)).await),
        Some(expected)
    );
}

pub(super) async fn an_override_replaces_only_the_one_it_read(
    store: &dyn StateStore,
    circuit: &str,
) {
    let first = an_override(DISABLED, "bob", None);
    assert_eq!(
        apply(store, circuit, &override_with(&first, None)).await,
        WriteOutcome::Won
    );
    // A second operator who read no override loses, and sees bob's.
    let mut second = an_override(OPEN, "carol", Some(T0 + 900));
    second.at = T0 + 11;
    let outcome = apply(store, circuit, &override_with(&second, None)).await;
    assert_eq!(
        lost(outcome).and_then(|r| r.operator_override),
        Some(first.clone())
    );
    // Naming bob's override, carol's replaces it.
    assert_eq!(
        apply(store, circuit, &override_with(&second, Some(&first))).await,
        WriteOutcome::Won
    );
    assert_eq!(
        read(store, circuit).await,
        Some(with_override(open_record(T0 + 900, 0), &second))
    );
}

pub(super) async fn release_ends_only_the_override_it_names(store: &dyn StateStore, circuit: &str) {
    let forced = an_override(OPEN, "alice", None);
    // Nothing to release on an absent record.
    assert_eq!(
        lost(apply(store, circuit, &release(&forced, T0 + 50)).await),
        None
    );
    apply(store, circuit, &override_with(&forced, None)).await;
    let other = an_override(OPEN, "mallory", None);
    assert!(matches!(
        apply(store, circuit, &release(&other, T0 + 50)).await,
        WriteOutcome::Lost(_)
    ));
    // A released forced open is an opening as of the release.
    assert_eq!(
        apply(store, circuit, &release(&forced, T0 + 50)).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(open_record(T0 + 50, 0)));
    // A released disable leaves the state as it is.
    let disabled = an_override(DISABLED, "bob", None);
    apply(store, circuit, &override_with(&disabled, None)).await;
    assert_eq!(
        apply(store, circuit, &release(&disabled, T0 + 60)).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(CircuitRecord::closed()));
}

/// Forced open until `T0 + 100`; at `T0 + 130`, the election on the override's opening
/// wins and keeps the ended override. Returns the override and the half-open record.
async fn probing_after_a_forced_open_ended(
    store: &dyn StateStore,
    circuit: &str,
) -> (Override, CircuitRecord) {
    let forced = an_override(OPEN, "alice", Some(T0 + 100));
    apply(store, circuit, &override_with(&forced, None)).await;
    let e = election("env-a", Some(T0 + 100), T0 + 130);
    assert_eq!(apply(store, circuit, &e).await, WriteOutcome::Won);
    (forced, read(store, circuit).await.expect("a record"))
}

pub(super) async fn breaker_writes_win_again_once_an_override_ended(
    store: &dyn StateStore,
    circuit: &str,
) {
    let (forced, probing) = probing_after_a_forced_open_ended(store, circuit).await;
    assert_eq!(probing.state, CircuitState::HalfOpen);
    assert_eq!(probing.operator_override, Some(forced));
    // The owner's close replaces the item: nothing of the override is left.
    assert_eq!(
        apply(store, circuit, &close("env-a")).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(CircuitRecord::closed()));

    let disabled = an_override(DISABLED, "bob", Some(T0 + 200));
    apply(store, circuit, &override_with(&disabled, None)).await;
    assert_eq!(
        apply(store, circuit, &trip_at(T0 + 200, 4)).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(open_record(T0 + 200, 4)));
}

pub(super) async fn reset_closes_unless_an_override_holds(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    assert_eq!(
        apply(store, circuit, &reset(T0 + 40)).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(CircuitRecord::closed()));
    let forced = an_override(OPEN, "alice", Some(T0 + 100));
    apply(store, circuit, &override_with(&forced, None)).await;
    assert!(matches!(
        apply(store, circuit, &reset(T0 + 99)).await,
        WriteOutcome::Lost(_)
    ));
    // Once it ended, a reset closes and clears it.
    assert_eq!(
        apply(store, circuit, &reset(T0 + 100)).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(CircuitRecord::closed()));
}

pub(super) async fn releasing_an_ended_forced_open_keeps_the_probe_that_followed(
    store: &dyn StateStore,
    circuit: &str,
) {
    let (forced, probing) = probing_after_a_forced_open_ended(store, circuit).await;
    // A release that believes it still holds loses: it would reopen the circuit.
    let mut believed = forced.clone();
    believed.until = None;
    assert!(matches!(
        apply(store, circuit, &release(&believed, T0 + 140)).await,
        WriteOutcome::Lost(_)
    ));
    // Released after its end: only the override goes; the probe goes on and closes.
    assert_eq!(
        apply(store, circuit, &release(&forced, T0 + 140)).await,
        WriteOutcome::Won
    );
    assert_eq!(
        read(store, circuit).await,
        Some(CircuitRecord {
            operator_override: None,
            ..probing
        })
    );
    assert_eq!(
        apply(store, circuit, &close("env-a")).await,
        WriteOutcome::Won
    );
}
