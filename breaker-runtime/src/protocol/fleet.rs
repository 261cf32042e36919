//! Fleet-wide failure counting as pure data: what an environment reports
//! ([`FailureReport`], [`SuspectReport`]), what the fleet's counters hold after it
//! ([`FleetTally`], [`EpochTally`]), and the two rules on them: [`fleet_suspects`] raises a
//! suspicion, [`epoch_trips`] opens the circuit.
//!
//! Why: an environment that calls a downstream once a minute needs minutes to see five
//! failures in a row, while a fleet of thousands such environments sees hundreds a
//! second. Each environment adds its failures, and the calls it made around them, to
//! counters of one fleet window (an item of their own, never the circuit's record).
//!
//! Only environments that failed report, and a quiet environment's report is "1 failure of
//! 1 call": the window's share of failures reads ~100 % whatever the fleet's real rate, so
//! the window's counters can only raise a suspicion, never trip. A suspicion is a flag on
//! the circuit's record for one fleet window (`suspected_until`); every environment that
//! reads it reports to the counters of that suspicion (its epoch) its failures and its
//! calls: each call, before it runs, is sampled with probability 1/[`SAMPLE_WEIGHT`] and
//! a sampled success counts [`SAMPLE_WEIGHT`] successes (Horvitz–Thompson: unbiased,
//! and a quiet fleet writes one report per [`SAMPLE_WEIGHT`] calls, not one per call).
//! The epoch's counters are split into [`EPOCH_SLICES`] slices of time, so an outage that
//! starts halfway through an epoch is not diluted by the successes before it. Counters of
//! an epoch end with it: a trip (a whole-record write) drops the flag, and a later
//! suspicion has counters of its own.

use super::fleet_policy::{FleetPolicy, FleetRule};

/// One environment's report: failures since its last report, the calls it made around
/// them, for the fleet window starting at `window_start` (unix seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FailureReport {
    /// Unix seconds at which the window starts (a multiple of `window_secs`).
    pub window_start: u64,
    /// The window's length in seconds.
    pub window_secs: u64,
    /// Counted failures not reported before.
    pub failures: u32,
    /// Calls (failures included) made since this environment's last report in the recent
    /// past, at least `failures`.
    pub calls: u32,
    /// 1 if this is this environment's first report in the window, else 0: the window
    /// counts the environments that reported.
    pub new_reporter: u32,
    /// Unix seconds after which the store may delete the window's counters.
    pub expiration: u64,
}

/// A fleet window's counters after a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FleetTally {
    /// Failures reported in the window.
    pub failures: u64,
    /// Calls reported with them.
    pub calls: u64,
    /// Environments that reported.
    pub reporters: u64,
}

impl FleetTally {
    /// The tally after `report` was added.
    ///
    /// ```
    /// use breaker_runtime::store::implement::{FailureReport, FleetTally};
    /// let report = FailureReport { window_start: 100, window_secs: 10, failures: 2, calls: 3, new_reporter: 1, expiration: 3710 };
    /// let tally = FleetTally::default().plus(&report).plus(&report);
    /// assert_eq!((tally.failures, tally.calls, tally.reporters), (4, 6, 2));
    /// ```
    pub fn plus(self, report: &FailureReport) -> Self {
        Self {
            failures: self.failures.saturating_add(u64::from(report.failures)),
            calls: self.calls.saturating_add(u64::from(report.calls)),
            reporters: self
                .reporters
                .saturating_add(u64::from(report.new_reporter)),
        }
    }
}

/// The fewest environments whose reports may raise a suspicion or open a circuit: one
/// environment's failures are its own policy's to judge, so a fleet of one behaves as
/// without reports.
pub const MIN_REPORTERS: u64 = 2;

/// While a suspicion holds, a call is sampled with probability 1 / this, and a sampled
/// success counts this many successes. 8: a quiet fleet of 10,000 environments calling
/// once per 50 s writes ~25 success reports a second while suspected, ~2.5 WCU/s per
/// 1,000 environments.
pub(crate) const SAMPLE_WEIGHT: u32 = 8;

/// The slices of time an epoch's counters are split into (each a twentieth of the fleet
/// window: 0.5 s by default).
pub(crate) const EPOCH_SLICES: usize = 20;

/// The failures a window must hold to raise a suspicion: a third of the policy's failure
/// threshold (3 by default), at least 2. A suspicion only costs its write and the sampled
/// reports, and the sooner it holds the sooner an outage trips.
pub(crate) fn suspect_failures(policy: &FleetPolicy) -> u64 {
    u64::from(policy.failure_threshold / 3).max(2)
}

/// Whether a window's `tally` raises a suspicion: [`suspect_failures`] failures, from more
/// than one environment, making at least the policy's share of the calls reported with
/// them. Only a suspicion: the calls a report carries are its own environment's since its
/// last report, one call for a quiet environment, so the share is ~100 % in a quiet fleet
/// whatever its error rate.
pub(crate) fn fleet_suspects(tally: &FleetTally, policy: &FleetPolicy) -> bool {
    tally.failures >= suspect_failures(policy)
        && tally.reporters >= MIN_REPORTERS
        && tally.failures.saturating_mul(100)
            >= u64::from(policy.failure_rate).saturating_mul(tally.calls)
}

/// One environment's report to the counters of a suspicion: its failures not reported
/// yet, and the successes its sampled calls stand for, in one slice of the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SuspectReport {
    /// The suspicion's end (unix seconds, the record's `suspected_until`): names the epoch.
    pub epoch: u64,
    /// The slice of the epoch the report falls in, below the length of [`EpochTally::failures`]
    /// (20 slices; [`EpochTally::plus`] counts a later slice in the last one).
    pub slice: u8,
    /// Failures not reported before (each counts 1).
    pub failures: u32,
    /// The successes the report stands for: 8 per sampled success (a call is sampled with
    /// probability 1/8 while suspected).
    pub successes: u32,
    /// 1 if this is this environment's first report in the epoch, else 0.
    pub new_reporter: u32,
    /// Unix seconds after which the store may delete the epoch's counters.
    pub expiration: u64,
}

