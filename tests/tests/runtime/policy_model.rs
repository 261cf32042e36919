//! Property test: a circuit that trips on a failure rate and a slow-call rate over a window
//! of the last N calls, driven by random calls (fast or slow, succeeding, failing or
//! ignored) and clock advances, against a reference model of one environment's circuit.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState, RecoveryBackoff,
    SlidingWindow,
};
use proptest::prelude::*;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// How long a slow call takes, on the manual clock; the policy's threshold is 1 s.
const SLOW: Duration = Duration::from_millis(1500);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Ok,
    Counted,
    Ignored,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Call {
        answer: Answer,
        slow: bool,
    },
    /// Advance the clock by this many milliseconds.
    Advance(u64),
}

fn step() -> impl Strategy<Value = Step> {
    let answer = prop_oneof![
        Just(Answer::Ok),
        Just(Answer::Counted),
        Just(Answer::Ignored)
    ];
    prop_oneof![
        6 => (answer, prop::bool::weighted(0.25)).prop_map(|(answer, slow)| Step::Call { answer, slow }),
        1 => (0u64..40_000).prop_map(Step::Advance),
    ]
}

struct Params {
    window: usize,
    minimum_calls: usize,
    failure_rate: Option<u8>,
    slow_rate: Option<u8>,
    success_threshold: u32,
    recovery_secs: u64,
}

/// The reference: what one environment's circuit must do.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Model {
    /// The last calls (failed, slow), oldest first.
    Closed(VecDeque<(bool, bool)>),
    Open {
        opened_at_secs: u64,
    },
    HalfOpen {
        successes: u32,
    },
}

impl Model {
    fn state(&self) -> CircuitState {
        match self {
            Model::Closed(_) => CircuitState::Closed,
            Model::Open { .. } => CircuitState::Open,
            Model::HalfOpen { .. } => CircuitState::HalfOpen,
        }
    }

    fn trips(window: &VecDeque<(bool, bool)>, p: &Params) -> bool {
        let calls = window.len() as u64;
        let failed = window.iter().filter(|(failed, _)| *failed).count() as u64;
        let slow = window.iter().filter(|(_, slow)| *slow).count() as u64;
        let reached =
            |bad: u64, rate: Option<u8>| rate.is_some_and(|r| bad * 100 >= u64::from(r) * calls);
        window.len() >= p.minimum_calls
            && (reached(failed, p.failure_rate) || reached(slow, p.slow_rate))
    }

    /// Whether a call admitted at `admitted` runs, and the model once it ended at `ended`.
    fn call(
        self,
        answer: Answer,
        slow: bool,
        admitted: u64,
        ended: u64,
        p: &Params,
    ) -> (bool, Model) {
        let ended_secs = ended / 1000;
        // Without a slow-call rate nothing is timed.
        let slow = slow && p.slow_rate.is_some();
        match self {
            Model::Closed(mut window) => {
                if answer == Answer::Ignored {
                    return (true, Model::Closed(window));
                }
                let failed = answer == Answer::Counted;
                window.push_back((failed, slow));
                if window.len() > p.window {
                    window.pop_front();
                }
                let next = match (failed || slow) && Self::trips(&window, p) {
                    true => Model::Open {
                        opened_at_secs: ended_secs,
                    },
                    false => Model::Closed(window),
                };
                (true, next)
            }
            Model::Open { opened_at_secs }
                if admitted < (opened_at_secs + p.recovery_secs) * 1000 =>
            {
                (false, Model::Open { opened_at_secs })
            }
            Model::Open { .. } => {
                Model::HalfOpen { successes: 0 }.call(answer, slow, admitted, ended, p)
            }
            Model::HalfOpen { successes } => {
                let next = match (answer, slow) {
                    (Answer::Ignored, _) => Model::HalfOpen { successes },
                    (Answer::Ok, false) if successes + 1 >= p.success_threshold => {
                        Model::Closed(VecDeque::new())
                    }
                    (Answer::Ok, false) => Model::HalfOpen {
                        successes: successes + 1,
                    },
                    // A failed or a slow probe reopens.
                    _ => Model::Open {
                        opened_at_secs: ended_secs,
                    },
                };
                (true, next)
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn rate_policies_match_the_reference_model(
        window in 1usize..12,
        minimum in 1usize..12,
        failure_rate in prop::option::of(1u8..=100),
        slow_rate in prop::option::of(1u8..=100),
        success_threshold in 1u32..4,
        recovery_secs in 1u64..40,
        cache_age_millis in 0u64..10_000,
        steps in proptest::collection::vec(step(), 1..150),
    ) {
        prop_assume!(failure_rate.is_some() || slow_rate.is_some());
        let minimum = minimum.min(window);
        let p = Params {
            window,
            minimum_calls: minimum,
            failure_rate,
            slow_rate,
            success_threshold,
            recovery_secs,
        };
        let clock = ManualClock::new();
        let mut builder = CircuitBreakerConfig::builder()
            .sliding_window(SlidingWindow::Calls(window as u32))
            .minimum_calls(minimum as u32)
            .success_threshold(success_threshold)
            .recovery_timeout(Duration::from_secs(recovery_secs))
            // The reference model waits the recovery timeout after every opening.
            .recovery_backoff(RecoveryBackoff::none())
            .local_cache_max_age(Duration::from_millis(cache_age_millis))
            .probe_lease(Duration::from_secs(3600))
            .clock(clock.clone());
        if let Some(rate) = failure_rate {
            builder = builder.failure_rate(rate);
        }
        if let Some(rate) = slow_rate {
            builder = builder.slow_calls(Duration::from_secs(1), rate);
        }
        let breaker = CircuitBreaker::new("policy-model", Arc::new(InMemoryStore::new()), builder.build().unwrap());
        let mut model = Model::Closed(VecDeque::new());
        for step in steps {
            match step {
                Step::Advance(millis) => clock.advance(Duration::from_millis(millis)),
                Step::Call { answer, slow } => {
                    let admitted = clock.unix_millis();
                    let result = breaker.call_blocking_with(
                        |e: &Error| e.to_string() != "ignored",
                        || {
                            if slow {
                                clock.advance(SLOW);
                            }
                            match answer {
                                Answer::Ok => Ok(()),
                                Answer::Counted => Err::<(), Error>("counted".into()),
                                Answer::Ignored => Err("ignored".into()),
                            }
                        },
                    );
                    let ran = !matches!(&result, Err(e) if e.downcast_ref::<CircuitBreakerOpenError>().is_some());
                    let (expect_run, next) =
                        model.clone().call(answer, slow, admitted, clock.unix_millis(), &p);
                    prop_assert_eq!(ran, expect_run, "run/reject diverged at {:?} in {:?}", step, model);
                    model = next;
                    prop_assert_eq!(breaker.state(), model.state(), "state diverged after {:?}", step);
                }
            }
        }
    }
}
