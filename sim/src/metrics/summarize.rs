//! [`Metrics::summary`]: the figures of a run from what was collected.

use super::{Metrics, Window};
use crate::summary::{Summary, USD_PER_RRU, USD_PER_WRU};

impl Metrics {
    /// The per-second series.
    pub fn seconds(&self) -> &[crate::summary::Second] {
        &self.seconds
    }

    /// The most probes in flight at once.
    pub fn max_probes_in_flight(&self) -> u32 {
        max_overlap(&self.probes)
    }

    /// The figures.
    pub fn summary(&self) -> Summary {
        let capacity = self.capacity_figures();
        let brownout = self.brownout_figures(&capacity.capacity_per_s);
        let calls = self.calls;
        let store_requests = self.read_requests + self.write_requests;
        let rcu_total = self.read_half_units as f64 / 2.0;
        let secs = |ms: Option<u64>| ms.map(|ms| ms as f64 / 1000.0);
        let per_million = |x: f64| {
            if calls == 0 {
                0.0
            } else {
                x * 1e6 / calls as f64
            }
        };
        let time_to_close_ms = self.recovered_at_ms.and_then(|recovered| {
            self.close_times
                .iter()
                .find(|t| **t >= recovered)
                .map(|t| t - recovered)
        });
        let close_latency_ms = self.recovered_at_ms.and_then(|recovered| {
            self.windows.iter().find_map(|w| {
                let closed = w.end_ms.filter(|end| *end >= recovered && w.closed)?;
                let may_elect = self.first_election_ms(w).max(recovered);
                Some(closed.saturating_sub(may_elect))
            })
        });
        let in_burst = |t: u64| {
            self.bursts
                .iter()
                .any(|(from, until)| *from <= t && t <= *until)
        };
        let throttled_in_burst: u64 = self
            .throttles
            .iter()
            .filter(|(t, _)| in_burst(*t))
            .map(|(_, n)| u64::from(*n))
            .sum();
        // A second is outside every burst if no burst overlaps any part of it.
        let second_outside = |second: u64| {
            let (from, until) = (second * 1000, second * 1000 + 999);
            !self
                .bursts
                .iter()
                .any(|(b0, b1)| *b0 <= until && from <= *b1)
        };
        Summary {
            failed_non_probe_calls: self.failed_non_probe_calls,
            first_failure_to_trip_s: match (self.first_failure_ms, self.first_trip_ms) {
                (Some(failure), Some(trip)) if trip >= failure => secs(Some(trip - failure)),
                _ => None,
            },
            max_non_probe_calls_per_env_while_failing: self
                .calls_while_failing
                .iter()
                .copied()
                .max()
                .unwrap_or(0),
            max_report_wcu_per_s: self
                .seconds
                .iter()
                .enumerate()
                .filter(|(i, _)| second_outside(*i as u64))
                .map(|(_, s)| s.report_write_units)
                .max()
                .unwrap_or(0),
            report_writes: self.report_writes,
            suspect_writes: self.suspect_writes,
            fleet_trips_won: self.fleet_trips_won,
            abandoned_calls: self.abandoned_calls,
            killed_invocations: self.killed_invocations,
            cold_starts: self.cold_starts,
            scenario: self.scenario.clone(),
            envs: self.envs,
            seed: self.seed,
            duration_s: self.duration_ms / 1000,
            calls,
            rejected: self.rejected,
            downstream_calls: self.downstream_calls,
            downstream_failures: self.downstream_failures,
            probes: self.probes.len() as u64,
            max_probes_in_flight: self.max_probes_in_flight(),
            trips_won: self.trips_won,
            closes_won: self.closes_won,
            windows: self.windows.len(),
            max_elections_won_per_window: self
                .windows
                .iter()
                .map(|w| w.elections_won)
                .max()
                .unwrap_or(0),
            max_election_writes_per_window: self
                .windows
                .iter()
                .map(Window::election_writes)
                .max()
                .unwrap_or(0),
            max_probe_writes_per_window: self
                .windows
                .iter()
                .map(Window::probe_writes)
                .max()
                .unwrap_or(0),
            election_writes_outside_windows: self.election_writes_outside_windows,
            store_requests,
            read_requests: self.read_requests,
            write_requests: self.write_requests,
            trip_writes: self.trip_writes,
            election_writes: self.election_writes,
            close_and_reopen_writes: self.close_and_reopen_writes,
            hand_over_writes: self.hand_over_writes,
            throttled_requests: self.throttled,
            throttled_in_trip_burst: throttled_in_burst,
            throttled_outside_trip_burst: self.throttled - throttled_in_burst,
            unreachable_requests: self.unreachable,
            max_rcu_per_s: self
                .seconds
                .iter()
                .map(|s| s.read_half_units)
                .max()
                .unwrap_or(0) as f64
                / 2.0,
            max_wcu_per_s: self
                .seconds
                .iter()
                .map(|s| s.write_units)
                .max()
                .unwrap_or(0),
            rcu_total,
            wcu_total: self.write_units,
            max_open_propagation_s: secs(self.max_open_propagation_ms),
            max_close_propagation_s: secs(self.max_close_propagation_ms),
            max_rejecting_after_close_s: secs(self.max_rejecting_after_close_ms),
            downstream_calls_while_open: self.downstream_calls_while_open,
            time_to_close_s: secs(time_to_close_ms),
            close_latency_s: secs(close_latency_ms),
            store_requests_per_million_calls: per_million(store_requests as f64),
            store_cost_per_million_calls_usd: per_million(
                rcu_total * USD_PER_RRU + self.write_units as f64 * USD_PER_WRU,
            ),
            capacity,
            brownout,
            managed: self.managed_figures(),
        }
    }
}

/// The most intervals `[start, end)` that overlap at one instant.
///
/// ```
/// use breaker_sim::metrics::max_overlap;
/// assert_eq!(max_overlap(&[(0, 50), (50, 100)]), 1);
/// assert_eq!(max_overlap(&[(0, 50), (10, 60), (20, 30)]), 3);
/// assert_eq!(max_overlap(&[]), 0);
/// ```
pub fn max_overlap(intervals: &[(u64, u64)]) -> u32 {
    let mut edges: Vec<(u64, i32)> = intervals
        .iter()
        .flat_map(|&(start, end)| [(start, 1), (end, -1)])
        .collect();
    // At equal times an end sorts before a start: touching intervals do not overlap.
    edges.sort_unstable();
    let (mut now, mut max) = (0i32, 0i32);
    for (_, delta) in edges {
        now += delta;
        max = max.max(now);
    }
    max as u32
}
