//! `ItemModel`: DynamoDB as the protocol meets it, one item per circuit.
//!
//! Why a model and not dynalite: the limits that matter at fleet scale are DynamoDB's
//! service limits, which no local server enforces. The model applies each write through
//! the protocol's one write type ([`RecordWrite::allowed`], [`RecordWrite::applied_to`]),
//! so it cannot disagree with the protocol; everything else here is the service around the
//! item:
//!
//! - **Eventually consistent reads lag.** Each read picks a lag in `[0, max_lag]` (a replica
//!   that is that far behind) and returns the item as it was then; a strongly consistent
//!   read returns the current item.
//! - **A lost write returns the current item** (`ReturnValuesOnConditionCheckFailure =
//!   ALL_OLD`), strongly consistent.
//! - **Units.** An eventually consistent GetItem of a small item costs 0.5 RCU, a strongly
//!   consistent one 1 RCU, a write 1 WCU — also when its condition fails.
//! - **Per-item throttling.** One item lives in one partition: 3,000 RCU and 1,000 WCU per
//!   second at most. A request that would exceed its second's budget is rejected with
//!   `ProvisionedThroughputExceededException` and consumes nothing.
//! - **The SDK client's attempts.** The store's client makes 2 attempts: a throttled first
//!   attempt is retried after a back-off; every attempt is counted.
//! - **Latency.** Every attempt takes a seeded latency (default 5–20 ms).
//! - **Reports live apart.** A failure report is an UpdateItem of an item of its own (one
//!   per circuit and fleet window, or per suspicion for the reports made under one), with
//!   its own per-item capacity; it costs 1 WCU. A suspicion is a conditional write of the
//!   circuit's item, like a trip.
//! - **Faults by time.** Windows in which every write is throttled, or the store is
//!   unreachable (every request fails after the store timeout).
//!
//! Time is virtual milliseconds since the start of the run; units are accounted per whole
//! virtual second.

use std::collections::HashMap;

use breaker_runtime::store::{CircuitRecord, RecordWrite, WriteOutcome};

use crate::rng::Rng;

/// The service around the item: limits, lag, latencies, the client's retries.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// Read capacity of one item per second, in RCU (DynamoDB: 3,000).
    pub read_units_per_s: u32,
    /// Write capacity of one item per second, in WCU (DynamoDB: 1,000).
    pub write_units_per_s: u32,
    /// Longest lag of an eventually consistent read, in ms (default 1 s).
    pub max_lag_ms: u64,
    /// Latency of one attempt, uniform in `[min, max]` ms (default 5–20 ms).
    pub latency_ms: (u64, u64),
    /// The client's back-off before retrying a throttled attempt, in ms (default 20–100 ms,
    /// as `DynamoDbStore`'s own client).
    pub retry_backoff_ms: (u64, u64),
    /// Attempts per request (the client's; default 2).
    pub attempts: u32,
    /// How long a request to an unreachable store takes to fail, in ms (the breaker's store
    /// timeout, default 1 s).
    pub unreachable_ms: u64,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            read_units_per_s: 3_000,
            write_units_per_s: 1_000,
            max_lag_ms: 1_000,
            latency_ms: (5, 20),
            retry_backoff_ms: (20, 100),
            attempts: 2,
            unreachable_ms: 1_000,
        }
    }
}

/// How a read is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consistency {
    /// 0.5 RCU, may lag the last write. What the protocol uses.
    Eventual,
    /// 1 RCU, never lags.
    Strong,
}

/// Something wrong with the store during a window of virtual time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreFault {
    /// Every write attempt is throttled (reads are served).
    WritesThrottled,
    /// Every request fails after [`ModelConfig::unreachable_ms`], reaching nothing.
    Unreachable,
}

/// A fault from `from_ms` (included) until `until_ms` (excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultWindow {
    /// Start, virtual ms.
    pub from_ms: u64,
    /// End, virtual ms (excluded).
    pub until_ms: u64,
    /// What goes wrong.
    pub fault: StoreFault,
}

