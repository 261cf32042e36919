//! `OrderRejected`: one per order `charge` answers without charging or keeping it (an
//! invalid event, an order id taken by another order). A synchronous caller reads the
//! answer; for an asynchronous invocation Lambda records a success and discards it, so the
//! answer alone leaves no trace: the WARN log line and this metric (alarmed in the
//! template) are what an operator sees. Embedded Metric Format, like `PaymentOutcomeUnknown`.

use serde_json::{Map, json};

use crate::clock::unix_millis;
use crate::metric_line::{count_line, emit, namespace};
use crate::text::truncate;

/// The metric counted per rejected order (dimension `circuit` = `payment-backend`).
pub const ORDER_REJECTED: &str = "OrderRejected";

/// Why an order was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// The event is not a valid order.
    Invalid,
    /// The order id belongs to another order (another amount, currency or customer).
    Conflict,
}

impl Rejection {
    /// The `reason` property of the metric line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Invalid => "invalid",
            Self::Conflict => "conflict",
        }
    }
}

/// Logs the rejection at WARN and writes its metric line to stdout.
pub fn log_rejected(reason: Rejection, order_id: Option<&str>, error: &str) {
    tracing::warn!(
        reason = reason.as_str(),
        order_id,
        error,
        "order rejected: not charged, not kept"
    );
    emit(&rejected_record(
        reason,
        order_id,
        error,
        &namespace(),
        unix_millis(),
    ));
}

/// The EMF document: pure, for tests.
///
/// ```
/// use payment_pipeline::rejected::{Rejection, rejected_record};
/// let line = rejected_record(Rejection::Invalid, None, "invalid order: amount is required", "Shop", 0);
/// assert!(line.contains(r#""OrderRejected":1"#), "{line}");
/// assert!(line.contains(r#""reason":"invalid""#), "{line}");
/// ```
pub fn rejected_record(
    reason: Rejection,
    order_id: Option<&str>,
    error: &str,
    namespace: &str,
    millis: u64,
) -> String {
    let mut properties = Map::new();
    properties.insert("reason".to_owned(), json!(reason.as_str()));
    properties.insert("order_id".to_owned(), json!(order_id));
    properties.insert("error".to_owned(), json!(truncate(error, 256)));
    count_line(ORDER_REJECTED, properties, namespace, millis)
}
