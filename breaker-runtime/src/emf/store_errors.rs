//! Store errors as EMF records: one line per store call that failed (the circuit failed
//! open), so an alarm can page on a store the fleet cannot use.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{json_string, write_line};
use crate::log_line::{LOG_LEVEL, rfc3339_millis};
use crate::store::StoreErrorKind;

/// Counted for each store call that failed, so the circuit failed open; dimensions
/// `circuit`, and `circuit` with `kind` ([`StoreErrorKind::as_str`]).
pub const STORE_ERRORS: &str = "StoreErrors";

/// Whether [`log_store_errors`] was called.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// From now on, every store call that fails (and so every fail-open) writes one EMF line
/// to stdout counting [`STORE_ERRORS`], in the namespace of the transitions' records.
/// Process-wide, unlike the hooks: store errors are the store's, met by every circuit on
/// it. Call it once in `main`; the WARN line each error logs stays.
///
/// ```
/// breaker_runtime::emf::log_store_errors();
/// ```
pub fn log_store_errors() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// A store call of circuit `circuit` (of `key`, for a keyed circuit) failed with `kind`:
/// its record, when [`log_store_errors`] was called.
pub(crate) fn on_store_error(circuit: &str, key: Option<&str>, kind: StoreErrorKind) {
    if ENABLED.load(Ordering::Relaxed) {
        write_line(|namespace, now| store_error_record(circuit, key, kind, namespace, now));
    }
}

/// The EMF document for a failed store call of `circuit`, as one line of JSON. A keyed
/// circuit's `key` is a property, never a dimension (keys are unbounded).
///
/// ```
/// use breaker_runtime::emf;
/// use breaker_runtime::store::StoreErrorKind;
/// let record = emf::store_error_record("payment-backend", None, StoreErrorKind::AccessDenied, "Shop", 1_700_000_000_123);
/// assert_eq!(
///     record,
///     r#"{"level":"ERROR","timestamp":"2023-11-14T22:13:20.123Z","_aws":{"Timestamp":1700000000123,"CloudWatchMetrics":[{"Namespace":"Shop","Dimensions":[["circuit"],["circuit","kind"]],"Metrics":[{"Name":"StoreErrors","Unit":"Count"}]}]},"circuit":"payment-backend","kind":"access_denied","StoreErrors":1}"#
/// );
/// ```
pub fn store_error_record(
    circuit: &str,
    key: Option<&str>,
    kind: StoreErrorKind,
    namespace: &str,
    timestamp_millis: u64,
) -> String {
    let mut record = String::with_capacity(320);
    let _ = write!(
        record,
        r#"{{"level":"{LOG_LEVEL}","timestamp":"{timestamp}","_aws":{{"Timestamp":{timestamp_millis},"CloudWatchMetrics":[{{"Namespace":{namespace},"Dimensions":[["circuit"],["circuit","kind"]],"Metrics":[{{"Name":"{STORE_ERRORS}","Unit":"Count"}}]}}]}},"circuit":{circuit},"kind":"{kind}""#,
        timestamp = rfc3339_millis(timestamp_millis),
        namespace = json_string(namespace),
        circuit = json_string(circuit),
        kind = kind.as_str(),
    );
    if let Some(key) = key {
        let _ = write!(record, r#","key":{}"#, json_string(key));
    }
    let _ = write!(record, r#","{STORE_ERRORS}":1}}"#);
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keyed_circuits_key_is_a_property_and_each_kind_its_label() {
        let record = store_error_record(
            "hooks",
            Some("shop \"1\""),
            StoreErrorKind::Throttled,
            "B",
            1,
        );
        assert!(
            record.contains(
                r#""circuit":"hooks","kind":"throttled","key":"shop \"1\"","StoreErrors":1}"#
            ),
            "{record}"
        );
        assert!(
            record.contains(r#""Dimensions":[["circuit"],["circuit","kind"]]"#),
            "{record}"
        );
    }
}
