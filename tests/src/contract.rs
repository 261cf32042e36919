//! The store contract: what every [`StateStore`] must do, checked case by case.
//!
//! Every conditional operation is run where its condition holds (it must win and leave the
//! documented record) and where it fails (it must lose, change nothing, and return the
//! record that made it lose). Each outcome is also checked against
//! [`breaker_runtime::store::conditions`], the reference the in-memory store evaluates.
//! Races run many writers at once and demand exactly one winner, round after round.
//!
//! ```no_run
//! # async fn demo() {
//! use std::sync::Arc;
//! use breaker_runtime::store::InMemoryStore;
//! breaker_tests::contract::run_contract(Arc::new(InMemoryStore::new())).await;
//! # }
//! ```
//!
//! Each case uses circuit names of its own, so one store (one table) serves the whole suite.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use breaker_runtime::CircuitState;
use breaker_runtime::store::conditions::{election_allowed, owned_by, trip_allowed};
use breaker_runtime::store::{
    CircuitRecord, Close, ProbeElection, Reopen, StateStore, Trip, WriteOutcome,
};

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

fn trip_at(opened_at: u64, failure_count: u32) -> Trip {
    Trip {
        failure_count,
        opened_at,
        expiration: TTL,
    }
}

fn election(owner: &str, expected_opened_at: Option<u64>, now: u64) -> ProbeElection {
    ProbeElection {
        owner: owner.to_owned(),
        expected_opened_at,
        now,
        lease_expiry: now + 30,
        expiration: TTL,
    }
}

fn close(owner: &str) -> Close {
    Close {
        owner: owner.to_owned(),
        expiration: TTL,
    }
}

fn reopen(owner: &str, opened_at: u64) -> Reopen {
    Reopen {
        owner: owner.to_owned(),
        opened_at,
        failure_count: 1,
        expiration: TTL,
    }
}

fn open_record(opened_at: u64, failure_count: u32) -> CircuitRecord {
    CircuitRecord {
        state: CircuitState::Open,
        failure_count,
        opened_at: Some(opened_at),
        half_open_owner: None,
        probe_lease_expiry: None,
    }
}

fn half_open_record(opened_at: u64, failure_count: u32, owner: &str, lease: u64) -> CircuitRecord {
    CircuitRecord {
        state: CircuitState::HalfOpen,
        half_open_owner: Some(owner.to_owned()),
        probe_lease_expiry: Some(lease),
        ..open_record(opened_at, failure_count)
    }
}

async fn read(store: &dyn StateStore, circuit: &str) -> Option<CircuitRecord> {
    store.read(circuit).await.expect("read answers")
}

