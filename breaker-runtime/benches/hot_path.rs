//! Hot-path cost of breaker next to failsafe 1.3 and recloser 1.4, in one run.
//!
//! `cargo bench -p breaker-runtime --features tower --bench hot_path`; the `metrics` group
//! again with the feature: `cargo bench -p breaker-runtime --features tower,metrics --bench
//! hot_path -- metrics`.
//!
//! Every breaker is configured to trip on consecutive failures. Closed path: a call that
//! succeeds, with the shared state cached. Open path: a call rejected without running.
//! Async calls are polled once with a no-op waker, so no executor cost is measured.

use std::future::Future;
use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{CircuitBreaker, KeyedCircuitBreaker};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};

mod support;

use support::{Failure, config, failsafe_breaker, policy_config, recloser_breaker, warmed};

/// Polls a future that completes without waiting, inline.
fn ready<F: Future>(future: F) -> F::Output {
    support::ready::<false, F>(future)
}

/// The breaker of every row but the rate policies': 5 consecutive failures trip it.
fn ours() -> CircuitBreaker {
    warmed("bench", config())
}

/// The rows of one breaker: a sync call and an async call (one poll).
fn breaker_rows(
    group: &mut BenchmarkGroup<'_, WallTime>,
    [sync_row, async_row]: [&str; 2],
    breaker: &CircuitBreaker,
) {
    group.bench_function(sync_row, |b| {
        b.iter(|| black_box(breaker.call_blocking(|| Ok::<u64, Failure>(black_box(7)))))
    });
    group.bench_function(async_row, |b| {
        b.iter(|| {
            black_box(ready(
                breaker.call(|| async { Ok::<u64, Failure>(black_box(7)) }),
            ))
        })
    });
}

/// The row of failsafe's sync call.
fn failsafe_sync_row(
    group: &mut BenchmarkGroup<'_, WallTime>,
    failsafe: &impl failsafe::CircuitBreaker,
) {
    group.bench_function("failsafe sync", |b| {
        b.iter(|| {
            black_box(failsafe::CircuitBreaker::call(failsafe, || {
                Ok::<u64, Failure>(black_box(7))
            }))
        })
    });
}

/// The row of recloser's sync call.
fn recloser_sync_row(group: &mut BenchmarkGroup<'_, WallTime>, recloser: &recloser::Recloser) {
    group.bench_function("recloser sync", |b| {
        b.iter(|| black_box(recloser.call(|| Ok::<u64, Failure>(black_box(7)))))
    });
}

fn closed_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("closed_path");
    group.bench_function("baseline (no breaker)", |b| {
        b.iter(|| black_box(Ok::<u64, Failure>(black_box(7))))
    });

    // The one part of breaker's closed path the peers do not have: the clock read that
    // tells whether the cached shared state is still fresh.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    group.bench_function("coarse clock read alone (part of breaker)", |b| {
        b.iter(|| {
            black_box(rustix::time::clock_gettime(
                rustix::time::ClockId::RealtimeCoarse,
            ))
        })
    });

    let breaker = ours();
    breaker_rows(&mut group, ["breaker sync", "breaker async"], &breaker);

    let failsafe = failsafe_breaker();
    failsafe_sync_row(&mut group, &failsafe);
    group.bench_function("failsafe async", |b| {
        b.iter(|| {
            black_box(ready(failsafe::futures::CircuitBreaker::call(
                &failsafe,
                async { Ok::<u64, Failure>(black_box(7)) },
            )))
        })
    });

    let recloser = recloser_breaker();
    recloser_sync_row(&mut group, &recloser);
    let async_recloser = recloser::AsyncRecloser::from(recloser_breaker());
    group.bench_function("recloser async", |b| {
        b.iter(|| {
            black_box(ready(
                async_recloser.call(async { Ok::<u64, Failure>(black_box(7)) }),
            ))
        })
    });
    group.finish();
}

