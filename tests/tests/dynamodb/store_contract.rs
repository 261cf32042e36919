//! The store contract on `DynamoDbStore`: simple key, composite key, and renamed
//! attributes. Every case on dynalite; the sequential cases (all but the races) also on
//! moto's DynamoDB, whose conditional writes are not atomic under concurrency.

use std::sync::Arc;

use breaker_runtime::store::DynamoDbStore;
use breaker_runtime::testing::contract::{run_contract, run_sequential_contract};
use devstack::fixtures::local_dynamodb::{DynamoDbServer as _, Emulator, LocalDynamoDb};
use devstack::fixtures::shared_table;

async fn composite_key_store(emulator: Emulator) -> (LocalDynamoDb, DynamoDbStore) {
    let db = LocalDynamoDb::start(emulator)
        .await
        .expect("DynamoDB starts");
    let store = shared_table::create(&db)
        .await
        .expect("table")
        .sdk_config(db.sdk_config())
        .build()
        .expect("valid store");
    (db, store)
}

async fn renamed_attributes_store(emulator: Emulator) -> (LocalDynamoDb, DynamoDbStore) {
    let db = LocalDynamoDb::start(emulator)
        .await
        .expect("DynamoDB starts");
    db.create_table("renamed", "circuit", None)
        .await
        .expect("table");
    // Reserved words among them (`status`, `count`, `owner`, `ttl`): names go through
    // expression placeholders.
    let store = DynamoDbStore::builder()
        .table_name("renamed")
        .key_attr("circuit")
        .state_attr("status")
        .failure_count_attr("count")
        .opened_at_attr("since")
        .half_open_owner_attr("owner")
        .probe_lease_expiry_attr("lease")
        .expiry_attr("ttl")
        .client(db.client())
        .build()
        .expect("valid store");
    (db, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simple_key_meets_the_contract() {
    let (_dynalite, store) = crate::simple_table_on(Emulator::Dynalite).await;
    run_contract(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn composite_key_meets_the_contract() {
    let (_dynalite, store) = composite_key_store(Emulator::Dynalite).await;
    run_contract(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn renamed_attributes_meet_the_contract() {
    let (_dynalite, store) = renamed_attributes_store(Emulator::Dynalite).await;
    run_contract(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simple_key_meets_the_sequential_contract_on_moto() {
    let (_moto, store) = crate::simple_table_on(Emulator::Moto).await;
    run_sequential_contract(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn composite_key_meets_the_sequential_contract_on_moto() {
    let (_moto, store) = composite_key_store(Emulator::Moto).await;
    run_sequential_contract(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn renamed_attributes_meet_the_sequential_contract_on_moto() {
    let (_moto, store) = renamed_attributes_store(Emulator::Moto).await;
    run_sequential_contract(Arc::new(store)).await;
}
