//! The figures of a run as the report shows them: per second, per recovery window, per call,
//! and the summary of the whole run. [`crate::metrics`] collects them.

use serde::Serialize;

/// One virtual second of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Second {
    /// Environments whose breaker believed CLOSED at the second's start.
    pub closed: u32,
    /// … OPEN.
    pub open: u32,
    /// … HALF_OPEN.
    pub half_open: u32,
    /// Calls started.
    pub calls: u32,
    /// Calls that reached the downstream (probes included).
    pub downstream_calls: u32,
    /// Downstream calls made as probes.
    pub probes: u32,
    /// DynamoDB requests (attempts that reached the store).
    pub store_requests: u32,
    /// Read units consumed, in halves.
    pub read_half_units: u32,
    /// Write units consumed by the circuit's item.
    pub write_units: u32,
    /// Throttled attempts.
    pub throttled: u32,
    /// Write units of failure reports (their own items).
    pub report_write_units: u32,
    /// DynamoDB read requests (attempts that reached the store); the rest of
    /// `store_requests` are writes.
    pub store_reads: u32,
}

/// A recovery window and the elections made in it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Window {
    /// When the opening landed, virtual ms.
    pub start_ms: u64,
    /// When the next opening or the close landed; `None`: still open at the end.
    pub end_ms: Option<u64>,
    /// It ended with a close (not a reopen).
    pub closed: bool,
    /// The opening's `opened_at` (unix s of the writer's clock) and the reopens it counts,
    /// which set its wait before the first election.
    pub opening: Option<(u64, u32)>,
    /// Election attempts that won.
    pub elections_won: u32,
    /// Election attempts that lost.
    pub elections_lost: u32,
    /// Election attempts throttled.
    pub elections_throttled: u32,
    /// Election requests the store did not answer (unreachable): not DynamoDB requests.
    pub elections_unanswered: u32,
    /// Probe hand-over writes (a probe's success counted, its lease released): won + lost +
    /// throttled.
    pub hand_over_writes: u32,
}

impl Window {
    /// Won + lost + throttled election writes.
    pub fn election_writes(&self) -> u32 {
        self.elections_won + self.elections_lost + self.elections_throttled
    }

    /// Every write that admits a probe or hands one over: the election writes (the first
    /// and each takeover) and the hand-overs.
    pub fn probe_writes(&self) -> u32 {
        self.election_writes() + self.hand_over_writes
    }
}

/// One call, as the simulator saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// The environment.
    pub env: u32,
    /// Virtual ms the call started.
    pub start_ms: u64,
    /// The downstream ran (closed admission or probe).
    pub admitted: bool,
    /// The downstream ran as a probe, from this virtual ms to that one.
    pub probe: Option<(u64, u64)>,
    /// Virtual ms the call's outcome was known to the breaker (its last poll).
    pub decided_ms: u64,
    /// Virtual ms the call returned (or was killed), its store latency included.
    pub end_ms: u64,
    /// The downstream failed the call, or never answered it.
    pub failed: bool,
    /// The breaker abandoned the call at its deadline.
    pub abandoned: bool,
    /// Lambda ended the invocation at its function timeout.
    pub killed: bool,
    /// The downstream was down, hanging or throttling when the call reached it.
    pub unhealthy: bool,
    /// The downstream's error said to retry after this long, ms.
    pub retry_after_ms: Option<u64>,
    /// The breaker's adaptive policy shed the call (it is not admitted).
    pub shed: bool,
}