fn open_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("open_path");
    let breaker = ours();
    for _ in 0..5 {
        let _: Result<(), Failure> = breaker.call_blocking(|| Err(Failure));
    }
    assert!(
        breaker.call_blocking(|| Ok::<(), Failure>(())).is_err(),
        "open"
    );
    breaker_rows(&mut group, ["breaker sync", "breaker async"], &breaker);

    let failsafe = failsafe_breaker();
    for _ in 0..5 {
        let _ = failsafe::CircuitBreaker::call(&failsafe, || Err::<(), Failure>(Failure));
    }
    failsafe_sync_row(&mut group, &failsafe);

    let recloser = recloser_breaker();
    for _ in 0..6 {
        let _ = recloser.call(|| Err::<(), Failure>(Failure));
    }
    recloser_sync_row(&mut group, &recloser);
    group.finish();
}

/// Per-call cost with `threads` threads calling one circuit at once.
fn contended(c: &mut Criterion) {
    let mut group = c.benchmark_group("contended_closed_path");
    for threads in [1usize, 2] {
        let breaker = ours();
        group.bench_function(format!("breaker sync, {threads} thread(s)"), |b| {
            b.iter_custom(|iters| {
                let start = Arc::new(Barrier::new(threads));
                let workers: Vec<_> = (0..threads)
                    .map(|_| {
                        let (breaker, start) = (breaker.clone(), start.clone());
                        std::thread::spawn(move || {
                            start.wait();
                            let began = Instant::now();
                            for _ in 0..iters {
                                let _ = black_box(
                                    breaker.call_blocking(|| Ok::<u64, Failure>(black_box(7))),
                                );
                            }
                            began.elapsed()
                        })
                    })
                    .collect();
                let elapsed: Vec<Duration> = workers
                    .into_iter()
                    .map(|w| w.join().expect("worker"))
                    .collect();
                elapsed.into_iter().max().unwrap_or_default()
            })
        });
    }
    group.finish();
}

#[breaker_runtime::circuit_breaker(name = "bench-macro-sync", config = config(), persistence_store = InMemoryStore::new())]
fn guarded_sync(n: u64) -> Result<u64, Failure> {
    Ok(n)
}

#[breaker_runtime::circuit_breaker(name = "bench-macro-async", config = config(), persistence_store = InMemoryStore::new())]
async fn guarded_async(n: u64) -> Result<u64, Failure> {
    Ok(n)
}

/// What a user writes without the attribute: a fn of their own calling a circuit kept in a
/// `static`, exactly what the expansion does for them.
static HAND_WRITTEN: std::sync::LazyLock<CircuitBreaker> = std::sync::LazyLock::new(ours);

fn hand_written_sync(n: u64) -> Result<u64, Failure> {
    HAND_WRITTEN.call_blocking(|| Ok(n))
}

async fn hand_written_async(n: u64) -> Result<u64, Failure> {
    HAND_WRITTEN.call(|| async move { Ok(n) }).await
}

/// The same closed call through `#[circuit_breaker]` and through `CircuitBreaker::call`:
/// the expansion should add nothing measurable (target: ratio ≤ 1.05). Compare each
/// `#[circuit_breaker]` fn with the hand-written fn of the same kind; the bare
/// `CircuitBreaker::call` rows (a closure inlined into the loop) are the floor.
fn macro_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("macro_path");
    let breaker = ours();
    // Warm both call sites: their first call creates the circuit and reads the store.
    guarded_sync(7).expect("closed");
    hand_written_sync(7).expect("closed");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(guarded_async(7))
        .expect("closed");

    group.bench_function("CircuitBreaker::call_blocking", |b| {
        b.iter(|| black_box(breaker.call_blocking(|| Ok::<u64, Failure>(black_box(7)))))
    });
    group.bench_function("fn calling CircuitBreaker::call_blocking", |b| {
        b.iter(|| black_box(hand_written_sync(black_box(7))))
    });
    group.bench_function("#[circuit_breaker] sync fn", |b| {
        b.iter(|| black_box(guarded_sync(black_box(7))))
    });
    group.bench_function("CircuitBreaker::call", |b| {
        b.iter(|| {
            black_box(ready(
                breaker.call(|| async { Ok::<u64, Failure>(black_box(7)) }),
            ))
        })
    });
    group.bench_function("async fn calling CircuitBreaker::call", |b| {
        b.iter(|| black_box(ready(hand_written_async(black_box(7)))))
    });
    group.bench_function("#[circuit_breaker] async fn", |b| {
        b.iter(|| black_box(ready(guarded_async(black_box(7)))))
    });
    group.finish();
}

