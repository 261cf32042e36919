//! What a message on the overflow queue carries besides the order: its attributes and the
//! longest delay it can be hidden for.

use std::time::Duration;

use aws_sdk_sqs::types::MessageAttributeValue;

/// Longest delay SQS accepts on a message.
pub const MAX_DELAY: Duration = Duration::from_secs(900);

/// Why an order is buffered: the `reason` attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferReason {
    /// The payment-backend circuit is open.
    CircuitOpen,
    /// The payment API failed (5xx, 429, a systemic refusal, unreachable) while the circuit
    /// was closed.
    PaymentUnavailable,
    /// The ledger could not be written: no charge without it.
    LedgerUnavailable,
    /// Another attempt holds the order: buffered until its lease runs out, so that the
    /// order is settled (charged, or parked as unknown) even if that attempt died.
    InFlight,
    /// The invocation's time ran out before the charge was sent: nothing sent.
    OutOfTime,
    /// The charge may have gone through and the ledger could not park it as `unknown`:
    /// buffered until the claim's lease runs out, so that the copy replayed then parks it
    /// (with its metric) instead of the order vanishing.
    OutcomeUnrecorded,
}

impl BufferReason {
    /// The attribute's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CircuitOpen => "circuit_open",
            Self::PaymentUnavailable => "payment_unavailable",
            Self::LedgerUnavailable => "ledger_unavailable",
            Self::InFlight => "in_flight",
            Self::OutOfTime => "out_of_time",
            Self::OutcomeUnrecorded => "outcome_unrecorded",
        }
    }
}

/// A message attribute of `data_type` (`String`, `Number`).
pub(super) fn attribute(data_type: &str, value: &str) -> Result<MessageAttributeValue, String> {
    MessageAttributeValue::builder()
        .data_type(data_type)
        .string_value(value)
        .build()
        .map_err(|e| e.to_string())
}
