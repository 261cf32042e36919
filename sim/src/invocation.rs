//! One invocation in flight: the guarded async call of a simulated handler, polled at
//! virtual instants, and the downstream it calls.
//!
//! The downstream is a future this module controls: its first poll (the breaker admitted
//! the call) records the instant; the fleet loop then draws its answer from the
//! [`Downstream`] and the future completes when the loop polls it at or after that
//! instant. A hanging downstream never answers: the call ends at its abandonment (call
//! timeout, or the invocation deadline minus the breaker's margin) or, if the breaker does
//! not abandon it, at the function timeout, when Lambda kills the invocation.
//!
//! Polling waits for what runs on other threads (the breaker's store runtime answers at
//! once from the model) and returns as soon as the call waits for virtual time only.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Duration;

use breaker_runtime::{
    CallAbandonedError, CircuitBreaker, CircuitBreakerOpenError, CircuitState, Outcome, StopReason,
};

use crate::downstream::{Downstream, DownstreamError, Health, Reply};
use crate::env_store::SharedTable;
use crate::metrics::Call;
use crate::scenario::Scenario;

/// What a simulated handler's call returns as an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallError {
    /// The breaker rejected the call; `shed`: its adaptive policy shed it.
    Open {
        /// Shed by the adaptive policy ([`StopReason::Shed`]), not rejected by an open
        /// circuit.
        shed: bool,
    },
    /// The breaker abandoned the call at its deadline (counted as a failure).
    Abandoned,
    /// The downstream failed it: counts as a failure. A throttling answer carries how long
    /// it said to wait before calling again, ms.
    Downstream {
        /// The answer's "retry after", ms; `None`: no hint.
        retry_after_ms: Option<u64>,
        /// A load shed: the downstream was past its capacity.
        load_shed: bool,
    },
    /// Lambda killed the invocation at its function timeout.
    Killed,
}

impl From<CircuitBreakerOpenError> for CallError {
    fn from(error: CircuitBreakerOpenError) -> Self {
        Self::Open {
            shed: error.reason() == StopReason::Shed,
        }
    }
}

impl From<CallAbandonedError> for CallError {
    fn from(_: CallAbandonedError) -> Self {
        Self::Abandoned
    }
}

impl From<DownstreamError> for CallError {
    fn from(e: DownstreamError) -> Self {
        Self::Downstream {
            retry_after_ms: e.retry_after_ms,
            load_shed: e.load_shed,
        }
    }
}

impl CallError {
    /// The downstream's "retry after" hint, ms, if the error carries one.
    pub fn retry_after_ms(&self) -> Option<u64> {
        match self {
            Self::Downstream { retry_after_ms, .. } => *retry_after_ms,
            Self::Open { .. } | Self::Abandoned | Self::Killed => None,
        }
    }
}

/// How the breaker judges a call's error: the downstream's failures count, its own
/// rejections and abandonments are counted by the breaker itself.
///
/// The handler's error test, as a user writes it: a downstream failure counts, and one that
/// carries a retry-after ([`CallError::retry_after_ms`]) asks the circuit to stay open that
/// long (`Outcome::OpenFor`), and a load shed says the downstream is busy
/// (`Outcome::Overloaded`); the breaker's own errors are not the downstream's.
fn counts_as_failure(error: &CallError) -> Outcome {
    match error {
        CallError::Downstream {
            retry_after_ms: Some(ms),
            ..
        } => Outcome::OpenFor(Duration::from_millis(*ms)),
        CallError::Downstream {
            load_shed: true, ..
        } => Outcome::Overloaded,
        CallError::Downstream { .. } => Outcome::Failure,
        _ => Outcome::Ignored,
    }
}

/// The downstream's answer to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Not admitted yet, or admitted in the poll that just ran.
    NotYet,
    /// At this virtual ms, succeeded or failed.
    At(u64, Result<(), DownstreamError>),
    /// A hanging downstream: never.
    Never,
}

/// What the loop and the downstream future share.
#[derive(Debug)]
struct Slot {
    /// Virtual ms of the poll that admitted the call.
    admitted_ms: Cell<Option<u64>>,
    /// The loop's virtual now, set before each poll.
    now_ms: Cell<u64>,
    /// The breaker ran the call as a probe.
    probe: Cell<bool>,
    answer: Cell<Answer>,
    /// The downstream future is alive and waiting for its answer.
    waiting: Cell<bool>,
}

/// The downstream call, as the breaker runs it.
#[derive(Debug)]
struct DownstreamCall {
    slot: Rc<Slot>,
}

