//! The pipeline's own CloudWatch metric, in the Embedded Metric Format like the circuit
//! transitions (`breaker_runtime::emf`): `PaymentOutcomeUnknown` (dimension `circuit` =
//! `payment-backend`), one per order parked as `unknown` in the ledger. The template alarms
//! on it: such an order needs a human to ask the payment provider.

use serde_json::{Map, json};

use super::item::MAX_DETAIL_BYTES;
use crate::clock::unix_millis;
use crate::metric_line::{count_line, emit, namespace};
use crate::text::truncate;

/// The metric counted per order parked as `unknown`.
pub const PAYMENT_OUTCOME_UNKNOWN: &str = "PaymentOutcomeUnknown";

/// Writes the EMF line for an order whose charge outcome is unknown.
pub fn log_outcome_unknown(order_id: &str, detail: &str) {
    emit(&outcome_unknown_record(
        order_id,
        detail,
        &namespace(),
        unix_millis(),
    ));
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
    let mut properties = Map::new();
    properties.insert("order_id".to_owned(), json!(order_id));
    properties.insert(
        "detail".to_owned(),
        json!(truncate(detail, MAX_DETAIL_BYTES)),
    );
    count_line(PAYMENT_OUTCOME_UNKNOWN, properties, namespace, millis)
}
