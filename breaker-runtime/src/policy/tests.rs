//! The windows against a reference model: random calls (good, failed, slow, both) and
//! clock advances, one at a time; after every call the window's counts and the trip
//! decision must equal the model's.

use std::collections::VecDeque;

use proptest::prelude::*;

use super::{CountWindow, Sample, TimeWindow, Window};
use crate::protocol::machine::trips_on_rate;
use crate::protocol::{Counts, Rates};

#[derive(Debug, Clone, Copy)]
enum Step {
    Call {
        failed: bool,
        slow: bool,
    },
    /// Advance the clock by this many milliseconds.
    Advance(u64),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        6 => (any::<bool>(), prop::bool::weighted(0.2))
            .prop_map(|(failed, slow)| Step::Call { failed, slow }),
        1 => (0u64..5_000).prop_map(Step::Advance),
    ];
    prop::collection::vec(step, 1..400)
}

fn rates() -> impl Strategy<Value = Rates> {
    (
        prop::option::of(1u8..=100),
        prop::option::of(1u8..=100),
        1u32..30,
    )
        .prop_filter("a rate policy has a rate", |(f, s, _)| {
            f.is_some() || s.is_some()
        })
        .prop_map(|(failure, slow, minimum_calls)| Rates {
            failure,
            slow,
            minimum_calls,
        })
}

/// The reference: counts of a plain list of what the window should hold.
fn model_counts<'a>(held: impl Iterator<Item = &'a Sample>) -> Counts {
    let mut counts = Counts::default();
    for sample in held {
        counts.calls += 1;
        counts.failures += u32::from(sample.failed());
        counts.slow += u32::from(sample.slow());
    }
    counts
}

/// The reference trip rule, written out without the machine's arithmetic.
fn model_trips(counts: Counts, rates: &Rates) -> bool {
    // Percent of calls, compared without a division (exact in f64 at these sizes).
    let reached = |bad: u32, percent: u8| {
        f64::from(bad) * 100.0 >= f64::from(percent) * f64::from(counts.calls)
    };
    counts.calls >= rates.minimum_calls
        && (rates.failure.is_some_and(|p| reached(counts.failures, p))
            || rates.slow.is_some_and(|p| reached(counts.slow, p)))
}

const START: u64 = 1_700_000_000_000;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn count_window_matches_the_model(len in 1u32..150, rates in rates(), steps in steps()) {
        let window = Window::Calls(CountWindow::new(len));
        let mut model: VecDeque<Sample> = VecDeque::new();
        for step in steps {
            let Step::Call { failed, slow } = step else { continue };
            let sample = Sample::new(failed, slow);
            model.push_back(sample);
            if model.len() > len as usize {
                model.pop_front();
            }
            let expected = model_counts(model.iter());
            let recorded = window.record(sample, START);
            prop_assert_eq!(window.counts(START), expected);
            match recorded {
                None => prop_assert!(sample.good()),
                Some(counts) => {
                    prop_assert_eq!(counts, expected);
                    prop_assert_eq!(trips_on_rate(counts, &rates), model_trips(expected, &rates));
                }
            }
        }
        window.reset();
        prop_assert_eq!(window.counts(START), Counts::default());
    }

    #[test]
    fn time_window_matches_the_model(secs in 1u64..40, rates in rates(), steps in steps()) {
        let window = Window::Time(TimeWindow::new(secs));
        let mut now = START;
        let mut model: Vec<(u64, Sample)> = Vec::new();
        for step in steps {
            match step {
                Step::Advance(millis) => now += millis,
                Step::Call { failed, slow } => {
                    let sample = Sample::new(failed, slow);
                    model.push((now / 1000, sample));
                    let held = |now: u64| {
                        let second = now / 1000;
                        model_counts(
                            model
                                .iter()
                                .filter(|(at, _)| *at + secs > second && *at <= second)
                                .map(|(_, sample)| sample),
                        )
                    };
                    let expected = held(now);
                    let recorded = window.record(sample, now);
                    prop_assert_eq!(window.counts(now), expected);
                    match recorded {
                        None => prop_assert!(sample.good()),
                        Some(counts) => {
                            prop_assert_eq!(counts, expected);
                            prop_assert_eq!(
                                trips_on_rate(counts, &rates),
                                model_trips(expected, &rates)
                            );
                        }
                    }
                }
            }
        }
        window.reset();
        prop_assert_eq!(window.counts(now), Counts::default());
    }
}

#[test]
fn a_rate_needs_the_minimum_number_of_calls() {
    let rates = Rates {
        failure: Some(50),
        slow: None,
        minimum_calls: 4,
    };
    let counts = |calls, failures| Counts {
        calls,
        failures,
        slow: 0,
    };
    assert!(!trips_on_rate(counts(3, 3), &rates), "100 % of 3 calls");
    assert!(trips_on_rate(counts(4, 2), &rates), "50 % of 4 calls");
    assert!(!trips_on_rate(counts(5, 2), &rates), "40 % of 5 calls");
}

#[test]
fn a_time_window_forgets_calls_older_than_its_span() {
    let window = TimeWindow::new(10);
    assert!(window.record(Sample::new(true, false), START).is_some());
    let later = START + 9_999;
    assert_eq!(
        window.counts(later).failures,
        1,
        "9.999 s later: same window"
    );
    assert_eq!(window.counts(START + 10_000).calls, 0, "10 s later: gone");
}