impl Future for DownstreamCall {
    type Output = Result<(), CallError>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        let slot = &self.slot;
        if slot.admitted_ms.get().is_none() {
            slot.admitted_ms.set(Some(slot.now_ms.get()));
        }
        match slot.answer.get() {
            Answer::At(at, result) if at <= slot.now_ms.get() => {
                slot.waiting.set(false);
                Poll::Ready(result.map_err(CallError::from))
            }
            _ => {
                slot.waiting.set(true);
                Poll::Pending
            }
        }
    }
}

impl Drop for DownstreamCall {
    fn drop(&mut self) {
        self.slot.waiting.set(false);
    }
}

/// Wakes the loop's thread when the breaker's store runtime has answered.
#[derive(Debug)]
struct Wakeup {
    woken: AtomicBool,
    thread: Thread,
}

impl Wake for Wakeup {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

impl Wakeup {
    fn wait(&self) {
        let started = std::time::Instant::now();
        while !self.woken.swap(false, Ordering::AcqRel) {
            std::thread::park_timeout(Duration::from_millis(100));
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "a call waited 30 s of real time on the store runtime"
            );
        }
    }
}

/// How a poll left the invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polled {
    /// Waiting for virtual time: poll again at this ms (`u64::MAX`: never).
    Waiting {
        /// When.
        until_ms: u64,
    },
    /// The call returned.
    Done(Result<(), CallError>),
    /// The function timeout passed: Lambda ended the invocation.
    Killed,
}

/// One invocation in flight.
pub struct Flight {
    call: Pin<Box<dyn Future<Output = Result<(), CallError>>>>,
    slot: Rc<Slot>,
    waker: Waker,
    wakeup: Arc<Wakeup>,
    start_ms: u64,
    /// The function timeout's instant, if the scenario has one.
    kill_at_ms: Option<u64>,
    /// When the breaker abandons a call still running, measured from its admission.
    call_timeout_ms: Option<u64>,
    /// The invocation deadline minus the breaker's margin, if the handler passes it on.
    deadline_abandon_ms: Option<u64>,
    /// Store latency of the last poll: it delays what follows that poll.
    last_poll_latency_ms: u64,
    /// Store latency before the downstream was called.
    latency_before_admission_ms: u64,
    /// The downstream was unhealthy (down, hanging or throttling) when the call was
    /// admitted.
    unhealthy: bool,
    /// The call's downstream follows the scenario's health schedule; otherwise (a healthy
    /// key's) it is always up.
    follows_schedule: bool,
}

impl std::fmt::Debug for Flight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flight")
            .field("start_ms", &self.start_ms)
            .field("slot", &self.slot)
            .finish_non_exhaustive()
    }
}

impl Flight {
    /// Starts an invocation at virtual `now` (unix time `epoch_ms + now + skew` on the
    /// environment's clock) that calls the downstream through `breaker`; a downstream that
    /// `follows_schedule` is as healthy as the scenario says, another one always up.
    pub fn start(
        breaker: &CircuitBreaker,
        scenario: &Scenario,
        now: u64,
        (epoch_ms, skew_ms): (u64, i64),
        follows_schedule: bool,
    ) -> Self {
        let slot = Rc::new(Slot {
            admitted_ms: Cell::new(None),
            now_ms: Cell::new(now),
            probe: Cell::new(false),
            answer: Cell::new(Answer::NotYet),
            waiting: Cell::new(false),
        });
        let b = breaker.clone();
        let downstream_slot = Rc::clone(&slot);
        let guarded = async move {
            b.call_with(counts_as_failure, || {
                // Only probes run while an environment does not believe the circuit
                // closed.
                downstream_slot.probe.set(b.state() != CircuitState::Closed);
                DownstreamCall {
                    slot: downstream_slot,
                }
            })
            .await
        };
        let kill_at_ms = scenario.function_timeout_ms.map(|t| now + t);
        let call: Pin<Box<dyn Future<Output = Result<(), CallError>>>> =
            match (scenario.function_timeout_ms, scenario.deadline_aware) {
                (Some(timeout), true) => {
                    let deadline = epoch_ms
                        .saturating_add_signed(now as i64 + skew_ms)
                        .saturating_add(timeout);
                    Box::pin(breaker_runtime::deadline::scope(deadline, guarded))
                }
                _ => Box::pin(guarded),
            };
        let margin_ms = scenario.breaker.deadline_margin.as_millis() as u64;
        let wakeup = Arc::new(Wakeup {
            woken: AtomicBool::new(false),
            thread: std::thread::current(),
        });
        Self {
            call,
            slot,
            waker: Waker::from(Arc::clone(&wakeup)),
            wakeup,
            start_ms: now,
            kill_at_ms,
            call_timeout_ms: scenario.breaker.call_timeout.map(|t| t.as_millis() as u64),
            deadline_abandon_ms: match (scenario.function_timeout_ms, scenario.deadline_aware) {
                (Some(timeout), true) => Some((now + timeout).saturating_sub(margin_ms)),
                _ => None,
            },
            last_poll_latency_ms: 0,
            latency_before_admission_ms: 0,
            unhealthy: false,
            follows_schedule,
        }
    }

