use super::*;

#[test]
fn an_epochs_latest_successes_count_against_its_earlier_failures() {
    let policy = FleetPolicy::default();
    let mut tally = EpochTally {
        reporters: 5,
        ..EpochTally::default()
    };
    tally.failures[0] = 30;
    assert!(
        epoch_trips(&tally, &policy).is_some(),
        "failures alone trip"
    );
    // The latest slice holds successes only: they count, and the rate is far below.
    tally.successes[EPOCH_SLICES - 1] = 10_000;
    assert_eq!(epoch_trips(&tally, &policy), None);
}

#[test]
fn tallies_add_reports_and_an_epoch_slice_past_the_last_counts_in_the_last() {
    let report = FailureReport {
        window_start: 100,
        window_secs: 10,
        failures: 2,
        calls: 3,
        new_reporter: 1,
        expiration: 3710,
    };
    let added = FleetTally::default().plus(&report).plus(&report);
    assert_eq!((added.failures, added.calls, added.reporters), (4, 6, 2));
    let suspect = |slice, failures, successes| SuspectReport {
        epoch: 110,
        slice,
        failures,
        successes,
        new_reporter: 1,
        expiration: 3710,
    };
    let epoch = EpochTally::default()
        .plus(&suspect(3, 1, 8))
        .plus(&suspect(200, 2, 5));
    assert_eq!((epoch.failures[3], epoch.successes[3]), (1, 8));
    assert_eq!(
        (
            epoch.failures[EPOCH_SLICES - 1],
            epoch.successes[EPOCH_SLICES - 1]
        ),
        (2, 5)
    );
    assert_eq!(epoch.reporters, 2);
}

fn tally(failures: u64, calls: u64, reporters: u64) -> FleetTally {
    FleetTally {
        failures,
        calls,
        reporters,
    }
}

#[test]
fn a_window_mostly_failing_raises_a_suspicion_and_background_errors_do_not() {
    let policy = FleetPolicy::default();
    assert!(
        fleet_suspects(&tally(10, 12, 10), &policy),
        "10 of 12 failed"
    );
    assert!(!fleet_suspects(&tally(2, 2, 2), &policy), "below the count");
    assert!(
        fleet_suspects(&tally(3, 3, 2), &policy),
        "a third of the threshold"
    );
    assert!(
        !fleet_suspects(&tally(1_000, 100_000, 900), &policy),
        "0.1 % of a busy fleet's calls"
    );
    assert!(
        fleet_suspects(&tally(50, 100, 20), &policy),
        "50 % is the rate"
    );
    assert!(!fleet_suspects(&tally(49, 100, 20), &policy));
}

#[test]
fn one_environment_alone_never_raises_a_suspicion() {
    assert!(!fleet_suspects(
        &tally(500, 500, 1),
        &FleetPolicy::default()
    ));
}

#[test]
fn an_epoch_trips_on_a_run_of_slices_mostly_failing() {
    let policy = FleetPolicy::default();
    let mut tally = EpochTally {
        reporters: 5,
        ..EpochTally::default()
    };
    // Slices 0..4: 5 % failing (2 failures, 40 successes a slice).
    for i in 0..5 {
        tally.failures[i] = 2;
        tally.successes[i] = 40;
    }
    assert_eq!(epoch_trips(&tally, &policy), None, "background errors");
    // Slice 5: the outage, 40 failures and one sample.
    tally.failures[5] = 40;
    tally.successes[5] = 8;
    assert_eq!(epoch_trips(&tally, &policy), Some((40, 48)));
    // 19 failures are short of twice the threshold, whatever the share.
    tally.failures[5] = 19;
    tally.successes[5] = 0;
    assert_eq!(epoch_trips(&tally, &policy), None);
    // 24 failures and nothing else: 50 % of 24 + 3 samples' worth.
    tally.failures[5] = 24;
    assert_eq!(epoch_trips(&tally, &policy), Some((24, 24)));
    tally.failures[5] = 23;
    assert_eq!(epoch_trips(&tally, &policy), None);
    // A later slice (an environment whose clock is ahead) ends the runs.
    tally.failures[5] = 40;
    tally.successes[7] = 40;
    assert_eq!(
        epoch_trips(&tally, &policy),
        None,
        "the latest slices are healthy"
    );
    tally.successes[7] = 0;
    tally.reporters = 1;
    tally.failures[5] = 100;
    assert_eq!(epoch_trips(&tally, &policy), None, "one environment");
}

