//! The README's quickstart function with an `on_circuit_open` callback that holds the order
//! for later while the circuit is open (the README's "buffer while open"), its guarded call
//! a plain HTTP GET of `INVENTORY_URL/<sku>`: the tests run it under the Runtime API stub,
//! against a downstream that hangs, to show the callback keeps the hang protection.

use breaker_runtime::store::DynamoDbStore;
use breaker_runtime::{CircuitInfo, circuit_breaker, set_default_store};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[circuit_breaker(name = "inventory-api", failure_threshold = 3, recovery_timeout = 60, on_circuit_open = hold)]
async fn reserve(sku: String) -> Result<Value, Error> {
    let status = get(&format!("/{sku}")).await?;
    Ok(json!({ "sku": sku, "reserved": status.starts_with("HTTP/1.1 200") }))
}

/// While the circuit is open: the reservation is held for later, with why.
fn hold(sku: String, circuit: CircuitInfo) -> Result<Value, Error> {
    let reason = format!("{:?}", circuit.reason());
    Ok(
        json!({ "sku": sku, "held": true, "reason": reason, "retry_after": circuit.retry_after_unix_secs }),
    )
}

async fn handler(event: LambdaEvent<Value>) -> Result<Value, Error> {
    let sku = event.payload["sku"]
        .as_str()
        .ok_or("sku is required")?
        .to_owned();
    reserve(sku).await
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    set_default_store(
        DynamoDbStore::builder()
            .table_name("circuit-breakers")
            .build()?,
    )?;
    let _ = breaker_runtime::warm_up(["inventory-api"]).await;
    breaker_runtime::lambda::run(service_fn(handler)).await
}

/// The status line of `GET path` on the inventory API (`INVENTORY_URL`, `host:port`).
async fn get(path: &str) -> Result<String, Error> {
    let host = std::env::var("INVENTORY_URL")?;
    let mut stream = tokio::net::TcpStream::connect(&host).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response.lines().next().unwrap_or_default().to_owned())
}
