//! `FleetReports`: what one environment tells the fleet's counters about its failures, and
//! when.
//!
//! Successes are never written: the closed path only counts calls
//! ([`ClosedCounts`](super::closed_counts::ClosedCounts)), and a report goes out when a counted failure finds the previous report at least
//! `report_interval` old. It carries the failures not reported yet and the calls made
//! since the last report within the recent past (marked at cache refreshes, at most a
//! fleet window apart; a report's span starts at the mark before the last, so a busy
//! environment's spans one to two windows of its calls), so the fleet can weigh failures
//! against calls.
//!
//! While the circuit's record shows a suspicion of the fleet
//! ([`protocol::fleet`](crate::protocol::fleet)), the same reports go to the counters of
//! that suspicion ([`Report::Epoch`]), and so do the successes of the calls sampled at
//! admission ([`FleetReports::sampled`]), each weighing [`SAMPLE_WEIGHT`]: carried with the
//! next report when one went out within the interval, so a busy environment still writes
//! at most once per interval.
//!
//! A busy environment whose own policy will trip within the report interval holds its
//! first failures back: its trip comes sooner than the fleet's and costs the fleet's
//! counters nothing. What it holds goes out with its next failure once the interval has
//! passed. A quiet environment (the normal shape of a Lambda fleet) reports each failure
//! at once: it may not call again for a minute. For the same reason a busy environment
//! takes no part in a suspicion ([`FleetReports::busy`]): it samples nothing, and its
//! failures go to the window's counters.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use breaker_rules::TTL_GRACE_SECS;

use crate::config::{FleetPolicy, millis};
use crate::environment::spread;
use crate::protocol::fleet::{epoch_slice, window_start};
use crate::protocol::{FailureReport, SAMPLE_WEIGHT, SuspectReport};
use crate::store::StateStore;

mod reporters;

#[cfg(test)]
use reporters::{LAST_WINDOWS, LastReport, MAX_REMEMBERED, PRUNE_AT_LEAST, Windows};

/// Who reports: one environment's breakers of one circuit on one store, however many
/// breaker values the process holds for it. They count as one reporter per window.
///
/// A keyed circuit's key reports as its own circuit: `circuit` is the key's item id (each
/// key has counters of its own), and `store` the store holding the item, not the key's
/// view of it, so a key's circuit evicted and made again still counts as the same reporter.
pub(super) struct Reporter {
    pub(super) environment: Arc<str>,
    /// The circuit's name, or a key's item id.
    pub(super) circuit: Arc<str>,
    /// Weak, so the registry keeps no store alive; it keeps the store's address from being
    /// reused while its entry exists, so the address identifies the store.
    pub(super) store: Weak<dyn StateStore>,
}

/// Marks an epoch (a suspicion's end) apart from a window start in [`Reporter::first_in`].
const EPOCH_MARK: u64 = 1 << 63;

/// A report to the fleet's counters: of a fleet window, or of a suspicion's epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Report {
    Window(FailureReport),
    Epoch(SuspectReport),
}

/// The reports of one circuit of this environment.
pub(super) struct FleetReports {
    policy: Option<FleetPolicy>,
    reporter: Reporter,
    /// The store keeps no fleet counters: nothing is reported.
    unsupported: AtomicBool,
    /// After a failed report, no report is sent before this (unix millis).
    retry_at: AtomicU64,
    /// Draws made for sampling, mixed into the next one.
    draws: AtomicU64,
    state: Mutex<Pending>,
}

/// What is not reported yet, and what the next report counts from.
#[derive(Debug, Default)]
struct Pending {
    failures: u32,
    /// When the oldest unreported failure happened (unix millis).
    first_failure: u64,
    /// When the last report went out (unix millis); 0: never.
    last_report: u64,
    /// The call count at the last report.
    calls_at_report: u64,
    /// A recent instant and the call count then, set at a cache refresh at most once per
    /// fleet window.
    mark: (u64, u64),
    /// The mark before `mark`: while it is at most two windows old, the calls a report
    /// carries start there, and the call rate is estimated from it.
    previous_mark: (u64, u64),
    /// The successes sampled calls stand for, not reported yet, and the epoch they belong
    /// to.
    sampled: (u32, u64),
}

