//! Calls racing for one circuit: started together on threads or tasks, with a [`Tally`] of
//! what they met, and a count of the transitions the circuit committed meanwhile.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use breaker_runtime::CircuitBreaker;
use tokio::runtime::Runtime;

/// How long a held probe waits for the others at most: past it, the test's counts fail it.
const HOLD_LIMIT: Duration = Duration::from_secs(10);

/// What the racing calls met: how many ran the protected call, how many the breaker
/// turned away.
#[derive(Debug, Default)]
pub struct Tally {
    /// Calls that ran the protected call.
    pub entered: AtomicUsize,
    /// Calls the breaker rejected.
    pub rejected: AtomicUsize,
}

impl Tally {
    /// A probe's body: holds it (yielding the thread) until `others` callers were turned
    /// away, so they all overlap it.
    pub fn hold_until_rejected(&self, others: usize) {
        let deadline = Instant::now() + HOLD_LIMIT;
        while self.rejected.load(Ordering::SeqCst) < others && Instant::now() < deadline {
            std::thread::yield_now();
        }
    }

    /// [`hold_until_rejected`](Self::hold_until_rejected) in a task, yielding to the
    /// runtime.
    pub async fn hold_until_rejected_async(&self, others: usize) {
        let deadline = tokio::time::Instant::now() + HOLD_LIMIT;
        while self.rejected.load(Ordering::SeqCst) < others
            && tokio::time::Instant::now() < deadline
        {
            tokio::task::yield_now().await;
        }
    }

    /// Starts a new round from zero.
    pub fn reset(&self) {
        self.entered.store(0, Ordering::SeqCst);
        self.rejected.store(0, Ordering::SeqCst);
    }

    /// Asserts that exactly one call ran and the `others` were all rejected; `round` names
    /// the round in the failure.
    pub fn assert_one_ran(&self, others: usize, round: &str) {
        assert_eq!(
            self.entered.load(Ordering::SeqCst),
            1,
            "{round}: exactly one call ran"
        );
        assert_eq!(
            self.rejected.load(Ordering::SeqCst),
            others,
            "{round}: every other call was rejected"
        );
    }
}

/// Runs `call` on `threads` threads released together by a barrier; returns once every
/// thread has ended (a panic in one fails the caller).
pub fn at_once_on_threads(threads: usize, call: impl Fn() + Sync) {
    let start = Barrier::new(threads);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                start.wait();
                call();
            });
        }
    });
}

/// Runs the futures `task` makes as `tasks` tasks on `runtime`, released together by a
/// barrier; their outputs, once every task has ended.
pub fn at_once_on_tasks<Task, Fut>(runtime: &Runtime, tasks: usize, task: Task) -> Vec<Fut::Output>
where
    Task: Fn() -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    let start = Arc::new(tokio::sync::Barrier::new(tasks));
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let (start, call) = (Arc::clone(&start), task());
            runtime.spawn(async move {
                start.wait().await;
                call.await
            })
        })
        .collect();
    runtime.block_on(async {
        let mut outputs = Vec::with_capacity(handles.len());
        for handle in handles {
            outputs.push(handle.await.expect("task completed"));
        }
        outputs
    })
}

/// `breaker`, and how many transitions it commits from now on.
pub fn counting_transitions(breaker: CircuitBreaker) -> (CircuitBreaker, Arc<AtomicUsize>) {
    let transitions = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&transitions);
    let breaker = breaker.with_on_transition(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    (breaker, transitions)
}