#[test]
fn a_keys_rule_opens_on_the_threshold_over_the_whole_epoch_after_its_first_slice() {
    let key = FleetPolicy::default().for_keys();
    let mut tally = EpochTally {
        reporters: 2,
        ..EpochTally::default()
    };
    tally.failures[0] = 10;
    assert_eq!(epoch_trips(&tally, &key), None, "within the first slice");
    tally.failures[0] = 4;
    tally.failures[3] = 6;
    assert_eq!(epoch_trips(&tally, &key), Some((10, 10)));
    tally.successes[2] = 8;
    assert_eq!(
        epoch_trips(&tally, &key),
        None,
        "10 of 18, short of half with one sample's caution"
    );
    tally.failures[3] = 12;
    assert_eq!(epoch_trips(&tally, &key), Some((16, 24)), "16 of 24 + 8");
    tally.failures[3] = 11;
    assert_eq!(epoch_trips(&tally, &key), None, "15 of 23 + 8");
    tally.failures[3] = 12;
    assert_eq!(
        epoch_trips(&tally, &FleetPolicy::default()),
        None,
        "a circuit's rule needs 24"
    );
    tally.reporters = 1;
    assert_eq!(epoch_trips(&tally, &key), None, "one environment");
}

/// The share of `runs` suspicions of a key called `rate` times a second fleet-wide, each
/// call failing with probability `failing`, that the key's rule trips: the sampling
/// alone (every call reported at once, one environment per call).
fn chance_trips(rate: f64, failing: f64, runs: u32) -> f64 {
    // SplitMix64: a seeded stream, so the figures are the same on every run.
    let mut state = 0x5eed_u64;
    let mut uniform = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let key = FleetPolicy::default().for_keys();
    let window = key.window.as_secs();
    let mut tripped = 0;
    for _ in 0..runs {
        let mut tally = EpochTally {
            reporters: 2,
            ..EpochTally::default()
        };
        let mut at = 0.0;
        loop {
            at += -(1.0 - uniform()).ln() / rate;
            if at >= window as f64 {
                break;
            }
            let slice = epoch_slice(window, window, (at * 1000.0) as u64);
            let report = if uniform() < failing {
                (1, 0)
            } else if uniform() < 1.0 / f64::from(SAMPLE_WEIGHT) {
                (0, SAMPLE_WEIGHT)
            } else {
                continue;
            };
            let report = SuspectReport {
                epoch: window,
                slice,
                failures: report.0,
                successes: report.1,
                new_reporter: 0,
                expiration: 0,
            };
            tally = tally.plus(&report);
            if epoch_trips(&tally, &key).is_some() {
                tripped += 1;
                break;
            }
        }
    }
    f64::from(tripped) / f64::from(runs)
}

#[test]
fn a_keys_rule_trips_by_chance_rarely() {
    for rate in [0.2, 0.5, 1.0, 2.0, 5.0, 20.0] {
        let at = |failing| chance_trips(rate, failing, 400);
        assert_eq!(at(0.05), 0.0, "5 % failing at {rate}/s");
        assert!(at(0.1) <= 0.005, "10 % failing at {rate}/s: {}", at(0.1));
        assert!(at(0.2) <= 0.03, "20 % failing at {rate}/s: {}", at(0.2));
        if rate >= 0.5 {
            assert_eq!(at(1.0), 1.0, "all failing at {rate}/s");
        }
    }
    // The coldest of 5,000 Zipf keys at 10,000 calls/s: 13 calls in its suspicion.
    assert!(chance_trips(0.22, 1.0, 400) >= 0.7);
}

#[test]
fn slices_divide_the_epoch_evenly() {
    // The epoch ending at 110 s of a 10 s window starts at 100 s.
    assert_eq!(epoch_slice(110, 10, 100_000), 0);
    assert_eq!(epoch_slice(110, 10, 100_499), 0);
    assert_eq!(epoch_slice(110, 10, 100_500), 1);
    assert_eq!(epoch_slice(110, 10, 109_999), 19);
    assert_eq!(
        epoch_slice(110, 10, 120_000),
        19,
        "late reports join the last"
    );
    assert_eq!(epoch_slice(110, 10, 90_000), 0);
}

#[test]
fn windows_start_at_multiples_of_their_length() {
    assert_eq!(window_start(1_700_000_007, 10), 1_700_000_000);
    assert_eq!(window_start(1_700_000_010, 10), 1_700_000_010);
}