/// The rate policies: 50 % of the last 100 calls, of the last 60 s, or slow calls (5 s)
/// making 50 % of the last 100 calls; and the adaptive policy at its recommended setting.
fn rate_policies() -> [(&'static str, CircuitBreaker); 4] {
    use breaker_runtime::SlidingWindow;
    [
        (
            "failure rate, last 100 calls",
            warmed("rate-calls", policy_config(|b| b.failure_rate(50))),
        ),
        (
            "failure rate, last 60 s",
            warmed(
                "rate-time",
                policy_config(|b| {
                    b.failure_rate(50)
                        .sliding_window(SlidingWindow::Time(Duration::from_secs(60)))
                }),
            ),
        ),
        (
            "slow calls, last 100 calls",
            warmed(
                "rate-slow",
                policy_config(|b| b.slow_calls(Duration::from_secs(5), 50)),
            ),
        ),
        (
            "adaptive, recommended",
            warmed(
                "adaptive",
                policy_config(|b| b.adaptive(breaker_runtime::AdaptivePolicy::default())),
            ),
        ),
    ]
}

/// The closed path of the rate policies next to consecutive failures (the default), sync
/// and async, each breaker called directly.
fn trip_policies(c: &mut Criterion) {
    let mut group = c.benchmark_group("trip_policies");
    let consecutive = ours();
    breaker_rows(
        &mut group,
        ["consecutive failures, sync", "consecutive failures, async"],
        &consecutive,
    );
    for (policy, breaker) in rate_policies() {
        let rows = [format!("{policy}, sync"), format!("{policy}, async")];
        breaker_rows(&mut group, [&rows[0], &rows[1]], &breaker);
    }
    group.finish();
}

#[cfg(feature = "tower")]
mod layer {
    //! The tower layer: a ready service that answers at once, through the layer, against
    //! the same service's future run through `CircuitBreaker::call`; and the rate policies
    //! through the layer against tower-resilience's layer with the same policy.

    use std::task::{Context, Poll, Waker};

    use super::*;
    use breaker_runtime::tower::{BoxError, CircuitBreakerLayer};
    use tower::{Layer, Service, service_fn};

    /// The service every row calls: ready at once, answers at once.
    fn answer(n: u64) -> std::future::Ready<Result<u64, BoxError>> {
        std::future::ready(Ok(n))
    }

    /// `poll_ready`, `call`, and one poll of the response future, as a tower client does.
    fn serve<S: Service<u64>>(service: &mut S, request: u64) -> Result<S::Response, S::Error> {
        let mut cx = Context::from_waker(Waker::noop());
        match service.poll_ready(&mut cx) {
            Poll::Ready(Ok(())) => {}
            _ => panic!("the benchmarked service is always ready"),
        }
        ready(service.call(request))
    }

    static STATIC_BREAKER: std::sync::LazyLock<CircuitBreaker> = std::sync::LazyLock::new(ours);

    pub(super) fn tower_layer(c: &mut Criterion) {
        let mut group = c.benchmark_group("tower_layer");
        let mut inner = service_fn(answer);
        group.bench_function("service alone", |b| {
            b.iter(|| black_box(serve(&mut inner, black_box(7))))
        });
        let breaker = ours();
        group.bench_function("CircuitBreaker::call on the service's future", |b| {
            b.iter(|| {
                black_box(ready(breaker.call(|| {
                    let mut cx = Context::from_waker(Waker::noop());
                    let _ = inner.poll_ready(&mut cx);
                    inner.call(black_box(7))
                })))
            })
        });
        let mut layered = CircuitBreakerLayer::new(breaker.clone()).layer(service_fn(answer));
        group.bench_function("layer, CircuitBreaker handle", |b| {
            b.iter(|| black_box(serve(&mut layered, black_box(7))))
        });
        let _: Result<(), Failure> = STATIC_BREAKER.call_blocking(|| Ok(()));
        let mut static_layered =
            CircuitBreakerLayer::new(&*STATIC_BREAKER).layer(service_fn(answer));
        group.bench_function("layer, &'static handle", |b| {
            b.iter(|| black_box(serve(&mut static_layered, black_box(7))))
        });
        group.finish();
    }

    /// tower-resilience's layer with the same policy as one of [`rate_policies`].
    fn tower_resilience(policy: &str) -> tower_resilience::circuitbreaker::CircuitBreakerLayer {
        use tower_resilience::circuitbreaker::{CircuitBreakerLayer, SlidingWindowType};
        let builder = CircuitBreakerLayer::builder()
            .wait_duration_in_open(Duration::from_secs(3600))
            .minimum_number_of_calls(10);
        let builder = match policy {
            "failure rate, last 100 calls" => {
                builder.failure_rate_threshold(0.5).sliding_window_size(100)
            }
            "failure rate, last 60 s" => builder
                .failure_rate_threshold(0.5)
                .sliding_window_type(SlidingWindowType::TimeBased)
                .sliding_window_duration(Duration::from_secs(60)),
            _ => builder
                .failure_rate_threshold(1.0)
                .slow_call_duration_threshold(Duration::from_secs(5))
                .slow_call_rate_threshold(0.5)
                .sliding_window_size(100),
        };
        builder.build().expect("valid tower-resilience config")
    }

    pub(super) fn layer_policies(c: &mut Criterion) {
        let mut group = c.benchmark_group("layer_policies");
        let mut consecutive = CircuitBreakerLayer::new(ours()).layer(service_fn(answer));
        group.bench_function("breaker layer, consecutive failures", |b| {
            b.iter(|| black_box(serve(&mut consecutive, black_box(7))))
        });
        for (policy, breaker) in rate_policies() {
            let mut ours = CircuitBreakerLayer::new(breaker).layer(service_fn(answer));
            group.bench_function(format!("breaker layer, {policy}"), |b| {
                b.iter(|| black_box(serve(&mut ours, black_box(7))))
            });
            let mut peer = tower_resilience(policy).layer(service_fn(answer));
            group.bench_function(format!("tower-resilience, {policy}"), |b| {
                b.iter(|| black_box(serve(&mut peer, black_box(7)).ok()))
            });
        }
        group.finish();
    }
}

/// The closed path's metrics: without the feature, and with it (`--features metrics`)
/// against metrics-util's `DebuggingRecorder`, which counts into atomics, with no recorder
/// (no-op handles), and recording durations. `make bench` runs both builds.
fn metrics_rows(c: &mut Criterion) {
    let mut group = c.benchmark_group("metrics");
    #[cfg(not(feature = "metrics"))]
    breaker_rows(
        &mut group,
        ["breaker sync, feature off", "breaker async, feature off"],
        &ours(),
    );
    #[cfg(feature = "metrics")]
    {
        let recorder = metrics_util::debugging::DebuggingRecorder::new();
        breaker_rows(
            &mut group,
            ["breaker sync, no recorder", "breaker async, no recorder"],
            &ours(),
        );
        breaker_rows(
            &mut group,
            [
                "breaker sync, counting recorder",
                "breaker async, counting recorder",
            ],
            &support::counted("bench-metrics", config(), &recorder),
        );
        breaker_rows(
            &mut group,
            ["breaker sync, durations", "breaker async, durations"],
            &support::counted("bench-durations", support::timed_config(), &recorder),
        );
    }
    group.finish();
}

/// A keyed circuit's closed path: the key's circuit looked up in the environment's map, then
/// the plain closed path, beside the plain closed path in the same run. One key called
/// over and over (from one thread, and from 8 at once), 1,000 keys called in turn (each
/// key's circuit exists and is cached closed), and a miss: a new key each call, in a map
/// holding 1,000 or 100,000 keys.
fn keyed_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("keyed_path");
    let plain = ours();
    group.bench_function("CircuitBreaker::call_blocking", |b| {
        b.iter(|| black_box(plain.call_blocking(|| Ok::<u64, Failure>(black_box(7)))))
    });
    let keyed = KeyedCircuitBreaker::new("keyed", Arc::new(InMemoryStore::new()), config());
    let keys: Vec<String> = (0..1_000).map(|i| format!("tenant-{i}")).collect();
    for key in &keys {
        let _: Result<(), Failure> = keyed.call_blocking(key, || Ok(()));
    }
    group.bench_function("KeyedCircuitBreaker::call_blocking, one key", |b| {
        b.iter(|| black_box(keyed.call_blocking(black_box("tenant-7"), || Ok::<u64, Failure>(7))))
    });
    group.bench_function("KeyedCircuitBreaker::call, one key", |b| {
        b.iter(|| {
            black_box(ready(
                keyed.call(black_box("tenant-7"), || async { Ok::<u64, Failure>(7) }),
            ))
        })
    });
    let mut turn = 0;
    group.bench_function(
        "KeyedCircuitBreaker::call_blocking, 1,000 keys in turn",
        |b| {
            b.iter(|| {
                turn = (turn + 1) % keys.len();
                black_box(keyed.call_blocking(&keys[turn], || Ok::<u64, Failure>(7)))
            })
        },
    );
    group.bench_function("CircuitBreaker::call_blocking, 8 threads", |b| {
        b.iter_custom(|iters| {
            on_threads(
                8,
                iters,
                || plain.clone(),
                |plain| plain.call_blocking(|| Ok::<u64, Failure>(black_box(7))),
            )
        })
    });
    group.bench_function(
        "KeyedCircuitBreaker::call_blocking, one key, 8 threads",
        |b| {
            b.iter_custom(|iters| {
                on_threads(
                    8,
                    iters,
                    || keyed.clone(),
                    |keyed| keyed.call_blocking(black_box("tenant-7"), || Ok::<u64, Failure>(7)),
                )
            })
        },
    );
    for held in [1_000usize, 100_000] {
        let keyed = KeyedCircuitBreaker::new("misses", Arc::new(InMemoryStore::new()), config())
            .with_max_keys_in_memory(held)
            .expect("a bound of at least 1");
        let mut next = 0u64;
        let mut miss = || {
            next += 1;
            let key = format!("one-off-{next}");
            black_box(keyed.call_blocking(&key, || Ok::<u64, Failure>(7)))
        };
        for _ in 0..held {
            let _ = miss();
        }
        group.bench_function(
            format!("KeyedCircuitBreaker::call_blocking, a new key, {held} held"),
            |b| b.iter(&mut miss),
        );
    }
    group.finish();
}

/// Runs `call` `iters` times on each of `threads` threads at once, each with its own value
/// from `each`: the longest thread's time.
fn on_threads<T: Send + 'static, R: 'static>(
    threads: usize,
    iters: u64,
    each: impl Fn() -> T,
    call: fn(&T) -> R,
) -> Duration {
    let start = Arc::new(Barrier::new(threads));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (value, start) = (each(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let began = Instant::now();
                for _ in 0..iters {
                    black_box(call(&value));
                }
                began.elapsed()
            })
        })
        .collect();
    workers
        .into_iter()
        .map(|w| w.join().expect("worker"))
        .max()
        .unwrap_or_default()
}

/// The tower layer's groups, with feature `tower`.
fn tower_groups(c: &mut Criterion) {
    #[cfg(feature = "tower")]
    {
        layer::tower_layer(c);
        layer::layer_policies(c);
    }
    #[cfg(not(feature = "tower"))]
    let _ = c;
}

criterion_group!(
    benches,
    closed_path,
    open_path,
    contended,
    macro_path,
    trip_policies,
    keyed_path,
    tower_groups,
    metrics_rows
);
criterion_main!(benches);
