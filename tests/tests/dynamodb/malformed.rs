//! Items the store cannot decode (wrong type, unknown state, missing attributes, numbers
//! out of range) are a CLOSED circuit with a warning naming the circuit and the attribute;
//! never a panic, never a stuck call. A trip overwrites the broken item where DynamoDB can
//! tell it is broken (by attribute type). Each test on dynalite and on moto's DynamoDB.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use breaker_runtime::store::{CircuitRecord, StateStore};
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState};
use devstack::fixtures::local_dynamodb::{DynamoDbServer, Emulator};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber, span};

type Error = Box<dyn std::error::Error + Send + Sync>;

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn n(value: &str) -> AttributeValue {
    AttributeValue::N(value.to_owned())
}

/// One broken item: its circuit, its other attributes, the attribute the warning must
/// name, and whether a trip can overwrite it.
struct Case {
    circuit: &'static str,
    attributes: Vec<(&'static str, AttributeValue)>,
    blamed: &'static str,
    heals: bool,
}

fn cases() -> Vec<Case> {
    let open = || ("state", s("OPEN"));
    let case = |circuit, attributes, blamed, heals| Case {
        circuit,
        attributes,
        blamed,
        heals,
    };
    vec![
        case(
            "missing-state",
            vec![("failure_count", n("3"))],
            "state",
            true,
        ),
        case("state-not-a-string", vec![("state", n("1"))], "state", true),
        case("unknown-state", vec![("state", s("AJAR"))], "state", true),
        case("open-without-opened-at", vec![open()], "opened_at", true),
        case(
            "opened-at-a-string",
            vec![open(), ("opened_at", s("yesterday"))],
            "opened_at",
            true,
        ),
        case(
            "failure-count-a-string",
            vec![open(), ("opened_at", n("1")), ("failure_count", s("five"))],
            "failure_count",
            true,
        ),
        case(
            "owner-a-number",
            vec![open(), ("opened_at", n("1")), ("half_open_owner", n("7"))],
            "half_open_owner",
            true,
        ),
        case(
            "half-open-without-owner",
            vec![
                ("state", s("HALF_OPEN")),
                ("opened_at", n("1")),
                ("probe_lease_expiry", n("2")),
            ],
            "half_open_owner",
            true,
        ),
        case(
            "lease-a-string",
            vec![
                ("state", s("HALF_OPEN")),
                ("opened_at", n("1")),
                ("half_open_owner", s("x")),
                ("probe_lease_expiry", s("soon")),
            ],
            "probe_lease_expiry",
            true,
        ),
        // Right type, value out of range: DynamoDB cannot see it in a condition.
        case(
            "opened-at-fractional",
            vec![open(), ("opened_at", n("1700000000.5"))],
            "opened_at",
            false,
        ),
        case(
            "failure-count-negative",
            vec![open(), ("opened_at", n("1")), ("failure_count", n("-3"))],
            "failure_count",
            false,
        ),
        case(
            "failure-count-too-big",
            vec![
                open(),
                ("opened_at", n("1")),
                ("failure_count", n("99999999999")),
            ],
            "failure_count",
            false,
        ),
    ]
}

/// Records each warning's fields as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<String>>>);

struct FieldText(String);

impl Visit for FieldText {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

impl Subscriber for Captured {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        // Warnings and errors only: the SDK traces every request.
        *metadata.level() <= Level::WARN
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut text = FieldText(format!("{} ", event.metadata().level()));
        event.record(&mut text);
        self.0.lock().expect("log lock").push(text.0);
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

async fn put_raw(
    dynalite: &impl DynamoDbServer,
    circuit: &str,
    attributes: &[(&str, AttributeValue)],
) {
    let mut item: HashMap<String, AttributeValue> = attributes
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    item.insert("id".into(), s(circuit));
    dynalite
        .client()
        .put_item()
        .table_name("circuits")
        .set_item(Some(item))
        .send()
        .await
        .expect("PutItem");
}

async fn raw_state(dynalite: &impl DynamoDbServer, circuit: &str) -> Option<AttributeValue> {
    let item = dynalite
        .client()
        .get_item()
        .table_name("circuits")
        .key("id", s(circuit))
        .consistent_read(true)
        .send()
        .await
        .expect("GetItem")
        .item
        .expect("item exists");
    item.get("state").cloned()
}

on_both!(
    malformed_items_read_as_closed_with_a_warning_naming_circuit_and_attribute,
    flavor = "current_thread"
);

async fn malformed_items_read_as_closed_with_a_warning_naming_circuit_and_attribute(
    emulator: Emulator,
) {
    let (dynalite, store) = crate::simple_table_on(emulator).await;

    let logs = Captured::default();
    let _guard = tracing::subscriber::set_default(logs.clone());
    for case in cases() {
        put_raw(&dynalite, case.circuit, &case.attributes).await;
        logs.0.lock().expect("log lock").clear();
        let record = store.read(case.circuit).await;
        assert_eq!(
            record,
            Ok(Some(CircuitRecord::closed())),
            "{}",
            case.circuit
        );
        let logs = logs.0.lock().expect("log lock").join("\n");
        assert!(logs.starts_with("WARN "), "{}: {logs}", case.circuit);
        assert!(
            logs.contains(&format!("circuit=\"{}\"", case.circuit)),
            "{logs}"
        );
        assert!(
            logs.contains(&format!("attribute={}", case.blamed)),
            "{}: {logs}",
            case.circuit
        );
    }
}

on_both!(
    a_breaker_on_a_malformed_item_runs_calls_and_a_trip_repairs_what_it_can,
    flavor = "multi_thread",
    worker_threads = 2
);

async fn a_breaker_on_a_malformed_item_runs_calls_and_a_trip_repairs_what_it_can(
    emulator: Emulator,
) {
    let (dynalite, store) = crate::simple_table_on(emulator).await;
    let store = Arc::new(store);
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(2)
        .recovery_timeout(Duration::from_secs(60))
        .local_cache_max_age(Duration::ZERO)
        .build()
        .expect("valid config");
    for case in cases() {
        put_raw(&dynalite, case.circuit, &case.attributes).await;
        let breaker = CircuitBreaker::new(case.circuit, store.clone(), config.clone());
        let ran: Result<u8, Error> = breaker.call(|| async { Ok(1) }).await;
        assert_eq!(
            ran.expect("a malformed item is a closed circuit"),
            1,
            "{}",
            case.circuit
        );
        for _ in 0..2 {
            let _: Result<(), Error> = breaker.call(|| async { Err("503".into()) }).await;
        }
        if case.heals {
            assert_eq!(breaker.state(), CircuitState::Open, "{}", case.circuit);
            assert_eq!(
                raw_state(&dynalite, case.circuit).await,
                Some(s("OPEN")),
                "{}",
                case.circuit
            );
        } else {
            // The trip lost to an item it cannot read: the environment stays closed and
            // keeps calling (fail open), the item is left for an operator.
            assert_eq!(breaker.state(), CircuitState::Closed, "{}", case.circuit);
            let ran: Result<u8, Error> = breaker.call(|| async { Ok(2) }).await;
            assert_eq!(ran.expect("still closed"), 2);
        }
    }
}
