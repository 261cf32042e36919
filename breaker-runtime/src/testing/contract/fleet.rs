//! The contract's fleet reports: a store keeps no fleet counters (every report answers
//! `None`), or it adds each report to its window's counters atomically, keeps windows
//! apart, and never touches the circuit's record.

use std::sync::Arc;

use super::support::*;
use super::{RACERS, REPORTS_PER_RACER};
use crate::protocol::{FailureReport, FleetTally};
use crate::store::StateStore;

const WINDOW_SECS: u64 = 10;

fn report(window_start: u64, failures: u32, calls: u32, new_reporter: bool) -> FailureReport {
    FailureReport {
        window_start,
        window_secs: WINDOW_SECS,
        failures,
        calls,
        new_reporter: u32::from(new_reporter),
        expiration: window_start + WINDOW_SECS + 3600,
    }
}

fn tally(failures: u64, calls: u64, reporters: u64) -> Option<FleetTally> {
    Some(FleetTally {
        failures,
        calls,
        reporters,
    })
}

pub(super) async fn reports_add_up_exactly_in_their_own_window_or_are_not_kept(
    store: Arc<dyn StateStore>,
    circuit: String,
) {
    let window = T0 - T0 % WINDOW_SECS;
    apply(&*store, &circuit, &trip_at(T0, 5)).await;
    let record = store.read_consistent(&circuit).await.expect("read answers");

    let first = answered(store.report(&circuit, &report(window, 1, 2, true))).await;
    if first.is_none() {
        assert_eq!(
            answered(store.report(&circuit, &report(window, 1, 2, false))).await,
            None,
            "a store without fleet counters answers every report with None"
        );
        assert_circuit_untouched(&*store, &circuit, &record).await;
        return;
    }
    assert_eq!(first, tally(1, 2, 1), "the first report is the whole tally");

    // Every report adds one failure, so each answer is a distinct running total.
    let tasks: Vec<_> = (0..RACERS)
        .map(|_| {
            let (store, circuit) = (Arc::clone(&store), circuit.clone());
            tokio::spawn(async move {
                let mut answers = Vec::with_capacity(REPORTS_PER_RACER);
                for i in 0..REPORTS_PER_RACER {
                    let answer =
                        answered(store.report(&circuit, &report(window, 1, 2, i == 0))).await;
                    answers.push(answer.expect("a store that counts answers every report"));
                }
                answers
            })
        })
        .collect();
    let mut failures = Vec::new();
    for task in tasks {
        failures.extend(
            task.await
                .expect("racer finished")
                .iter()
                .map(|t| t.failures),
        );
    }
    failures.sort_unstable();
    let sent = (RACERS * REPORTS_PER_RACER) as u64;
    assert_eq!(
        failures,
        (2..=sent + 1).collect::<Vec<_>>(),
        "concurrent reports are added one at a time, none lost"
    );
    let racers = RACERS as u64;
    assert_eq!(
        answered(store.report(&circuit, &report(window, 0, 1, false))).await,
        tally(sent + 1, 2 * sent + 3, racers + 1),
        "the window holds the exact sums"
    );

    assert_eq!(
        answered(store.report(&circuit, &report(window + WINDOW_SECS, 3, 4, true))).await,
        tally(3, 4, 1),
        "the next window counts from zero"
    );
    assert_circuit_untouched(&*store, &circuit, &record).await;

    let unrecorded = format!("{circuit}-unrecorded");
    answered(store.report(&unrecorded, &report(window, 1, 1, true))).await;
    assert_eq!(
        store.read_consistent(&unrecorded).await.expect("read"),
        None,
        "a report creates no circuit record"
    );
}

async fn assert_circuit_untouched(
    store: &dyn StateStore,
    circuit: &str,
    before: &Option<crate::protocol::CircuitRecord>,
) {
    assert!(before.is_some(), "the tripped circuit has a record");
    assert_eq!(
        &store.read_consistent(circuit).await.expect("read answers"),
        before,
        "reports leave the circuit's record as it was"
    );
    assert_eq!(&read(store, circuit).await, before);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::InMemoryStore;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_in_memory_store_with_fleet_counters_adds_reports_atomically() {
        let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::with_fleet_counters());
        assert!(
            store
                .report("probe", &report(0, 1, 1, true))
                .await
                .unwrap()
                .is_some()
        );
        super::super::run_contract(store).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_in_memory_store_without_counters_answers_none() {
        reports_add_up_exactly_in_their_own_window_or_are_not_kept(
            Arc::new(InMemoryStore::new()),
            "no-counters".into(),
        )
        .await;
    }
}
