//! The real Powertools for AWS Lambda (Python) on the same table (`powertools.py`), each
//! release `scripts/install-tools.sh python` installs (3.34.0, the first with
//! `utilities.circuit_breaker`, and 3.37.0): it rejects a circuit forced open however long ago the circuit
//! opened, and, unable to honour a disable, trips it with a write that replaces the item,
//! override and all (as docs/operations.md says). Where the releases differ, each one's
//! behaviour is asserted: 3.34.0 carries an environment's probe successes over into its
//! next election, so after another environment ended the cycle it closes in fewer probes
//! than `success_threshold`; 3.37.0 starts every election with none.

mod session;

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use breaker_runtime::store::{RecordWrite, StateStore as _, WriteOutcome};
use devstack::wall_clock::unix_secs;
use session::Powertools;

use crate::support::{TABLE, Table, n, s};

/// Runs `calls` calls of a fresh Powertools `version` environment on `circuit`, to a
/// downstream that succeeds (`ok`) or fails; returns (calls that reached it, outcomes).
async fn powertools(
    version: &str,
    table: &Table,
    circuit: &str,
    calls: u32,
    ok: bool,
) -> (u64, Vec<String>) {
    let mut environment = Powertools::start(version, table, circuit).await;
    let outcomes = environment.calls(calls, ok).await;
    (environment.reached, outcomes)
}

/// An OPEN item as Powertools writes it, opened `ago` seconds ago.
async fn opened_ago(table: &Table, circuit: &str, ago: u64) {
    let now = unix_secs();
    let n = |v: u64| AttributeValue::N(v.to_string());
    table
        .dynalite
        .client()
        .put_item()
        .table_name(TABLE)
        .item("id", AttributeValue::S(circuit.into()))
        .item("state", AttributeValue::S("OPEN".into()))
        .item("failure_count", n(2))
        .item("opened_at", n(now - ago))
        .item("expiration", n(now + 3_600))
        .send()
        .await
        .expect("PutItem");
}

