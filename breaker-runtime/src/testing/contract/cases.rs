//! The contract's sequential cases: each transition where its condition holds and where
//! it fails, on a circuit of the case's own.

use super::support::*;
use crate::protocol::CircuitState;
use crate::protocol::{CircuitRecord, RecordWrite, WriteOutcome};
use crate::store::StateStore;

pub(super) async fn read_of_an_unknown_circuit_is_none(store: &dyn StateStore, circuit: &str) {
    assert_eq!(read(store, circuit).await, None);
}

pub(super) async fn trip_wins_on_an_absent_record(store: &dyn StateStore, circuit: &str) {
    assert_eq!(
        apply(store, circuit, &trip_at(T0, 5)).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(open_record(T0, 5)));
}

pub(super) async fn trip_loses_on_open_and_returns_it(store: &dyn StateStore, circuit: &str) {
    apply(store, circuit, &trip_at(T0, 5)).await;
    let second = apply(store, circuit, &trip_at(T0 + 9, 7)).await;
    // The loser adopts the stored opening instead of resetting it.
    assert_eq!(lost(second), Some(open_record(T0, 5)));
}

pub(super) async fn trip_loses_on_half_open_and_returns_it(store: &dyn StateStore, circuit: &str) {
    loses_to_the_probe_of_env_a(store, circuit, trip_at(T0 + 31, 5)).await;
}

pub(super) async fn trip_wins_again_after_close(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    assert_eq!(
        apply(store, circuit, &close("env-a")).await,
        WriteOutcome::Won
    );
    assert_eq!(
        apply(store, circuit, &trip_at(T0 + 100, 3)).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(open_record(T0 + 100, 3)));
}

pub(super) async fn election_wins_on_open_with_the_read_opened_at(
    store: &dyn StateStore,
    circuit: &str,
) {
    half_open_by(store, circuit, "env-a").await;
    // Election keeps the opening and the failure count, adds owner and lease.
    assert_eq!(
        read(store, circuit).await,
        Some(half_open_record(T0, 5, "env-a", T0 + 60))
    );
}

pub(super) async fn election_loses_on_a_stale_opened_at(store: &dyn StateStore, circuit: &str) {
    apply(store, circuit, &trip_at(T0, 5)).await;
    // This environment read an older opening (the circuit reopened since).
    let outcome = apply(store, circuit, &election("env-a", Some(T0 - 60), T0 + 30)).await;
    assert_eq!(lost(outcome), Some(open_record(T0, 5)));
    let no_opening = apply(store, circuit, &election("env-a", None, T0 + 30)).await;
    assert_eq!(lost(no_opening), Some(open_record(T0, 5)));
}

pub(super) async fn election_loses_on_an_absent_record(store: &dyn StateStore, circuit: &str) {
    let outcome = apply(store, circuit, &election("env-a", Some(T0), T0 + 30)).await;
    assert_eq!(lost(outcome), None);
    assert_eq!(
        read(store, circuit).await,
        None,
        "a lost election creates no record"
    );
}

pub(super) async fn election_loses_on_closed(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    apply(store, circuit, &close("env-a")).await;
    let outcome = apply(store, circuit, &election("env-b", None, T0 + 90)).await;
    assert_eq!(lost(outcome).map(|r| r.state), Some(CircuitState::Closed));
}

pub(super) async fn election_loses_while_the_lease_is_live(store: &dyn StateStore, circuit: &str) {
    loses_to_the_probe_of_env_a(store, circuit, election("env-b", Some(T0), T0 + 45)).await;
}

pub(super) async fn election_loses_when_the_lease_expires_this_second(
    store: &dyn StateStore,
    circuit: &str,
) {
    // The lease is live through its expiry second; takeover needs `lease < now`.
    loses_to_the_probe_of_env_a(store, circuit, election("env-b", Some(T0), T0 + 60)).await;
}

pub(super) async fn election_takes_over_an_expired_lease(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    let takeover = election("env-b", Some(T0), T0 + 61);
    assert_eq!(apply(store, circuit, &takeover).await, WriteOutcome::Won);
    assert_eq!(
        read(store, circuit).await,
        Some(half_open_record(T0, 5, "env-b", T0 + 91))
    );
}

pub(super) async fn close_by_the_owner_wins_and_clears_the_record(
    store: &dyn StateStore,
    circuit: &str,
) {
    half_open_by(store, circuit, "env-a").await;
    assert_eq!(
        apply(store, circuit, &close("env-a")).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(CircuitRecord::closed()));
}

pub(super) async fn close_by_another_environment_loses(store: &dyn StateStore, circuit: &str) {
    loses_to_the_probe_of_env_a(store, circuit, close("env-b")).await;
}

pub(super) async fn close_loses_on_open_absent_and_closed(store: &dyn StateStore, circuit: &str) {
    assert_eq!(lost(apply(store, circuit, &close("env-a")).await), None);
    apply(store, circuit, &trip_at(T0, 5)).await;
    let on_open = apply(store, circuit, &close("env-a")).await;
    assert_eq!(lost(on_open), Some(open_record(T0, 5)));
    let reopened = apply(store, circuit, &reopen("env-a", T0 + 1, 1)).await;
    assert_eq!(lost(reopened), Some(open_record(T0, 5)));
}

