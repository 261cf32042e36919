//! The events a user logs or forwards, as JSON (feature `serde`): their fields named with
//! their units, the enums by the names the logs and metrics use, and each one back again.

use breaker_runtime::{
    CircuitInfo, CircuitState, CircuitTransition, FailureKind, ShadowDecision, ShadowEvent,
    TransitionCause,
};
use serde_json::json;

fn round_trip<T>(value: &T) -> serde_json::Value
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_value(value).unwrap();
    let back: T = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(&back, value);
    json
}

#[test]
fn a_rejected_calls_circuit_info_is_json_with_its_units_in_its_names() {
    let info = CircuitInfo::new("payments", CircuitState::Open, 5, Some(1_700_000_000))
        .with_retry_after_unix_secs(Some(1_700_000_030))
        .with_key(Some("shop-17"));
    let json = round_trip(&info);
    assert_eq!(json["name"], "payments");
    assert_eq!(json["state"], "OPEN");
    assert_eq!(json["failure_count"], 5);
    assert_eq!(json["opened_at_unix_secs"], 1_700_000_000);
    assert_eq!(json["retry_after_unix_secs"], 1_700_000_030);
    assert_eq!(json["key"], "shop-17");
}

#[test]
fn a_transition_and_its_cause_are_json() {
    let transition = CircuitTransition::new(
        "payments",
        CircuitState::Closed,
        CircuitState::Open,
        Some(1_700_000_000),
        Some(TransitionCause::Failures {
            kind: FailureKind::CallTimeout,
            count: 5,
        }),
    );
    let json = round_trip(&transition);
    assert_eq!(json["from_state"], "CLOSED");
    assert_eq!(json["to_state"], "OPEN");
    assert_eq!(json["opened_at_unix_secs"], 1_700_000_000);
    assert_eq!(
        json["cause"],
        json!({"cause": "failures", "kind": "call_timeout", "count": 5})
    );
    let fleet = TransitionCause::Fleet {
        failures: 20,
        calls: 30,
    };
    assert_eq!(
        round_trip(&fleet),
        json!({"cause": "fleet", "failures": 20, "calls": 30})
    );
}

#[test]
fn a_shadow_event_is_json_with_its_decision_as_logged() {
    let event = ShadowEvent::new(
        "payments",
        ShadowDecision::WouldOpen,
        Some(1_700_000_000),
        None,
    );
    let json = round_trip(&event);
    assert_eq!(json["decision"], ShadowDecision::WouldOpen.as_str());
    assert_eq!(json["opened_at_unix_secs"], 1_700_000_000);
    assert_eq!(round_trip(&CircuitState::HalfOpen), json!("HALF_OPEN"));
}
