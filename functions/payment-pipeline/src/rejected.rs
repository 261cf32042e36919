//! `OrderRejected`: one per order `charge` answers without charging or keeping it (an
//! invalid event, an order id taken by another order). A synchronous caller reads the
//! answer; for an asynchronous invocation Lambda records a success and discards it, so the
//! answer alone leaves no trace: the WARN log line and this metric (alarmed in the
//! template) are what an operator sees. Embedded Metric Format, like `PaymentOutcomeUnknown`.

use std::io::Write as _;

use serde_json::json;

use crate::clock::unix_millis;
use crate::payments::CIRCUIT;
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
    let namespace = std::env::var("BREAKER_METRICS_NAMESPACE")
        .ok()
        .filter(|ns| !ns.trim().is_empty())
        .unwrap_or_else(|| breaker_runtime::emf::DEFAULT_NAMESPACE.to_owned());
    let line = rejected_record(reason, order_id, error, &namespace, unix_millis());
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(format!("{line}\n").as_bytes())
        .and_then(|()| stdout.flush());
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
    json!({
        // ERROR like every metric line: Lambda's log-level filter must not drop the count.
        "level": breaker_runtime::unstable::LOG_LEVEL,
        "timestamp": breaker_runtime::unstable::rfc3339_millis(millis),
        "_aws": {
            "Timestamp": millis,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [["circuit"]],
                "Metrics": [{"Name": ORDER_REJECTED, "Unit": "Count"}],
            }],
        },
        "circuit": CIRCUIT,
        "reason": reason.as_str(),
        "order_id": order_id,
        "error": truncate(error, 256),
        ORDER_REJECTED: 1,
    })
    .to_string()
}
