//! CloudWatch metrics for circuit transitions, in the Embedded Metric Format (EMF).
//!
//! Lambda sends every line a function writes to stdout to CloudWatch Logs, and CloudWatch
//! turns a line that is an EMF document into metrics: no SDK call, no extra latency, no
//! `cloudwatch:PutMetricData` permission. [`log_transition`] writes one such line per
//! transition, so it plugs straight into `on_transition`:
//!
//! ```
//! use breaker_runtime::circuit_breaker;
//!
//! #[circuit_breaker(name = "payment-backend", on_transition = breaker_runtime::emf::log_transition)]
//! async fn charge(order_id: String) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
//!     Ok(format!("charged {order_id}"))
//! }
//! ```
//!
//! Each record counts one of the metrics below (value 1) in the namespace
//! `$BREAKER_METRICS_NAMESPACE` (default [`DEFAULT_NAMESPACE`]), with the dimension
//! `circuit` = the circuit's name. An alarm on `CircuitOpened` (Sum ≥ 1) pages when any
//! environment of the fleet opens the circuit.
//!
//! | transition | metric |
//! |---|---|
//! | → `OPEN` | [`CIRCUIT_OPENED`] |
//! | → `HALF_OPEN` | [`CIRCUIT_HALF_OPENED`] |
//! | → `CLOSED` | [`CIRCUIT_CLOSED`] |
//!
//! The record also carries `from_state`, `to_state` and `opened_at` as plain properties, so
//! CloudWatch Logs Insights can query them.
//!
//! A circuit in shadow changes no state; [`log_shadow`], an `on_shadow` hook, writes one
//! line per verdict instead, with the metric of [`shadow_metric_name`]:
//! [`CIRCUIT_WOULD_REJECT`] (one per call that ran but would have been rejected),
//! [`CIRCUIT_WOULD_OPEN`], [`CIRCUIT_WOULD_PROBE`], [`CIRCUIT_WOULD_CLOSE`], and the
//! properties `verdict`, `would_be_state` and `opened_at`.
//!
//! Store errors (each a call that failed open) are no transition: [`log_store_errors`],
//! called once in `main`, makes every one write a line counting [`STORE_ERRORS`], with the
//! dimensions `circuit` and `circuit` + `kind` (`throttled`, `access_denied`, `not_found`,
//! `timeout`, `other`), so an alarm can page on a store the fleet cannot use.
//!
//! With JSON logging, Lambda's application log-level filter gives a line without a valid
//! `level` and an RFC 3339 `timestamp` the level INFO, and drops it when the function's
//! application log level is WARN or ERROR: the metric, and the alarm on it, would go
//! silent. So every record carries `"level":"ERROR"` and a `timestamp`:
//! it survives any application log level short of FATAL.

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::events::{CircuitTransition, ShadowDecision, ShadowEvent};

mod store_errors;
use crate::log_line::{LOG_LEVEL, rfc3339_millis};
use crate::protocol::CircuitState;
pub(crate) use store_errors::on_store_error;
pub use store_errors::{STORE_ERRORS, log_store_errors, store_error_record};

/// The namespace used when `BREAKER_METRICS_NAMESPACE` is unset.
pub const DEFAULT_NAMESPACE: &str = "Breaker";
/// Counted when a circuit opens (from `CLOSED`, or again after a failed probe).
pub const CIRCUIT_OPENED: &str = "CircuitOpened";
/// Counted when an environment wins the probe election.
pub const CIRCUIT_HALF_OPENED: &str = "CircuitHalfOpened";
/// Counted when the probes succeed and the circuit closes.
pub const CIRCUIT_CLOSED: &str = "CircuitClosed";
/// Counted, in shadow, for each call that ran but would have been rejected.
pub const CIRCUIT_WOULD_REJECT: &str = "CircuitWouldReject";
/// Counted, in shadow, when the circuit would have opened.
pub const CIRCUIT_WOULD_OPEN: &str = "CircuitWouldOpen";
/// Counted, in shadow, when a call would have been the probe.
pub const CIRCUIT_WOULD_PROBE: &str = "CircuitWouldProbe";
/// Counted, in shadow, when the circuit would have closed.
pub const CIRCUIT_WOULD_CLOSE: &str = "CircuitWouldClose";

/// Writes the EMF record of `transition` to stdout as one line. Its signature fits
/// `on_transition` and [`CircuitBreaker::with_on_transition`](crate::CircuitBreaker::with_on_transition).
///
/// ```
/// use std::sync::Arc;
/// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, emf};
/// use breaker_runtime::store::InMemoryStore;
///
/// let breaker = CircuitBreaker::new("ce", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default())
///     .with_on_transition(emf::log_transition);
/// # drop(breaker);
/// ```
pub fn log_transition(transition: CircuitTransition) {
    write_line(|namespace, now| transition_record(&transition, namespace, now));
}

