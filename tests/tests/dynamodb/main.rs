//! DynamoDbStore on dynalite: the store contract, the item layout, fleet report items, malformed items, SDK error paths and the fleet.
//!
//! One test binary per area: every binary links the AWS SDK, so fewer binaries build faster and
//! take far less disk. nextest still runs each test in its own process.

use breaker_runtime::store::DynamoDbStore;
use devstack::fixtures::dynalite::Dynalite;

mod backoff;
mod error_paths;
mod fleet;
mod fleet_policy;
mod item_layout;
mod malformed;
mod powertools_count;
mod probe_admission;
mod report_items;
mod store_contract;
mod warm_up;

/// A fresh dynalite with the default circuit table `circuits` and a store on it.
async fn simple_table() -> (Dynalite, DynamoDbStore) {
    let dynalite = Dynalite::start().await.expect("dynalite starts");
    dynalite
        .create_circuit_table("circuits")
        .await
        .expect("table");
    let store = DynamoDbStore::builder()
        .table_name("circuits")
        .client(dynalite.client())
        .build()
        .expect("valid store");
    (dynalite, store)
}
