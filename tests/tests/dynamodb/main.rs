//! DynamoDbStore on dynalite: the store contract, the item layout, fleet report items, malformed items, SDK error paths and the fleet.
//! What writes one request at a time (the contract's sequential cases, the item layout,
//! report items, malformed items, Powertools' leftover count, lost writes) also on moto's
//! DynamoDB, a second reading of DynamoDB's expression grammar: the tests named `…on_moto`.
//!
//! One test binary per area: every binary links the AWS SDK, so fewer binaries build faster and
//! take far less disk. nextest still runs each test in its own process.

use breaker_runtime::store::DynamoDbStore;
use devstack::fixtures::dynalite::Dynalite;
use devstack::fixtures::local_dynamodb::{DynamoDbServer as _, Emulator, LocalDynamoDb};
use devstack::fixtures::shared_table;

/// Runs the check `$check(emulator)` as two tests, `$check::on_dynalite` and
/// `$check::on_moto`, each on a tokio runtime made with `$runtime` (`#[tokio::test]`'s
/// arguments): for checks that write one request at a time (moto's conditional writes are
/// not atomic under concurrency).
macro_rules! on_both {
    ($check:ident $(, $($runtime:tt)*)?) => {
        mod $check {
            use devstack::fixtures::local_dynamodb::Emulator;

            #[tokio::test$(($($runtime)*))?]
            async fn on_dynalite() {
                super::$check(Emulator::Dynalite).await;
            }

            #[tokio::test$(($($runtime)*))?]
            async fn on_moto() {
                super::$check(Emulator::Moto).await;
            }
        }
    };
}

mod backoff;
mod error_paths;
mod fleet;
mod fleet_policy;
mod item_layout;
mod keyed;
mod lost_write;
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

/// A fresh `emulator` with the default circuit table `circuits` and a store on it.
async fn simple_table_on(emulator: Emulator) -> (LocalDynamoDb, DynamoDbStore) {
    let db = LocalDynamoDb::start(emulator)
        .await
        .expect("DynamoDB starts");
    db.create_circuit_table("circuits").await.expect("table");
    let store = DynamoDbStore::builder()
        .table_name("circuits")
        .client(db.client())
        .build()
        .expect("valid store");
    (db, store)
}

/// A fresh `emulator` with the composite-key [`shared_table`] and a store on its circuits.
async fn shared_table_on(emulator: Emulator) -> (LocalDynamoDb, DynamoDbStore) {
    let db = LocalDynamoDb::start(emulator)
        .await
        .expect("DynamoDB starts");
    let store = shared_table::create(&db)
        .await
        .expect("table")
        .client(db.client())
        .build()
        .expect("valid store");
    (db, store)
}

/// The names of the circuits `store` lists.
async fn listed_names(store: &DynamoDbStore) -> Vec<String> {
    use breaker_runtime::unstable::OperatorReads as _;
    store
        .list()
        .await
        .expect("list")
        .into_iter()
        .map(|c| c.name)
        .collect()
}

/// A fresh `emulator` with the table `renamed` and a store on it whose attributes are
/// all renamed.
async fn renamed_table_on(emulator: Emulator) -> (LocalDynamoDb, DynamoDbStore) {
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
