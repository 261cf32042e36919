use super::*;
use crate::protocol::{CircuitRecord, RecordWrite, WriteOutcome};
use crate::store::{InMemoryStore, StoreFuture, key_item_id};

/// A store that keeps no key index: the trait's defaults.
#[derive(Debug, Default)]
struct NoIndex(InMemoryStore);

impl StateStore for NoIndex {
    fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        self.0.read(circuit)
    }
    fn apply<'a>(
        &'a self,
        circuit: &'a str,
        transition: &'a RecordWrite,
    ) -> StoreFuture<'a, WriteOutcome> {
        self.0.apply(circuit, transition)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_store_without_an_index_reads_every_key_and_caps_nothing() {
    let store = Arc::new(NoIndex::default());
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let keyed = KeyedCircuitBreaker::new("hosts", store.clone(), config)
        .with_max_open_keys(1)
        .unwrap();
    for key in ["a", "b"] {
        let failed: Result<(), anyhow::Error> = keyed
            .call(key, || async { Err(anyhow::anyhow!("503")) })
            .await;
        assert!(failed.is_err());
        assert_eq!(
            keyed.state(key),
            CircuitState::Open,
            "{key}: no cap without an index"
        );
        let item = store.read(&key_item_id("hosts", key)).await.unwrap();
        assert_eq!(item.map(|r| r.state), Some(CircuitState::Open));
    }
    assert!(keyed.open_keys().is_empty(), "no index to name them");
}

#[tokio::test(flavor = "current_thread")]
async fn a_failing_hot_key_keeps_its_count_through_bursts_of_one_off_keys() {
    let keyed = KeyedCircuitBreaker::new(
        "tenants",
        Arc::new(InMemoryStore::new()),
        CircuitBreakerConfig::default(),
    );
    let fail = || async { Err::<(), _>(anyhow::anyhow!("503")) };
    for _ in 0..2 {
        let _ = keyed.call("hot", fail).await;
    }
    // Three more failures, each after twice as many new keys as the environment keeps.
    for burst in 0..3 {
        for i in 0..2 * DEFAULT_MAX_KEYS_IN_MEMORY {
            let key = format!("one-off-{burst}-{i}");
            let ok: Result<(), anyhow::Error> = keyed.call(&key, || async { Ok(()) }).await;
            assert!(ok.is_ok());
        }
        let _ = keyed.call("hot", fail).await;
    }
    assert_eq!(
        keyed.state("hot"),
        CircuitState::Open,
        "five failures in a row"
    );
    assert_eq!(keyed.keys_in_memory(), DEFAULT_MAX_KEYS_IN_MEMORY);
}
