//! Time per closed-path call of breaker, recloser 1.4 and failsafe 1.3, each configured to
//! trip on 5 consecutive failures, in a loop of [`CALLS`] successful calls, the three taking
//! turns; [`ROUNDS`] rounds, the median of each. Sync (`call_blocking`, `call`) and async
//! (each library's call future, polled once inline with a no-op waker: no executor).
//!
//! No `#[inline(never)]` around the calls: the loop is the user's code, and whatever the
//! build inlines across crates is what a user gets. Usage: `cargo run --release`, with
//! `CARGO_PROFILE_RELEASE_*` for another profile (see `make bench`).

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{
    CallAbandonedError, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError,
};

const CALLS: u32 = 3_000_000;
const ROUNDS: usize = 7;

/// The calls' error type, as a user's would be.
#[derive(Debug)]
struct Failure;

impl From<CircuitBreakerOpenError> for Failure {
    fn from(_: CircuitBreakerOpenError) -> Self {
        Failure
    }
}

impl From<CallAbandonedError> for Failure {
    fn from(_: CallAbandonedError) -> Self {
        Failure
    }
}

fn main() {
    // An hour's recovery and cache: neither ends during a run.
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(5)
        .recovery_timeout(Duration::from_secs(3600))
        .local_cache_max_age(Duration::from_secs(3600))
        .build()
        .expect("a valid config");
    let breaker = CircuitBreaker::new("bench", Arc::new(InMemoryStore::new()), config);
    let _: Result<(), Failure> = breaker.call_blocking(|| Ok(()));
    let backoff = failsafe::backoff::constant(Duration::from_secs(3600));
    let failsafe = failsafe::Config::new()
        .failure_policy(failsafe::failure_policy::consecutive_failures(5, backoff))
        .build();
    // A ring buffer of 5 at error rate 1.0: 5 consecutive failures.
    let recloser = || {
        recloser::Recloser::custom()
            .error_rate(1.0)
            .closed_len(5)
            .half_open_len(3)
            .open_wait(Duration::from_secs(3600))
            .build()
    };
    let (sync_recloser, async_recloser) = (recloser(), recloser::AsyncRecloser::from(recloser()));

    println!("closed path, ns per call (median of {ROUNDS} rounds of {CALLS} calls)");
    println!(
        "{:<6} {:>9} {:>13} {:>13} {:>24}",
        "", "breaker", "recloser 1.4", "failsafe 1.3", "breaker / fastest peer"
    );
    let sync = measure(
        || {
            let _ = black_box(breaker.call_blocking(|| Ok::<u64, Failure>(black_box(7))));
        },
        || {
            let _ = black_box(sync_recloser.call(|| Ok::<u64, Failure>(black_box(7))));
        },
        || {
            use failsafe::CircuitBreaker as _;
            let _ = black_box(failsafe.call(|| Ok::<u64, Failure>(black_box(7))));
        },
    );
    report("sync", sync);
    let asynchronous = measure(
        || {
            let _ = black_box(ready(
                breaker.call(|| async { Ok::<u64, Failure>(black_box(7)) }),
            ));
        },
        || {
            let _ = black_box(ready(
                async_recloser.call(async { Ok::<u64, Failure>(black_box(7)) }),
            ));
        },
        || {
            use failsafe::futures::CircuitBreaker as _;
            let _ = black_box(ready(
                failsafe.call(async { Ok::<u64, Failure>(black_box(7)) }),
            ));
        },
    );
    report("async", asynchronous);
}

fn report(kind: &str, [breaker, recloser, failsafe]: [f64; 3]) {
    println!(
        "{kind:<6} {breaker:>9.2} {recloser:>13.2} {failsafe:>13.2} {:>24.2}",
        breaker / recloser.min(failsafe)
    );
}

/// The median time per call of breaker, recloser and failsafe over [`ROUNDS`] rounds, the
/// three taking turns in each round.
fn measure(breaker: impl Fn(), recloser: impl Fn(), failsafe: impl Fn()) -> [f64; 3] {
    let mut samples = [const { Vec::new() }; 3];
    for _ in 0..ROUNDS {
        samples[0].push(time(&breaker));
        samples[1].push(time(&recloser));
        samples[2].push(time(&failsafe));
    }
    samples.map(|mut s| {
        s.sort_by(f64::total_cmp);
        s[s.len() / 2]
    })
}

/// Nanoseconds per call of [`CALLS`] calls.
fn time(call: &impl Fn()) -> f64 {
    let start = Instant::now();
    for _ in 0..CALLS {
        call();
    }
    start.elapsed().as_nanos() as f64 / f64::from(CALLS)
}

/// Polls a future that completes without waiting, inline, with a no-op waker.
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the measured future must not wait"),
    }
}