/// Writes the EMF record of a shadow verdict to stdout as one line. Its signature fits
/// [`CircuitBreaker::with_on_shadow`](crate::CircuitBreaker::with_on_shadow).
pub fn log_shadow(event: ShadowEvent) {
    write_line(|namespace, now| shadow_record(&event, namespace, now));
}

/// Writes the record `build` makes of the namespace and the time as one line to stdout.
fn write_line(build: impl FnOnce(&str, u64) -> String) {
    let namespace = std::env::var("BREAKER_METRICS_NAMESPACE")
        .ok()
        .filter(|ns| !ns.trim().is_empty());
    let record = build(
        namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE),
        unix_millis(),
    );
    // One write of the whole line, so concurrent log lines never split the document.
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(format!("{record}\n").as_bytes())
        .and_then(|()| stdout.flush());
}

/// The metric a transition into `to_state` counts.
///
/// ```
/// use breaker_runtime::{CircuitState, emf};
/// assert_eq!(emf::metric_name(CircuitState::Open), "CircuitOpened");
/// ```
pub const fn metric_name(to_state: CircuitState) -> &'static str {
    match to_state {
        CircuitState::Open => CIRCUIT_OPENED,
        CircuitState::HalfOpen => CIRCUIT_HALF_OPENED,
        CircuitState::Closed => CIRCUIT_CLOSED,
    }
}

/// The metric a shadow verdict counts.
///
/// ```
/// use breaker_runtime::{ShadowDecision, emf};
/// assert_eq!(emf::shadow_metric_name(ShadowDecision::WouldReject), "CircuitWouldReject");
/// ```
pub const fn shadow_metric_name(decision: ShadowDecision) -> &'static str {
    match decision {
        ShadowDecision::WouldReject => CIRCUIT_WOULD_REJECT,
        ShadowDecision::WouldOpen => CIRCUIT_WOULD_OPEN,
        ShadowDecision::WouldProbe => CIRCUIT_WOULD_PROBE,
        ShadowDecision::WouldClose => CIRCUIT_WOULD_CLOSE,
    }
}

/// The EMF document for a shadow verdict, as one line of JSON.
///
/// ```
/// use breaker_runtime::{ShadowDecision, ShadowEvent, emf};
/// let event = ShadowEvent::new("payment-backend", ShadowDecision::WouldOpen, Some(1_700_000_000), None);
/// let record = emf::shadow_record(&event, "Shop", 1_700_000_000_123);
/// assert!(record.ends_with(r#""circuit":"payment-backend","verdict":"would_open","would_be_state":"OPEN","opened_at":1700000000,"CircuitWouldOpen":1}"#), "{record}");
/// ```
pub fn shadow_record(event: &ShadowEvent, namespace: &str, timestamp_millis: u64) -> String {
    let verdict = format!(
        r#""verdict":"{}","would_be_state":"{}""#,
        event.decision,
        event.decision.would_be_state()
    );
    let metric = shadow_metric_name(event.decision);
    let record = Document {
        namespace,
        timestamp_millis,
        metric,
    };
    record.write(
        &event.name,
        &verdict,
        event.opened_at_unix_secs,
        event.cause,
    )
}

/// The EMF document for `transition`, as one line of JSON: pure, for tests and for code
/// that ships logs some other way.
///
/// ```
/// use breaker_runtime::{CircuitState, CircuitTransition, emf};
///
/// let opened = CircuitTransition::new(
///     "payment-backend",
///     CircuitState::Closed,
///     CircuitState::Open,
///     Some(1_700_000_000),
///     None,
/// );
/// let record = emf::transition_record(&opened, "Shop", 1_700_000_000_123);
/// assert_eq!(
///     record,
///     r#"{"level":"ERROR","timestamp":"2023-11-14T22:13:20.123Z","_aws":{"Timestamp":1700000000123,"CloudWatchMetrics":[{"Namespace":"Shop","Dimensions":[["circuit"]],"Metrics":[{"Name":"CircuitOpened","Unit":"Count"}]}]},"circuit":"payment-backend","from_state":"CLOSED","to_state":"OPEN","opened_at":1700000000,"CircuitOpened":1}"#
/// );
/// ```
pub fn transition_record(
    transition: &CircuitTransition,
    namespace: &str,
    timestamp_millis: u64,
) -> String {
    let mut states = format!(
        r#""from_state":"{}","to_state":"{}""#,
        transition.from_state, transition.to_state
    );
    // A keyed circuit's key is a property, never a dimension: keys are unbounded, and each
    // dimension value is a metric of its own in CloudWatch.
    if let Some(key) = &transition.key {
        let _ = write!(states, r#","key":{}"#, json_string(key));
    }
    let metric = metric_name(transition.to_state);
    let record = Document {
        namespace,
        timestamp_millis,
        metric,
    };
    record.write(
        &transition.name,
        &states,
        transition.opened_at_unix_secs,
        transition.cause,
    )
}

/// One EMF document counting `metric` once, in `namespace`, at `timestamp_millis`.
struct Document<'a> {
    namespace: &'a str,
    timestamp_millis: u64,
    metric: &'a str,
}

