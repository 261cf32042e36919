//! Fleet reports on dynalite: each circuit's counters for one fleet window are an item of
//! their own, `{circuit}#fleet@{window_start}`, with exactly the fleet attributes and the
//! TTL, on either key layout; the circuit's item is left as it was, listings leave the
//! counters out, and `inspect` refuses them. Each layout also on moto's DynamoDB.

use aws_sdk_dynamodb::types::AttributeValue;
use breaker_runtime::store::{
    DynamoDbStore, FailureReport, FleetTally, RecordWrite, StateStore, WriteOutcome,
};
use breaker_runtime::unstable::OperatorReads as _;
use devstack::fixtures::dynalite::Dynalite;
use devstack::fixtures::local_dynamodb::{DynamoDbServer, Emulator};
use devstack::fixtures::shared_table;

use crate::item_layout::{Item, item, n, raw, s};

const T0: u64 = 1_700_000_000;

fn report(failures: u32, calls: u32, new_reporter: u32) -> FailureReport {
    FailureReport {
        window_start: T0,
        window_secs: 10,
        failures,
        calls,
        new_reporter,
        expiration: T0 + 3_610,
    }
}

/// The counters' item after the two reports of [`two_reports_beside_a_tripped_circuit`]:
/// `key`'s attributes, the window's totals and the TTL in `expiry_attr`.
fn counters_after_two_reports(key: &[(&str, AttributeValue)], expiry_attr: &str) -> Item {
    let mut counters = item(key);
    counters.extend(item(&[
        ("fleet_failures", n(3)),
        ("fleet_calls", n(4)),
        ("fleet_reporters", n(1)),
        ("fleet_window", n(T0)),
        (expiry_attr, n(T0 + 3_610)),
    ]));
    counters
}

/// Trips `ce`, reports to it twice and checks the answers, the circuit's item (unchanged)
/// and the listing; returns nothing, the caller checks the report item's layout.
async fn two_reports_beside_a_tripped_circuit(
    dynalite: &impl DynamoDbServer,
    store: &DynamoDbStore,
    table: &str,
    circuit_key: Item,
) {
    let trip = RecordWrite::Trip {
        opened_by: None,
        failure_count: 3,
        opened_at: T0,
        expiration: T0 + 3_630,
        open_until: None,
    };
    assert_eq!(store.apply("ce", &trip).await, Ok(WriteOutcome::Won));
    let circuit_item = raw(dynalite, table, circuit_key.clone()).await;

    let tally = |failures, calls, reporters| {
        Ok(Some(FleetTally {
            failures,
            calls,
            reporters,
        }))
    };
    assert_eq!(store.report("ce", &report(2, 3, 1)).await, tally(2, 3, 1));
    assert_eq!(store.report("ce", &report(1, 1, 0)).await, tally(3, 4, 1));

    assert_eq!(
        raw(dynalite, table, circuit_key).await,
        circuit_item,
        "reports leave the circuit's item as it was"
    );
    let listed = crate::listed_names(store).await;
    assert_eq!(listed, ["ce"], "the counters are no circuit");
    let refused = store
        .inspect("ce#fleet@1700000000")
        .await
        .expect_err("inspect refuses the counters");
    assert!(
        refused.to_string().contains("fleet failure counters"),
        "{refused}"
    );
}

on_both!(a_report_adds_to_an_item_of_its_own_on_a_simple_key);

async fn a_report_adds_to_an_item_of_its_own_on_a_simple_key(emulator: Emulator) {
    let (dynalite, store) = crate::simple_table_on(emulator).await;
    two_reports_beside_a_tripped_circuit(&dynalite, &store, "circuits", item(&[("id", s("ce"))]))
        .await;
    let key = item(&[("id", s("ce#fleet@1700000000"))]);
    assert_eq!(
        raw(&dynalite, "circuits", key).await,
        counters_after_two_reports(&[("id", s("ce#fleet@1700000000"))], "expiration")
    );
}

on_both!(a_report_adds_to_an_item_of_its_own_in_the_sort_key);

async fn a_report_adds_to_an_item_of_its_own_in_the_sort_key(emulator: Emulator) {
    let (dynalite, store) = crate::shared_table_on(emulator).await;
    let pk = s(shared_table::STATIC_PK);
    let circuit_key = item(&[("pk", pk.clone()), ("sk", s("ce"))]);
    two_reports_beside_a_tripped_circuit(&dynalite, &store, shared_table::TABLE, circuit_key).await;
    let key = item(&[("pk", pk.clone()), ("sk", s("ce#fleet@1700000000"))]);
    assert_eq!(
        raw(&dynalite, shared_table::TABLE, key).await,
        counters_after_two_reports(
            &[("pk", pk), ("sk", s("ce#fleet@1700000000"))],
            "expiration"
        )
    );
}

on_both!(a_report_uses_the_renamed_key_and_ttl_attributes);

async fn a_report_uses_the_renamed_key_and_ttl_attributes(emulator: Emulator) {
    let (dynalite, store) = crate::renamed_table_on(emulator).await;
    let circuit_key = item(&[("circuit", s("ce"))]);
    two_reports_beside_a_tripped_circuit(&dynalite, &store, "renamed", circuit_key).await;
    let key = item(&[("circuit", s("ce#fleet@1700000000"))]);
    assert_eq!(
        raw(&dynalite, "renamed", key).await,
        counters_after_two_reports(&[("circuit", s("ce#fleet@1700000000"))], "ttl")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_whose_answer_was_lost_counts_once() {
    use devstack::fixtures::fault_proxy::{Fault, FaultProxy, Service};
    let dynalite = Dynalite::start().await.expect("dynalite starts");
    dynalite
        .create_circuit_table("circuits")
        .await
        .expect("table");
    let proxy = FaultProxy::start(&format!("127.0.0.1:{}", dynalite.port()))
        .await
        .expect("proxy");
    // The store's own client, which retries a 500 (at most 2 attempts).
    let store = DynamoDbStore::builder()
        .table_name("circuits")
        .sdk_config(&devstack::fixtures::sdk::local_sdk_config(proxy.endpoint()))
        .build()
        .expect("valid store");

    proxy.inject(Service::Other, Some(Fault::AnswerLost));
    let lost = store.report("ce", &report(2, 3, 1)).await;
    assert!(lost.is_err(), "the answer was lost: {lost:?}");
    assert_eq!(proxy.seen(Service::Other), 1, "the report was not retried");
    proxy.inject(Service::Other, None);

    let key = item(&[("id", s("ce#fleet@1700000000"))]);
    assert_eq!(
        raw(&dynalite, "circuits", key).await,
        counters_after_two_reports(&[("id", s("ce#fleet@1700000000"))], "expiration")
            .into_iter()
            .map(|(name, value)| match name.as_str() {
                "fleet_failures" => (name, n(2)),
                "fleet_calls" => (name, n(3)),
                _ => (name, value),
            })
            .collect::<Item>(),
        "the report landed once"
    );
}
