//! One request to the table: which operation it carried, what it needs from the item's
//! capacity, the client's attempts at it (throttled ones retried after a back-off), and
//! what it cost.

use breaker_runtime::store::{RecordWrite, StoreError};

use super::{Item, ItemModel, StoreFault};

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

/// What a request needs from the item's capacity.
#[derive(Debug, Clone, Copy)]
pub(super) enum Cost {
    ReadHalves(u32),
    /// Write units: 1 per started KB of the item (the larger of before and after).
    Write(u32),
}

impl ItemModel {
    pub(super) fn fault_at(&self, now_ms: u64) -> Option<StoreFault> {
        self.faults
            .iter()
            .find(|w| w.from_ms <= now_ms && now_ms < w.until_ms)
            .map(|w| w.fault)
    }

    /// Runs the client's attempts of one request: throttled attempts are retried after a
    /// back-off; the first attempt that fits the item's capacity consumes it and runs `op`.
    pub(super) fn request<T>(
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