impl Pending {
    /// Where the calls a report carries start at `now`, and the rate is estimated from:
    /// the previous mark while it is at most two windows (of `window` millis) old, so
    /// that a busy environment's report right after a new mark still weighs its failure
    /// against a window's calls, not "1 failure of 1 call" (which, at a window's start,
    /// raised suspicions by chance in busy fleets with background errors). A quiet
    /// environment's previous mark is its previous call, or older than two windows.
    fn span_start(&self, now: u64, window: u64) -> (u64, u64) {
        match now.saturating_sub(self.previous_mark.0) <= window.saturating_mul(2) {
            true => self.previous_mark,
            false => self.mark,
        }
    }

    /// Whether this environment, at its call rate since the span's start, makes `left`
    /// more calls within `interval` (millis) of `now`: the gaps between the calls since
    /// then give the rate (one call alone gives none).
    fn calls_within(&self, now: u64, calls: u64, left: u64, interval: u64, window: u64) -> bool {
        let (at, start) = self.span_start(now, window);
        let elapsed = now.saturating_sub(at).max(1);
        let gaps = calls.saturating_sub(start).saturating_sub(1);
        gaps.saturating_mul(interval) >= left.saturating_mul(elapsed)
    }
}

impl FleetReports {
    pub(super) fn new(policy: Option<FleetPolicy>, reporter: Reporter) -> Self {
        Self {
            policy,
            reporter,
            unsupported: AtomicBool::new(false),
            retry_at: AtomicU64::new(0),
            draws: AtomicU64::new(0),
            state: Mutex::default(),
        }
    }

