//! The probe's hand-over: the owner counts the fleet's success and frees its lease at once;
//! any environment may then take the next probe, one at a time, keeping the count.

use std::sync::Arc;

use super::RACE_ROUNDS;
use super::races::{race, the_winner};
use super::support::*;
use crate::protocol::{Override, OverrideKind, RecordWrite, WriteOutcome};
use crate::store::StateStore;

pub(super) async fn a_hand_over_counts_the_success_and_frees_the_lease(
    store: &dyn StateStore,
    circuit: &str,
) {
    half_open_by(store, circuit, "env-a").await;
    let handed = apply(store, circuit, &hand_over("env-a", 1, T0 + 31)).await;
    assert_eq!(handed, WriteOutcome::Won);
    let mut expected = half_open_record(T0, 5, "env-a", T0 + 30);
    expected.probe_successes = 1;
    assert_eq!(read(store, circuit).await, Some(expected));
    // Free at once: another environment takes the next probe in the same second, and the
    // fleet's count goes with it; a taker that read another count loses.
    let stale = lost(apply(store, circuit, &takeover("env-c", 0, T0 + 31)).await);
    assert_eq!(stale.map(|r| r.probe_successes), Some(1));
    let taken_over = apply(store, circuit, &takeover("env-b", 1, T0 + 31)).await;
    assert_eq!(taken_over, WriteOutcome::Won);
    let mut taken = half_open_record(T0, 5, "env-b", T0 + 61);
    taken.probe_successes = 1;
    assert_eq!(read(store, circuit).await, Some(taken.clone()));
    assert_eq!(
        lost(apply(store, circuit, &hand_over("env-a", 2, T0 + 32)).await),
        Some(taken),
        "the former owner hands over nothing"
    );
    assert_eq!(
        apply(store, circuit, &close("env-b")).await,
        WriteOutcome::Won
    );
    assert_eq!(
        read(store, circuit).await.map(|r| r.probe_successes),
        Some(0),
        "a close leaves no count behind"
    );
}

pub(super) async fn only_the_owner_hands_over(store: &dyn StateStore, circuit: &str) {
    assert_eq!(
        lost(apply(store, circuit, &hand_over("env-a", 1, T0 + 31)).await),
        None,
        "nothing to hand over on an absent record"
    );
    apply(store, circuit, &trip_at(T0, 5)).await;
    assert_eq!(
        lost(apply(store, circuit, &hand_over("env-a", 1, T0 + 31)).await),
        Some(open_record(T0, 5))
    );
    let e = election("env-a", Some(T0), T0 + 30);
    assert_eq!(apply(store, circuit, &e).await, WriteOutcome::Won);
    assert_eq!(
        lost(apply(store, circuit, &hand_over("env-b", 1, T0 + 31)).await),
        Some(half_open_record(T0, 5, "env-a", T0 + 60))
    );
}

pub(super) async fn an_override_ends_the_fleets_probe_count(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    apply(store, circuit, &hand_over("env-a", 2, T0 + 31)).await;
    let forced = an_override(OverrideKind::ForcedOpen, "ops", Some(T0 + 100));
    let set = override_with(&forced, None);
    assert_eq!(apply(store, circuit, &set).await, WriteOutcome::Won);
    let record = read(store, circuit).await.expect("a record");
    assert_eq!(record.probe_successes, 0, "no probe survives an override");
    assert_eq!(record.half_open_owner, None);
    // Released while it holds: a new opening, counted from nothing.
    let released: Override = forced;
    let release = release(&released, T0 + 50);
    assert_eq!(apply(store, circuit, &release).await, WriteOutcome::Won);
    assert_eq!(
        read(store, circuit).await.map(|r| r.probe_successes),
        Some(0)
    );
}

pub(super) async fn concurrent_takeovers_of_a_handed_over_probe_have_exactly_one_winner(
    store: Arc<dyn StateStore>,
    circuit: String,
) {
    apply(&*store, &circuit, &trip_at(T0, 5)).await;
    let mut owner = "env-first".to_owned();
    let first = election(&owner, Some(T0), T0 + 30);
    assert_eq!(store.apply(&circuit, &first).await, Ok(WriteOutcome::Won));
    for round in 0..RACE_ROUNDS {
        let now = T0 + 31 + round as u64;
        let successes = round as u32 + 1;
        let handed = hand_over(&owner, successes, now);
        assert_eq!(store.apply(&circuit, &handed).await, Ok(WriteOutcome::Won));
        let c = circuit.clone();
        let outcomes = race(&store, move |store, i| {
            let c = c.clone();
            async move {
                let e: RecordWrite = takeover(&format!("env-{i}"), successes, now);
                store.apply(&c, &e).await.expect("takeover answers")
            }
        })
        .await;
        owner = format!("env-{}", the_winner(&outcomes, round));
        let mut expected = half_open_record(T0, 5, &owner, now + 30);
        expected.probe_successes = successes;
        assert_eq!(
            read(&*store, &circuit).await,
            Some(expected),
            "round {round}: one new owner, the count kept"
        );
    }
}