impl Document<'_> {
    /// The line: level, timestamp, the metric's directive, then the circuit, `properties`
    /// (JSON members), `opened_at`, the cause if any, and the count.
    fn write(
        &self,
        circuit: &str,
        properties: &str,
        opened_at: Option<u64>,
        cause: Option<crate::events::TransitionCause>,
    ) -> String {
        let Self {
            namespace,
            timestamp_millis,
            metric,
        } = *self;
        let mut record = String::with_capacity(320);
        let _ = write!(
            record,
            r#"{{"level":"{LOG_LEVEL}","timestamp":"{timestamp}","_aws":{{"Timestamp":{timestamp_millis},"CloudWatchMetrics":[{{"Namespace":{namespace},"Dimensions":[["circuit"]],"Metrics":[{{"Name":"{metric}","Unit":"Count"}}]}}]}},"circuit":{circuit},{properties},"opened_at":{opened_at}{cause},"{metric}":1}}"#,
            namespace = json_string(namespace),
            timestamp = rfc3339_millis(timestamp_millis),
            circuit = json_string(circuit),
            opened_at = opened_at.map_or_else(|| "null".to_owned(), |at| at.to_string()),
            cause = cause.map_or_else(String::new, |cause| format!(
                r#","cause":"{}""#,
                cause.as_str()
            )),
        );
        record
    }
}

/// `value` as a JSON string literal. Circuit names are user input: quotes, backslashes and
/// control characters must not break the document.
fn json_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transition(name: &str, to_state: CircuitState, opened_at: Option<u64>) -> CircuitTransition {
        CircuitTransition {
            name: name.into(),
            from_state: CircuitState::HalfOpen,
            to_state,
            opened_at_unix_secs: opened_at,
            cause: None,
            key: None,
        }
    }

    #[test]
    fn a_keyed_circuits_key_is_a_property_not_a_dimension() {
        let mut opened = transition("webhooks", CircuitState::Open, Some(1));
        opened.key = Some("shop \"17\"".into());
        let record = transition_record(&opened, "B", 1);
        assert!(record.contains(r#""Dimensions":[["circuit"]]"#), "{record}");
        assert!(record.contains(r#""circuit":"webhooks","#), "{record}");
        assert!(record.contains(r#","key":"shop \"17\"","#), "{record}");
    }

    #[test]
    fn each_target_state_counts_its_own_metric() {
        for (state, metric) in [
            (CircuitState::Open, "\"CircuitOpened\":1"),
            (CircuitState::HalfOpen, "\"CircuitHalfOpened\":1"),
            (CircuitState::Closed, "\"CircuitClosed\":1"),
        ] {
            let record = transition_record(&transition("ce", state, None), "Breaker", 1);
            assert!(record.ends_with(&format!("{metric}}}")), "{record}");
        }
    }

    #[test]
    fn every_record_has_a_level_and_a_timestamp_that_survive_log_filtering() {
        let record = transition_record(
            &transition("ce", CircuitState::Closed, None),
            "B",
            86_400_000,
        );
        assert!(
            record.starts_with(r#"{"level":"ERROR","timestamp":"1970-01-02T00:00:00.000Z","_aws""#),
            "{record}"
        );
    }

    #[test]
    fn an_opening_says_what_opened_it() {
        let mut opened = transition("ce", CircuitState::Open, Some(7));
        opened.cause = Some(crate::events::TransitionCause::Failures {
            kind: crate::events::FailureKind::InvocationDeadline,
            count: 5,
        });
        let record = transition_record(&opened, "Breaker", 1);
        assert!(
            record.ends_with(r#""opened_at":7,"cause":"invocation_deadline","CircuitOpened":1}"#),
            "{record}"
        );
    }

    #[test]
    fn a_closed_circuit_has_a_null_opened_at() {
        let record = transition_record(&transition("ce", CircuitState::Closed, None), "B", 1);
        assert!(record.contains(r#""opened_at":null"#), "{record}");
    }

    #[test]
    fn names_with_json_metacharacters_are_escaped() {
        let record = transition_record(
            &transition("a\"b\\c\nd\u{1}", CircuitState::Open, Some(1)),
            "ns\"",
            1,
        );
        assert!(
            record.contains(r#""circuit":"a\"b\\c\nd\u0001""#),
            "{record}"
        );
        assert!(record.contains(r#""Namespace":"ns\"""#), "{record}");
    }
}
