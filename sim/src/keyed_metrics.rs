//! The measurements of a keyed scenario, defined so they can be checked:
//!
//! - **failed calls to failing keys**: downstream calls to a failing key that failed
//!   (probes included: each one is a call the key's users saw fail);
//! - **refused calls to healthy keys**: calls to a key whose downstream is always up that
//!   the breaker rejected: a keyed circuit's promise is 0;
//! - **reads per second**: GetItem attempts of the index items and of the circuits' items
//!   (a key's item, or the one plain circuit's), over the run's virtual seconds;
//! - **writes per window**: write attempts of every item (key items, the index, the fleet
//!   counters) in each 10-second fleet window; the most in one window is reported;
//! - **the index's largest size**, **the most keys open at any instant** and **adds the
//!   cap refused**: from the model's census, which follows every key item and index as
//!   writes land, so "at any instant" is exact;
//! - **unindexed open keys**: writes after which an OPEN or HALF_OPEN key item was not named
//!   by its index (the design's invariant says 0).

use serde::Serialize;

use crate::env_store::StoreRequest;
use crate::keys::{Guarding, KeySpace};
use crate::metrics::Call;
use crate::model::{KeyCensus, RequestKind, RequestOutcome};

/// The fleet window writes are counted over, ms.
const WINDOW_MS: u64 = 10_000;

/// Collects a keyed run's measurements.
#[derive(Debug)]
pub struct KeyedMetrics {
    scenario: String,
    keys: KeySpace,
    envs: u32,
    seed: u64,
    duration_ms: u64,
    cap: u32,
    calls_to_failing: u64,
    failed_calls_to_failing: u64,
    rejected_calls_to_failing: u64,
    calls_to_healthy: u64,
    rejected_calls_to_healthy: u64,
    index_reads: u64,
    /// Read units the index reads consumed, in halves.
    index_read_half_units: u64,
    item_reads: u64,
    index_writes: u64,
    item_writes: u64,
    report_writes: u64,
    throttled: u64,
    index_throttled: u64,
    plain_circuit_opened: bool,
    /// Write attempts per fleet window.
    windows: Vec<u64>,
    /// Read attempts per virtual second: (index, items).
    reads_per_second: Vec<(u32, u32)>,
}

/// The figures of a keyed run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyedSummary {
    /// The scenario's name.
    pub scenario: String,
    /// How the calls were guarded: `keyed`, `one-circuit` or `only-key-{rank}`.
    pub guarding: String,
    /// Environments.
    pub envs: u32,
    /// Keys.
    pub keys: u32,
    /// The seed.
    pub seed: u64,
    /// Virtual seconds simulated.
    pub duration_s: u64,
    /// Keys whose downstream fails.
    pub failing_keys: u32,
    /// Of them, those whose circuit opened at some instant.
    pub failing_keys_opened: u32,
    /// The most called failing key that never opened: its rank.
    pub first_failing_rank_not_opened: Option<u32>,
    /// The ranks of the failing keys that opened.
    #[serde(skip)]
    pub opened_failing_ranks: Vec<u32>,
    /// Calls to failing keys.
    pub calls_to_failing: u64,
    /// Downstream calls to failing keys that failed.
    pub failed_calls_to_failing: u64,
    /// Calls to failing keys the breaker rejected.
    pub rejected_calls_to_failing: u64,
    /// Calls to healthy keys.
    pub calls_to_healthy: u64,
    /// Calls to healthy keys the breaker rejected.
    pub rejected_calls_to_healthy: u64,
    /// Index reads per second, over the run.
    pub index_reads_per_s: f64,
    /// Read units per second the index reads consumed (a unit per started 4 KB, half
    /// for an eventually consistent read).
    pub index_read_units_per_s: f64,
    /// Reads of the circuits' items (key items, or the plain circuit's) per second.
    pub item_reads_per_s: f64,
    /// The most reads (index and items) in one virtual second.
    pub max_reads_in_a_second: u32,
    /// Write attempts, every item.
    pub writes: u64,
    /// Of them, to the index.
    pub index_writes: u64,
    /// Of them, to fleet counters (failure reports).
    pub report_writes: u64,
    /// The most write attempts in one 10-second fleet window.
    pub max_writes_per_window: u64,
    /// Throttled attempts, every item.
    pub throttled: u64,
    /// Of them, index writes.
    pub index_throttled: u64,
    /// The index's largest size, bytes.
    pub max_index_bytes: usize,
    /// The most key items OPEN or HALF_OPEN at one instant.
    pub max_open_keys: u32,
    /// The largest `open_keys` an index held.
    pub max_index_open_keys: u32,
    /// The keyed breakers' `max_open_keys`.
    pub cap: u32,
    /// Adds the cap refused.
    pub cap_refusals: u64,
    /// Suspicions the index refused (it names at most 1,000 at once).
    pub suspicion_refusals: u64,
    /// Writes after which an open key item was not named by its index (0 by design).
    pub unindexed_open_keys: u64,
}

