//! An `OPEN` item that carries `probe_successes`, as a Powertools reopen (an unconditional
//! `UpdateItem` that keeps the attributes it does not name) leaves it after a breaker
//! environment handed a probe over: the election from it starts the count at 0, as the
//! in-memory store's `RecordWrite::applied_to` does, so a taker of the elected owner's
//! expired lease cannot close after fewer than `success_threshold` successes. Each test on
//! dynalite and on moto's DynamoDB.

use breaker_runtime::store::{RecordWrite, StateStore, WriteOutcome};

use devstack::fixtures::local_dynamodb::Emulator;

use crate::item_layout::{item, n, put_raw, raw, s};

const T0: u64 = 1_700_000_000;

fn powertools_reopened(circuit: &str, successes: u64) -> crate::item_layout::Item {
    item(&[
        ("id", s(circuit)),
        ("state", s("OPEN")),
        ("failure_count", n(0)),
        ("opened_at", n(T0)),
        ("probe_successes", n(successes)),
        ("expiration", n(T0 + 3630)),
    ])
}

fn election(owner: &str, expected_successes: u32) -> RecordWrite {
    RecordWrite::Elect {
        owner: owner.into(),
        expected_opened_at: Some(T0),
        expected_successes,
        now: T0 + 30,
        lease_expiry: T0 + 60,
        expiration: T0 + 3660,
    }
}

on_both!(an_election_from_an_open_item_carrying_a_count_removes_it);

async fn an_election_from_an_open_item_carrying_a_count_removes_it(emulator: Emulator) {
    let (dynalite, store) = crate::simple_table_on(emulator).await;
    put_raw(&dynalite, "circuits", powertools_reopened("py", 2)).await;
    let read = store.read("py").await.expect("read").expect("item");
    assert_eq!(read.probe_successes, 2, "the count reads as stored");

    let before = read.clone();
    let e = election("env-a", 0);
    assert_eq!(store.apply("py", &e).await, Ok(WriteOutcome::Won));
    let elected = raw(&dynalite, "circuits", item(&[("id", s("py"))])).await;
    assert_eq!(elected.get("state"), Some(&s("HALF_OPEN")));
    assert!(
        !elected.contains_key("probe_successes"),
        "the election from OPEN removes the count: {elected:?}"
    );
    let after = store.read("py").await.expect("read").expect("item");
    assert_eq!(
        after,
        e.applied_to(Some(&before)),
        "DynamoDB and the model agree"
    );
    assert_eq!(after.probe_successes, 0);
}

on_both!(an_election_that_read_a_count_wins_only_as_a_takeover);

async fn an_election_that_read_a_count_wins_only_as_a_takeover(emulator: Emulator) {
    let (dynalite, store) = crate::simple_table_on(emulator).await;
    put_raw(&dynalite, "circuits", powertools_reopened("py", 2)).await;
    let outcome = store.apply("py", &election("env-a", 2)).await;
    assert!(
        matches!(outcome, Ok(WriteOutcome::Lost(Some(_)))),
        "an OPEN item is no takeover: {outcome:?}"
    );
    assert!(!election("env-a", 2).allowed(store.read("py").await.expect("read").as_ref()));
}
