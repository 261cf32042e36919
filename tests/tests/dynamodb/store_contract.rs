//! The store contract on `DynamoDbStore` over dynalite: simple key, composite key, and
//! renamed attributes.

use std::sync::Arc;

use breaker_runtime::store::DynamoDbStore;
use breaker_runtime::testing::contract::run_contract;
use devstack::fixtures::dynalite::Dynalite;
use devstack::fixtures::shared_table;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simple_key_meets_the_contract() {
    let (_dynalite, store) = crate::simple_table().await;
    run_contract(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn composite_key_meets_the_contract() {
    let dynalite = Dynalite::start().await.expect("dynalite starts");
    let store = shared_table::create(&dynalite)
        .await
        .expect("table")
        .sdk_config(dynalite.sdk_config())
        .build()
        .expect("valid store");
    run_contract(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn renamed_attributes_meet_the_contract() {
    let dynalite = Dynalite::start().await.expect("dynalite starts");
    dynalite
        .create_table("renamed", "circuit", None)
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
        .client(dynalite.client())
        .build()
        .expect("valid store");
    run_contract(Arc::new(store)).await;
}
