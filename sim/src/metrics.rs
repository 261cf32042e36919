//! The measurements of a run, defined so they can be checked:
//!
//! - a **recovery window** runs from one `opened_at` (a trip or reopen landing in the item)
//!   to the next one or the close; **election requests per window** = won + lost + throttled
//!   election attempts made while it runs;
//! - **probes in flight** = downstream calls made as probes that have started and not
//!   ended, fleet-wide;
//! - **open propagation** = for each environment, the last call it admitted after the trip
//!   landed (until the close), minus that landing; the maximum over environments is the
//!   maximum over those calls, so no per-environment state is kept;
//! - **close propagation** = for each environment, its first admission after the close
//!   landed, minus that landing (an environment with no call before the next trip has none);
//! - **throttled requests** (throttled attempts), counted separately inside a **trip
//!   burst** and outside it. A trip burst runs from the first counted failure (a failed
//!   non-probe call while the item is closed, no more than 10 s before the trip) to the
//!   trip's landing plus cache age plus read lag; a trip write made while the item is closed
//!   also starts one, until cache age + lag later;
//! - **report writes per second** outside every trip burst: the write units of failure
//!   reports in each virtual second that no burst overlaps;
//! - **non-probe calls while failing**: per environment, the downstream calls its workers
//!   started (not as probes) while the downstream was down, hanging or throttling, the most;
//! - per virtual second: environments per state, calls, downstream calls, store units and
//!   throttles, for the charts;
//! - the downstream's return and its load against its capacity: the `capacity` module;
//! - what a brownout costs, and how fast an outage is turned away: the `brownout` module;
//! - environments running many invocations at once: the `managed` module.
//!
//! The item's state is followed from the requests that won, so the metrics need nothing
//! from the model but the log.

use std::collections::VecDeque;

use crate::env_store::StoreRequest;
use crate::model::{RequestKind, RequestOutcome};
use crate::scenario::Scenario;
pub use crate::summary::{Call, Second, Summary, USD_PER_RRU, USD_PER_WRU, Window};
use breaker_runtime::{CircuitState, RecoveryBackoff};

/// Collects a run's measurements as the simulator reports calls and requests.
#[derive(Debug)]
pub struct Metrics {
    scenario: String,
    envs: u32,
    workers: managed::Workers,
    seed: u64,
    duration_ms: u64,
    burst_ms: u64,
    recovered_at_ms: Option<u64>,
    /// The recovery timeout: a window's first election comes this long after its opening,
    /// backed off as `backoff` says.
    recovery_ms: u64,
    backoff: RecoveryBackoff,
    calls: u64,
    rejected: u64,
    downstream_calls: u64,
    downstream_failures: u64,
    probes: Vec<(u64, u64)>,
    /// The item's state, as the won writes left it.
    item: CircuitState,
    windows: Vec<Window>,
    election_writes_outside_windows: u64,
    trips_won: u64,
    closes_won: u64,
    close_times: Vec<u64>,
    read_requests: u64,
    write_requests: u64,
    trip_writes: u64,
    election_writes: u64,
    close_and_reopen_writes: u64,
    hand_over_writes: u64,
    throttled: u64,
    unreachable: u64,
    read_half_units: u64,
    write_units: u64,
    burst_until_ms: Option<u64>,
    /// Landing of the trip whose opening is still in force (until the close).
    trip_landed_ms: Option<u64>,
    max_open_propagation_ms: Option<u64>,
    /// Landing of the last close, until the next trip.
    close_landed_ms: Option<u64>,
    /// Bumped at every close; `admitted_in_close_epoch[env]` says if env admitted since.
    close_epoch: u32,
    admitted_in_close_epoch: Vec<u32>,
    max_close_propagation_ms: Option<u64>,
    max_rejecting_after_close_ms: Option<u64>,
    downstream_calls_while_open: u64,
    seconds: Vec<Second>,
    failed_non_probe_calls: u64,
    report_writes: u64,
    suspect_writes: u64,
    /// The environment and instant of the last report answered, to tell the trips it led to.
    last_report: Option<(u32, u64)>,
    fleet_trips_won: u64,
    abandoned_calls: u64,
    killed_invocations: u64,
    cold_starts: u64,
    /// Ends of counted failures in the last [`BURST_LOOKBACK_MS`], while the item is closed.
    recent_failures: VecDeque<u64>,
    first_failure_ms: Option<u64>,
    first_trip_ms: Option<u64>,
    /// Trip bursts, `(from, until)` ms.
    bursts: Vec<(u64, u64)>,
    /// Throttled attempts: `(ms, attempts)`.
    throttles: Vec<(u64, u32)>,
    /// Per environment: non-probe downstream calls started while the downstream was down,
    /// hanging or throttling.
    calls_while_failing: Vec<u32>,
    load: capacity::Load,
    brownout: brownout::Brownout,
}