/// An epoch's counters after a report: failures and estimated successes per slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EpochTally {
    /// Failures reported, per slice.
    pub failures: [u64; EPOCH_SLICES],
    /// Successes the sampled calls stand for, per slice.
    pub successes: [u64; EPOCH_SLICES],
    /// Environments that reported in the epoch.
    pub reporters: u64,
}

impl EpochTally {
    /// The tally after `report` was added.
    ///
    /// ```
    /// use breaker_runtime::store::implement::{EpochTally, SuspectReport};
    /// let report = SuspectReport { epoch: 110, slice: 3, failures: 1, successes: 8, new_reporter: 1, expiration: 3710 };
    /// let tally = EpochTally::default().plus(&report).plus(&report);
    /// assert_eq!((tally.failures[3], tally.successes[3], tally.reporters), (2, 16, 2));
    /// ```
    pub fn plus(mut self, report: &SuspectReport) -> Self {
        let slice = usize::from(report.slice).min(EPOCH_SLICES - 1);
        self.failures[slice] = self.failures[slice].saturating_add(u64::from(report.failures));
        self.successes[slice] = self.successes[slice].saturating_add(u64::from(report.successes));
        self.reporters = self
            .reporters
            .saturating_add(u64::from(report.new_reporter));
        self
    }
}

/// Whether an epoch's `tally` opens the circuit: some run of slices ending at the latest
/// one reported in (environments' clocks differ, so each environment's own slice is not
/// the fleet's latest) holds at least twice the policy's failure threshold, from more than
/// one environment, making at least the policy's share of the calls estimated with three
/// more samples' worth of successes (so the estimate errs towards staying closed). Returns
/// that run's failures and estimated calls.
///
/// Twice the threshold and three samples: a run of few failures can meet the share by
/// chance, when few of its successes happened to be sampled, and every report tests every
/// run again. With 20 % of a quiet fleet's calls failing, a suspicion's 10 s trip in about
/// 0.2 % of them (a simulation of the sampling alone); at 10 % in none. A fleet whose calls
/// all fail needs 24 failures under the suspicion.
///
/// A key's rule ([`FleetRule::Key`]) also opens on the whole epoch so far, once its first
/// slice has passed: the threshold itself, with one sample's caution. A key called once per
/// 4.5 s has 13 calls in its 60 s suspicion, and a fleet whose calls to it all fail opens
/// it after 10. Only the whole epoch: a short run of a few failures, tested again at every
/// report, meets the share by chance when few of its successes happened to be sampled; and
/// not within the first slice (3 s by default), where a busy key reaches the threshold
/// before its successes are sampled. With that, a key's suspicion trips by chance at 5 % of
/// its calls failing never, at 10 % in at most 0.2 % of suspicions, at 20 % in at most
/// 3 % (`a_keys_rule_trips_by_chance_rarely`: the sampling alone, call rates from 0.2/s to
/// 20/s).
pub(crate) fn epoch_trips(tally: &EpochTally, policy: &FleetPolicy) -> Option<(u64, u64)> {
    if tally.reporters < MIN_REPORTERS {
        return None;
    }
    let last = (0..EPOCH_SLICES)
        .rev()
        .find(|&i| tally.failures[i] > 0 || tally.successes[i] > 0)?;
    let threshold = u64::from(policy.failure_threshold);
    let meets = |failures: u64, calls: u64, caution_samples: u64| {
        let cautious = calls.saturating_add(caution_samples * u64::from(SAMPLE_WEIGHT));
        failures.saturating_mul(100) >= u64::from(policy.failure_rate).saturating_mul(cautious)
    };
    let (mut failures, mut successes) = (0u64, 0u64);
    for i in (0..=last).rev() {
        failures = failures.saturating_add(tally.failures[i]);
        successes = successes.saturating_add(tally.successes[i]);
        let calls = failures.saturating_add(successes);
        if failures >= threshold.saturating_mul(2) && meets(failures, calls, 3) {
            return Some((failures, calls));
        }
    }
    // The loop ends with the whole epoch's counts.
    let calls = failures.saturating_add(successes);
    let whole_epoch = policy.rule == FleetRule::Key
        && last >= KEY_RULE_FIRST_SLICE
        && failures >= threshold
        && meets(failures, calls, 1);
    whole_epoch.then_some((failures, calls))
}

/// The first slice from which a key's rule judges the whole epoch: the second.
const KEY_RULE_FIRST_SLICE: usize = 1;

/// The slice of the epoch ending at `epoch` (unix seconds) that `now_millis` falls in,
/// for a fleet window of `window_secs`.
pub(crate) fn epoch_slice(epoch: u64, window_secs: u64, now_millis: u64) -> u8 {
    let window = window_secs.max(1).saturating_mul(1000);
    let start = epoch.saturating_mul(1000).saturating_sub(window);
    let into = now_millis.saturating_sub(start);
    let slice = into.saturating_mul(EPOCH_SLICES as u64) / window;
    u8::try_from(slice.min(EPOCH_SLICES as u64 - 1)).unwrap_or(0)
}

/// The fleet window that holds `now_secs`: its start, a multiple of the window's length.
pub(crate) fn window_start(now_secs: u64, window_secs: u64) -> u64 {
    now_secs - now_secs % window_secs.max(1)
}

#[cfg(test)]
mod tests {
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
}
