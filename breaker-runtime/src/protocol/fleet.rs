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
mod tests;