    /// Polls the call at virtual `now`; a call admitted by this poll gets its answer from
    /// `downstream`.
    pub fn poll(&mut self, now: u64, downstream: &mut Downstream, table: &SharedTable) -> Polled {
        if self.kill_at_ms.is_some_and(|kill| now >= kill) {
            return Polled::Killed;
        }
        self.slot.now_ms.set(now);
        let mut cx = Context::from_waker(&self.waker);
        loop {
            match self.call.as_mut().poll(&mut cx) {
                Poll::Ready(result) => {
                    self.last_poll_latency_ms = table.pending_latency_ms();
                    return Polled::Done(result);
                }
                Poll::Pending if self.slot.waiting.get() => break,
                Poll::Pending => self.wakeup.wait(),
            }
        }
        self.last_poll_latency_ms = table.pending_latency_ms();
        if self.slot.answer.get() == Answer::NotYet
            && let Some(admitted) = self.slot.admitted_ms.get()
        {
            self.latency_before_admission_ms += self.last_poll_latency_ms;
            let at = admitted + self.latency_before_admission_ms;
            let (health, reply) = match self.follows_schedule {
                true => (downstream.schedule().at(at), downstream.call(at)),
                false => {
                    let latency_ms = downstream.latency_ms();
                    (
                        Health::Up,
                        Some(Reply {
                            result: Ok(()),
                            latency_ms,
                        }),
                    )
                }
            };
            self.unhealthy = matches!(
                health,
                Health::Down | Health::Hang | Health::Throttling { .. }
            );
            self.slot.answer.set(match reply {
                None => Answer::Never,
                Some(reply) => Answer::At(at + reply.latency_ms, reply.result),
            });
        }
        Polled::Waiting {
            until_ms: self.next_instant(),
        }
    }

    /// The earliest instant something can happen to the call.
    fn next_instant(&self) -> u64 {
        let mut next = self.kill_at_ms.unwrap_or(u64::MAX);
        if let Answer::At(at, _) = self.slot.answer.get() {
            next = next.min(at);
        }
        if let Some(admitted) = self.slot.admitted_ms.get() {
            if let Some(timeout) = self.call_timeout_ms {
                next = next.min(admitted + timeout);
            }
            if let Some(abandon) = self.deadline_abandon_ms {
                next = next.min(abandon);
            }
        }
        next
    }

    /// When a call that returned at virtual `now` ends: after the store latency of its
    /// last poll.
    pub fn end_ms(&self, now: u64) -> u64 {
        now + self.last_poll_latency_ms
    }

    /// A probe's downstream call, from its admission to the downstream's answer or, if it
    /// had none by then, the poll at `decided_ms` that ended it. (A call's own end comes
    /// one store latency later; the breaker frees its probe slot before that, since the
    /// model answers at once.)
    pub fn probe_at_downstream(&self, decided_ms: u64) -> Option<(u64, u64)> {
        let admitted = self.slot.admitted_ms.get()? + self.latency_before_admission_ms;
        let end = match self.slot.answer.get() {
            Answer::At(at, _) => at.min(decided_ms),
            Answer::NotYet | Answer::Never => decided_ms,
        };
        self.slot
            .probe
            .get()
            .then_some((admitted, end.max(admitted)))
    }

    /// The call as the metrics see it, decided at the poll at `decided_ms` and ended at
    /// `end_ms` with `result`.
    pub fn call(
        &self,
        env: u32,
        decided_ms: u64,
        end_ms: u64,
        result: Result<(), CallError>,
    ) -> Call {
        let admitted = self
            .slot
            .admitted_ms
            .get()
            .map(|at| at + self.latency_before_admission_ms);
        Call {
            env,
            start_ms: self.start_ms,
            decided_ms,
            end_ms,
            admitted: admitted.is_some(),
            probe: admitted
                .filter(|_| self.slot.probe.get())
                .map(|at| (at, end_ms)),
            failed: admitted.is_some() && result.is_err(),
            abandoned: result == Err(CallError::Abandoned),
            killed: result == Err(CallError::Killed),
            unhealthy: self.unhealthy,
            retry_after_ms: result.err().and_then(|e| e.retry_after_ms()),
            shed: result == Err(CallError::Open { shed: true }),
        }
    }
}
