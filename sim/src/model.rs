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

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use breaker_runtime::store::{
    CircuitRecord, EpochTally, FleetTally, RecordWrite, StoreError, WriteOutcome,
};

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

/// Which protocol operation a request carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// GetItem.
    Read,
    /// The trip (CLOSED → OPEN).
    Trip,
    /// The probe election (OPEN → HALF_OPEN).
    Elect,
    /// The close (HALF_OPEN → CLOSED).
    Close,
    /// The reopen (HALF_OPEN → OPEN).
    Reopen,
    /// A probe's success counted and its lease handed over (HALF_OPEN → HALF_OPEN).
    HandOver,
    /// A failure report to the fleet's counters (an item of its own), or a report to a
    /// suspicion's counters.
    Report,
    /// A suspicion of the fleet raised on the circuit's item (CLOSED → CLOSED).
    Suspect,
    /// A transition this simulator does not know yet (`RecordWrite` is non-exhaustive).
    Other,
    /// GetItem of a keyed circuit's index.
    IndexRead,
    /// An index entry added (a key's trip or suspicion; the cap's condition).
    IndexAdd,
    /// An index entry's token rewritten.
    IndexRefresh,
    /// An index entry removed (the key closed).
    IndexRemove,
}

impl RequestKind {
    /// The kind of request that carries `transition`.
    pub fn of(transition: &RecordWrite) -> Self {
        match transition {
            RecordWrite::Trip { .. } => Self::Trip,
            RecordWrite::Elect { .. } => Self::Elect,
            RecordWrite::Close { .. } => Self::Close,
            RecordWrite::HandOver { .. } => Self::HandOver,
            RecordWrite::Reopen { .. } => Self::Reopen,
            RecordWrite::Suspect { .. } => Self::Suspect,
            _ => Self::Other,
        }
    }
}

/// How a request ended, after all its attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestOutcome {
    /// A read was served.
    Served,
    /// A write's condition held.
    Won,
    /// A write's condition failed.
    Lost,
    /// Every attempt was throttled.
    Throttled,
    /// The store did not answer.
    Unreachable,
}

/// A request's result and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Served<T> {
    /// What the client gets.
    pub result: Result<T, StoreError>,
    /// How it ended.
    pub outcome: RequestOutcome,
    /// What it cost.
    pub cost: RequestCost,
}

/// What one request cost, over all its attempts: what the metrics count of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestCost {
    /// Attempts sent (each one a DynamoDB request).
    pub attempts: u32,
    /// Attempts that were throttled.
    pub throttled_attempts: u32,
    /// Time from sending the first attempt to the answer, back-off included, ms.
    pub latency_ms: u64,
    /// Read units consumed, in halves (an eventually consistent read is 1).
    pub read_half_units: u32,
    /// Write units consumed.
    pub write_units: u32,
}

/// One item: its history (for lagging reads) and this second's consumed capacity.
#[derive(Debug, Default)]
struct Item {
    /// `(virtual ms, record)` from oldest to newest; the last entry is the current item. An
    /// empty history is an absent item. Entries older than the longest lag are dropped.
    history: VecDeque<(u64, Option<CircuitRecord>)>,
    /// The virtual second `read_half_units` and `write_units` were consumed in.
    second: u64,
    read_half_units: u32,
    write_units: u32,
    /// A fleet window's counters, for a report item.
    tally: FleetTally,
    /// A suspicion's counters, for its report item.
    epoch: EpochTally,
    /// A key index item's history, as `history` (an index item holds no record).
    index: VecDeque<(u64, Option<Arc<IndexItem>>)>,
}

impl Item {
    fn current(&self) -> Option<&CircuitRecord> {
        self.history.back().and_then(|(_, record)| record.as_ref())
    }

    /// The record as it was at `at_ms`.
    fn as_of(&self, at_ms: u64) -> Option<&CircuitRecord> {
        self.history
            .iter()
            .rev()
            .find(|(time, _)| *time <= at_ms)
            .and_then(|(_, record)| record.as_ref())
    }

    fn write(&mut self, now_ms: u64, record: CircuitRecord, max_lag_ms: u64) {
        self.history.push_back((now_ms, Some(record)));
        let horizon = now_ms.saturating_sub(max_lag_ms);
        while self.history.len() >= 2 && self.history[1].0 <= horizon {
            self.history.pop_front();
        }
    }

