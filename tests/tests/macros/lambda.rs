//! A `#[circuit_breaker]` Lambda handler passed to `lambda_runtime::service_fn`.

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{CircuitBreakerOpenError, CircuitInfo, circuit_breaker};
use lambda_runtime::{Context, Error, LambdaEvent, Service, service_fn};
use serde_json::{Value, json};

#[circuit_breaker(name = "lambda-handler", failure_threshold = 2, persistence_store = InMemoryStore::new())]
async fn handler(event: LambdaEvent<Value>) -> Result<Value, Error> {
    match event.payload["amount"].as_u64() {
        Some(amount) => Ok(json!({ "charged": amount })),
        None => Err("payment api rejected the request".into()),
    }
}

fn event(payload: Value) -> LambdaEvent<Value> {
    LambdaEvent::new(payload, Context::default())
}

#[tokio::test]
async fn a_guarded_handler_runs_under_service_fn() {
    let mut service = service_fn(handler);
    let ok = service.call(event(json!({ "amount": 12 }))).await.unwrap();
    assert_eq!(ok, json!({ "charged": 12 }));
    for _ in 0..2 {
        let error = service.call(event(json!({}))).await.unwrap_err();
        assert_eq!(error.to_string(), "payment api rejected the request");
    }
    let rejected = service
        .call(event(json!({ "amount": 1 })))
        .await
        .unwrap_err();
    let open = rejected
        .downcast_ref::<CircuitBreakerOpenError>()
        .expect("lambda_runtime::Error carries CircuitBreakerOpenError");
    assert_eq!(&*open.circuit.name, "lambda-handler");
}

#[circuit_breaker(name = "lambda-fallback", failure_threshold = 1, on_circuit_open = queued, persistence_store = InMemoryStore::new())]
async fn charge(event: LambdaEvent<Value>) -> Result<Value, Error> {
    let _ = event;
    Err("downstream unavailable".into())
}

async fn queued(event: LambdaEvent<Value>, circuit: CircuitInfo) -> Result<Value, Error> {
    Ok(
        json!({ "queued": event.payload, "circuit": circuit.name, "request": event.context.request_id }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fallback_handler_answers_while_open_and_the_service_is_runnable() {
    let mut service = service_fn(charge);
    assert!(service.call(event(json!({ "id": 1 }))).await.is_err());
    let answer = tokio::spawn(service.call(event(json!({ "id": 2 }))))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        answer,
        json!({ "queued": { "id": 2 }, "circuit": "lambda-fallback", "request": "" })
    );
    // `lambda_runtime::run` accepts it: Send futures, an error type it can report. Built,
    // never polled (there is no Runtime API here).
    drop(lambda_runtime::run(service_fn(charge)));
}
