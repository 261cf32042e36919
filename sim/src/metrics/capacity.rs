//! The downstream's return and its load against its capacity, defined so they can be
//! checked:
//!
//! - the **return** is the later of the health's recovery
//!   ([`HealthSchedule::recovered_at`](crate::downstream::HealthSchedule::recovered_at))
//!   and the start of the capacity's ramp, where either exists;
//! - **failed calls after the return**: downstream calls (probes included) started at or
//!   after it that failed: the users' cost of coming back;
//! - **openings after the return**: trips and reopens landing at or after it: each is the
//!   fleet tripping on a downstream that was back;
//! - **admitted per second** counts the calls that reached the downstream in each virtual
//!   second, as the downstream counted them (its capacity buckets), against the second's
//!   capacity; **admitted above capacity** sums, over seconds of a finite capacity, the
//!   calls past it, which are the calls it shed;
//! - **full rate after the return**: from the return to the start of the first second at
//!   or after it in which the calls reaching the downstream reach 95 % of the fleet's full
//!   rate (every environment's calls);
//! - **store reads and writes per second**: DynamoDB requests (attempts that reached the
//!   store) per virtual second, mean and most.

use super::Metrics;
use crate::downstream::CapacitySchedule;
use crate::summary::{Call, CapacityFigures};

/// Share of the fleet's full rate at which its calls count as back in full.
const FULL_RATE_SHARE: f64 = 0.95;

/// What the capacity figures collect beyond the per-second series.
#[derive(Debug, Default)]
pub(super) struct Load {
    returned_at_ms: Option<u64>,
    full_rate_per_s: f64,
    capacity: CapacitySchedule,
    failed_after_return: u64,
    retry_after_answers: u64,
    /// Calls that reached the downstream per virtual second, as it counted them.
    admitted: Vec<u32>,
}

impl Load {
    /// A call, as [`Metrics::on_call`] reports it.
    pub(super) fn on_call(&mut self, call: &Call) {
        if !call.failed {
            return;
        }
        self.retry_after_answers += u64::from(call.retry_after_ms.is_some());
        if self
            .returned_at_ms
            .is_some_and(|back| call.start_ms >= back)
        {
            self.failed_after_return += 1;
        }
    }
}

impl Metrics {
    /// The downstream's return (virtual ms), the fleet's full rate (calls per second) and
    /// the downstream's capacity the capacity figures measure against (none, 0 and
    /// unlimited, unless set).
    pub fn with_downstream(
        mut self,
        returned_at_ms: Option<u64>,
        full_rate_per_s: f64,
        capacity: CapacitySchedule,
    ) -> Self {
        self.load.returned_at_ms = returned_at_ms;
        self.load.full_rate_per_s = full_rate_per_s;
        self.load.capacity = capacity;
        self
    }

    /// The calls that reached the downstream per virtual second
    /// ([`Downstream::load_per_second`](crate::downstream::Downstream::load_per_second)),
    /// at the end of the run.
    pub fn on_downstream_load(&mut self, per_second: &[u32]) {
        self.load.admitted = per_second.to_vec();
    }

    /// The capacity figures.
    pub(super) fn capacity_figures(&self) -> CapacityFigures {
        let load = &self.load;
        let seconds = self.seconds.len();
        let admitted: Vec<u32> = (0..seconds)
            .map(|s| load.admitted.get(s).copied().unwrap_or(0))
            .collect();
        let capacity: Vec<Option<u32>> = (0..seconds as u64)
            .map(|s| load.capacity.of_second(s))
            .collect();
        let back = load.returned_at_ms;
        let after_return = |s: usize| back.is_some_and(|back| s as u64 * 1000 >= back);
        let above = |s: usize| capacity[s].map_or(0, |c| u64::from(admitted[s].saturating_sub(c)));
        let full_rate_at = (0..seconds).find(|s| {
            after_return(*s) && f64::from(admitted[*s]) >= FULL_RATE_SHARE * load.full_rate_per_s
        });
        let reads = self.seconds.iter().map(|s| s.store_reads);
        let writes = self
            .seconds
            .iter()
            .map(|s| s.store_requests - s.store_reads);
        let mean = |sum: u64| sum as f64 / seconds.max(1) as f64;
        let above_capacity = (0..seconds).map(above).sum();
        let above_after_return =
            back.map(|_| (0..seconds).filter(|s| after_return(*s)).map(above).sum());
        CapacityFigures {
            returned_at_s: back.map(|ms| ms as f64 / 1000.0),
            failed_calls_after_return: back.map(|_| load.failed_after_return),
            reopens_after_return: back
                .map(|back| self.windows.iter().filter(|w| w.start_ms >= back).count() as u64),
            full_rate_per_s: load.full_rate_per_s,
            full_rate_after_return_s: back
                .zip(full_rate_at)
                .map(|(back, s)| (s as u64 * 1000 - back) as f64 / 1000.0),
            admitted_above_capacity: above_capacity,
            admitted_above_capacity_after_return: above_after_return,
            admitted_per_s: admitted,
            capacity_per_s: capacity,
            retry_after_answers: load.retry_after_answers,
            store_reads_per_s: mean(reads.clone().map(u64::from).sum()),
            max_store_reads_per_s: reads.max().unwrap_or(0),
            store_writes_per_s: mean(writes.clone().map(u64::from).sum()),
            max_store_writes_per_s: writes.max().unwrap_or(0),
        }
    }
}