    /// Rolls the capacity counters over to `now_ms`'s second.
    fn roll(&mut self, now_ms: u64) {
        let second = now_ms / 1000;
        if second != self.second {
            self.second = second;
            self.read_half_units = 0;
            self.write_units = 0;
        }
    }
}

/// What a request needs from the item's capacity.
#[derive(Debug, Clone, Copy)]
enum Cost {
    ReadHalves(u32),
    /// Write units: 1 per started KB of the item (the larger of before and after).
    Write(u32),
}

/// DynamoDB holding one item per circuit; see the module docs.
///
/// ```
/// use breaker_runtime::store::{RecordWrite, WriteOutcome};
/// use breaker_sim::model::{Consistency, ItemModel, ModelConfig};
///
/// let mut model = ItemModel::new(ModelConfig::default(), 1);
/// let trip = RecordWrite::Trip { failure_count: 5, opened_at: 100, expiration: 3730, opened_by: None };
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

    fn fault_at(&self, now_ms: u64) -> Option<StoreFault> {
        self.faults
            .iter()
            .find(|w| w.from_ms <= now_ms && now_ms < w.until_ms)
            .map(|w| w.fault)
    }

    /// Runs the client's attempts of one request: throttled attempts are retried after a
    /// back-off; the first attempt that fits the item's capacity consumes it and runs `op`.
    fn request<T>(
        &mut self,
        circuit: &str,
        now_ms: u64,
        cost: Cost,
        op: impl FnOnce(&mut Item) -> (Result<T, StoreError>, RequestOutcome),
    ) -> Served<T> {
        let fault = self.fault_at(now_ms);
        if fault == Some(StoreFault::Unreachable) {
            return Served {
                result: Err(StoreError::new(
                    "dispatch failure: the store is unreachable (simulated)",
                )),
                outcome: RequestOutcome::Unreachable,
                cost: RequestCost {
                    attempts: 1,
                    throttled_attempts: 0,
                    latency_ms: self.config.unreachable_ms,
                    read_half_units: 0,
                    write_units: 0,
                },
            };
        }
        let writes_throttled = fault == Some(StoreFault::WritesThrottled);
        let (read_limit, write_limit) = (
            self.config.read_units_per_s.saturating_mul(2),
            self.config.write_units_per_s,
        );
        let attempts = self.config.attempts.max(1);
        let mut latency_ms = 0;
        let mut throttled_attempts = 0;
        for attempt in 1..=attempts {
            latency_ms += self
                .rng
                .between(self.config.latency_ms.0, self.config.latency_ms.1);
            let item = self.item(circuit);
            item.roll(now_ms);
            let fits = match cost {
                Cost::ReadHalves(halves) => item.read_half_units + halves <= read_limit,
                Cost::Write(units) => !writes_throttled && item.write_units + units <= write_limit,
            };
            if fits {
                let (read_half_units, write_units) = match cost {
                    Cost::ReadHalves(halves) => {
                        item.read_half_units += halves;
                        (halves, 0)
                    }
                    Cost::Write(units) => {
                        item.write_units += units;
                        (0, units)
                    }
                };
                let (result, outcome) = op(item);
                return Served {
                    result,
                    outcome,
                    cost: RequestCost {
                        attempts: attempt,
                        throttled_attempts,
                        latency_ms,
                        read_half_units,
                        write_units,
                    },
                };
            }
            throttled_attempts += 1;
            if attempt < attempts {
                latency_ms += self.rng.between(
                    self.config.retry_backoff_ms.0,
                    self.config.retry_backoff_ms.1,
                );
            }
        }
        Served {
            result: Err(StoreError::throttled(
                "ProvisionedThroughputExceededException: the level of configured provisioned \
                 throughput for the table was exceeded (simulated)",
            )),
            outcome: RequestOutcome::Throttled,
            cost: RequestCost {
                attempts,
                throttled_attempts,
                latency_ms,
                read_half_units: 0,
                write_units: 0,
            },
        }
    }
}

mod index;
mod report;

pub use index::{IndexItem, KeyCensus};
pub use report::report_key;

#[cfg(test)]
mod tests;
