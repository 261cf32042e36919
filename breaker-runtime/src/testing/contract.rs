//! The store contract: what every [`StateStore`] must do, checked case by case. Run it
//! against your own store (feature `contract`) from a multi-thread tokio runtime.
//!
//! Every transition is applied where its condition holds (it must win and leave
//! [`Transition::applied_to`] the record before it) and where it fails (it must lose,
//! change nothing, and return the record that made it lose); each outcome is checked
//! against [`Transition::allowed`], the reference `InMemoryStore` evaluates. Races run many
//! writers at once and demand exactly one winner, round after round.
//!
//! ```
//! use std::sync::Arc;
//! use breaker_runtime::store::InMemoryStore;
//! use breaker_runtime::testing::contract::run_contract;
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)] async fn main() {
//! run_contract(Arc::new(InMemoryStore::new())).await;
//! # }
//! ```
//!
//! Each case uses circuit names of its own, so one store (one table) serves the whole suite.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::CircuitState;
use crate::store::{CircuitRecord, StateStore, Transition, WriteOutcome};

/// Concurrent writers in each race.
pub const RACERS: usize = 24;
/// Rounds of each race.
pub const RACE_ROUNDS: usize = 20;

/// A running contract case.
type CaseFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A contract case: its name and the check.
type Case = (&'static str, fn(Arc<dyn StateStore>, String) -> CaseFuture);

/// Runs every case against `store`, in order; panics naming the first case that fails.
pub async fn run_contract(store: Arc<dyn StateStore>) {
    for (name, case) in cases() {
        let circuit = fresh_circuit(name);
        let started = std::time::Instant::now();
        case(Arc::clone(&store), circuit).await;
        eprintln!("contract case {name}: ok in {:?}", started.elapsed());
    }
}

/// The names of every case, in the order [`run_contract`] runs them.
pub fn case_names() -> Vec<&'static str> {
    cases().iter().map(|(name, _)| *name).collect()
}

macro_rules! case {
    ($name:ident) => {
        (stringify!($name), |store, circuit| {
            Box::pin(async move { $name(&*store, &circuit).await })
        })
    };
    (race $name:ident) => {
        (stringify!($name), |store, circuit| {
            Box::pin(async move { $name(store, circuit).await })
        })
    };
}

fn cases() -> Vec<Case> {
    vec![
        case!(read_of_an_unknown_circuit_is_none),
        case!(trip_wins_on_an_absent_record),
        case!(trip_loses_on_open_and_returns_it),
        case!(trip_loses_on_half_open_and_returns_it),
        case!(trip_wins_again_after_close),
        case!(election_wins_on_open_with_the_read_opened_at),
        case!(election_loses_on_a_stale_opened_at),
        case!(election_loses_on_an_absent_record),
        case!(election_loses_on_closed),
        case!(election_loses_while_the_lease_is_live),
        case!(election_loses_when_the_lease_expires_this_second),
        case!(election_takes_over_an_expired_lease),
        case!(close_by_the_owner_wins_and_clears_the_record),
        case!(close_by_another_environment_loses),
        case!(close_loses_on_open_absent_and_closed),
        case!(reopen_by_the_owner_wins_with_a_new_opened_at),
        case!(reopen_by_another_environment_loses),
        case!(a_former_owner_cannot_close_or_reopen_after_a_takeover),
        case!(race concurrent_elections_have_exactly_one_winner),
        case!(race concurrent_trips_have_exactly_one_winner),
        case!(race close_and_takeover_race_has_exactly_one_winner),
    ]
}

fn fresh_circuit(case: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{case}-{}-{n}", std::process::id())
}

const T0: u64 = 1_700_000_000;
const TTL: u64 = T0 + 3_630;

fn trip_at(opened_at: u64, failure_count: u32) -> Transition {
    Transition::Trip {
        failure_count,
        opened_at,
        expiration: TTL,
    }
}

fn election(owner: &str, expected_opened_at: Option<u64>, now: u64) -> Transition {
    Transition::Elect {
        owner: owner.to_owned(),
        expected_opened_at,
        now,
        lease_expiry: now + 30,
        expiration: TTL,
    }
}

fn close(owner: &str) -> Transition {
    Transition::Close {
        owner: owner.to_owned(),
        expiration: TTL,
    }
}

fn reopen(owner: &str, opened_at: u64, failure_count: u32) -> Transition {
    Transition::Reopen {
        owner: owner.to_owned(),
        opened_at,
        failure_count,
        expiration: TTL,
    }
}

fn open_record(opened_at: u64, failure_count: u32) -> CircuitRecord {
    CircuitRecord::open(opened_at, failure_count)
}

fn half_open_record(opened_at: u64, failure_count: u32, owner: &str, lease: u64) -> CircuitRecord {
    CircuitRecord::half_open(opened_at, failure_count, owner, lease)
}

async fn read(store: &dyn StateStore, circuit: &str) -> Option<CircuitRecord> {
    store.read(circuit).await.expect("read answers")
}

/// Applies `transition`, checked against its own condition on the record before it: a
/// win must be allowed and leave the record the transition describes; a loss must be
/// disallowed, change nothing, and return the record that was there.
async fn apply(store: &dyn StateStore, circuit: &str, transition: &Transition) -> WriteOutcome {
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
async fn half_open_by(store: &dyn StateStore, circuit: &str, owner: &str) {
    assert_eq!(
        apply(store, circuit, &trip_at(T0, 5)).await,
        WriteOutcome::Won
    );
    let e = election(owner, Some(T0), T0 + 30);
    assert_eq!(apply(store, circuit, &e).await, WriteOutcome::Won);
}

fn lost(outcome: WriteOutcome) -> Option<CircuitRecord> {
    match outcome {
        WriteOutcome::Lost(record) => record,
        WriteOutcome::Won => panic!("expected the write to lose"),
    }
}

async fn read_of_an_unknown_circuit_is_none(store: &dyn StateStore, circuit: &str) {
    assert_eq!(read(store, circuit).await, None);
}

async fn trip_wins_on_an_absent_record(store: &dyn StateStore, circuit: &str) {
    assert_eq!(
        apply(store, circuit, &trip_at(T0, 5)).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(open_record(T0, 5)));
}

async fn trip_loses_on_open_and_returns_it(store: &dyn StateStore, circuit: &str) {
    apply(store, circuit, &trip_at(T0, 5)).await;
    let second = apply(store, circuit, &trip_at(T0 + 9, 7)).await;
    // The loser adopts the stored opening instead of resetting it.
    assert_eq!(lost(second), Some(open_record(T0, 5)));
}

async fn trip_loses_on_half_open_and_returns_it(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    let outcome = apply(store, circuit, &trip_at(T0 + 31, 5)).await;
    assert_eq!(
        lost(outcome),
        Some(half_open_record(T0, 5, "env-a", T0 + 60))
    );
}

async fn trip_wins_again_after_close(store: &dyn StateStore, circuit: &str) {
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

async fn election_wins_on_open_with_the_read_opened_at(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    // Election keeps the opening and the failure count, adds owner and lease.
    assert_eq!(
        read(store, circuit).await,
        Some(half_open_record(T0, 5, "env-a", T0 + 60))
    );
}

async fn election_loses_on_a_stale_opened_at(store: &dyn StateStore, circuit: &str) {
    apply(store, circuit, &trip_at(T0, 5)).await;
    // This environment read an older opening (the circuit reopened since).
    let outcome = apply(store, circuit, &election("env-a", Some(T0 - 60), T0 + 30)).await;
    assert_eq!(lost(outcome), Some(open_record(T0, 5)));
    let no_opening = apply(store, circuit, &election("env-a", None, T0 + 30)).await;
    assert_eq!(lost(no_opening), Some(open_record(T0, 5)));
}

async fn election_loses_on_an_absent_record(store: &dyn StateStore, circuit: &str) {
    let outcome = apply(store, circuit, &election("env-a", Some(T0), T0 + 30)).await;
    assert_eq!(lost(outcome), None);
    assert_eq!(
        read(store, circuit).await,
        None,
        "a lost election creates no record"
    );
}

async fn election_loses_on_closed(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    apply(store, circuit, &close("env-a")).await;
    let outcome = apply(store, circuit, &election("env-b", None, T0 + 90)).await;
    assert_eq!(lost(outcome).map(|r| r.state), Some(CircuitState::Closed));
}

async fn election_loses_while_the_lease_is_live(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    let outcome = apply(store, circuit, &election("env-b", Some(T0), T0 + 45)).await;
    assert_eq!(
        lost(outcome),
        Some(half_open_record(T0, 5, "env-a", T0 + 60))
    );
}

async fn election_loses_when_the_lease_expires_this_second(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    // The lease is live through its expiry second; takeover needs `lease < now`.
    let outcome = apply(store, circuit, &election("env-b", Some(T0), T0 + 60)).await;
    assert_eq!(
        lost(outcome),
        Some(half_open_record(T0, 5, "env-a", T0 + 60))
    );
}

async fn election_takes_over_an_expired_lease(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    let takeover = election("env-b", Some(T0), T0 + 61);
    assert_eq!(apply(store, circuit, &takeover).await, WriteOutcome::Won);
    assert_eq!(
        read(store, circuit).await,
        Some(half_open_record(T0, 5, "env-b", T0 + 91))
    );
}

async fn close_by_the_owner_wins_and_clears_the_record(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    assert_eq!(
        apply(store, circuit, &close("env-a")).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(CircuitRecord::closed()));
}

async fn close_by_another_environment_loses(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    let outcome = apply(store, circuit, &close("env-b")).await;
    assert_eq!(
        lost(outcome),
        Some(half_open_record(T0, 5, "env-a", T0 + 60))
    );
}

async fn close_loses_on_open_absent_and_closed(store: &dyn StateStore, circuit: &str) {
    assert_eq!(lost(apply(store, circuit, &close("env-a")).await), None);
    apply(store, circuit, &trip_at(T0, 5)).await;
    let on_open = apply(store, circuit, &close("env-a")).await;
    assert_eq!(lost(on_open), Some(open_record(T0, 5)));
    let reopened = apply(store, circuit, &reopen("env-a", T0 + 1, 1)).await;
    assert_eq!(lost(reopened), Some(open_record(T0, 5)));
}

async fn reopen_by_the_owner_wins_with_a_new_opened_at(store: &dyn StateStore, circuit: &str) {
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

async fn reopen_by_another_environment_loses(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    let outcome = apply(store, circuit, &reopen("env-b", T0 + 40, 1)).await;
    assert_eq!(
        lost(outcome),
        Some(half_open_record(T0, 5, "env-a", T0 + 60))
    );
}

async fn a_former_owner_cannot_close_or_reopen_after_a_takeover(
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

/// Runs `RACERS` writers at once; returns each one's outcome, in racer order.
async fn race<F, Fut>(store: &Arc<dyn StateStore>, write: F) -> Vec<WriteOutcome>
where
    F: Fn(Arc<dyn StateStore>, usize) -> Fut,
    Fut: Future<Output = WriteOutcome> + Send + 'static,
{
    let start = Arc::new(tokio::sync::Barrier::new(RACERS));
    let tasks: Vec<_> = (0..RACERS)
        .map(|i| {
            let write = write(Arc::clone(store), i);
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                write.await
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(RACERS);
    for task in tasks {
        outcomes.push(task.await.expect("racer finished"));
    }
    outcomes
}

fn the_winner(outcomes: &[WriteOutcome], round: usize) -> usize {
    let winners: Vec<usize> = (0..outcomes.len())
        .filter(|&i| outcomes[i] == WriteOutcome::Won)
        .collect();
    assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
    winners[0]
}

async fn concurrent_elections_have_exactly_one_winner(store: Arc<dyn StateStore>, circuit: String) {
    let mut opened_at = T0;
    apply(&*store, &circuit, &trip_at(opened_at, 5)).await;
    for round in 0..RACE_ROUNDS {
        let now = opened_at + 30;
        let c = circuit.clone();
        let outcomes = race(&store, move |store, i| {
            let c = c.clone();
            async move {
                let e = election(&format!("env-{i}"), Some(opened_at), now);
                store.apply(&c, &e).await.expect("election answers")
            }
        })
        .await;
        let winner = format!("env-{}", the_winner(&outcomes, round));
        let expected = half_open_record(opened_at, 5, &winner, now + 30);
        for outcome in &outcomes {
            if let WriteOutcome::Lost(record) = outcome {
                assert_eq!(
                    record.as_ref(),
                    Some(&expected),
                    "round {round}: a loser sees the winner"
                );
            }
        }
        assert_eq!(read(&*store, &circuit).await, Some(expected));
        // The winner's probe fails: reopen, and race again for the next window.
        opened_at = now + 1;
        let r = reopen(&winner, opened_at, 5);
        assert_eq!(store.apply(&circuit, &r).await, Ok(WriteOutcome::Won));
    }
}

async fn concurrent_trips_have_exactly_one_winner(store: Arc<dyn StateStore>, circuit: String) {
    for round in 0..RACE_ROUNDS {
        let c = format!("{circuit}-{round}");
        let name = c.clone();
        let outcomes = race(&store, move |store, i| {
            let c = name.clone();
            async move {
                let t = trip_at(T0 + i as u64, i as u32 + 1);
                store.apply(&c, &t).await.expect("trip answers")
            }
        })
        .await;
        let winner = the_winner(&outcomes, round);
        let expected = open_record(T0 + winner as u64, winner as u32 + 1);
        for outcome in &outcomes {
            if let WriteOutcome::Lost(record) = outcome {
                assert_eq!(
                    record.as_ref(),
                    Some(&expected),
                    "round {round}: a loser adopts the winner's opening"
                );
            }
        }
        assert_eq!(read(&*store, &c).await, Some(expected));
    }
}

/// The owner closes just as another environment takes over its expired lease: one wins.
async fn close_and_takeover_race_has_exactly_one_winner(
    store: Arc<dyn StateStore>,
    circuit: String,
) {
    for round in 0..RACE_ROUNDS {
        let c = format!("{circuit}-{round}");
        half_open_by(&*store, &c, "env-owner").await;
        let name = c.clone();
        let outcomes = race(&store, move |store, i| {
            let c = name.clone();
            async move {
                if i == 0 {
                    store.apply(&c, &close("env-owner")).await
                } else {
                    let e = election(&format!("env-{i}"), Some(T0), T0 + 61);
                    store.apply(&c, &e).await
                }
                .expect("write answers")
            }
        })
        .await;
        let winner = the_winner(&outcomes, round);
        let after = read(&*store, &c).await.expect("record exists");
        if winner == 0 {
            assert_eq!(after, CircuitRecord::closed(), "round {round}");
        } else {
            let owner = format!("env-{winner}");
            assert_eq!(
                after,
                half_open_record(T0, 5, &owner, T0 + 91),
                "round {round}"
            );
        }
    }
}
