//! The pipeline's own CloudWatch metrics, one count per line in the Embedded Metric Format
//! like the circuit transitions (`breaker_runtime::emf`), with the dimension `circuit` =
//! `payment-backend`: the envelope, the namespace and the write to stdout, once for every
//! metric the pipeline counts.

use std::io::Write as _;

use serde_json::{Map, Value, json};

use crate::payments::CIRCUIT;

/// The namespace the circuit's own EMF lines use: `$BREAKER_METRICS_NAMESPACE`, else
/// breaker's default.
pub(crate) fn namespace() -> String {
    std::env::var("BREAKER_METRICS_NAMESPACE")
        .ok()
        .filter(|ns| !ns.trim().is_empty())
        .unwrap_or_else(|| breaker_runtime::emf::DEFAULT_NAMESPACE.to_owned())
}

/// One EMF document counting `metric` once, with `properties` beside the envelope.
pub(crate) fn count_line(
    metric: &str,
    properties: Map<String, Value>,
    namespace: &str,
    millis: u64,
) -> String {
    let mut record = json!({
        // ERROR like every metric line: Lambda's log-level filter must not drop the count.
        "level": breaker_runtime::unstable::LOG_LEVEL,
        "timestamp": breaker_runtime::unstable::rfc3339_millis(millis),
        "_aws": {
            "Timestamp": millis,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [["circuit"]],
                "Metrics": [{"Name": metric, "Unit": "Count"}],
            }],
        },
        "circuit": CIRCUIT,
    });
    if let Value::Object(fields) = &mut record {
        fields.extend(properties);
        fields.insert(metric.to_owned(), json!(1));
    }
    record.to_string()
}

/// Writes `line` to stdout, where the Lambda service picks EMF lines up.
pub(crate) fn emit(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(format!("{line}\n").as_bytes())
        .and_then(|()| stdout.flush());
}
