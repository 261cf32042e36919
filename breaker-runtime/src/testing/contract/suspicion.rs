//! The contract's suspicion of the fleet: the `Suspect` write marks an absent or closed
//! record until its end, loses while one holds, under an override and on an open circuit,
//! and every write that leaves the closed state (or an override) drops it; reports to a
//! suspicion's counters add up per slice, apart from the circuit's record.

use super::support::*;
use crate::protocol::{CircuitState, OverrideKind, RecordWrite, SuspectReport};
use crate::store::{StateStore, WriteOutcome};

fn suspect(now: u64) -> RecordWrite {
    RecordWrite::Suspect {
        now,
        until: now + 10,
        expiration: now + 3610,
    }
}

pub(super) async fn a_suspicion_marks_a_closed_circuit_until_it_ends_and_a_trip_drops_it(
    store: &dyn StateStore,
    circuit: &str,
) {
    assert_eq!(apply(store, circuit, &suspect(T0)).await, WriteOutcome::Won);
    let record = read(store, circuit)
        .await
        .expect("an absent record becomes closed");
    assert_eq!(
        (record.state, record.suspected_until),
        (CircuitState::Closed, Some(T0 + 10))
    );
    assert!(
        lost(apply(store, circuit, &suspect(T0 + 9)).await).is_some(),
        "one suspicion at a time"
    );
    assert_eq!(
        apply(store, circuit, &suspect(T0 + 10)).await,
        WriteOutcome::Won,
        "a new one once it ended"
    );
    assert_eq!(
        apply(store, circuit, &trip_at(T0 + 11, 5)).await,
        WriteOutcome::Won
    );
    let opened = read(store, circuit).await.expect("open");
    assert_eq!(opened.suspected_until, None, "the trip drops it");
    assert!(lost(apply(store, circuit, &suspect(T0 + 30)).await).is_some());

    let disabled = format!("{circuit}-disabled");
    apply(store, &disabled, &suspect(T0)).await;
    let set = an_override(OverrideKind::Disabled, "ops", None);
    assert_eq!(
        apply(store, &disabled, &override_with(&set, None)).await,
        WriteOutcome::Won,
        "an override drops the suspicion"
    );
    assert!(lost(apply(store, &disabled, &suspect(T0 + 20)).await).is_some());
}

fn report(epoch: u64, slice: u8, failures: u32, successes: u32, new: bool) -> SuspectReport {
    SuspectReport {
        epoch,
        slice,
        failures,
        successes,
        new_reporter: u32::from(new),
        expiration: epoch + 3600,
    }
}

pub(super) async fn suspicion_reports_add_up_per_slice_or_are_not_kept(
    store: &dyn StateStore,
    circuit: &str,
) {
    apply(store, circuit, &trip_at(T0, 5)).await;
    let before = read(store, circuit).await;
    let epoch = T0 + 10;
    let Some(first) =
        answered(store.report_suspected(circuit, &report(epoch, 3, 1, 8, true))).await
    else {
        assert_eq!(
            answered(store.report_suspected(circuit, &report(epoch, 3, 1, 8, false))).await,
            None
        );
        return;
    };
    assert_eq!(
        (first.failures[3], first.successes[3], first.reporters),
        (1, 8, 1)
    );
    answered(store.report_suspected(circuit, &report(epoch, 3, 2, 0, true))).await;
    let tally = answered(store.report_suspected(circuit, &report(epoch, 19, 4, 16, false)))
        .await
        .expect("answered");
    assert_eq!((tally.failures[3], tally.successes[3]), (3, 8));
    assert_eq!((tally.failures[19], tally.successes[19]), (4, 16));
    assert_eq!((tally.failures[0], tally.reporters), (0, 2));
    let other = answered(store.report_suspected(circuit, &report(epoch + 10, 0, 1, 0, true)))
        .await
        .expect("answered");
    assert_eq!(
        (other.failures[0], other.failures[3], other.reporters),
        (1, 0, 1),
        "epochs apart"
    );
    assert_eq!(
        read(store, circuit).await,
        before,
        "the record is untouched"
    );
}
