//! The payment API and the charge through it, in the order a charge runs:
//! [`PaymentClient::charge_guarded`] (`guarded.rs`) puts the `payment-backend` circuit
//! around [`PaymentClient::charge_admitted`] (`admitted.rs`: the ledger's claim, the POST,
//! the record of its outcome); the POST is [`PaymentClient::charge_within`] (`client.rs`),
//! what its answer means is `answer.rs`, how the charge ended is `outcome.rs`, and what a
//! charge abandoned at its deadline left is settled by `abandoned.rs`.

mod abandoned;
mod admitted;
mod answer;
mod client;
mod guarded;
mod outcome;
mod refusals;

pub use abandoned::settle_abandoned;
pub use admitted::MIN_SEND_TIME;
pub use answer::{
    MAX_QUOTED_BYTES, PaymentError, Receipt, is_ambiguous, is_order_decline, retry_after_secs,
};
pub use client::{ALLOW_HTTP_HOST, MAX_RESPONSE_BYTES, PaymentClient, PaymentConfigError};
pub use guarded::CIRCUIT;
pub use outcome::{Charged, GuardedError, NotCharged, payment_api_unwell, payment_api_verdict};
pub use refusals::REFUSAL_WINDOW;
