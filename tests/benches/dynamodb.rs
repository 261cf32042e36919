//! What the DynamoDB store adds to a guarded call, on dynalite (loopback):
//! a closed call served from the local cache (hit) versus one that must read the item first
//! (miss: one eventually consistent GetItem), the read alone, and a rejection while open.
//!
//! `cargo bench -p breaker-tests --bench dynamodb`

use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::store::{DynamoDbStore, StateStore};
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig};
use criterion::{Criterion, criterion_group, criterion_main};
use devstack::fixtures::dynalite::Dynalite;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn config(cache: Duration) -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .recovery_timeout(Duration::from_secs(3600))
        .local_cache_max_age(cache)
        .build()
        .expect("valid config")
}

fn dynamodb(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let dynalite = rt.block_on(Dynalite::start()).expect("dynalite starts");
    rt.block_on(dynalite.create_circuit_table("bench"))
        .expect("table");
    let store = Arc::new(
        DynamoDbStore::builder()
            .table_name("bench")
            .client(dynalite.client())
            .build()
            .expect("valid store"),
    );
    let hit = CircuitBreaker::new("hit", store.clone(), config(Duration::from_secs(3600)));
    let miss = CircuitBreaker::new("miss", store.clone(), config(Duration::ZERO));
    let open = CircuitBreaker::new("open", store.clone(), config(Duration::from_secs(3600)));
    let _: Result<(), Error> = open.call_blocking(|| Err("trip".into()));

    let mut group = c.benchmark_group("dynamodb");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(5));
    group.bench_function("closed call, cache hit", |b| {
        b.iter(|| hit.call_blocking(|| Ok::<_, Error>(1)))
    });
    group.bench_function("closed call, cache miss (one GetItem)", |b| {
        b.iter(|| miss.call_blocking(|| Ok::<_, Error>(1)))
    });
    group.bench_function("GetItem alone", |b| {
        b.iter(|| rt.block_on(store.read("miss")).expect("read"))
    });
    group.bench_function("open circuit, rejection", |b| {
        b.iter(|| open.call_blocking(|| Ok::<_, Error>(1)).is_err())
    });
    group.finish();
}

criterion_group!(benches, dynamodb);
criterion_main!(benches);
