//! A Lambda function whose handler is a tower service stack with the circuit breaker as
//! one layer: every invocation is a guarded call, and while the circuit is open the
//! function answers with `CircuitBreakerOpenError` at once instead of calling the
//! downstream. The circuit's state is the process default store's: a DynamoDB table when
//! `CIRCUIT_BREAKER_TABLE` is set, so the whole fleet shares it.
//!
//! Build: `cargo build -p breaker-runtime --features tower --example tower_lambda`; run it
//! under a Lambda Runtime API (`cargo lambda watch`, or in Lambda as the bootstrap).

use breaker_runtime::tower::{BoxError, CircuitBreakerLayer};
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, default_store};
use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::{Value, json};
use tower::ServiceBuilder;

/// The handler: reserves stock at a downstream that may fail.
async fn reserve(event: LambdaEvent<Value>) -> Result<Value, BoxError> {
    let sku = event.payload["sku"].as_str().ok_or("sku is required")?;
    // inventory_api.reserve(sku).await?
    Ok(json!({ "sku": sku, "reserved": true }))
}

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(5)
        .build()?;
    let breaker = CircuitBreaker::new("inventory-api", default_store(), config);
    let handler = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(breaker))
        .service(service_fn(reserve));
    // Each invocation in its deadline scope: a hung downstream is counted before Lambda
    // ends the invocation.
    breaker_runtime::lambda::run(handler).await
}