/// How far before a trip's landing its burst may start: the first counted failure within
/// this long (a fleet window's worth of failures) opens it.
const BURST_LOOKBACK_MS: u64 = 10_000;

impl Metrics {
    /// Metrics of a run of `scenario`.
    pub fn of(scenario: &Scenario) -> Self {
        Self::new(
            &scenario.name,
            scenario.envs,
            scenario.seed,
            scenario.duration_ms,
            scenario.trip_burst_ms(),
            scenario.health.recovered_at(),
        )
        .with_recovery(
            scenario.breaker.recovery_timeout.as_millis() as u64,
            scenario.breaker.recovery_backoff.clone(),
        )
        .with_downstream(
            scenario.returned_at(),
            scenario.full_rate_per_s(),
            scenario.capacity.clone(),
        )
        .with_outage(&scenario.health)
        .with_concurrency(scenario.concurrency)
    }

    /// The recovery timeout and its backoff the close latency counts from (30 s, none,
    /// unless set).
    pub fn with_recovery(mut self, recovery_ms: u64, backoff: RecoveryBackoff) -> Self {
        self.recovery_ms = recovery_ms;
        self.backoff = backoff;
        self
    }

    /// Metrics of `scenario` on `envs` environments for `duration_ms`; `burst_ms` is how
    /// long a trip burst lasts after the trip landed, `recovered_at_ms` when the
    /// downstream recovers for good.
    pub fn new(
        scenario: &str,
        envs: u32,
        seed: u64,
        duration_ms: u64,
        burst_ms: u64,
        recovered_at_ms: Option<u64>,
    ) -> Self {
        let seconds = duration_ms.div_ceil(1000) as usize;
        Self {
            scenario: scenario.to_owned(),
            envs,
            workers: managed::Workers::default(),
            seed,
            duration_ms,
            burst_ms,
            recovered_at_ms,
            recovery_ms: 30_000,
            backoff: RecoveryBackoff::none(),
            failed_non_probe_calls: 0,
            report_writes: 0,
            suspect_writes: 0,
            last_report: None,
            fleet_trips_won: 0,
            abandoned_calls: 0,
            killed_invocations: 0,
            cold_starts: 0,
            recent_failures: VecDeque::new(),
            first_failure_ms: None,
            first_trip_ms: None,
            bursts: Vec::new(),
            throttles: Vec::new(),
            calls_while_failing: vec![0; envs as usize],
            calls: 0,
            rejected: 0,
            downstream_calls: 0,
            downstream_failures: 0,
            probes: Vec::new(),
            item: CircuitState::Closed,
            windows: Vec::new(),
            election_writes_outside_windows: 0,
            trips_won: 0,
            closes_won: 0,
            close_times: Vec::new(),
            read_requests: 0,
            write_requests: 0,
            trip_writes: 0,
            election_writes: 0,
            close_and_reopen_writes: 0,
            hand_over_writes: 0,
            throttled: 0,
            unreachable: 0,
            read_half_units: 0,
            write_units: 0,
            burst_until_ms: None,
            trip_landed_ms: None,
            max_open_propagation_ms: None,
            close_landed_ms: None,
            close_epoch: 0,
            admitted_in_close_epoch: vec![0; envs as usize],
            max_close_propagation_ms: None,
            max_rejecting_after_close_ms: None,
            downstream_calls_while_open: 0,
            seconds: vec![Second::default(); seconds],
            load: capacity::Load::default(),
            brownout: brownout::Brownout::default(),
        }
    }