/// The write `op` made, checked against the reference condition on the record before it:
/// a win must be allowed, a loss must be disallowed, must change nothing, and must return
/// the record that was there.
async fn checked(
    store: &dyn StateStore,
    circuit: &str,
    allowed: impl FnOnce(Option<&CircuitRecord>) -> bool,
    outcome: WriteOutcome,
    before: Option<CircuitRecord>,
) -> WriteOutcome {
    let expected_win = allowed(before.as_ref());
    match &outcome {
        WriteOutcome::Won => assert!(
            expected_win,
            "won although the condition fails on {before:?}"
        ),
        WriteOutcome::Lost(current) => {
            assert!(
                !expected_win,
                "lost although the condition holds on {before:?}"
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

async fn do_trip(store: &dyn StateStore, circuit: &str, trip: &Trip) -> WriteOutcome {
    let before = read(store, circuit).await;
    let outcome = store.trip(circuit, trip).await.expect("trip answers");
    checked(store, circuit, trip_allowed, outcome, before).await
}

async fn do_elect(store: &dyn StateStore, circuit: &str, e: &ProbeElection) -> WriteOutcome {
    let before = read(store, circuit).await;
    let outcome = store
        .elect_probe(circuit, e)
        .await
        .expect("election answers");
    checked(store, circuit, |r| election_allowed(r, e), outcome, before).await
}

async fn do_close(store: &dyn StateStore, circuit: &str, c: &Close) -> WriteOutcome {
    let before = read(store, circuit).await;
    let outcome = store
        .close_if_owner(circuit, c)
        .await
        .expect("close answers");
    checked(store, circuit, |r| owned_by(r, &c.owner), outcome, before).await
}

async fn do_reopen(store: &dyn StateStore, circuit: &str, r: &Reopen) -> WriteOutcome {
    let before = read(store, circuit).await;
    let outcome = store
        .reopen_if_owner(circuit, r)
        .await
        .expect("reopen answers");
    checked(
        store,
        circuit,
        |rec| owned_by(rec, &r.owner),
        outcome,
        before,
    )
    .await
}

/// Trips `circuit` at `T0` and elects `owner` at `T0 + 30` (lease until `T0 + 60`).
async fn half_open_by(store: &dyn StateStore, circuit: &str, owner: &str) {
    assert_eq!(
        do_trip(store, circuit, &trip_at(T0, 5)).await,
        WriteOutcome::Won
    );
    let e = election(owner, Some(T0), T0 + 30);
    assert_eq!(do_elect(store, circuit, &e).await, WriteOutcome::Won);
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
        do_trip(store, circuit, &trip_at(T0, 5)).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(open_record(T0, 5)));
}

async fn trip_loses_on_open_and_returns_it(store: &dyn StateStore, circuit: &str) {
    do_trip(store, circuit, &trip_at(T0, 5)).await;
    let second = do_trip(store, circuit, &trip_at(T0 + 9, 7)).await;
    // The loser adopts the stored opening instead of resetting it.
    assert_eq!(lost(second), Some(open_record(T0, 5)));
}

async fn trip_loses_on_half_open_and_returns_it(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    let outcome = do_trip(store, circuit, &trip_at(T0 + 31, 5)).await;
    assert_eq!(
        lost(outcome),
        Some(half_open_record(T0, 5, "env-a", T0 + 60))
    );
}

async fn trip_wins_again_after_close(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    assert_eq!(
        do_close(store, circuit, &close("env-a")).await,
        WriteOutcome::Won
    );
    assert_eq!(
        do_trip(store, circuit, &trip_at(T0 + 100, 3)).await,
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
    do_trip(store, circuit, &trip_at(T0, 5)).await;
    // This environment read an older opening (the circuit reopened since).
    let outcome = do_elect(store, circuit, &election("env-a", Some(T0 - 60), T0 + 30)).await;
    assert_eq!(lost(outcome), Some(open_record(T0, 5)));
    let no_opening = do_elect(store, circuit, &election("env-a", None, T0 + 30)).await;
    assert_eq!(lost(no_opening), Some(open_record(T0, 5)));
}

async fn election_loses_on_an_absent_record(store: &dyn StateStore, circuit: &str) {
    let outcome = do_elect(store, circuit, &election("env-a", Some(T0), T0 + 30)).await;
    assert_eq!(lost(outcome), None);
    assert_eq!(
        read(store, circuit).await,
        None,
        "a lost election creates no record"
    );
}

async fn election_loses_on_closed(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    do_close(store, circuit, &close("env-a")).await;
    let outcome = do_elect(store, circuit, &election("env-b", None, T0 + 90)).await;
    assert_eq!(lost(outcome).map(|r| r.state), Some(CircuitState::Closed));
}

async fn election_loses_while_the_lease_is_live(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    let outcome = do_elect(store, circuit, &election("env-b", Some(T0), T0 + 45)).await;
    assert_eq!(
        lost(outcome),
        Some(half_open_record(T0, 5, "env-a", T0 + 60))
    );
}

async fn election_loses_when_the_lease_expires_this_second(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    // The lease is live through its expiry second; takeover needs `lease < now`.
    let outcome = do_elect(store, circuit, &election("env-b", Some(T0), T0 + 60)).await;
    assert_eq!(
        lost(outcome),
        Some(half_open_record(T0, 5, "env-a", T0 + 60))
    );
}

async fn election_takes_over_an_expired_lease(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    let takeover = election("env-b", Some(T0), T0 + 61);
    assert_eq!(do_elect(store, circuit, &takeover).await, WriteOutcome::Won);
    assert_eq!(
        read(store, circuit).await,
        Some(half_open_record(T0, 5, "env-b", T0 + 91))
    );
}

async fn close_by_the_owner_wins_and_clears_the_record(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    assert_eq!(
        do_close(store, circuit, &close("env-a")).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(CircuitRecord::closed()));
}

async fn close_by_another_environment_loses(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    let outcome = do_close(store, circuit, &close("env-b")).await;
    assert_eq!(
        lost(outcome),
        Some(half_open_record(T0, 5, "env-a", T0 + 60))
    );
}

async fn close_loses_on_open_absent_and_closed(store: &dyn StateStore, circuit: &str) {
    assert_eq!(lost(do_close(store, circuit, &close("env-a")).await), None);
    do_trip(store, circuit, &trip_at(T0, 5)).await;
    let on_open = do_close(store, circuit, &close("env-a")).await;
    assert_eq!(lost(on_open), Some(open_record(T0, 5)));
    let reopened = do_reopen(store, circuit, &reopen("env-a", T0 + 1)).await;
    assert_eq!(lost(reopened), Some(open_record(T0, 5)));
}

async fn reopen_by_the_owner_wins_with_a_new_opened_at(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    let outcome = do_reopen(store, circuit, &reopen("env-a", T0 + 40)).await;
    assert_eq!(outcome, WriteOutcome::Won);
    assert_eq!(read(store, circuit).await, Some(open_record(T0 + 40, 1)));
    // The next election must expect the new opening.
    let stale = do_elect(store, circuit, &election("env-b", Some(T0), T0 + 80)).await;
    assert_eq!(lost(stale), Some(open_record(T0 + 40, 1)));
    let fresh = do_elect(store, circuit, &election("env-b", Some(T0 + 40), T0 + 80)).await;
    assert_eq!(fresh, WriteOutcome::Won);
}

async fn reopen_by_another_environment_loses(store: &dyn StateStore, circuit: &str) {
    half_open_by(store, circuit, "env-a").await;
    let outcome = do_reopen(store, circuit, &reopen("env-b", T0 + 40)).await;
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
    assert_eq!(do_elect(store, circuit, &takeover).await, WriteOutcome::Won);
    let by_b = half_open_record(T0, 5, "env-b", T0 + 91);
    assert_eq!(
        lost(do_close(store, circuit, &close("env-a")).await),
        Some(by_b.clone())
    );
    let reopen_a = do_reopen(store, circuit, &reopen("env-a", T0 + 62)).await;
    assert_eq!(lost(reopen_a), Some(by_b));
    assert_eq!(
        do_close(store, circuit, &close("env-b")).await,
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
    do_trip(&*store, &circuit, &trip_at(opened_at, 5)).await;
    for round in 0..RACE_ROUNDS {
        let now = opened_at + 30;
        let c = circuit.clone();
        let outcomes = race(&store, move |store, i| {
            let c = c.clone();
            async move {
                let e = election(&format!("env-{i}"), Some(opened_at), now);
                store.elect_probe(&c, &e).await.expect("election answers")
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
        let r = Reopen {
            failure_count: 5,
            ..reopen(&winner, opened_at)
        };
        assert_eq!(
            store.reopen_if_owner(&circuit, &r).await,
            Ok(WriteOutcome::Won)
        );
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
                store.trip(&c, &t).await.expect("trip answers")
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
                    store.close_if_owner(&c, &close("env-owner")).await
                } else {
                    let e = election(&format!("env-{i}"), Some(T0), T0 + 61);
                    store.elect_probe(&c, &e).await
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
