//! A user's function written as the README's quickstart shows (the attribute, the default
//! store, `breaker_runtime::lambda::run(service_fn(handler))`), its guarded call a plain HTTP
//! GET of `INVENTORY_URL/<sku>`: the tests run it as a fresh process under the Runtime API
//! stub, against a downstream that hangs.

use breaker_runtime::store::DynamoDbStore;
use breaker_runtime::{circuit_breaker, set_default_store};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[circuit_breaker(name = "inventory-api", failure_threshold = 3, recovery_timeout = 60)]
async fn reserve(sku: String) -> Result<Value, Error> {
    let status = get(&format!("/{sku}")).await?;
    Ok(json!({ "sku": sku, "reserved": status.starts_with("HTTP/1.1 200") }))
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
    // During init: read the circuits' records (one BatchGetItem) and open the connection,
    // so the first invocation's guarded call is a cache hit. A store that is down fails
    // open within 1 s; a missing table or denied access stops init, naming the table.
    if let Err(error) = breaker_runtime::warm_up(["inventory-api"]).await
        && error.is_misconfiguration()
    {
        return Err(error.into());
    }
    breaker_runtime::lambda::run(service_fn(handler)).await
}

/// The status line of `GET path` on the inventory API (`INVENTORY_URL`, `host:port`): the
/// HTTP client a user would bring, in a few lines.
async fn get(path: &str) -> Result<String, Error> {
    let host = std::env::var("INVENTORY_URL")?;
    let mut stream = tokio::net::TcpStream::connect(&host).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response.lines().next().unwrap_or_default().to_owned())
}
