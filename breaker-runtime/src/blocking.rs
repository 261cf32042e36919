//! Drives the breaker's own futures to completion from synchronous code, inside or
//! outside a tokio runtime, without `Runtime::block_on` (which panics inside a runtime).
//! The futures only wait on the store runtime, so parking this thread cannot deadlock.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

use tokio::runtime::{Handle, RuntimeFlavor};

struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

fn park_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}

/// Runs `future` to completion on this thread. On a multi-thread runtime's worker it tells
/// tokio first (`block_in_place`), so the worker's other tasks move elsewhere meanwhile.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| park_on(future))
        }
        _ => park_on(future),
    }
}
