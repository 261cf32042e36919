//! The future `CircuitBreaker::call` returns behaves like the `async fn` it stands for: lazy,
//! `Send`, and safe to drop at any point.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState};
use devstack::circuits::{BoxError as Error, fail, is_rejection, manual_config};

fn breaker(clock: &ManualClock, failures: u32) -> CircuitBreaker {
    let config = manual_config(clock, failures, 1, Duration::from_secs(30));
    CircuitBreaker::new("svc", Arc::new(InMemoryStore::new()), config)
}

fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

#[tokio::test]
async fn nothing_is_admitted_or_run_before_the_first_poll() {
    let clock = ManualClock::new();
    let breaker = breaker(&clock, 1);
    let entered = AtomicUsize::new(0);
    let body = || async {
        entered.fetch_add(1, Ordering::SeqCst);
        Ok::<(), Error>(())
    };

    // Created while closed, polled after the circuit opened: rejected, like an async fn.
    let created_closed = breaker.call(body);
    drop(breaker.call(body));
    assert_eq!(
        entered.load(Ordering::SeqCst),
        0,
        "a dropped future ran nothing"
    );
    assert!(fail(&breaker).await.is_err());
    assert_eq!(breaker.state(), CircuitState::Open);
    let result = created_closed.await;
    assert!(is_rejection(&result), "admitted at first poll: {result:?}");
    assert_eq!(entered.load(Ordering::SeqCst), 0);
}

#[test]
fn the_future_is_send_when_the_call_is() {
    fn assert_send<T: Send>(_: &T) {}
    let clock = ManualClock::new();
    let breaker = breaker(&clock, 1);
    let call = breaker.call(|| async { Ok::<u32, Error>(7) });
    assert_send(&call);
    let call_with = breaker.call_with(|_: &Error| true, || async { Ok::<u32, Error>(7) });
    assert_send(&call_with);
}

#[tokio::test]
async fn a_panic_while_creating_the_future_counts_and_is_resumed() {
    let clock = ManualClock::new();
    let breaker = breaker(&clock, 2);
    for _ in 0..2 {
        let b = breaker.clone();
        let joined = tokio::spawn(async move {
            b.call(|| -> std::future::Ready<Result<(), Error>> {
                panic!("building the request panicked")
            })
            .await
        })
        .await;
        assert!(joined.expect_err("the panic reaches the caller").is_panic());
    }
    assert_eq!(breaker.state(), CircuitState::Open, "both panics counted");
}

#[tokio::test]
async fn a_cancelled_probe_frees_the_slot_for_the_next_call() {
    let clock = ManualClock::new();
    let breaker = breaker(&clock, 1);
    assert!(fail(&breaker).await.is_err());
    clock.advance(Duration::from_secs(30));

    let entered = AtomicUsize::new(0);
    {
        let mut probe = pin!(breaker.call(|| async {
            entered.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<Result<(), Error>>().await
        }));
        // The election is a store call on breaker's own thread: poll until the probe runs.
        for _ in 0..1_000 {
            assert!(
                poll_once(probe.as_mut()).is_pending(),
                "the probe never ends"
            );
            if entered.load(Ordering::SeqCst) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(
            entered.load(Ordering::SeqCst),
            1,
            "the probe runs and waits"
        );
        assert_eq!(breaker.state(), CircuitState::HalfOpen);
        let other = breaker.call(|| async { Ok::<(), Error>(()) }).await;
        assert!(is_rejection(&other), "one probe at a time: {other:?}");
    } // The waiting probe is dropped: a cancelled call.

    let next = breaker
        .call(|| async {
            entered.fetch_add(1, Ordering::SeqCst);
            Ok::<(), Error>(())
        })
        .await;
    assert!(
        next.is_ok(),
        "the freed slot lets the next call probe: {next:?}"
    );
    assert_eq!(entered.load(Ordering::SeqCst), 2);
    assert_eq!(breaker.state(), CircuitState::Closed);
}

#[tokio::test]
async fn a_cancelled_closed_call_counts_as_nothing() {
    let clock = ManualClock::new();
    let breaker = breaker(&clock, 1);
    {
        let mut waiting = pin!(breaker.call(std::future::pending::<Result<(), Error>>));
        assert!(poll_once(waiting.as_mut()).is_pending());
    }
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert_eq!(breaker.info().await.failure_count, 0);
    assert!(fail(&breaker).await.is_err());
    assert_eq!(
        breaker.state(),
        CircuitState::Open,
        "the breaker still works"
    );
}

#[tokio::test]
async fn a_call_cancelled_while_its_election_is_written_leaves_the_probe_to_the_next_call() {
    use devstack::doubles::{Behaviour, ScriptedStore};
    let clock = ManualClock::new();
    let store = Arc::new(ScriptedStore::new(Behaviour::Healthy));
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .success_threshold(1)
        .recovery_timeout(Duration::from_secs(30))
        .local_cache_max_age(Duration::from_secs(5))
        .store_timeout(Duration::from_secs(600))
        .clock(clock.clone())
        .build()
        .expect("valid config");
    let breaker = CircuitBreaker::new("svc", store.clone(), config);
    assert!(fail(&breaker).await.is_err());
    clock.advance(Duration::from_secs(30));
    breaker.info().await; // a fresh cache: the next call goes straight to the election

    // The scripted store applies the election and never answers: the write landed and its
    // reply is lost, as a DynamoDB response can be. The call is cancelled meanwhile.
    store.set(Behaviour::Hanging);
    let writes = store.writes();
    {
        let mut electing = pin!(breaker.call(|| async { Ok::<(), Error>(()) }));
        for _ in 0..1_000 {
            assert!(poll_once(electing.as_mut()).is_pending());
            if store.writes() > writes {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(
            store.writes(),
            writes + 1,
            "the election write is under way"
        );
    } // Cancelled while the store holds the election.

    // The next call claims the probe slot the cancelled one held, finds its own environment
    // named as the owner, and probes.
    store.set(Behaviour::Healthy);
    let entered = AtomicUsize::new(0);
    let next = breaker
        .call(|| async {
            entered.fetch_add(1, Ordering::SeqCst);
            Ok::<(), Error>(())
        })
        .await;
    assert!(next.is_ok(), "the next call may elect and probe: {next:?}");
    assert_eq!(entered.load(Ordering::SeqCst), 1);
    assert_eq!(breaker.state(), CircuitState::Closed);
}
