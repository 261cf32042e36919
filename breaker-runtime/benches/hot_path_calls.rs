//! Runs one hot-path operation N times, for counting its instructions under callgrind:
//! a count does not move with the timing noise of a shared machine.
//!
//! `scripts/count-instructions.sh` builds this with the bench profile and reports
//! instructions per call (the difference between 2·N and N calls, divided by N). By hand:
//!
//! ```sh
//! cargo bench -p breaker-runtime --bench hot_path_calls -- breaker-async 100000
//! cargo bench -p breaker-runtime --bench hot_path_calls -- macro-async 100000 dyn
//! ```
//!
//! A bench target of its own (no criterion): `cargo build --all-targets` builds it, and a
//! plain `cargo bench`, which passes it nothing but `--bench`, only gets this usage back.
//!
//! Every breaker is configured as in `hot_path.rs` (the `support` module); each call is one
//! `#[inline(never)]` fn, so every operation pays the same call boundary, and the guarded
//! fn and its hand-written twin are `#[inline(never)]` too.

use std::hint::black_box;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use breaker_runtime::CircuitBreaker;
use breaker_runtime::store::InMemoryStore;

mod support;

use support::{Failure, config, failsafe_breaker, policy_config, ready, recloser_breaker, warmed};

#[breaker_runtime::circuit_breaker(name = "count-sync", config = config(), persistence_store = InMemoryStore::new())]
#[inline(never)]
fn guarded_sync(n: u64) -> Result<u64, Failure> {
    Ok(n)
}

#[breaker_runtime::circuit_breaker(name = "count-async", config = config(), persistence_store = InMemoryStore::new())]
async fn guarded_async(n: u64) -> Result<u64, Failure> {
    Ok(n)
}

/// What a user would write by hand instead of the attribute: a circuit in a `static`.
static HAND_WRITTEN: LazyLock<CircuitBreaker> =
    LazyLock::new(|| CircuitBreaker::new("count-hand", Arc::new(InMemoryStore::new()), config()));

#[inline(never)]
fn hand_written_sync(n: u64) -> Result<u64, Failure> {
    HAND_WRITTEN.call_blocking(|| Ok(n))
}

async fn hand_written_async(n: u64) -> Result<u64, Failure> {
    HAND_WRITTEN.call(|| async move { Ok(n) }).await
}

const OPERATIONS: &str = "baseline, breaker-sync, breaker-async, failsafe-sync, failsafe-async, \
     recloser-sync, recloser-async, macro-sync, macro-async, hand-written-sync, \
     hand-written-async, rate-calls-sync, rate-calls-async, rate-time-sync, rate-time-async, \
     slow-calls-sync, slow-calls-async, adaptive-sync, adaptive-async, service-call-async, \
     layer-async, layer-static-async (the last three with feature tower), durations-sync, \
     durations-async (with feature metrics)";

