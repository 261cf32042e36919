//! Exactly-once charging on our side: one item per order id in a small DynamoDB table,
//! written with a condition before the payment call and after it, the way the Powertools
//! idempotency utility guards a handler. SQS delivers at least once, the SDK retries
//! SendMessage, Lambda retries invocations: every copy of an order meets the same item, and
//! only the copy that created it calls the payment API.
//!
//! | `status` | meaning | another copy of the order |
//! |---|---|---|
//! | `in_progress` | an attempt holds it until `lease_until` | waits (deferred) |
//! | `charged` | the payment API answered 2xx | is dropped: already charged |
//! | `declined` | the payment API declined this order (402, or 422 with a decline code) | is dropped: final |
//! | `unknown` | an attempt's outcome is unknown (timeout, connection lost after sending, an ambiguous answer, an attempt whose lease ran out) | is dropped: a human reconciles it (`parked-orders`); `PaymentOutcomeUnknown` alarms; never expires |
//!
//! An item whose `contents` (amount, currency, customer) differ from a copy's is another
//! order under the same id: that copy is a conflict, not a duplicate. An attempt that failed
//! with a known outcome (5xx, 429, a systemic refusal, connection refused) deletes its item,
//! so a later copy may charge. Items expire (`expiration`, TTL) after
//! `LEDGER_TTL_DAYS`, longer than an order can live in the queues; a parked item does not.
//!
//! In the order an order meets them: [`Ledger::claim`] (`claim.rs`) answers a [`Claim`]
//! before a charge; [`Ledger::settle`] (`settle.rs`) records how the [`Attempt`] ended, a
//! [`Settlement`]. `table.rs` holds the table's settings and client, `parked.rs` the
//! operator's side of parked orders.

mod attempt;
mod claim;
mod item;
pub mod outcome_unknown;
mod parked;
mod progress;
mod settle;
mod table;
#[cfg(test)]
mod tests;

pub use attempt::{Attempt, Settlement};
pub use claim::Claim;
pub use parked::{ParkedOrder, Resolution, SettleError};
pub use progress::{Phase, Progress};
pub use table::{Ledger, LedgerError};