/// The figures of a run: one JSON object per scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The scenario's name.
    pub scenario: String,
    /// Environments.
    pub envs: u32,
    /// The seed.
    pub seed: u64,
    /// Virtual seconds simulated.
    pub duration_s: u64,
    /// Calls started (invocations of the protected function).
    pub calls: u64,
    /// Calls rejected by the breaker.
    pub rejected: u64,
    /// Calls that reached the downstream, probes included.
    pub downstream_calls: u64,
    /// Downstream calls that failed (hung calls included).
    pub downstream_failures: u64,
    /// Failed downstream calls that were not probes.
    pub failed_non_probe_calls: u64,
    /// From the first counted failure to the first trip landing, s.
    pub first_failure_to_trip_s: Option<f64>,
    /// Non-probe downstream calls one environment started while the downstream was down,
    /// hanging or throttling: the most over environments.
    pub max_non_probe_calls_per_env_while_failing: u32,
    /// Most write units of failure reports in one virtual second outside every trip burst.
    pub max_report_wcu_per_s: u32,
    /// Write attempts carrying a failure report (to a window's or a suspicion's counters).
    pub report_writes: u64,
    /// Write attempts raising a suspicion of the fleet on the circuit's item.
    pub suspect_writes: u64,
    /// Trips that landed from the fleet-wide policy (right after their environment's
    /// report), of `trips_won`.
    pub fleet_trips_won: u64,
    /// Calls the breaker abandoned at their deadline.
    pub abandoned_calls: u64,
    /// Invocations Lambda ended at the function timeout.
    pub killed_invocations: u64,
    /// Environments started again cold after such an end.
    pub cold_starts: u64,
    /// Downstream calls made as probes.
    pub probes: u64,
    /// Most probes in flight at once, fleet-wide.
    pub max_probes_in_flight: u32,
    /// Trips that landed.
    pub trips_won: u64,
    /// Closes that landed.
    pub closes_won: u64,
    /// Recovery windows (openings that landed).
    pub windows: usize,
    /// Most election writes that won in one window.
    pub max_elections_won_per_window: u32,
    /// Most election writes (won + lost + throttled) in one window.
    pub max_election_writes_per_window: u32,
    /// Most election and probe hand-over writes in one window.
    pub max_probe_writes_per_window: u32,
    /// Election writes made while no window ran (the item was closed or never opened).
    pub election_writes_outside_windows: u64,
    /// DynamoDB requests: every attempt that reached the store, throttled ones included.
    pub store_requests: u64,
    /// GetItem attempts.
    pub read_requests: u64,
    /// PutItem/UpdateItem attempts.
    pub write_requests: u64,
    /// Write attempts carrying a trip.
    pub trip_writes: u64,
    /// Write attempts carrying an election.
    pub election_writes: u64,
    /// Write attempts carrying a close or a reopen.
    pub close_and_reopen_writes: u64,
    /// Write attempts handing a probe over (a success counted, the lease released).
    pub hand_over_writes: u64,
    /// Throttled attempts.
    pub throttled_requests: u64,
    /// Throttled attempts inside a trip burst.
    pub throttled_in_trip_burst: u64,
    /// Throttled attempts outside every trip burst.
    pub throttled_outside_trip_burst: u64,
    /// Requests to an unreachable store (not DynamoDB requests: none reached it).
    pub unreachable_requests: u64,
    /// Most read units consumed in one virtual second.
    pub max_rcu_per_s: f64,
    /// Most write units the circuit's item consumed in one virtual second.
    pub max_wcu_per_s: u32,
    /// Read units consumed in all.
    pub rcu_total: f64,
    /// Write units consumed in all.
    pub wcu_total: u64,
    /// The longest an environment kept calling the downstream after a trip landed, s.
    pub max_open_propagation_s: Option<f64>,
    /// The longest an environment took to admit a call after a close landed, s.
    pub max_close_propagation_s: Option<f64>,
    /// The longest an environment kept rejecting calls after a close landed, s.
    pub max_rejecting_after_close_s: Option<f64>,
    /// Non-probe downstream calls made while the item was OPEN or HALF_OPEN.
    pub downstream_calls_while_open: u64,
    /// From the downstream's recovery to the close that followed, s; `None`: no recovery
    /// in the scenario, or no close after it.
    pub time_to_close_s: Option<f64>,
    /// From the first instant the fleet may close after the downstream's recovery (the
    /// later of the recovery and the closing window's first election instant: its opening
    /// plus the recovery timeout) to the close landing, s; `None`: no close after a
    /// recovery.
    pub close_latency_s: Option<f64>,
    /// DynamoDB requests per million calls.
    pub store_requests_per_million_calls: f64,
    /// DynamoDB on-demand cost per million calls, USD (us-east-1: $0.125 per million read
    /// request units, $0.625 per million write request units).
    pub store_cost_per_million_calls_usd: f64,
    /// The downstream's return and its load against its capacity (last, so the figures
    /// above print as they did before it).
    pub capacity: CapacityFigures,
    /// What a brownout cost, and how fast an outage was turned away.
    pub brownout: BrownoutFigures,
    /// Environments that ran many invocations at once; `None` (and left out of the JSON)
    /// for one at a time, so those runs print as they did before concurrency existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed: Option<ManagedFigures>,
}