/// Sleeps until the wall clock's unix second is past `secs`.
async fn until_past(secs: u64) {
    while unix_secs() <= secs {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn rejects_forced_open_and_trips_over_a_disable(version: &str) {
    let table = Table::new().await;
    // Control: opened long ago, recovery (1 s) elapsed, so Powertools probes and closes.
    opened_ago(&table, "control", 100).await;
    let (reached, _) = powertools(version, &table, "control", 1, true).await;
    assert_eq!(reached, 1, "an elapsed recovery lets Powertools probe");

    // The same circuit, forced open for a minute: every call rejected, nothing probes.
    opened_ago(&table, "timed", 100).await;
    table
        .breaker(&["open", "timed", "--for", "1m", "--by", "ops"])
        .await
        .ok();
    let (reached, outcomes) = powertools(version, &table, "timed", 3, true).await;
    assert_eq!((reached, outcomes), (0, vec!["rejected".to_owned(); 3]));

    // Forced open until released, on a circuit that had no item.
    table
        .breaker(&["open", "fresh", "--create", "--by", "ops"])
        .await
        .ok();
    let (reached, outcomes) = powertools(version, &table, "fresh", 3, true).await;
    assert_eq!((reached, outcomes), (0, vec!["rejected".to_owned(); 3]));
    let item = table.raw("fresh").await.expect("the item");
    assert_eq!(
        s(&item, "override").as_deref(),
        Some("OPEN"),
        "Powertools wrote nothing"
    );

    // Disabled: Powertools runs the calls, and its trip replaces the item.
    table.trip("disabled", 5).await;
    table
        .breaker(&["disable", "disabled", "--by", "ops"])
        .await
        .ok();
    let (reached, outcomes) = powertools(version, &table, "disabled", 2, false).await;
    assert_eq!((reached, outcomes), (2, vec!["failed".to_owned(); 2]));
    let item = table.raw("disabled").await.expect("the item");
    assert_eq!(s(&item, "state").as_deref(), Some("OPEN"), "{item:?}");
    assert!(
        !item.contains_key("override"),
        "the trip erased the override: {item:?}"
    );
}

/// A Powertools environment probes twice (of its 3), loses its lease to a breaker
/// environment that probes and closes, runs a call while closed, and wins the election of
/// the breaker environment's next trip: returns how many probes of that new recovery
/// window close the circuit, as the table shows after each.
async fn probes_that_close_the_next_window(version: &str) -> u32 {
    let table = Table::new().await;
    let circuit = "streak";
    opened_ago(&table, circuit, 100).await;
    let mut python = Powertools::start(version, &table, circuit).await;
    assert_eq!(python.calls(2, true).await, ["ran", "ran"]);
    let item = table.raw(circuit).await.expect("the item");
    assert_eq!(s(&item, "state").as_deref(), Some("HALF_OPEN"), "{item:?}");
    let lease = n(&item, "probe_lease_expiry").expect("Powertools' lease");

    // A breaker environment takes over the expired lease, probes and closes.
    until_past(lease).await;
    let now = unix_secs();
    let takeover = RecordWrite::Elect {
        owner: "rust-env".into(),
        expected_opened_at: n(&item, "opened_at"),
        expected_successes: 0,
        now,
        lease_expiry: now + 30,
        expiration: now + 3_630,
    };
    let close = RecordWrite::Close {
        owner: "rust-env".into(),
        expiration: now + 3_630,
    };
    for transition in [takeover, close] {
        assert_eq!(
            table.store.apply(circuit, &transition).await,
            Ok(WriteOutcome::Won),
            "{transition:?}"
        );
    }
    assert_eq!(python.call(true).await, "ran", "closed for Powertools too");

    // The breaker environment trips it again; Powertools elects itself after its recovery.
    let opened = table.trip(circuit, 5).await;
    until_past(opened).await;
    for probes in 1..=3 {
        assert_eq!(python.call(true).await, "ran", "probe {probes}");
        let item = table.raw(circuit).await.expect("the item");
        match s(&item, "state").as_deref() {
            Some("CLOSED") => return probes,
            Some("HALF_OPEN") => assert!(
                s(&item, "half_open_owner").is_some_and(|owner| owner != "rust-env"),
                "Powertools owns the probe: {item:?}"
            ),
            _ => panic!("after probe {probes}: {item:?}"),
        }
    }
    panic!("three probe successes did not close the circuit")
}

#[tokio::test]
async fn powertools_3_34_0_rejects_forced_open_and_trips_over_a_disable() {
    rejects_forced_open_and_trips_over_a_disable("3.34.0").await;
}

#[tokio::test]
async fn powertools_3_37_0_rejects_forced_open_and_trips_over_a_disable() {
    rejects_forced_open_and_trips_over_a_disable("3.37.0").await;
}

#[tokio::test]
async fn powertools_3_34_0_counts_old_probe_successes_towards_a_new_window() {
    // Two successes left from the first window, and one in the new: 3 of 3.
    assert_eq!(probes_that_close_the_next_window("3.34.0").await, 1);
}

#[tokio::test]
async fn powertools_3_37_0_starts_every_election_with_no_probe_successes() {
    assert_eq!(probes_that_close_the_next_window("3.37.0").await, 3);
}

/// A breaker environment's call fails with "retry after 30 s" (`Outcome::OpenFor`): its
/// trip writes `open_until`, a second breaker environment reading the item rejects until
/// then and says so, and Powertools 3.37.0 reads the item as before (the attribute is not
/// its own) and probes at its own recovery timeout (1 s here).
#[tokio::test]
async fn a_retry_after_trip_is_read_by_another_breaker_and_by_powertools_3_37_0() {
    use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState, Outcome};
    let table = Table::new().await;
    let environment = |id: &str| {
        let config = CircuitBreakerConfig::builder()
            .environment_id(id)
            .build()
            .expect("valid config");
        CircuitBreaker::new("throttled", table.store.clone(), config)
    };
    let (a, b) = (environment("env-a"), environment("env-b"));
    let asked = |_: &anyhow::Error| Outcome::OpenFor(Duration::from_secs(30));
    let before = unix_secs();
    let throttled: Result<(), anyhow::Error> = a
        .call_with(asked, || async {
            Err(anyhow::anyhow!("429 retry after 30 s"))
        })
        .await;
    assert!(throttled.is_err());
    assert_eq!(a.state(), CircuitState::Open, "one hinted failure opens");
    let item = table.raw("throttled").await.expect("the item");
    let until = n(&item, "open_until").expect("open_until written");
    let opened_at = n(&item, "opened_at").expect("opened_at");
    assert!((before + 30..=before + 31).contains(&until), "{item:?}");
    assert_eq!(until, opened_at + 30);

    let rejected: Result<(), anyhow::Error> = b.call(|| async { Ok(()) }).await;
    let open = rejected.expect_err("rejected");
    let open = open
        .downcast_ref::<breaker_runtime::CircuitBreakerOpenError>()
        .expect("a rejection");
    assert_eq!(open.retry_after_unix_secs(), Some(until));

    // Powertools probes at its own recovery (1 s), not at open_until, and closes it after
    // its three successes (its close keeps the attribute, which a CLOSED item's reading
    // leaves out).
    until_past(opened_at + 1).await;
    let (reached, outcomes) = powertools("3.37.0", &table, "throttled", 3, true).await;
    assert_eq!(reached, 3, "{outcomes:?}");
    let item = table.raw("throttled").await.expect("the item");
    assert_eq!(s(&item, "state").as_deref(), Some("CLOSED"), "{item:?}");
}
