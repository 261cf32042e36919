//! breaker's closed and open paths against recloser 1.4 and failsafe 1.3, each configured
//! to trip on 5 consecutive failures, built as a user's crate is (see `Cargo.toml`).
//!
//! - No argument: the time per call. A loop of [`CALLS`] successful calls of each library,
//!   the three taking turns, [`ROUNDS`] rounds, the median of each. Sync (`call_blocking`,
//!   `call`) and async (each library's call future, polled once inline with a no-op waker:
//!   no executor). Then the open path: the same loop of calls each library rejects, its
//!   rejection kept in the error (breaker's with its `CircuitInfo`).
//! - `OPERATION CALLS`: that one loop, CALLS times, and nothing else, for callgrind
//!   (`scripts/count-instructions.sh` counts instructions per call from two such runs).
//!
//! No `#[inline(never)]` around the calls: the loop is the user's code, and whatever the
//! build inlines across crates is what a user gets. Each call's value goes in and comes out
//! through `black_box`, so the optimiser can neither fold the call nor drop its result.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use breaker_runtime::{CallAbandonedError, CircuitBreaker, CircuitBreakerOpenError};
use failsafe::backoff::Constant;
use failsafe::failure_policy::ConsecutiveFailures;

/// The calls' error type and the one-poll executor, the same as the workspace's hot-path
/// benches and allocation test use.
#[path = "../../breaker-runtime/benches/support/calls.rs"]
mod calls;
/// The three breakers, configured as in the workspace's hot-path benches.
#[path = "../../breaker-runtime/benches/support/peers.rs"]
mod peers;

use calls::{Failure, ready};
use peers::{config, failsafe_breaker, recloser_breaker, warmed};

const CALLS: u32 = 3_000_000;
const ROUNDS: usize = 7;

/// The operations, as named on the command line: one library's closed-path call, or
/// `baseline`, the guarded closure alone; `*-open-*`: a call its tripped breaker rejects.
const OPERATIONS: [&str; 11] = [
    "baseline",
    "breaker-sync",
    "recloser-sync",
    "failsafe-sync",
    "breaker-async",
    "recloser-async",
    "failsafe-async",
    "breaker-open-sync",
    "recloser-open-sync",
    "failsafe-open-sync",
    "breaker-open-async",
];

/// An error that keeps breaker's rejection, as a user's error type that reports it would.
#[derive(Debug)]
#[allow(dead_code, reason = "kept, not read: what the measured rejection builds")]
enum Kept {
    Open(CircuitBreakerOpenError),
    Abandoned(CallAbandonedError),
    Failure,
}

impl From<CallAbandonedError> for Kept {
    fn from(abandoned: CallAbandonedError) -> Self {
        Kept::Abandoned(abandoned)
    }
}

impl From<CircuitBreakerOpenError> for Kept {
    fn from(open: CircuitBreakerOpenError) -> Self {
        Kept::Open(open)
    }
}

/// The three libraries' breakers, each tripping on 5 consecutive failures and never
/// recovering during a run.
struct Breakers {
    breaker: CircuitBreaker,
    recloser: recloser::Recloser,
    async_recloser: recloser::AsyncRecloser,
    failsafe: failsafe::StateMachine<ConsecutiveFailures<Constant>, ()>,
    /// The same breakers, tripped.
    open: Tripped,
}

struct Tripped {
    breaker: CircuitBreaker,
    recloser: recloser::Recloser,
    failsafe: failsafe::StateMachine<ConsecutiveFailures<Constant>, ()>,
}

impl Tripped {
    /// Each library's breaker after the failures that trip it; asserts each rejects.
    fn new() -> Self {
        use failsafe::CircuitBreaker as _;
        let tripped = Self {
            breaker: warmed("bench-open", config()),
            recloser: recloser_breaker(),
            failsafe: failsafe_breaker(),
        };
        for _ in 0..6 {
            let _ = tripped.breaker.call_blocking(|| Err::<(), Kept>(Kept::Failure));
            let _ = tripped.recloser.call(|| Err::<(), Failure>(Failure));
            let _ = tripped.failsafe.call(|| Err::<(), Failure>(Failure));
        }
        let open = tripped.breaker.call_blocking(|| Ok::<(), Kept>(()));
        assert!(matches!(open, Err(Kept::Open(_))), "breaker rejects");
        let open = tripped.recloser.call(|| Ok::<(), Failure>(()));
        assert!(matches!(open, Err(recloser::Error::Rejected)), "recloser rejects");
        let open = tripped.failsafe.call(|| Ok::<(), Failure>(()));
        assert!(matches!(open, Err(failsafe::Error::Rejected)), "failsafe rejects");
        tripped
    }
}

impl Breakers {
    fn new() -> Self {
        Self {
            breaker: warmed("bench", config()),
            recloser: recloser_breaker(),
            async_recloser: recloser::AsyncRecloser::from(recloser_breaker()),
            failsafe: failsafe_breaker(),
            open: Tripped::new(),
        }
    }