    fn active(&self) -> Option<&FleetPolicy> {
        self.policy
            .as_ref()
            .filter(|_| !self.unsupported.load(Ordering::Relaxed))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cache was refreshed at `now`, after `calls` closed calls: the span the next
    /// report counts calls over starts again if it is a fleet window old.
    pub(super) fn on_refresh(&self, now: u64, calls: u64) {
        let Some(policy) = self.active() else {
            return;
        };
        let mut pending = self.lock();
        if now.saturating_sub(pending.mark.0) >= millis(policy.window) {
            pending.previous_mark = pending.mark;
            pending.mark = (now, calls);
        }
    }

    /// A counted failure at `now`, the environment's `calls`-th closed call, that did not
    /// trip its own policy, whose consecutive failures are `consecutive` (`None` under a
    /// rate policy) of `failure_threshold`. `abandoned_after`: the call was abandoned at
    /// its deadline, and the call count was this when it started. Returns the report to
    /// send, if one is due.
    ///
    /// An abandoned call weighs against the calls that ended while it ran, not those of
    /// the span before: a call that hung for nine seconds is one of one in a Lambda
    /// environment that runs one invocation at a time, however many calls succeeded
    /// before it started; in one that runs many at once (Managed Instances) it is one of
    /// the other invocations' calls that ended meanwhile. Nor is it held back: one
    /// invocation's calls come one per timeout.
    ///
    /// `epoch`: the end of the suspicion the cached record shows, if one holds; the report
    /// then goes to its counters.
    pub(super) fn on_failure(
        &self,
        now: u64,
        calls: u64,
        consecutive: Option<u32>,
        failure_threshold: u32,
        abandoned_after: Option<u64>,
        epoch: Option<u64>,
    ) -> Option<Report> {
        let policy = self.active()?;
        let interval = millis(policy.report_interval);
        let mut pending = self.lock();
        if pending.failures == 0 {
            pending.first_failure = now;
        }
        pending.failures = pending.failures.saturating_add(1);
        if pending.last_report != 0 && now.saturating_sub(pending.last_report) < interval {
            return None;
        }
        let window = millis(policy.window);
        let (_, mark_calls) = pending.span_start(now, window);
        // The failures not reported yet came since the last report: so do their calls, if
        // that report is recent; else since the span's start, so that calls long past do
        // not count.
        let recent_report =
            pending.last_report != 0 && now.saturating_sub(pending.last_report) <= window;
        let since = match (abandoned_after, recent_report) {
            (Some(at_start), _) => at_start.max(pending.calls_at_report),
            (None, true) => pending.calls_at_report,
            (None, false) => pending.calls_at_report.max(mark_calls),
        };
        // The failures the own policy still needs, at its call rate, give its time to trip.
        let to_trip = consecutive.map(|c| u64::from(failure_threshold.saturating_sub(c)));
        let trips_first =
            to_trip.is_some_and(|left| pending.calls_within(now, calls, left, interval, window));
        let held = trips_first && now.saturating_sub(pending.first_failure) < interval;
        if held && abandoned_after.is_none() {
            return None;
        }
        let window_secs = policy.window.as_secs().max(1);
        if let Some(epoch) = epoch {
            return Some(Report::Epoch(self.epoch_report(
                &mut pending,
                epoch,
                window_secs,
                now,
                calls,
            )));
        }
        let start = window_start(now / 1000, window_secs);
        let failures = pending.failures;
        let counted = calls.saturating_sub(since).max(u64::from(failures));
        let report = FailureReport {
            window_start: start,
            window_secs,
            failures,
            calls: u32::try_from(counted).unwrap_or(u32::MAX),
            new_reporter: u32::from(
                self.reporter
                    .first_in(start, start + window_secs, now / 1000),
            ),
            expiration: start + window_secs + TTL_GRACE_SECS,
        };
        pending.failures = 0;
        pending.last_report = now;
        pending.calls_at_report = calls;
        Some(Report::Window(report))
    }

    /// Whether this environment, after `calls` closed calls at `now`, calls so often that
    /// its own policy (a count of `failure_threshold` consecutive failures; `counting`:
    /// the policy is one) would trip within the report interval if the downstream failed:
    /// it takes no part in a suspicion of the fleet. Its trip comes sooner than the
    /// fleet's, and its failures are weighed against its calls in the window's reports;
    /// sampling its calls would cost the suspicion's counters a write per environment
    /// and report interval, which a fleet of thousands of busy environments holds at the
    /// item's write limit for the whole suspicion.
    pub(super) fn busy(
        &self,
        now: u64,
        calls: u64,
        counting: bool,
        failure_threshold: u32,
    ) -> bool {
        let Some(policy) = self.active().filter(|_| counting) else {
            return false;
        };
        self.lock().calls_within(
            now,
            calls,
            u64::from(failure_threshold),
            millis(policy.report_interval),
            millis(policy.window),
        )
    }

    /// Whether this environment, after `calls` closed calls at `now`, makes `requests`
    /// calls within `span` (millis): an adaptive policy's own counts then shed for it, and
    /// it takes no part in a suspicion (as [`busy`](Self::busy) says why). A busy
    /// environment's first reports in an epoch carry failures from before it read the
    /// suspicion and successes sampled only after, which let a fleet failing 30 % of calls
    /// trip the fleet rule.
    pub(super) fn busy_over(&self, now: u64, calls: u64, requests: u32, span: u64) -> bool {
        let Some(policy) = self.active() else {
            return false;
        };
        self.lock()
            .calls_within(now, calls, u64::from(requests), span, millis(policy.window))
    }

    /// Whether a call admitted at `now` while a suspicion holds is sampled: with
    /// probability 1 / [`SAMPLE_WEIGHT`], from a hash of this environment's id, the time
    /// and its draws (reproducible in a simulation, which chooses the ids and the clock).
    pub(super) fn sampled(&self, now: u64) -> bool {
        if self.active().is_none() {
            return false;
        }
        self.draw(u64::from(SAMPLE_WEIGHT), now) == 0
    }

    /// A draw below `span` at `now`: a hash of this environment's id, the time and its
    /// draws, so a simulation (which chooses the ids and the clock) reproduces it.
    pub(super) fn draw(&self, span: u64, now: u64) -> u64 {
        let draw = self.draws.fetch_add(1, Ordering::Relaxed);
        let salt = now.rotate_left(20) ^ draw;
        spread(span, &self.reporter.environment, salt)
    }

    /// A sampled call succeeded at `now`, the environment's `calls`-th closed call, while
    /// the suspicion ending at `epoch` holds: the report to send, if one is due (else its
    /// weight waits for the next report of the epoch).
    pub(super) fn on_sampled_success(&self, now: u64, calls: u64, epoch: u64) -> Option<Report> {
        let policy = self.active()?;
        let mut pending = self.lock();
        if pending.sampled.1 != epoch {
            pending.sampled = (0, epoch);
        }
        pending.sampled.0 = pending.sampled.0.saturating_add(SAMPLE_WEIGHT);
        if pending.last_report != 0
            && now.saturating_sub(pending.last_report) < millis(policy.report_interval)
        {
            return None;
        }
        let window_secs = policy.window.as_secs().max(1);
        Some(Report::Epoch(self.epoch_report(
            &mut pending,
            epoch,
            window_secs,
            now,
            calls,
        )))
    }

    /// `report`, made for a window, sent at `now` to the counters of the suspicion ending
    /// at `epoch` instead.
    pub(super) fn moved_to_epoch(
        &self,
        report: &FailureReport,
        epoch: u64,
        now: u64,
    ) -> SuspectReport {
        self.suspect_report(epoch, report.window_secs, now, report.failures, 0)
    }

    /// A report of `failures` and `successes` at `now` to the counters of the suspicion
    /// ending at `epoch`.
    fn suspect_report(
        &self,
        epoch: u64,
        window_secs: u64,
        now: u64,
        failures: u32,
        successes: u32,
    ) -> SuspectReport {
        SuspectReport {
            epoch,
            slice: epoch_slice(epoch, window_secs, now),
            failures,
            successes,
            new_reporter: u32::from(
                self.reporter
                    .first_in(epoch | EPOCH_MARK, epoch, now / 1000),
            ),
            expiration: epoch + TTL_GRACE_SECS,
        }
    }

    /// The report of what is pending to the counters of the suspicion ending at `epoch`.
    fn epoch_report(
        &self,
        pending: &mut Pending,
        epoch: u64,
        window_secs: u64,
        now: u64,
        calls: u64,
    ) -> SuspectReport {
        let successes = match pending.sampled.1 == epoch {
            true => pending.sampled.0,
            false => 0,
        };
        let report = self.suspect_report(epoch, window_secs, now, pending.failures, successes);
        pending.failures = 0;
        pending.sampled = (0, epoch);
        pending.last_report = now;
        pending.calls_at_report = calls;
        report
    }

    /// Whether reports are held back after a failed one.
    pub(super) fn backing_off(&self, now: u64) -> bool {
        now < self.retry_at.load(Ordering::Relaxed)
    }

    /// A report failed: the next waits until `retry_at` (unix millis).
    pub(super) fn back_off_until(&self, retry_at: u64) {
        self.retry_at.store(retry_at, Ordering::Relaxed);
    }

    /// The store answered that it keeps no fleet counters: stop reporting.
    pub(super) fn unsupported(&self) {
        self.unsupported.store(true, Ordering::Relaxed);
    }

    /// The circuit changed state: failures held back belong to a closed spell that ended.
    pub(super) fn reset(&self) {
        if self.active().is_some() {
            let mut pending = self.lock();
            pending.failures = 0;
            pending.sampled = (0, 0);
        }
    }
}

#[cfg(test)]
mod tests;
