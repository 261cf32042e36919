//! Runs the store contract suite against `InMemoryStore`: what a `StateStore` of your own
//! must pass too. Replace the store with yours.
//!
//!     cargo run -p breaker-runtime --features contract --example store_contract

use std::sync::Arc;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::contract::run_contract;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    run_contract(Arc::new(InMemoryStore::new())).await;
    println!("InMemoryStore meets the store contract");
}
