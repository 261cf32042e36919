//! Property test: random calls, outcomes and clock advances against a small reference model
//! of one environment's circuit.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState, RecoveryBackoff,
};
use proptest::prelude::*;

type Error = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Ok,
    Counted,
    Ignored,
    Panic,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Call(Call),
    /// Advance the clock by this many milliseconds.
    Advance(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => prop_oneof![Just(Call::Ok), Just(Call::Counted), Just(Call::Ignored), Just(Call::Panic)]
            .prop_map(Step::Call),
        2 => (0u64..40_000).prop_map(Step::Advance),
    ]
}

/// The reference: what one environment's circuit must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Model {
    Closed { failures: u32 },
    Open { opened_at_secs: u64 },
    HalfOpen { successes: u32 },
}

struct Params {
    failure_threshold: u32,
    success_threshold: u32,
    recovery_secs: u64,
}

impl Model {
    fn state(self) -> CircuitState {
        match self {
            Model::Closed { .. } => CircuitState::Closed,
            Model::Open { .. } => CircuitState::Open,
            Model::HalfOpen { .. } => CircuitState::HalfOpen,
        }
    }

    /// Returns whether the call runs, and the next model.
    fn call(self, call: Call, now_millis: u64, p: &Params) -> (bool, Model) {
        let counted = matches!(call, Call::Counted | Call::Panic);
        let now_secs = now_millis / 1000;
        match self {
            Model::Closed { failures } => {
                let next = match call {
                    Call::Ok => Model::Closed { failures: 0 },
                    Call::Ignored => self,
                    _ if failures + 1 >= p.failure_threshold => Model::Open {
                        opened_at_secs: now_secs,
                    },
                    _ => Model::Closed {
                        failures: failures + 1,
                    },
                };
                (true, next)
            }
            Model::Open { opened_at_secs }
                if now_millis < (opened_at_secs + p.recovery_secs) * 1000 =>
            {
                (false, self)
            }
            Model::Open { .. } => Model::HalfOpen { successes: 0 }.call(call, now_millis, p),
            Model::HalfOpen { successes } => {
                let next = match call {
                    Call::Ok if successes + 1 >= p.success_threshold => {
                        Model::Closed { failures: 0 }
                    }
                    Call::Ok => Model::HalfOpen {
                        successes: successes + 1,
                    },
                    Call::Ignored => self,
                    _ => {
                        debug_assert!(counted);
                        Model::Open {
                            opened_at_secs: now_secs,
                        }
                    }
                };
                (true, next)
            }
        }
    }
}

fn run(
    breaker: &CircuitBreaker,
    call: Call,
    nested_rejected: &AtomicUsize,
    probing: bool,
) -> (bool, bool) {
    let entered = AtomicUsize::new(0);
    let result = catch_unwind(AssertUnwindSafe(|| {
        breaker.call_blocking_with(
            |e: &Error| !e.to_string().contains("ignored"),
            || {
                entered.fetch_add(1, Ordering::SeqCst);
                if probing {
                    // A second call while the probe is in flight must be rejected.
                    let inner: Result<(), Error> = breaker.call_blocking(|| Ok(()));
                    if matches!(&inner, Err(e) if e.downcast_ref::<CircuitBreakerOpenError>().is_some()) {
                        nested_rejected.fetch_add(1, Ordering::SeqCst);
                    }
                }
                match call {
                    Call::Ok => Ok(()),
                    Call::Counted => Err::<(), Error>("counted".into()),
                    Call::Ignored => Err("ignored".into()),
                    Call::Panic => panic!("protected call panicked"),
                }
            },
        )
    }));
    let panicked = result.is_err();
    let rejected =
        matches!(&result, Ok(Err(e)) if e.downcast_ref::<CircuitBreakerOpenError>().is_some());
    assert_eq!(
        entered.load(Ordering::SeqCst) == 1,
        !rejected,
        "ran iff not rejected"
    );
    (!rejected, panicked)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn breaker_matches_the_reference_model(
        failure_threshold in 1u32..5,
        success_threshold in 1u32..4,
        recovery_secs in 1u64..40,
        cache_age_millis in 0u64..10_000,
        steps in proptest::collection::vec(step(), 1..120),
    ) {
        std::panic::set_hook(Box::new(|_| {}));
        let p = Params { failure_threshold, success_threshold, recovery_secs };
        let clock = ManualClock::new();
        let config = CircuitBreakerConfig::builder()
            .failure_threshold(failure_threshold)
            .success_threshold(success_threshold)
            .recovery_timeout(Duration::from_secs(recovery_secs))
            // The reference model waits the recovery timeout after every opening.
            .recovery_backoff(RecoveryBackoff::none())
            .local_cache_max_age(Duration::from_millis(cache_age_millis))
            .probe_lease(Duration::from_secs(3600))
            .clock(clock.clone())
            .build()
            .unwrap();
        let breaker = CircuitBreaker::new("model", Arc::new(InMemoryStore::new()), config);
        let mut model = Model::Closed { failures: 0 };
        let nested_rejected = AtomicUsize::new(0);
        let mut probes = 0;
        for step in steps {
            match step {
                Step::Advance(millis) => clock.advance(Duration::from_millis(millis)),
                Step::Call(call) => {
                    let (expect_run, next) = model.call(call, clock.unix_millis(), &p);
                    let probing = expect_run && next_is_probe(model, clock.unix_millis(), &p);
                    probes += usize::from(probing);
                    let (ran, panicked) = run(&breaker, call, &nested_rejected, probing);
                    prop_assert_eq!(ran, expect_run, "run/reject diverged at {:?} in {:?}", call, model);
                    prop_assert_eq!(panicked, ran && call == Call::Panic, "panics are resumed");
                    model = next;
                    prop_assert_eq!(breaker.state(), model.state(), "state diverged after {:?}", call);
                }
            }
        }
        prop_assert_eq!(nested_rejected.load(Ordering::SeqCst), probes, "no second probe while one runs");
    }
}

/// Whether a call admitted in `model` at `now` runs as a probe.
fn next_is_probe(model: Model, now_millis: u64, p: &Params) -> bool {
    match model {
        Model::Closed { .. } => false,
        Model::HalfOpen { .. } => true,
        Model::Open { opened_at_secs } => now_millis >= (opened_at_secs + p.recovery_secs) * 1000,
    }
}