/// DynamoDB holding one item per circuit; see the module docs.
///
/// ```
/// use breaker_runtime::store::{RecordWrite, WriteOutcome};
/// use breaker_sim::model::{Consistency, ItemModel, ModelConfig};
///
/// let mut model = ItemModel::new(ModelConfig::default(), 1);
/// let trip = RecordWrite::Trip { failure_count: 5, opened_at: 100, expiration: 3730, opened_by: None, open_until: None };
/// let served = model.apply("ce", &trip, 0);
/// assert_eq!(served.result, Ok(WriteOutcome::Won));
/// assert_eq!(served.cost.write_units, 1);
/// let read = model.read("ce", 0, Consistency::Strong);
/// assert_eq!(read.result.unwrap().unwrap().opened_at, Some(100));
/// assert_eq!(read.cost.read_half_units, 2);
/// ```
#[derive(Debug)]
pub struct ItemModel {
    config: ModelConfig,
    faults: Vec<FaultWindow>,
    items: HashMap<String, Item>,
    rng: Rng,
    census: KeyCensus,
}

impl ItemModel {
    /// An empty table; `seed` drives latencies and lags.
    pub fn new(config: ModelConfig, seed: u64) -> Self {
        Self {
            config,
            faults: Vec::new(),
            items: HashMap::new(),
            rng: Rng::new(seed, 0x5707e),
            census: KeyCensus::default(),
        }
    }

    /// The same with store faults by virtual time.
    pub fn with_faults(mut self, faults: Vec<FaultWindow>) -> Self {
        self.faults = faults;
        self
    }

    /// The service's configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Writes `record` unconditionally at `now_ms`, for free: a scenario's starting state.
    pub fn put(&mut self, circuit: &str, record: CircuitRecord, now_ms: u64) {
        let max_lag = self.config.max_lag_ms;
        let was = self.not_closed_now(circuit);
        self.item(circuit).write(now_ms, record, max_lag);
        self.record_written(circuit, was);
    }

    /// The current record of `circuit`, without a request.
    pub fn current(&self, circuit: &str) -> Option<&CircuitRecord> {
        self.items.get(circuit).and_then(Item::current)
    }

    /// Capacity consumed by `circuit` in the virtual second of `now_ms`: (read half units,
    /// write units).
    pub fn consumed(&self, circuit: &str, now_ms: u64) -> (u32, u32) {
        self.items
            .get(circuit)
            .filter(|item| item.second == now_ms / 1000)
            .map_or((0, 0), |item| (item.read_half_units, item.write_units))
    }

    /// GetItem at `now_ms`.
    pub fn read(
        &mut self,
        circuit: &str,
        now_ms: u64,
        consistency: Consistency,
    ) -> Served<Option<CircuitRecord>> {
        let halves = match consistency {
            Consistency::Eventual => 1,
            Consistency::Strong => 2,
        };
        let lag = match consistency {
            Consistency::Eventual => self.rng.between(0, self.config.max_lag_ms),
            Consistency::Strong => 0,
        };
        self.request(circuit, now_ms, Cost::ReadHalves(halves), |item| {
            let record = item.as_of(now_ms.saturating_sub(lag)).cloned();
            (Ok(record), RequestOutcome::Served)
        })
    }

    /// A conditional write of `transition` at `now_ms`.
    pub fn apply(
        &mut self,
        circuit: &str,
        transition: &RecordWrite,
        now_ms: u64,
    ) -> Served<WriteOutcome> {
        let max_lag = self.config.max_lag_ms;
        let was = self.not_closed_now(circuit);
        let served = self.request(circuit, now_ms, Cost::Write(1), |item| {
            let current = item.current();
            if transition.allowed(current) {
                let next = transition.applied_to(current);
                item.write(now_ms, next, max_lag);
                (Ok(WriteOutcome::Won), RequestOutcome::Won)
            } else {
                let current = current.cloned();
                (Ok(WriteOutcome::Lost(current)), RequestOutcome::Lost)
            }
        });
        if served.outcome == RequestOutcome::Won {
            self.record_written(circuit, was);
        }
        served
    }

    fn item(&mut self, circuit: &str) -> &mut Item {
        if !self.items.contains_key(circuit) {
            self.items.insert(circuit.to_owned(), Item::default());
        }
        self.items
            .get_mut(circuit)
            .unwrap_or_else(|| unreachable!("inserted above"))
    }
}

mod index;
mod item;
mod report;
mod request;

pub use index::{IndexItem, KeyCensus};
pub use report::report_key;
pub use request::{RequestCost, RequestKind, RequestOutcome, Served};

use item::Item;
use request::Cost;

#[cfg(test)]
mod tests;
