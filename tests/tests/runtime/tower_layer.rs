//! `breaker_runtime::tower`: the circuit breaker as a tower layer. Under a multi-thread
//! runtime, many concurrent requests through clones of one guarded service at each
//! recovery: exactly one reaches the inner service (the probe) per recovery window, every
//! other is rejected with `CircuitBreakerOpenError` without reaching it. Also: the
//! classifier decides what counts (a response can fail, an error can be ignored),
//! readiness holds no permit, a cancelled probe frees the slot, a panic counts.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::tower::{BoxError, CircuitBreakerLayer, Outcome};
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState, FailureKind,
    RecoveryBackoff, TransitionCause,
};
use devstack::circuits::is_rejection;
use devstack::contention::{Tally, at_once_on_tasks};
use tower::{Layer, Service, ServiceExt, service_fn};

const RECOVERY: Duration = Duration::from_secs(30);

fn breaker(clock: &ManualClock, failures: u32, successes: u32) -> CircuitBreaker {
    // Every window of these tests is the recovery timeout long.
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(failures)
        .success_threshold(successes)
        .recovery_timeout(RECOVERY)
        .recovery_backoff(RecoveryBackoff::none())
        .local_cache_max_age(Duration::from_secs(5))
        .clock(clock.clone())
        .build()
        .expect("valid config");
    CircuitBreaker::new("tower", Arc::new(InMemoryStore::new()), config)
}

#[test]
fn many_concurrent_requests_one_probe_per_recovery_window() {
    const TASKS: usize = 64;
    const WINDOWS: usize = 50;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let clock = ManualClock::new();
    let breaker = breaker(&clock, 1, 1);
    let tally = Arc::new(Tally::default());
    // The downstream stays down until the last window; its probe holds on until every
    // other request of the window was turned away, so they all overlap it.
    let last_window = Arc::new(AtomicUsize::new(usize::MAX));
    let inner = {
        let (tally, last_window) = (tally.clone(), last_window.clone());
        service_fn(move |window: usize| {
            let (tally, last_window) = (tally.clone(), last_window.clone());
            async move {
                tally.entered.fetch_add(1, Ordering::SeqCst);
                if window < WINDOWS {
                    tally.hold_until_rejected_async(TASKS - 1).await;
                }
                match window == last_window.load(Ordering::SeqCst) {
                    true => Ok::<_, BoxError>(window),
                    false => Err("downstream 503".into()),
                }
            }
        })
    };
    let service = CircuitBreakerLayer::new(breaker.clone()).layer(inner);

    // Trip it: one failure opens.
    let tripped = runtime.block_on(service.clone().oneshot(usize::MAX - 1));
    assert!(tripped.is_err() && !is_rejection(&tripped));
    assert_eq!(breaker.state(), CircuitState::Open);
    last_window.store(WINDOWS - 1, Ordering::SeqCst);

    for window in 0..WINDOWS {
        tally.reset();
        let before = runtime.block_on(service.clone().oneshot(window));
        assert!(
            is_rejection(&before),
            "window {window}: open before recovery"
        );
        tally.rejected.store(0, Ordering::SeqCst);
        clock.advance(RECOVERY);

        let answers = at_once_on_tasks(&runtime, TASKS, || {
            let (mut service, tally) = (service.clone(), tally.clone());
            async move {
                let result = service.ready().await.unwrap().call(window).await;
                if is_rejection(&result) {
                    tally.rejected.fetch_add(1, Ordering::SeqCst);
                }
                result.ok()
            }
        });
        // Exactly one request reached the downstream.
        tally.assert_one_ran(TASKS - 1, &format!("window {window}"));
        let expected = match window == WINDOWS - 1 {
            true => (CircuitState::Closed, 1),
            false => (CircuitState::Open, 0),
        };
        let succeeded = answers.iter().flatten().count();
        assert_eq!(
            (breaker.state(), succeeded),
            expected,
            "window {window}: a failed probe reopens, the last one closes"
        );
    }
}