/// The figures of environments that run many invocations at once ([`crate::metrics`]'s
/// `managed` module defines each).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManagedFigures {
    /// Invocations one environment ran at once.
    pub concurrency: u32,
    /// Most probe calls at the downstream at once, fleet-wide (admission to answer).
    pub max_probes_at_downstream: u32,
}

/// What a brownout cost, and how fast an outage was turned away ([`crate::metrics`]'s
/// `brownout` module defines each).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrownoutFigures {
    /// Calls the adaptive policy shed.
    pub shed_calls: u64,
    /// Calls served in the seconds of a finite, non-zero capacity.
    pub served_while_limited: u64,
    /// The capacity of those seconds.
    pub capacity_while_limited: u64,
    /// Served against capacity in those seconds; `None`: there were none.
    pub goodput_share_while_limited: Option<f64>,
    /// Admitted calls that failed in those seconds.
    pub failed_while_limited: u64,
    /// Of the calls admitted in those seconds, the share that failed.
    pub failed_share_of_admitted_while_limited: Option<f64>,
    /// From the first `Down` phase's start to the first second with 95 % of the calls
    /// rejected or shed, s; `None`: no outage, or never.
    pub outage_to_95_turned_away_s: Option<f64>,
}

/// The downstream's return and its load against its capacity, and the store's load per
/// second ([`crate::metrics`]'s `capacity` module defines each).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityFigures {
    /// The downstream's return, virtual s: the later of its health's recovery and its
    /// capacity ramp's start; `None`: it has none.
    pub returned_at_s: Option<f64>,
    /// Downstream calls (probes included) started at or after the return that failed.
    pub failed_calls_after_return: Option<u64>,
    /// Openings (trips and reopens) that landed at or after the return.
    pub reopens_after_return: Option<u64>,
    /// Calls the fleet sends per second at its full rate.
    pub full_rate_per_s: f64,
    /// From the return to the start of the first second, at or after it, in which the
    /// calls reaching the downstream reach 95 % of the full rate, s.
    pub full_rate_after_return_s: Option<f64>,
    /// Over seconds of a finite capacity: the calls reaching the downstream past it (the
    /// calls it shed).
    pub admitted_above_capacity: u64,
    /// The same, over the seconds from the return on.
    pub admitted_above_capacity_after_return: Option<u64>,
    /// Calls reaching the downstream, per virtual second.
    pub admitted_per_s: Vec<u32>,
    /// The downstream's capacity per virtual second; `None`: unlimited.
    pub capacity_per_s: Vec<Option<u32>>,
    /// Failed calls whose error carried a "retry after".
    pub retry_after_answers: u64,
    /// DynamoDB read requests per second, mean over the run.
    pub store_reads_per_s: f64,
    /// The most read requests in one virtual second.
    pub max_store_reads_per_s: u32,
    /// DynamoDB write requests per second, mean over the run.
    pub store_writes_per_s: f64,
    /// The most write requests in one virtual second.
    pub max_store_writes_per_s: u32,
}

/// USD per read request unit, on demand, us-east-1.
pub const USD_PER_RRU: f64 = 0.125e-6;
/// USD per write request unit, on demand, us-east-1.
pub const USD_PER_WRU: f64 = 0.625e-6;
