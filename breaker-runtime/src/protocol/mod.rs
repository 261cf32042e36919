//! The shared-state protocol as pure data: the record every store holds ([`record`]), the
//! conditional writes that change it ([`write`]), what a rate policy judges
//! ([`rates`]), what environments report for the fleet-wide policy ([`fleet`]) and the
//! state machine that decides ([`machine`]). No clock, lock, async or
//! SDK type in here: `store` carries the writes to a store, `breaker` feeds the machine.

mod backoff;
#[cfg(test)]
mod docs_numbers;
pub(crate) mod fleet;
mod fleet_policy;
pub(crate) mod machine;
mod rates;
mod record;
pub(crate) mod refusals;
mod state;
mod write;

pub use backoff::RecoveryBackoff;
pub(crate) use fleet::SAMPLE_WEIGHT;
pub use fleet::{EpochTally, FailureReport, FleetTally, SuspectReport};
pub use fleet_policy::FleetPolicy;
pub(crate) use rates::{Counts, Rates};
pub use record::{CircuitRecord, Override, OverrideKind};
pub use state::{CircuitState, ParseCircuitStateError};
pub use write::{OPENED_AT_UNTIL_RELEASED, RecordWrite, WriteOutcome};