/// A 429 response that asks for 45 s (`Outcome::OpenFor`): one opens the circuit at once,
/// and the rejections that follow say to come back then, not at the recovery timeout.
#[tokio::test]
async fn a_classifier_may_open_the_circuit_for_as_long_as_a_response_asks() {
    let clock = ManualClock::new();
    let breaker = breaker(&clock, 5, 1);
    let layer =
        CircuitBreakerLayer::new(breaker.clone()).classifier(|result: &Result<u16, BoxError>| {
            match result {
                Ok(429) => Outcome::OpenFor(Duration::from_secs(45)),
                Ok(status) if *status >= 500 => Outcome::Failure,
                Ok(_) => Outcome::Success,
                Err(_) => Outcome::Failure,
            }
        });
    let mut service = layer.layer(service_fn(|status: u16| async move {
        Ok::<_, BoxError>(status)
    }));
    let now = clock.unix_millis() / 1000;
    let throttled = service.ready().await.unwrap().call(429).await;
    assert_eq!(throttled.unwrap(), 429, "the response reaches the caller");
    assert_eq!(
        breaker.state(),
        CircuitState::Open,
        "one such response opens"
    );
    let rejected = service.ready().await.unwrap().call(200).await.unwrap_err();
    let open = rejected
        .downcast_ref::<CircuitBreakerOpenError>()
        .expect("a rejection");
    // 45 s, not the recovery timeout's 30 s.
    assert_eq!(open.retry_after_unix_secs(), Some(now + 45));
}

#[tokio::test]
async fn the_classifier_counts_responses_and_ignores_errors() {
    let clock = ManualClock::new();
    let breaker = breaker(&clock, 2, 1);
    // Status codes as responses; an error that says "404" is the caller's fault.
    let layer =
        CircuitBreakerLayer::new(breaker.clone()).classifier(|result: &Result<u16, BoxError>| {
            match result {
                Ok(status) if *status >= 500 => Outcome::Failure,
                Ok(_) => Outcome::Success,
                Err(e) if e.to_string() == "404" => Outcome::Ignored,
                Err(_) => Outcome::Failure,
            }
        });
    let mut service = layer.layer(service_fn(|status: u16| async move {
        match status {
            404 => Err::<u16, BoxError>("404".into()),
            status => Ok(status),
        }
    }));
    for status in [503, 404, 404, 200, 503, 404] {
        let answer = service.ready().await.unwrap().call(status).await;
        assert!(!is_rejection(&answer), "status {status}");
        assert_eq!(
            breaker.state(),
            CircuitState::Closed,
            "a 200 resets, a 404 changes nothing"
        );
    }
    let second_503 = service.ready().await.unwrap().call(503).await;
    assert_eq!(
        second_503.unwrap(),
        503,
        "a failing response is still returned"
    );
    assert_eq!(breaker.state(), CircuitState::Open);
    let rejected = service.ready().await.unwrap().call(200).await;
    let error = rejected.unwrap_err();
    let open = error
        .downcast_ref::<CircuitBreakerOpenError>()
        .expect("the rejection carries CircuitBreakerOpenError");
    assert_eq!(
        (&*open.circuit.name, open.circuit.state),
        ("tower", CircuitState::Open)
    );
}

/// An inner service that is not ready until told, and counts its calls.
#[derive(Clone)]
struct Gate {
    open: Arc<std::sync::atomic::AtomicBool>,
    calls: Arc<AtomicUsize>,
}

impl Service<u8> for Gate {
    type Response = u8;
    type Error = BoxError;
    type Future = std::future::Ready<Result<u8, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        match self.open.load(Ordering::SeqCst) {
            true => Poll::Ready(Ok(())),
            false => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }

    fn call(&mut self, request: u8) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Ok(request))
    }
}

