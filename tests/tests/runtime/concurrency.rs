//! Many tasks and threads hit one circuit at the moment recovery elapses: exactly one
//! probe runs per round, and while it runs every other call is rejected without reaching
//! the protected function. Repeated for 200 rounds each.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

const ROUNDS: usize = 200;

/// A circuit that is open with recovery just elapsed.
fn tripped_and_recovered() -> (CircuitBreaker, ManualClock) {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .success_threshold(1)
        .recovery_timeout(Duration::from_secs(30))
        .clock(clock.clone())
        .build()
        .expect("valid config");
    let breaker = CircuitBreaker::new("contended", Arc::new(InMemoryStore::new()), config);
    let tripped: Result<(), Error> = breaker.call_blocking(|| Err("boom".into()));
    assert!(tripped.is_err());
    assert_eq!(breaker.state(), CircuitState::Open);
    clock.advance(Duration::from_secs(30));
    (breaker, clock)
}

#[derive(Default)]
struct Tally {
    entered: AtomicUsize,
    rejected: AtomicUsize,
}

impl Tally {
    /// The probe's body: hold the probe until every other caller was turned away.
    fn hold_until_others_rejected(&self, others: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.rejected.load(Ordering::SeqCst) < others && Instant::now() < deadline {
            std::thread::yield_now();
        }
    }

    fn record(&self, result: &Result<(), Error>) {
        if let Err(e) = result {
            assert!(
                e.downcast_ref::<CircuitBreakerOpenError>().is_some(),
                "unexpected error: {e}"
            );
            self.rejected.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[test]
fn tasks_one_probe_per_round() {
    const TASKS: usize = 64;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    for round in 0..ROUNDS {
        let (breaker, _clock) = tripped_and_recovered();
        let tally = Arc::new(Tally::default());
        let start = Arc::new(tokio::sync::Barrier::new(TASKS));
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let (breaker, tally, start) = (breaker.clone(), tally.clone(), start.clone());
                runtime.spawn(async move {
                    start.wait().await;
                    let result = breaker
                        .call(|| async {
                            tally.entered.fetch_add(1, Ordering::SeqCst);
                            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
                            while tally.rejected.load(Ordering::SeqCst) < TASKS - 1
                                && tokio::time::Instant::now() < deadline
                            {
                                tokio::task::yield_now().await;
                            }
                            Ok(())
                        })
                        .await;
                    tally.record(&result);
                })
            })
            .collect();
        runtime.block_on(async {
            for task in tasks {
                task.await.expect("task completed");
            }
        });
        assert_eq!(
            tally.entered.load(Ordering::SeqCst),
            1,
            "round {round}: exactly one probe ran"
        );
        assert_eq!(
            tally.rejected.load(Ordering::SeqCst),
            TASKS - 1,
            "round {round}: all others rejected"
        );
        assert_eq!(
            breaker.state(),
            CircuitState::Closed,
            "round {round}: the probe closed the circuit"
        );
    }
}

#[test]
fn threads_one_probe_per_round() {
    const THREADS: usize = 16;
    for round in 0..ROUNDS {
        let (breaker, _clock) = tripped_and_recovered();
        let tally = Arc::new(Tally::default());
        let start = Arc::new(Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (breaker, tally, start) = (breaker.clone(), tally.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let result = breaker.call_blocking(|| {
                        tally.entered.fetch_add(1, Ordering::SeqCst);
                        tally.hold_until_others_rejected(THREADS - 1);
                        Ok(())
                    });
                    tally.record(&result);
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("thread completed");
        }
        assert_eq!(
            tally.entered.load(Ordering::SeqCst),
            1,
            "round {round}: exactly one probe ran"
        );
        assert_eq!(
            tally.rejected.load(Ordering::SeqCst),
            THREADS - 1,
            "round {round}: all others rejected"
        );
        assert_eq!(
            breaker.state(),
            CircuitState::Closed,
            "round {round}: the probe closed the circuit"
        );
    }
}

#[test]
fn concurrent_failures_trip_once_and_commit_one_transition() {
    const THREADS: usize = 16;
    for round in 0..50 {
        let clock = ManualClock::new();
        let transitions = Arc::new(AtomicUsize::new(0));
        let counter = transitions.clone();
        let config = CircuitBreakerConfig::builder()
            .failure_threshold(3)
            .clock(clock)
            .build()
            .unwrap();
        let breaker = CircuitBreaker::new("storm", Arc::new(InMemoryStore::new()), config)
            .with_on_transition(move |_| {
                counter.fetch_add(1, Ordering::SeqCst);
            });
        let start = Arc::new(Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (breaker, start) = (breaker.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    for _ in 0..10 {
                        let _: Result<(), Error> = breaker.call_blocking(|| Err("boom".into()));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(breaker.state(), CircuitState::Open, "round {round}");
        assert_eq!(
            transitions.load(Ordering::SeqCst),
            1,
            "round {round}: one CLOSED → OPEN transition"
        );
    }
}
