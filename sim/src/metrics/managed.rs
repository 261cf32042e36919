//! Environments that run many invocations at once (Managed Instances), defined so they can
//! be checked:
//!
//! - **probes at the downstream at once**: probe calls from their admission to the
//!   downstream's answer (or their abandonment), the most that overlap fleet-wide. Probes
//!   in flight (the call's whole span) also hold the store latency after the answer: the
//!   model answers the probe's outcome write at once, so the breaker frees its one probe
//!   slot then, and another invocation of the same environment may probe in that tail,
//!   where DynamoDB's answer would still be on its way;
//! - the calls that reached a hung or failing downstream per environment, whichever of its
//!   workers made them, are the `max_non_probe_calls_per_env_while_failing` of every run.

use super::{Metrics, max_overlap};
use crate::summary::ManagedFigures;

/// What the managed figures collect.
#[derive(Debug, Default)]
pub(super) struct Workers {
    /// Invocations one environment runs at once; 0 or 1: one at a time.
    concurrency: u32,
    /// Probe calls at the downstream: (admitted, answered) virtual ms.
    probes_at_downstream: Vec<(u64, u64)>,
}

impl Metrics {
    /// Environments that run `concurrency` invocations at once (1 unless set).
    pub fn with_concurrency(mut self, concurrency: u32) -> Self {
        self.workers.concurrency = concurrency;
        self
    }

    /// A probe reached the downstream from `admitted` to `answered` virtual ms.
    pub fn on_probe_at_downstream(&mut self, (admitted, answered): (u64, u64)) {
        self.workers.probes_at_downstream.push((admitted, answered));
    }

    /// The managed figures; `None` for environments that run one invocation at a time, whose
    /// figures print as they did before concurrency existed.
    pub(super) fn managed_figures(&self) -> Option<ManagedFigures> {
        let w = &self.workers;
        (w.concurrency > 1).then(|| ManagedFigures {
            concurrency: w.concurrency,
            max_probes_at_downstream: max_overlap(&w.probes_at_downstream),
        })
    }
}