pub(super) async fn reopen_by_the_owner_wins_with_a_new_opened_at(
    store: &dyn StateStore,
    circuit: &str,
) {
    half_open_by(store, circuit, "env-a").await;
    let outcome = apply(store, circuit, &reopen("env-a", T0 + 40, 1)).await;
    assert_eq!(outcome, WriteOutcome::Won);
    assert_eq!(read(store, circuit).await, Some(open_record(T0 + 40, 1)));
    // The next election must expect the new opening.
    let stale = apply(store, circuit, &election("env-b", Some(T0), T0 + 80)).await;
    assert_eq!(lost(stale), Some(open_record(T0 + 40, 1)));
    let fresh = apply(store, circuit, &election("env-b", Some(T0 + 40), T0 + 80)).await;
    assert_eq!(fresh, WriteOutcome::Won);
}

pub(super) async fn reopen_by_another_environment_loses(store: &dyn StateStore, circuit: &str) {
    loses_to_the_probe_of_env_a(store, circuit, reopen("env-b", T0 + 40, 1)).await;
}

pub(super) async fn a_former_owner_cannot_close_or_reopen_after_a_takeover(
    store: &dyn StateStore,
    circuit: &str,
) {
    half_open_by(store, circuit, "env-a").await;
    let takeover = election("env-b", Some(T0), T0 + 61);
    assert_eq!(apply(store, circuit, &takeover).await, WriteOutcome::Won);
    let by_b = half_open_record(T0, 5, "env-b", T0 + 91);
    assert_eq!(
        lost(apply(store, circuit, &close("env-a")).await),
        Some(by_b.clone())
    );
    let reopen_a = apply(store, circuit, &reopen("env-a", T0 + 62, 1)).await;
    assert_eq!(lost(reopen_a), Some(by_b));
    assert_eq!(
        apply(store, circuit, &close("env-b")).await,
        WriteOutcome::Won
    );
}

/// `transition` loses on the probe `env-a` holds (lease until `T0 + 60`) and returns that
/// record unchanged.
async fn loses_to_the_probe_of_env_a(
    store: &dyn StateStore,
    circuit: &str,
    transition: RecordWrite,
) {
    half_open_by(store, circuit, "env-a").await;
    let outcome = apply(store, circuit, &transition).await;
    assert_eq!(
        lost(outcome),
        Some(half_open_record(T0, 5, "env-a", T0 + 60))
    );
}

/// A trip names its writer (`opened_by`), so that a trip whose answer was lost can tell its
/// own landed attempt from another environment's trip in the same second with the same
/// count; an election and a hand-over keep the name, a reopen and a forced open drop it.
pub(super) async fn a_trip_names_its_writer_until_the_opening_changes(
    store: &dyn StateStore,
    circuit: &str,
) {
    let mine = trip_by("env-a", T0, 5);
    assert_eq!(apply(store, circuit, &mine).await, WriteOutcome::Won);
    let stored = read(store, circuit).await.expect("tripped");
    assert_eq!(stored.opened_by.as_deref(), Some("env-a"));
    let theirs = trip_by("env-b", T0, 5);
    assert_eq!(
        lost(apply(store, circuit, &theirs).await),
        Some(stored.clone())
    );
    assert_ne!(
        stored,
        theirs.applied_to(None),
        "the writer tells them apart"
    );

    let writer = async || read(store, circuit).await.and_then(|r| r.opened_by);
    let e = election("env-a", Some(T0), T0 + 30);
    assert_eq!(apply(store, circuit, &e).await, WriteOutcome::Won);
    assert_eq!(
        writer().await.as_deref(),
        Some("env-a"),
        "kept by an election"
    );
    let handed = hand_over("env-a", 1, T0 + 31);
    assert_eq!(apply(store, circuit, &handed).await, WriteOutcome::Won);
    assert_eq!(writer().await.as_deref(), Some("env-a"), "and a hand-over");
    let taken = takeover("env-b", 1, T0 + 32);
    assert_eq!(apply(store, circuit, &taken).await, WriteOutcome::Won);
    let reopened = reopen("env-b", T0 + 33, 1);
    assert_eq!(apply(store, circuit, &reopened).await, WriteOutcome::Won);
    assert_eq!(writer().await, None, "a reopen is no trip");

    let forced = format!("{circuit}-forced");
    apply(store, &forced, &trip_by("env-a", T0, 5)).await;
    let set = an_override(
        crate::protocol::OverrideKind::ForcedOpen,
        "ops",
        Some(T0 + 100),
    );
    assert_eq!(
        apply(store, &forced, &override_with(&set, None)).await,
        WriteOutcome::Won
    );
    let opened_by = read(store, &forced).await.and_then(|r| r.opened_by);
    assert_eq!(opened_by, None, "a forced open is no trip");
}
