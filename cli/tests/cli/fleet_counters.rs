//! The fleet's failure counters share the table but are no circuit: `breaker list` leaves
//! them out, and a command given their key refuses it and writes nothing.

use breaker_runtime::store::{FailureReport, StateStore as _};
use devstack::wall_clock::unix_secs;

use crate::support::Table;

/// Reports one failure of `circuit` in the current fleet window; returns the counters' key.
async fn report(table: &Table, circuit: &str) -> String {
    let now = unix_secs();
    let window_start = now - now % 10;
    let report = FailureReport {
        window_start,
        window_secs: 10,
        failures: 1,
        calls: 1,
        new_reporter: 1,
        expiration: window_start + 3_610,
    };
    let tally = table.store.report(circuit, &report).await.expect("report");
    assert_eq!(tally.map(|t| t.failures), Some(1));
    format!("{circuit}#fleet@{window_start}")
}

#[tokio::test]
async fn list_leaves_the_fleet_counters_out() {
    let table = Table::new().await;
    table.trip("payments", 5).await;
    let counters = report(&table, "payments").await;
    report(&table, "ledger").await;
    assert!(table.raw(&counters).await.is_some(), "the counters exist");

    let text = table.breaker(&["list"]).await.ok().to_owned();
    assert!(text.contains("payments"), "{text}");
    assert!(!text.contains("#fleet@"), "{text}");
    assert!(
        !text.contains("ledger"),
        "a circuit with counters only has no item: {text}"
    );
    let json = table.breaker(&["list", "--json"]).await.json();
    let names: Vec<&str> = json
        .as_array()
        .expect("an array")
        .iter()
        .map(|c| c["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(names, ["payments"]);
}

#[tokio::test]
async fn commands_given_the_counters_key_refuse_it_and_write_nothing() {
    let table = Table::new().await;
    let counters = report(&table, "payments").await;
    let before = table.raw(&counters).await;
    for args in [
        vec!["show", counters.as_str()],
        vec!["open", counters.as_str(), "--for", "5m"],
        vec!["disable", counters.as_str()],
        vec!["close", counters.as_str()],
        vec!["release", counters.as_str()],
        vec!["watch", counters.as_str(), "--once"],
    ] {
        table
            .breaker(&args)
            .await
            .failed(1, "holds fleet failure counters, not a circuit");
    }
    assert_eq!(
        table.raw(&counters).await,
        before,
        "the counters are untouched"
    );
    assert!(
        table.raw("payments").await.is_none(),
        "no circuit item appeared"
    );
}
