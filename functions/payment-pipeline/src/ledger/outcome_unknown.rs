//! The pipeline's own CloudWatch metric, in the Embedded Metric Format like the circuit
//! transitions (`breaker_runtime::emf`): `PaymentOutcomeUnknown` (dimension `circuit` =
//! `payment-backend`), one per order parked as `unknown` in the ledger. The template alarms
//! on it: such an order needs a human to ask the payment provider.

use std::io::Write as _;

use serde_json::json;

use super::item::MAX_DETAIL_BYTES;
use crate::clock::unix_millis;
use crate::payments::CIRCUIT;
use crate::text::truncate;

/// The metric counted per order parked as `unknown`.
pub const PAYMENT_OUTCOME_UNKNOWN: &str = "PaymentOutcomeUnknown";

/// Writes the EMF line for an order whose charge outcome is unknown.
pub fn log_outcome_unknown(order_id: &str, detail: &str) {
    let namespace = std::env::var("BREAKER_METRICS_NAMESPACE")
        .ok()
        .filter(|ns| !ns.trim().is_empty())
        .unwrap_or_else(|| breaker_runtime::emf::DEFAULT_NAMESPACE.to_owned());
    let line = outcome_unknown_record(order_id, detail, &namespace, unix_millis());
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(format!("{line}\n").as_bytes())
        .and_then(|()| stdout.flush());
}

/// The EMF document: pure, for tests.
///
/// ```
/// let line = payment_pipeline::ledger::outcome_unknown::outcome_unknown_record("o-1", "timed out", "Shop", 0);
/// assert!(line.contains(r#""PaymentOutcomeUnknown":1"#), "{line}");
/// assert!(line.contains(r#""level":"ERROR""#), "{line}");
/// ```
pub fn outcome_unknown_record(
    order_id: &str,
    detail: &str,
    namespace: &str,
    millis: u64,
) -> String {
    let record = json!({
        "level": breaker_runtime::unstable::LOG_LEVEL,
        "timestamp": breaker_runtime::unstable::rfc3339_millis(millis),
        "_aws": {
            "Timestamp": millis,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [["circuit"]],
                "Metrics": [{"Name": PAYMENT_OUTCOME_UNKNOWN, "Unit": "Count"}],
            }],
        },
        "circuit": CIRCUIT,
        "order_id": order_id,
        "detail": truncate(detail, MAX_DETAIL_BYTES),
        PAYMENT_OUTCOME_UNKNOWN: 1,
    });
    record.to_string()
}