fn main() {
    // `cargo bench` passes `--bench` ahead of the arguments given after `--`; given none,
    // there is nothing to count.
    let mut args = std::env::args()
        .skip(1)
        .filter(|arg| arg != "--bench")
        .peekable();
    if args.peek().is_none() {
        println!("counted under callgrind by scripts/count-instructions.sh; by hand:");
        println!("hot_path_calls OPERATION CALLS [dyn]\noperations: {OPERATIONS}");
        return;
    }
    let (Some(operation), Some(Ok(calls))) = (args.next(), args.next().map(|n| n.parse::<u64>()))
    else {
        eprintln!("usage: hot_path_calls OPERATION CALLS [dyn]\noperations: {OPERATIONS}");
        std::process::exit(2);
    };
    let through_dyn = args.next().as_deref() == Some("dyn");

    // Every cache warm (the first call reads the store) before the counted calls. With
    // feature `metrics`, the breaker counts into metrics-util's `DebuggingRecorder`.
    #[cfg(feature = "metrics")]
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    #[cfg(feature = "metrics")]
    let (breaker, timed) = (
        support::counted("count", config(), &recorder),
        support::counted("count-timed", support::timed_config(), &recorder),
    );
    #[cfg(not(feature = "metrics"))]
    let breaker = warmed("count", config());
    let failsafe = failsafe_breaker();
    let (sync_recloser, async_recloser) = (
        recloser_breaker(),
        recloser::AsyncRecloser::from(recloser_breaker()),
    );
    let _ = guarded_sync(0);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let _ = runtime.block_on(guarded_async(0));
    let _ = hand_written_sync(0);
    let rate_calls = warmed("count-rate-calls", policy_config(|b| b.failure_rate(50)));
    let rate_time = warmed(
        "count-rate-time",
        policy_config(|b| {
            b.failure_rate(50)
                .sliding_window(breaker_runtime::SlidingWindow::Time(Duration::from_secs(
                    60,
                )))
        }),
    );
    let slow_calls = warmed(
        "count-slow-calls",
        policy_config(|b| b.slow_calls(Duration::from_secs(5), 50)),
    );
    let adaptive = warmed(
        "count-adaptive",
        policy_config(|b| b.adaptive(breaker_runtime::AdaptivePolicy::default())),
    );
    #[cfg(feature = "tower")]
    let layers = tower_rows::Layers::new(&breaker);

    let call: Box<dyn Fn()> = match (operation.as_str(), through_dyn) {
        ("baseline", _) => Box::new(baseline),
        ("breaker-sync", _) => Box::new(|| breaker_sync(&breaker)),
        ("failsafe-sync", _) => Box::new(|| failsafe_sync(&failsafe)),
        ("recloser-sync", _) => Box::new(|| recloser_sync(&sync_recloser)),
        ("macro-sync", _) => Box::new(macro_sync),
        ("hand-written-sync", _) => Box::new(hand_sync),
        ("breaker-async", false) => Box::new(|| breaker_async::<false>(&breaker)),
        ("breaker-async", true) => Box::new(|| breaker_async::<true>(&breaker)),
        ("failsafe-async", false) => Box::new(|| failsafe_async::<false>(&failsafe)),
        ("failsafe-async", true) => Box::new(|| failsafe_async::<true>(&failsafe)),
        ("recloser-async", false) => Box::new(|| recloser_async::<false>(&async_recloser)),
        ("recloser-async", true) => Box::new(|| recloser_async::<true>(&async_recloser)),
        ("macro-async", false) => Box::new(macro_async::<false>),
        ("macro-async", true) => Box::new(macro_async::<true>),
        ("hand-written-async", false) => Box::new(hand_async::<false>),
        ("hand-written-async", true) => Box::new(hand_async::<true>),
        ("rate-calls-sync", _) => Box::new(|| breaker_sync(&rate_calls)),
        ("rate-calls-async", false) => Box::new(|| breaker_async::<false>(&rate_calls)),
        ("rate-calls-async", true) => Box::new(|| breaker_async::<true>(&rate_calls)),
        ("rate-time-sync", _) => Box::new(|| breaker_sync(&rate_time)),
        ("rate-time-async", false) => Box::new(|| breaker_async::<false>(&rate_time)),
        ("rate-time-async", true) => Box::new(|| breaker_async::<true>(&rate_time)),
        ("slow-calls-sync", _) => Box::new(|| breaker_sync(&slow_calls)),
        ("slow-calls-async", false) => Box::new(|| breaker_async::<false>(&slow_calls)),
        ("slow-calls-async", true) => Box::new(|| breaker_async::<true>(&slow_calls)),
        ("adaptive-sync", _) => Box::new(|| breaker_sync(&adaptive)),
        ("adaptive-async", false) => Box::new(|| breaker_async::<false>(&adaptive)),
        ("adaptive-async", true) => Box::new(|| breaker_async::<true>(&adaptive)),
        #[cfg(feature = "metrics")]
        ("durations-sync", _) => Box::new(|| breaker_sync(&timed)),
        #[cfg(feature = "metrics")]
        ("durations-async", false) => Box::new(|| breaker_async::<false>(&timed)),
        #[cfg(feature = "metrics")]
        ("durations-async", true) => Box::new(|| breaker_async::<true>(&timed)),
        #[cfg(feature = "tower")]
        (row @ ("service-call-async" | "layer-async" | "layer-static-async"), through_dyn) => {
            layers.row(row, through_dyn)
        }
        (other, _) => {
            eprintln!("unknown operation {other:?}; operations: {OPERATIONS}");
            std::process::exit(2);
        }
    };
    for _ in 0..calls {
        call();
    }
}

/// The tower rows: a ready service answering at once, its future run through
/// `CircuitBreaker::call`, and the same service behind the layer (each breaker handle).
#[cfg(feature = "tower")]
mod tower_rows {
    use std::cell::RefCell;

    use breaker_runtime::tower::{BoxError, CircuitBreakerLayer, CircuitBreakerService};
    use tower::util::ServiceFn;
    use tower::{Layer, Service, service_fn};

    use super::*;

    type Answer = fn(u64) -> std::future::Ready<Result<u64, BoxError>>;

