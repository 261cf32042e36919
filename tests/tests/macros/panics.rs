//! A panic in the protected body counts as a failure and is resumed unchanged.

use std::panic::{AssertUnwindSafe, catch_unwind};

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{CircuitBreakerOpenError, circuit_breaker};
use futures_like::catch_unwind_async;

#[circuit_breaker(name = "sync-panics", failure_threshold = 2, persistence_store = InMemoryStore::new())]
fn sync_panics(message: &'static str) -> Result<(), anyhow::Error> {
    panic!("{message}")
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn sync_panics_count_and_are_resumed() {
    for message in ["first", "second"] {
        let payload = catch_unwind(|| sync_panics(message)).unwrap_err();
        assert_eq!(panic_message(payload), message);
    }
    let rejected = sync_panics("third").unwrap_err();
    assert!(rejected.downcast_ref::<CircuitBreakerOpenError>().is_some());
}

#[circuit_breaker(name = "async-panics", failure_threshold = 2, persistence_store = InMemoryStore::new())]
async fn async_panics(fail: bool) -> Result<u8, anyhow::Error> {
    tokio::task::yield_now().await;
    if fail {
        panic!("async body panicked");
    }
    Ok(1)
}

#[tokio::test]
async fn async_panics_count_and_are_resumed() {
    assert_eq!(async_panics(false).await.unwrap(), 1);
    for _ in 0..2 {
        let payload = catch_unwind_async(async_panics(true)).await.unwrap_err();
        assert_eq!(panic_message(payload), "async body panicked");
    }
    let rejected = async_panics(false).await.unwrap_err();
    assert!(rejected.downcast_ref::<CircuitBreakerOpenError>().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_a_spawned_task_reaches_its_join_handle() {
    let error = tokio::spawn(async_panics(true)).await.unwrap_err();
    assert!(error.is_panic());
    assert_eq!(panic_message(error.into_panic()), "async body panicked");
}

mod futures_like {
    use std::any::Any;
    use std::future::Future;
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::pin::pin;

    /// Polls `future`, returning a panic's payload instead of unwinding.
    pub async fn catch_unwind_async<F: Future>(
        future: F,
    ) -> Result<F::Output, Box<dyn Any + Send>> {
        let mut future = pin!(future);
        std::future::poll_fn(|cx| {
            match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
                Ok(std::task::Poll::Ready(output)) => std::task::Poll::Ready(Ok(output)),
                Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
                Err(panic) => std::task::Poll::Ready(Err(panic)),
            }
        })
        .await
    }
}

#[test]
fn unwind_safety_is_not_required_of_the_arguments() {
    let mut cell = std::cell::RefCell::new(0);
    let result = catch_unwind(AssertUnwindSafe(|| takes_refcell(&mut cell)));
    assert!(result.is_ok());
    assert_eq!(*cell.borrow(), 1);
}

#[circuit_breaker(name = "refcell", persistence_store = InMemoryStore::new())]
fn takes_refcell(cell: &mut std::cell::RefCell<u32>) -> Result<(), anyhow::Error> {
    *cell.get_mut() += 1;
    Ok(())
}
