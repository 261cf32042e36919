//! The store contract on `InMemoryStore`, the reference implementation.

use std::sync::Arc;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::contract::run_contract;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_memory_store_meets_the_contract() {
    run_contract(Arc::new(InMemoryStore::new())).await;
}