    fn answer(n: u64) -> std::future::Ready<Result<u64, BoxError>> {
        std::future::ready(Ok(n))
    }

    static STATIC_BREAKER: LazyLock<CircuitBreaker> = LazyLock::new(|| {
        CircuitBreaker::new("count-static", Arc::new(InMemoryStore::new()), config())
    });

    pub(super) struct Layers<'a> {
        breaker: &'a CircuitBreaker,
        service: RefCell<ServiceFn<Answer>>,
        layered: RefCell<CircuitBreakerService<ServiceFn<Answer>>>,
        static_layered: RefCell<
            CircuitBreakerService<
                ServiceFn<Answer>,
                breaker_runtime::tower::EveryError,
                &'static CircuitBreaker,
            >,
        >,
    }

    impl<'a> Layers<'a> {
        pub(super) fn new(breaker: &'a CircuitBreaker) -> Self {
            let _: Result<(), Failure> = STATIC_BREAKER.call_blocking(|| Ok(()));
            let service = || service_fn(answer as Answer);
            Self {
                breaker,
                service: RefCell::new(service()),
                layered: RefCell::new(CircuitBreakerLayer::new(breaker.clone()).layer(service())),
                static_layered: RefCell::new(
                    CircuitBreakerLayer::new(&*STATIC_BREAKER).layer(service()),
                ),
            }
        }

        pub(super) fn row(&'a self, row: &str, through_dyn: bool) -> Box<dyn Fn() + 'a> {
            match (row, through_dyn) {
                ("service-call-async", false) => Box::new(|| self.service_call::<false>()),
                ("service-call-async", true) => Box::new(|| self.service_call::<true>()),
                ("layer-async", false) => Box::new(|| serve::<false, _>(&self.layered)),
                ("layer-async", true) => Box::new(|| serve::<true, _>(&self.layered)),
                (_, false) => Box::new(|| serve::<false, _>(&self.static_layered)),
                (_, true) => Box::new(|| serve::<true, _>(&self.static_layered)),
            }
        }

        #[inline(never)]
        fn service_call<const DYN: bool>(&self) {
            let mut service = self.service.borrow_mut();
            let _ = black_box(ready::<DYN, _>(
                self.breaker.call(|| service.call(black_box(7))),
            ));
        }
    }

    #[inline(never)]
    fn serve<const DYN: bool, S: Service<u64>>(service: &RefCell<S>) {
        let mut service = service.borrow_mut();
        let _ = black_box(ready::<DYN, _>(service.call(black_box(7))).is_ok());
    }
}

#[inline(never)]
fn baseline() {
    let _ = black_box(Ok::<u64, Failure>(black_box(7)));
}

#[inline(never)]
fn breaker_sync(breaker: &CircuitBreaker) {
    let _ = black_box(breaker.call_blocking(|| Ok::<u64, Failure>(black_box(7))));
}

#[inline(never)]
fn breaker_async<const DYN: bool>(breaker: &CircuitBreaker) {
    let _ = black_box(ready::<DYN, _>(
        breaker.call(|| async { Ok::<u64, Failure>(black_box(7)) }),
    ));
}

#[inline(never)]
fn failsafe_sync(breaker: &impl failsafe::CircuitBreaker) {
    let _ = black_box(breaker.call(|| Ok::<u64, Failure>(black_box(7))));
}

#[inline(never)]
fn failsafe_async<const DYN: bool>(breaker: &impl failsafe::futures::CircuitBreaker) {
    let _ = black_box(ready::<DYN, _>(
        breaker.call(async { Ok::<u64, Failure>(black_box(7)) }),
    ));
}

#[inline(never)]
fn recloser_sync(breaker: &recloser::Recloser) {
    let _ = black_box(breaker.call(|| Ok::<u64, Failure>(black_box(7))));
}

#[inline(never)]
fn recloser_async<const DYN: bool>(breaker: &recloser::AsyncRecloser) {
    let _ = black_box(ready::<DYN, _>(
        breaker.call(async { Ok::<u64, Failure>(black_box(7)) }),
    ));
}

#[inline(never)]
fn macro_sync() {
    let _ = black_box(guarded_sync(black_box(7)));
}

#[inline(never)]
fn macro_async<const DYN: bool>() {
    let _ = black_box(ready::<DYN, _>(guarded_async(black_box(7))));
}

#[inline(never)]
fn hand_sync() {
    let _ = black_box(hand_written_sync(black_box(7)));
}

#[inline(never)]
fn hand_async<const DYN: bool>() {
    let _ = black_box(ready::<DYN, _>(hand_written_async(black_box(7))));
}
