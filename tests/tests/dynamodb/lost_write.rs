//! A lost conditional write answers the item that beat it: from the error, where the server
//! honours `ReturnValuesOnConditionCheckFailure=ALL_OLD` as DynamoDB documents it (moto
//! does), else by one consistent read (dynalite ignores the parameter). Counted at a proxy
//! in front of each.

use breaker_runtime::store::{CircuitRecord, DynamoDbStore, RecordWrite, StateStore, WriteOutcome};
use devstack::fixtures::fault_proxy::{FaultProxy, Service};
use devstack::fixtures::local_dynamodb::{DynamoDbServer as _, Emulator, LocalDynamoDb};
use devstack::fixtures::sdk::local_sdk_config;

const T0: u64 = 1_700_000_000;

on_both!(a_lost_write_reads_the_item_only_when_the_server_did_not_return_it);

async fn a_lost_write_reads_the_item_only_when_the_server_did_not_return_it(emulator: Emulator) {
    let db = LocalDynamoDb::start(emulator)
        .await
        .expect("DynamoDB starts");
    db.create_circuit_table("circuits").await.expect("table");
    let proxy = FaultProxy::start(&db.address()).await.expect("proxy");
    let store = DynamoDbStore::builder()
        .table_name("circuits")
        .sdk_config(&local_sdk_config(proxy.endpoint()))
        .build()
        .expect("valid store");
    let trip = |failure_count, opened_at| RecordWrite::Trip {
        failure_count,
        opened_at,
        expiration: opened_at + 3630,
    };
    assert_eq!(store.apply("ce", &trip(4, T0)).await, Ok(WriteOutcome::Won));
    let open = CircuitRecord::open(T0, 4);
    // What each lost write costs: the write, and a read only where no item came back.
    let requests_per_loss = match emulator {
        Emulator::Moto => 1,
        Emulator::Dynalite => 2,
    };

    // A PutItem (trip) and an UpdateItem (election) that lose.
    let before = proxy.seen(Service::Other);
    let lost = store.apply("ce", &trip(5, T0 + 1)).await;
    assert_eq!(lost, Ok(WriteOutcome::Lost(Some(open.clone()))));
    assert_eq!(proxy.seen(Service::Other) - before, requests_per_loss);

    let stale = RecordWrite::Elect {
        owner: "env-1".into(),
        expected_opened_at: Some(T0 - 60),
        expected_successes: 0,
        now: T0 + 30,
        lease_expiry: T0 + 60,
        expiration: T0 + 3660,
    };
    let before = proxy.seen(Service::Other);
    let lost = store.apply("ce", &stale).await;
    assert_eq!(lost, Ok(WriteOutcome::Lost(Some(open))));
    assert_eq!(proxy.seen(Service::Other) - before, requests_per_loss);
}