#[tokio::test]
async fn readiness_holds_no_permit_and_the_probe_goes_to_a_ready_clone() {
    let clock = ManualClock::new();
    let breaker = breaker(&clock, 1, 1);
    let gate = Gate {
        open: Arc::new(true.into()),
        calls: Arc::default(),
    };
    let mut service = CircuitBreakerLayer::new(breaker.clone()).layer(gate.clone());
    let failing = CircuitBreakerLayer::new(breaker.clone()).layer(service_fn(|_: u8| async {
        Err::<u8, BoxError>("boom".into())
    }));
    assert!(failing.oneshot(0).await.is_err());
    assert_eq!(breaker.state(), CircuitState::Open);
    clock.advance(RECOVERY);

    // One clone waits for readiness while recovery is due: it holds nothing.
    gate.open.store(false, Ordering::SeqCst);
    let mut waiting = service.clone();
    let waker = std::task::Waker::noop();
    assert!(
        waiting
            .poll_ready(&mut Context::from_waker(waker))
            .is_pending()
    );
    // Another clone, ready, gets the probe and closes the circuit.
    gate.open.store(true, Ordering::SeqCst);
    let probe = service.ready().await.unwrap().call(7).await;
    assert_eq!(probe.unwrap(), 7);
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert_eq!(gate.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_cancelled_probe_frees_the_slot() {
    let clock = ManualClock::new();
    let breaker = breaker(&clock, 1, 1);
    let hangs = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let inner = {
        let hangs = hangs.clone();
        service_fn(move |n: u8| {
            let hangs = hangs.load(Ordering::SeqCst);
            async move {
                if hangs {
                    std::future::pending::<()>().await;
                }
                Ok::<u8, BoxError>(n)
            }
        })
    };
    let service = CircuitBreakerLayer::new(breaker.clone()).layer(inner);
    let failing = CircuitBreakerLayer::new(breaker.clone()).layer(service_fn(|_: u8| async {
        Err::<u8, BoxError>("boom".into())
    }));
    assert!(failing.oneshot(0).await.is_err());
    clock.advance(RECOVERY);

    // The probe hangs and its caller gives up.
    let gave_up = tokio::time::timeout(Duration::from_millis(50), service.clone().oneshot(1)).await;
    assert!(gave_up.is_err(), "the probe was still running");
    assert_eq!(breaker.state(), CircuitState::HalfOpen);
    // This environment still owns the probe's lease, and the slot was freed: the next
    // request is the probe (a held slot would reject it).
    hangs.store(false, Ordering::SeqCst);
    assert_eq!(service.clone().oneshot(3).await.unwrap(), 3);
    assert_eq!(breaker.state(), CircuitState::Closed);
}

#[tokio::test]
async fn a_panic_in_the_inner_service_counts_and_is_resumed() {
    let clock = ManualClock::new();
    let causes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = causes.clone();
    let breaker =
        breaker(&clock, 1, 1).with_on_transition(move |t| seen.lock().unwrap().push(t.cause));
    let service = CircuitBreakerLayer::new(breaker.clone()).layer(service_fn(|n: u8| async move {
        if n == 0 {
            panic!("downstream client bug");
        }
        Ok::<u8, BoxError>(n)
    }));
    let panicked = tokio::spawn(AssertUnwindSafe(service.clone().oneshot(0))).await;
    assert!(panicked.unwrap_err().is_panic(), "the panic is resumed");
    assert_eq!(breaker.state(), CircuitState::Open, "and counted");
    assert_eq!(
        *causes.lock().unwrap(),
        [Some(TransitionCause::Failures {
            kind: FailureKind::Panic,
            count: 1
        })],
        "as a panic, as the breaker's own futures count one"
    );
    assert!(is_rejection(&service.oneshot(1).await));
}

#[tokio::test]
async fn a_static_breaker_handle_shares_the_circuit() {
    static CLOCK: std::sync::LazyLock<ManualClock> = std::sync::LazyLock::new(ManualClock::new);
    static BREAKER: std::sync::LazyLock<CircuitBreaker> =
        std::sync::LazyLock::new(|| breaker(&CLOCK, 1, 1));
    let service = CircuitBreakerLayer::new(&*BREAKER).layer(service_fn(|_: u8| async {
        Err::<u8, BoxError>("boom".into())
    }));
    assert!(!is_rejection(&service.clone().oneshot(0).await));
    assert_eq!(BREAKER.state(), CircuitState::Open);
    assert!(is_rejection(&service.oneshot(0).await));
}
