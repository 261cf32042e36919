//! The payment pipeline the `charge` and `overflow-replay` sample functions share, one
//! module per job: the order they carry and its validation ([`order`]), the payment API
//! client and the one guarded call both make through the `payment-backend` circuit
//! ([`payments`]), the ledger that charges each order once ([`ledger`]), and the overflow
//! queue where orders wait while they cannot be charged ([`overflow`]).
//! [`PaymentClient::charge_admitted`] ties the first three together once the circuit
//! admitted a charge, [`PaymentClient::charge_once`] puts the circuit around it; [`Pipeline`]
//! builds all of them from the environment (`settings.rs`).
//!
//! One order's path, hop by hop with each hop's file and function, is the numbered list in
//! docs/functions.md ("One order's path through `charge`").
#![forbid(unsafe_code)]

pub mod clock;
pub mod ledger;
mod metric_line;
pub mod order;
pub mod overflow;
pub mod payments;
pub mod rejected;
mod sdk;
mod settings;
mod text;

pub use ledger::{
    Attempt, Claim, Ledger, LedgerError, ParkedOrder, Phase, Progress, Resolution, SettleError,
    Settlement,
};
pub use order::{InvalidOrder, MAX_AMOUNT_LEN, MAX_EVENT_BYTES, MAX_ID_LEN, Order};
pub use overflow::{BufferError, BufferReason, Deferral, FailureCount, OverflowQueue};
pub use payments::{
    CIRCUIT, Charged, GuardedError, MAX_QUOTED_BYTES, MAX_RESPONSE_BYTES, MIN_SEND_TIME,
    NotCharged, PaymentClient, PaymentConfigError, PaymentError, REFUSAL_WINDOW, Receipt,
    payment_api_unwell, payment_api_verdict, retry_after_secs, settle_abandoned,
};
pub use settings::Pipeline;
