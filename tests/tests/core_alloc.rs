//! The closed path and the open path (a rejection) allocate nothing: counted with dhat's
//! heap profiler as the global allocator, over thousands of sync and async calls with the
//! shared state cached.

use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{
    CallAbandonedError, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitInfo,
    CircuitState,
};

/// The calls' error type and the one-poll executor, the same as the hot-path benches and
/// `user-bench/` use.
#[path = "../../breaker-runtime/benches/support/calls.rs"]
mod calls;

use calls::{Failure, ready};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// Keeps what a rejection reported, so building and dropping it is part of what is counted.
#[derive(Debug)]
struct Rejected(CircuitInfo);

impl From<CircuitBreakerOpenError> for Rejected {
    fn from(open: CircuitBreakerOpenError) -> Self {
        Rejected(open.circuit)
    }
}

impl From<CallAbandonedError> for Rejected {
    fn from(abandoned: CallAbandonedError) -> Self {
        Rejected(abandoned.circuit)
    }
}

fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = dhat::HeapStats::get().total_blocks;
    f();
    dhat::HeapStats::get().total_blocks - before
}

#[test]
fn closed_path_calls_allocate_nothing() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(5)
        .local_cache_max_age(Duration::from_secs(600))
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("alloc", Arc::new(InMemoryStore::new()), config);
    // The first call reads the store (allocates); from then on the state is cached.
    let _: Result<(), Failure> = breaker.call_blocking(|| Ok(()));

    let sync = allocations_during(|| {
        for i in 0..10_000u64 {
            let r: Result<u64, Failure> = breaker.call_blocking(|| Ok(i));
            assert_eq!(r.ok(), Some(i));
        }
    });
    assert_eq!(sync, 0, "sync closed path");

    let asynchronous = allocations_during(|| {
        for i in 0..10_000u64 {
            let r: Result<u64, Failure> = ready(breaker.call(|| async move { Ok(i) }));
            assert_eq!(r.ok(), Some(i));
        }
    });
    assert_eq!(asynchronous, 0, "async closed path");

    // Failures below the threshold, and the success that resets them, allocate nothing either.
    let failing = allocations_during(|| {
        for _ in 0..1_000 {
            for _ in 0..4 {
                let _: Result<(), Failure> = breaker.call_blocking(|| Err(Failure));
            }
            let _: Result<(), Failure> = breaker.call_blocking(|| Ok(()));
        }
    });
    assert_eq!(failing, 0, "counted failures below the threshold");

    // The counter itself works: a breaker that allocates is seen.
    let sanity = allocations_during(|| {
        let _: Result<(), Failure> = breaker.call_blocking(|| {
            std::hint::black_box(vec![1u8; 16]);
            Ok(())
        });
    });
    assert_eq!(sanity, 1, "dhat counts allocations inside the call");
}

#[test]
fn rejections_allocate_nothing() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(5)
        .recovery_timeout(Duration::from_secs(600))
        .local_cache_max_age(Duration::from_secs(600))
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("alloc-open", Arc::new(InMemoryStore::new()), config);
    // The trip writes the store (allocates); from then on every call is rejected from the
    // cache until the recovery timeout.
    for _ in 0..5 {
        let _: Result<(), Failure> = breaker.call_blocking(|| Err(Failure));
    }
    assert_eq!(breaker.state(), CircuitState::Open);

    let is_rejection = |r: &Result<u64, Rejected>| {
        matches!(r, Err(Rejected(info))
            if &*info.name == "alloc-open" && info.state == CircuitState::Open && info.failure_count == 5)
    };
    let sync = allocations_during(|| {
        for i in 0..10_000u64 {
            let r: Result<u64, Rejected> = breaker.call_blocking(|| Ok(i));
            assert!(is_rejection(&r), "{r:?}");
        }
    });
    assert_eq!(sync, 0, "sync open path");

    let asynchronous = allocations_during(|| {
        for i in 0..10_000u64 {
            let r: Result<u64, Rejected> = ready(breaker.call(|| async move { Ok(i) }));
            assert!(is_rejection(&r), "{r:?}");
        }
    });
    assert_eq!(asynchronous, 0, "async open path");

    // The counter sees what a rejection would cost with an owned name.
    let sanity = allocations_during(|| {
        let r: Result<u64, Rejected> = breaker.call_blocking(|| Ok(1));
        if let Err(Rejected(info)) = r {
            std::hint::black_box(info.name.to_string());
        }
    });
    assert_eq!(sanity, 1, "dhat counts an allocation on the open path");
}

#[test]
fn rate_policies_and_the_tower_layer_allocate_nothing_on_the_closed_path() {
    use breaker_runtime::SlidingWindow;
    use breaker_runtime::tower::{BoxError, CircuitBreakerLayer};
    use tower::{Layer, Service};

    let _profiler = dhat::Profiler::builder().testing().build();
    let policies = [
        (
            "count window",
            CircuitBreakerConfig::builder().failure_rate(50),
        ),
        (
            "time window",
            CircuitBreakerConfig::builder()
                .failure_rate(50)
                .sliding_window(SlidingWindow::Time(Duration::from_secs(60))),
        ),
        (
            "slow calls",
            CircuitBreakerConfig::builder().slow_calls(Duration::from_secs(5), 50),
        ),
    ];
    for (policy, builder) in policies {
        let config = builder
            .local_cache_max_age(Duration::from_secs(600))
            .build()
            .unwrap();
        let breaker = CircuitBreaker::new(policy, Arc::new(InMemoryStore::new()), config);
        let _: Result<(), Failure> = breaker.call_blocking(|| Ok(()));
        // One failure in four stays below 50 %: the circuit stays closed throughout.
        let calls = allocations_during(|| {
            for i in 0..10_000u64 {
                let _: Result<(), Failure> = match i % 4 {
                    0 => breaker.call_blocking(|| Err(Failure)),
                    1 => breaker.call_blocking(|| Ok(())),
                    _ => ready(breaker.call(|| async { Ok(()) })),
                };
            }
        });
        assert_eq!(calls, 0, "{policy}: closed path");
        assert_eq!(breaker.state(), CircuitState::Closed, "{policy}");

        let mut service =
            CircuitBreakerLayer::new(breaker.clone()).layer(tower::service_fn(|n: u64| {
                std::future::ready(Ok::<u64, BoxError>(n))
            }));
        let layered = allocations_during(|| {
            for i in 0..10_000u64 {
                assert_eq!(ready(service.call(i)).ok(), Some(i));
            }
        });
        assert_eq!(layered, 0, "{policy}: the tower layer's closed path");
    }
}