    /// Hands `run` the call of `operation` (one of [`OPERATIONS`]); false if it is none.
    fn with<R: Run>(&self, operation: &str, run: &mut R) -> bool {
        match operation {
            "baseline" => run.run(|| {
                let _ = black_box(Ok::<u64, Failure>(black_box(7)));
            }),
            "breaker-sync" => run.run(|| {
                let _ = black_box(
                    self.breaker
                        .call_blocking(|| Ok::<u64, Failure>(black_box(7))),
                );
            }),
            "recloser-sync" => run.run(|| {
                let _ = black_box(self.recloser.call(|| Ok::<u64, Failure>(black_box(7))));
            }),
            "failsafe-sync" => run.run(|| {
                use failsafe::CircuitBreaker as _;
                let _ = black_box(self.failsafe.call(|| Ok::<u64, Failure>(black_box(7))));
            }),
            "breaker-async" => run.run(|| {
                let _ = black_box(ready(
                    self.breaker
                        .call(|| async { Ok::<u64, Failure>(black_box(7)) }),
                ));
            }),
            "recloser-async" => run.run(|| {
                let _ = black_box(ready(
                    self.async_recloser
                        .call(async { Ok::<u64, Failure>(black_box(7)) }),
                ));
            }),
            "failsafe-async" => run.run(|| {
                use failsafe::futures::CircuitBreaker as _;
                let _ = black_box(ready(
                    self.failsafe
                        .call(async { Ok::<u64, Failure>(black_box(7)) }),
                ));
            }),
            "breaker-open-sync" => run.run(|| {
                let _ = black_box(
                    self.open
                        .breaker
                        .call_blocking(|| Ok::<u64, Kept>(black_box(7))),
                );
            }),
            "recloser-open-sync" => run.run(|| {
                let _ = black_box(
                    self.open
                        .recloser
                        .call(|| Ok::<u64, Failure>(black_box(7))),
                );
            }),
            "failsafe-open-sync" => run.run(|| {
                use failsafe::CircuitBreaker as _;
                let _ = black_box(
                    self.open
                        .failsafe
                        .call(|| Ok::<u64, Failure>(black_box(7))),
                );
            }),
            "breaker-open-async" => run.run(|| {
                let _ = black_box(ready(
                    self.open
                        .breaker
                        .call(|| async { Ok::<u64, Kept>(black_box(7)) }),
                ));
            }),
            _ => return false,
        }
        true
    }
}

/// What is done with one operation's call: timed, or only repeated.
trait Run {
    fn run(&mut self, call: impl Fn());
}

/// Nanoseconds per call of `calls` calls.
struct Time {
    calls: u32,
    nanos: f64,
}

impl Run for Time {
    fn run(&mut self, call: impl Fn()) {
        let start = Instant::now();
        repeat(self.calls, call);
        self.nanos = start.elapsed().as_nanos() as f64 / f64::from(self.calls);
    }
}

/// `calls` calls and nothing else, for callgrind.
struct Repeat(u32);

impl Run for Repeat {
    fn run(&mut self, call: impl Fn()) {
        repeat(self.0, call);
    }
}

/// The loop both modes run: the same code, timed or counted.
#[inline(always)]
fn repeat(calls: u32, call: impl Fn()) {
    for _ in 0..calls {
        call();
    }
}

fn main() -> ExitCode {
    let breakers = Breakers::new();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {
            timings(&breakers);
            ExitCode::SUCCESS
        }
        [operation, calls] => match calls.parse() {
            Ok(calls) if breakers.with(operation, &mut Repeat(calls)) => ExitCode::SUCCESS,
            _ => usage(),
        },
        _ => usage(),
    }
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: breaker-user-bench [OPERATION CALLS]\n  OPERATION: {}",
        OPERATIONS.join(", ")
    );
    ExitCode::from(2)
}

fn timings(breakers: &Breakers) {
    println!("closed path, ns per call (median of {ROUNDS} rounds of {CALLS} calls)");
    println!(
        "{:<6} {:>9} {:>13} {:>13} {:>24}",
        "", "breaker", "recloser 1.4", "failsafe 1.3", "breaker / fastest peer"
    );
    for kind in ["sync", "async"] {
        let libraries = ["breaker", "recloser", "failsafe"].map(|l| format!("{l}-{kind}"));
        let [breaker, recloser, failsafe] = medians(breakers, &libraries);
        println!(
            "{kind:<6} {breaker:>9.2} {recloser:>13.2} {failsafe:>13.2} {:>24.2}",
            breaker / recloser.min(failsafe)
        );
    }
    println!("open path (a rejection), ns per call, the same rounds");
    let open = ["breaker-open-sync", "recloser-open-sync", "failsafe-open-sync"].map(String::from);
    let [breaker, recloser, failsafe] = medians(breakers, &open);
    println!(
        "{:<6} {breaker:>9.2} {recloser:>13.2} {failsafe:>13.2} {:>24.2}",
        "sync",
        breaker / recloser.min(failsafe)
    );
}

/// The median time per call of each operation over [`ROUNDS`] rounds, the operations
/// taking turns in each round.
fn medians(breakers: &Breakers, operations: &[String; 3]) -> [f64; 3] {
    let mut samples = [const { Vec::new() }; 3];
    for _ in 0..ROUNDS {
        for (operation, samples) in operations.iter().zip(&mut samples) {
            let mut time = Time {
                calls: CALLS,
                nanos: 0.0,
            };
            assert!(
                breakers.with(operation, &mut time),
                "{operation} is an operation"
            );
            samples.push(time.nanos);
        }
    }
    samples.map(|mut s| {
        s.sort_by(f64::total_cmp);
        s[s.len() / 2]
    })
}