impl KeyedMetrics {
    /// Metrics of `scenario`'s run over `keys`, whose keyed breakers cap open keys at `cap`.
    pub fn new(scenario: &crate::scenario::Scenario, keys: &KeySpace, cap: u32) -> Self {
        Self {
            scenario: scenario.name.clone(),
            keys: keys.clone(),
            envs: scenario.envs,
            seed: scenario.seed,
            duration_ms: scenario.duration_ms,
            cap,
            calls_to_failing: 0,
            failed_calls_to_failing: 0,
            rejected_calls_to_failing: 0,
            calls_to_healthy: 0,
            rejected_calls_to_healthy: 0,
            index_reads: 0,
            index_read_half_units: 0,
            item_reads: 0,
            index_writes: 0,
            item_writes: 0,
            report_writes: 0,
            throttled: 0,
            index_throttled: 0,
            plain_circuit_opened: false,
            windows: vec![0; scenario.duration_ms.div_ceil(WINDOW_MS) as usize],
            reads_per_second: vec![(0, 0); scenario.duration_ms.div_ceil(1000) as usize],
        }
    }

    /// A call to the key of `rank`.
    pub fn on_call(&mut self, rank: u32, call: &Call) {
        if self.keys.fails(rank) {
            self.calls_to_failing += 1;
            self.failed_calls_to_failing += u64::from(call.admitted && call.failed);
            self.rejected_calls_to_failing += u64::from(!call.admitted);
        } else {
            self.calls_to_healthy += 1;
            self.rejected_calls_to_healthy += u64::from(!call.admitted);
        }
    }

    /// A store request.
    pub fn on_request(&mut self, r: &StoreRequest) {
        if r.outcome == RequestOutcome::Unreachable {
            return;
        }
        let attempts = u64::from(r.cost.attempts);
        self.throttled += u64::from(r.cost.throttled_attempts);
        let second = self.reads_per_second.get_mut((r.time_ms / 1000) as usize);
        match r.kind {
            RequestKind::IndexRead => {
                self.index_reads += attempts;
                self.index_read_half_units += u64::from(r.cost.read_half_units);
                if let Some((index, _)) = second {
                    *index += r.cost.attempts;
                }
                return;
            }
            RequestKind::Read => {
                self.item_reads += attempts;
                if let Some((_, items)) = second {
                    *items += r.cost.attempts;
                }
                return;
            }
            RequestKind::IndexAdd | RequestKind::IndexRefresh | RequestKind::IndexRemove => {
                self.index_writes += attempts;
                self.index_throttled += u64::from(r.cost.throttled_attempts);
            }
            RequestKind::Report => self.report_writes += attempts,
            RequestKind::Trip => {
                self.item_writes += attempts;
                self.plain_circuit_opened |= r.outcome == RequestOutcome::Won;
            }
            _ => self.item_writes += attempts,
        }
        if let Some(window) = self.windows.get_mut((r.time_ms / WINDOW_MS) as usize) {
            *window += attempts;
        }
    }

    /// The figures, with the model's `census` at the run's end and the id of the key item
    /// of a rank (for keyed runs).
    pub fn summary(&self, census: &KeyCensus, key_item_id: impl Fn(u32) -> String) -> KeyedSummary {
        let failing = self.keys.failing_ranks();
        let opened: Vec<u32> = match self.keys.guarding {
            Guarding::Keyed | Guarding::PlainPerKey => failing
                .iter()
                .copied()
                .filter(|rank| census.ever_open(&key_item_id(*rank)))
                .collect(),
            Guarding::OneCircuit | Guarding::OnlyKey(_) if self.plain_circuit_opened => {
                failing.clone()
            }
            Guarding::OneCircuit | Guarding::OnlyKey(_) => Vec::new(),
        };
        let seconds = self.duration_ms as f64 / 1000.0;
        KeyedSummary {
            scenario: self.scenario.clone(),
            guarding: match self.keys.guarding {
                Guarding::Keyed => "keyed".to_owned(),
                Guarding::OneCircuit => "one-circuit".to_owned(),
                Guarding::OnlyKey(rank) => format!("only-key-{rank}"),
                Guarding::PlainPerKey => "plain-per-key".to_owned(),
            },
            envs: self.envs,
            keys: self.keys.count,
            seed: self.seed,
            duration_s: self.duration_ms / 1000,
            failing_keys: failing.len() as u32,
            failing_keys_opened: opened.len() as u32,
            first_failing_rank_not_opened: failing
                .iter()
                .copied()
                .find(|rank| !opened.contains(rank)),
            opened_failing_ranks: opened,
            calls_to_failing: self.calls_to_failing,
            failed_calls_to_failing: self.failed_calls_to_failing,
            rejected_calls_to_failing: self.rejected_calls_to_failing,
            calls_to_healthy: self.calls_to_healthy,
            rejected_calls_to_healthy: self.rejected_calls_to_healthy,
            index_reads_per_s: self.index_reads as f64 / seconds,
            index_read_units_per_s: self.index_read_half_units as f64 / 2.0 / seconds,
            item_reads_per_s: self.item_reads as f64 / seconds,
            max_reads_in_a_second: self
                .reads_per_second
                .iter()
                .map(|(index, items)| index + items)
                .max()
                .unwrap_or(0),
            writes: self.item_writes + self.index_writes + self.report_writes,
            index_writes: self.index_writes,
            report_writes: self.report_writes,
            max_writes_per_window: self.windows.iter().copied().max().unwrap_or(0),
            throttled: self.throttled,
            index_throttled: self.index_throttled,
            max_index_bytes: census.max_index_bytes,
            max_open_keys: census.max_open_key_items,
            max_index_open_keys: census.max_index_open_keys,
            cap: self.cap,
            cap_refusals: census.cap_refusals,
            suspicion_refusals: census.suspicion_refusals,
            unindexed_open_keys: census.unindexed_open_keys,
        }
    }
}