    /// The item was written OPEN at `at_ms` before the run (a scenario's start): a window
    /// and an opening begin then.
    pub fn opened_before_start(&mut self, at_ms: u64) {
        self.item = CircuitState::Open;
        self.trip_landed_ms = Some(at_ms);
        self.start_window(at_ms, None);
    }

    fn second(&mut self, at_ms: u64) -> Option<&mut Second> {
        self.seconds.get_mut((at_ms / 1000) as usize)
    }

    /// Environments per state at the start of virtual second `second`.
    pub fn sample(&mut self, second: u64, closed: u32, open: u32, half_open: u32) {
        if let Some(s) = self.seconds.get_mut(second as usize) {
            (s.closed, s.open, s.half_open) = (closed, open, half_open);
        }
    }

    /// A call; report it before its store requests (its writes take effect after it was
    /// admitted).
    #[inline]
    pub fn on_call(&mut self, call: &Call) {
        self.calls += 1;
        self.load.on_call(call);
        self.brownout.on_call(call);
        let item_open = self.item != CircuitState::Closed;
        let mut downstream = 0;
        let mut probe = 0;
        if !call.admitted {
            self.rejected += 1;
            if let Some(closed_at) = self.close_landed_ms {
                let after = call.start_ms.saturating_sub(closed_at);
                self.max_rejecting_after_close_ms = Some(
                    self.max_rejecting_after_close_ms
                        .map_or(after, |m| m.max(after)),
                );
            }
        } else {
            downstream = 1;
            self.downstream_calls += 1;
            self.downstream_failures += u64::from(call.failed);
            self.abandoned_calls += u64::from(call.abandoned);
            self.killed_invocations += u64::from(call.killed);
            if call.probe.is_none() {
                self.failed_non_probe_calls += u64::from(call.failed);
                if call.unhealthy {
                    self.calls_while_failing[call.env as usize] += 1;
                }
                if call.failed && self.item == CircuitState::Closed {
                    self.on_counted_failure(call.decided_ms);
                }
            }
            if let Some(interval) = call.probe {
                probe = 1;
                self.probes.push(interval);
            } else {
                if item_open {
                    self.downstream_calls_while_open += 1;
                }
                if let Some(tripped_at) = self.trip_landed_ms {
                    let after = call.start_ms.saturating_sub(tripped_at);
                    self.max_open_propagation_ms =
                        Some(self.max_open_propagation_ms.map_or(after, |m| m.max(after)));
                }
            }
            if let Some(closed_at) = self.close_landed_ms {
                let seen = &mut self.admitted_in_close_epoch[call.env as usize];
                if *seen != self.close_epoch {
                    *seen = self.close_epoch;
                    let after = call.start_ms.saturating_sub(closed_at);
                    self.max_close_propagation_ms = Some(
                        self.max_close_propagation_ms
                            .map_or(after, |m| m.max(after)),
                    );
                }
            }
        }
        if let Some(s) = self.second(call.start_ms) {
            s.calls += 1;
            s.downstream_calls += downstream;
            s.probes += probe;
        }
    }

    /// An environment started again cold after Lambda ended an invocation.
    pub fn on_cold_start(&mut self) {
        self.cold_starts += 1;
    }

    fn on_counted_failure(&mut self, at_ms: u64) {
        self.first_failure_ms.get_or_insert(at_ms);
        while self
            .recent_failures
            .front()
            .is_some_and(|t| *t + BURST_LOOKBACK_MS < at_ms)
        {
            self.recent_failures.pop_front();
        }
        self.recent_failures.push_back(at_ms);
    }

