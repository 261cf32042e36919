//! Methods of `#[async_trait]` impls: `#[async_trait]` on the impl, `#[circuit_breaker]` on
//! the method. async-trait expands first and boxes the body once; the guard runs inside.

use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{CircuitBreakerOpenError, CircuitInfo, circuit_breaker};

#[async_trait]
trait PaymentApi {
    async fn charge(&self, cents: u64) -> Result<String, anyhow::Error>;
    async fn refund(&self, cents: u64) -> Result<String, anyhow::Error>;
}

struct FlakyApi {
    entries: AtomicU32,
}

#[async_trait]
impl PaymentApi for FlakyApi {
    #[circuit_breaker(name = "async-trait-charge", failure_threshold = 2, persistence_store = InMemoryStore::new())]
    async fn charge(&self, cents: u64) -> Result<String, anyhow::Error> {
        self.entries.fetch_add(1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        if cents == 0 {
            anyhow::bail!("cannot charge zero");
        }
        Ok(format!("charged {cents}"))
    }

    #[circuit_breaker(name = "async-trait-refund", failure_threshold = 1, on_circuit_open = Self::refund_later, persistence_store = InMemoryStore::new())]
    async fn refund(&self, cents: u64) -> Result<String, anyhow::Error> {
        anyhow::bail!("refund api down ({cents})")
    }
}

impl FlakyApi {
    async fn refund_later(
        &self,
        cents: u64,
        circuit: CircuitInfo,
    ) -> Result<String, anyhow::Error> {
        Ok(format!("queued refund {cents} ({})", circuit.name))
    }
}

#[tokio::test]
async fn async_trait_methods_are_guarded() {
    let api = FlakyApi {
        entries: AtomicU32::new(0),
    };
    let api: &dyn PaymentApi = &api;
    assert_eq!(api.charge(5).await.unwrap(), "charged 5");
    assert!(api.charge(0).await.is_err());
    assert!(api.charge(0).await.is_err());
    let rejected = api.charge(5).await.unwrap_err();
    assert!(rejected.downcast_ref::<CircuitBreakerOpenError>().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_trait_callbacks_and_send_futures() {
    let api = std::sync::Arc::new(FlakyApi {
        entries: AtomicU32::new(0),
    });
    assert!(api.refund(1).await.is_err());
    let spawned = std::sync::Arc::clone(&api);
    let queued = tokio::spawn(async move { spawned.refund(7).await })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(queued, "queued refund 7 (async-trait-refund)");
    assert_eq!(api.entries.load(Ordering::SeqCst), 0);
}
