use super::*;

fn throttle() -> Throttle {
    Throttle::new(AdaptivePolicy::default())
}

/// `calls` calls at 10 a second from `start` (unix millis), each answered as `answer(i)`.
fn run(t: &Throttle, start: u64, calls: u64, answer: impl Fn(u64) -> Answer) -> Vec<Counted> {
    (0..calls)
        .map(|i| t.record(answer(i), start + i * 100))
        .collect()
}

#[test]
fn a_downstream_failing_thirty_percent_whatever_the_load_is_not_shed() {
    let t = throttle();
    // Three failures in every ten calls, never five in a row.
    let counted = run(&t, 1_000_000, 200, |i| match i % 10 {
        0 | 4 | 7 => Answer::Failed,
        _ => Answer::Accepted,
    });
    assert!(counted.iter().all(|c| !c.opens));
    assert_eq!(t.share(1_000_000 + 200 * 100), 0);
}

#[test]
fn load_sheds_shed_down_to_the_overload_multiplier_times_what_is_served() {
    let t = throttle();
    // Half the calls turned away for load, alternating (no run of five).
    run(&t, 1_000_000, 100, |i| match i % 2 {
        0 => Answer::Overloaded,
        _ => Answer::Accepted,
    });
    let share = t.share(1_000_000 + 100 * 100);
    // (100 − 1.03 × 50) / 101 ≈ 48.0 %.
    assert!((4_750..=4_850).contains(&share), "{share}");
}

#[test]
fn a_window_without_a_load_shed_sheds_nothing_for_load() {
    let t = throttle();
    run(&t, 1_000_000, 100, |i| match i % 2 {
        0 => Answer::Overloaded,
        _ => Answer::Accepted,
    });
    assert!(t.share(1_010_000) > 4_000);
    // The downstream takes every call for a window: the load sheds have aged out.
    run(&t, 1_010_000, 100, |_| Answer::Accepted);
    assert_eq!(t.share(1_020_000), 0);
}

#[test]
fn a_quiet_environment_sheds_nothing_on_its_own_failures() {
    let t = throttle();
    run(&t, 1_000_000, 4, |_| Answer::Failed);
    // Below 20 requests and below five in a row: nothing.
    assert_eq!(t.share(1_000_000 + 400), 0);
}

#[test]
fn a_total_outage_opens_the_circuit_after_fifteen_failures_in_a_row() {
    let t = throttle();
    let start = 1_000_000;
    run(&t, start, 100, |_| Answer::Accepted);
    let counted = run(&t, start + 10_000, 15, |_| Answer::Failed);
    assert!(counted[..14].iter().all(|c| !c.opens));
    assert_eq!(
        counted[14],
        Counted {
            opens: true,
            consecutive: 15
        }
    );
    // Five seconds of failures after ten of successes: the failures term sheds nothing yet.
    assert_eq!(t.share(start + 11_500), 0);
}

#[test]
fn load_sheds_alone_never_open_the_circuit_and_a_success_ends_a_run() {
    let t = throttle();
    let counted = run(&t, 1_000_000, 200, |i| match i % 20 {
        0..=13 => Answer::Failed,
        19 => Answer::Accepted,
        _ => Answer::Overloaded,
    });
    assert!(
        counted.iter().all(|c| !c.opens),
        "fourteen in a row at most"
    );
    assert_eq!(t.consecutive(), 0);
    let all_load = throttle();
    assert!(
        run(&all_load, 1_000_000, 200, |_| Answer::Overloaded)
            .iter()
            .all(|c| !c.opens)
    );
    // Every call turned away for load: nearly all shed, a trickle left.
    let share = all_load.share(1_000_000 + 200 * 100 - 50);
    assert!((9_800..ALL).contains(&share), "{share}");
}

#[test]
fn the_fleets_counters_shed_a_quiet_environment_until_the_epoch_ends() {
    let t = throttle();
    let mut tally = EpochTally::default();
    tally.failures[3] = 30;
    tally.successes[3] = 8;
    t.fleet_evidence(&tally, 2_000_000);
    // (38 − 2 × 8) / 39 ≈ 56 %.
    let share = t.share(1_999_000);
    assert!((5_600..=5_700).contains(&share), "{share}");
    assert_eq!(t.share(2_000_000), 0, "the epoch ended");
    // Too few calls: no evidence.
    let mut few = EpochTally::default();
    few.failures[0] = 19;
    t.fleet_evidence(&few, 3_000_000);
    assert_eq!(t.share(2_500_000), 0);
}

#[test]
fn a_reset_forgets_everything() {
    let t = throttle();
    run(&t, 1_000_000, 100, |_| Answer::Failed);
    t.reset();
    assert_eq!((t.share(1_010_000), t.consecutive()), (0, 0));
}