    /// A store request, after its call was reported.
    pub fn on_request(&mut self, r: &StoreRequest) {
        let t = r.time_ms;
        // A request to an unreachable store reaches no DynamoDB: counted apart.
        let sent = if r.outcome == RequestOutcome::Unreachable {
            self.unreachable += 1;
            0
        } else {
            r.cost.attempts
        };
        let attempts = u64::from(sent);
        match r.kind {
            RequestKind::Read => self.read_requests += attempts,
            RequestKind::Trip => self.trip_writes += attempts,
            RequestKind::Elect => self.election_writes += attempts,
            RequestKind::Close | RequestKind::Reopen => self.close_and_reopen_writes += attempts,
            RequestKind::HandOver => self.hand_over_writes += attempts,
            RequestKind::Report => self.report_writes += attempts,
            RequestKind::Suspect => self.suspect_writes += attempts,
            RequestKind::IndexRead => self.read_requests += attempts,
            RequestKind::Other
            | RequestKind::IndexAdd
            | RequestKind::IndexRefresh
            | RequestKind::IndexRemove => {}
        }
        let read = matches!(r.kind, RequestKind::Read | RequestKind::IndexRead);
        if !read {
            self.write_requests += attempts;
        }
        if r.kind == RequestKind::Trip
            && self.item == CircuitState::Closed
            && self.burst_until_ms.is_none_or(|until| t > until)
        {
            self.burst_until_ms = Some(t + self.burst_ms);
            self.bursts.push((t, t + self.burst_ms));
        }
        self.throttled += u64::from(r.cost.throttled_attempts);
        if r.cost.throttled_attempts > 0 {
            self.throttles.push((t, r.cost.throttled_attempts));
        }
        self.read_half_units += u64::from(r.cost.read_half_units);
        self.write_units += u64::from(r.cost.write_units);
        if let Some(s) = self.second(t) {
            s.store_requests += sent;
            s.store_reads += sent * u32::from(read);
            s.read_half_units += r.cost.read_half_units;
            s.throttled += r.cost.throttled_attempts;
            // The circuit's item and the report items have budgets of their own.
            match r.kind {
                RequestKind::Report => s.report_write_units += r.cost.write_units,
                _ => s.write_units += r.cost.write_units,
            }
        }
        match r.kind {
            RequestKind::Elect => self.count_election(r),
            RequestKind::HandOver => self.count_hand_over(r),
            _ => {}
        }
        if r.kind == RequestKind::Report && r.outcome == RequestOutcome::Won {
            self.last_report = Some((r.env, t));
        }
        if r.outcome == RequestOutcome::Won {
            if r.kind == RequestKind::Trip && self.last_report == Some((r.env, t)) {
                // A trip in the same poll as its environment's report: the fleet policy's.
                self.fleet_trips_won += 1;
            }
            self.landed(r.kind, t, r.opening);
        }
    }

    /// A write of `kind` won at `t`; a trip or reopen carries its `opening`.
    fn landed(&mut self, kind: RequestKind, t: u64, opening: Option<(u64, u32)>) {
        match kind {
            RequestKind::Trip => {
                self.trips_won += 1;
                self.first_trip_ms.get_or_insert(t);
                let from = self
                    .recent_failures
                    .iter()
                    .find(|f| **f + BURST_LOOKBACK_MS >= t)
                    .copied()
                    .unwrap_or(t);
                self.recent_failures.clear();
                self.bursts.push((from.min(t), t + self.burst_ms));
                self.item = CircuitState::Open;
                self.trip_landed_ms = Some(t);
                self.close_landed_ms = None;
                self.start_window(t, opening);
            }
            RequestKind::Reopen => {
                self.item = CircuitState::Open;
                self.start_window(t, opening);
            }
            RequestKind::Elect => self.item = CircuitState::HalfOpen,
            RequestKind::Close => {
                self.closes_won += 1;
                self.close_times.push(t);
                self.item = CircuitState::Closed;
                if let Some(window) = self.open_window() {
                    window.closed = true;
                }
                self.end_window(t);
                self.trip_landed_ms = None;
                self.close_landed_ms = Some(t);
                self.close_epoch += 1;
            }
            RequestKind::Read
            | RequestKind::Report
            | RequestKind::Suspect
            | RequestKind::HandOver
            | RequestKind::Other
            | RequestKind::IndexRead
            | RequestKind::IndexAdd
            | RequestKind::IndexRefresh
            | RequestKind::IndexRemove => {}
        }
    }
}

mod brownout;
mod capacity;
mod managed;
mod summarize;
mod windows;

pub use summarize::max_overlap;

#[cfg(test)]
mod tests;
