//! The contract's races: many writers at once, exactly one winner, round after round.

use std::future::Future;
use std::sync::Arc;

use super::support::*;
use super::{RACE_ROUNDS, RACERS};
use crate::protocol::{CircuitRecord, WriteOutcome};
use crate::store::StateStore;

/// Runs `RACERS` writers at once; returns each one's outcome, in racer order.
pub(super) async fn race<F, Fut>(store: &Arc<dyn StateStore>, write: F) -> Vec<WriteOutcome>
where
    F: Fn(Arc<dyn StateStore>, usize) -> Fut,
    Fut: Future<Output = WriteOutcome> + Send + 'static,
{
    race_with(store, write).await
}

/// Runs `RACERS` writers of any kind at once; returns each one's outcome, in racer order.
pub(super) async fn race_with<F, Fut, T>(store: &Arc<dyn StateStore>, write: F) -> Vec<T>
where
    F: Fn(Arc<dyn StateStore>, usize) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
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

pub(super) fn the_winner(outcomes: &[WriteOutcome], round: usize) -> usize {
    let winners: Vec<usize> = (0..outcomes.len())
        .filter(|&i| outcomes[i] == WriteOutcome::Won)
        .collect();
    assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
    winners[0]
}

pub(super) async fn concurrent_elections_have_exactly_one_winner(
    store: Arc<dyn StateStore>,
    circuit: String,
) {
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

pub(super) async fn concurrent_trips_have_exactly_one_winner(
    store: Arc<dyn StateStore>,
    circuit: String,
) {
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
pub(super) async fn close_and_takeover_race_has_exactly_one_winner(
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
