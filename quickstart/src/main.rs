use breaker_runtime::{circuit_breaker, set_default_store};
use breaker_runtime::store::DynamoDbStore;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};

#[circuit_breaker(name = "inventory-api", failure_threshold = 3, recovery_timeout = 60)]
async fn reserve(sku: String) -> Result<Value, Error> {
    // reqwest::get(format!("https://inventory.example/{sku}")).await?...
    Ok(json!({ "sku": sku, "reserved": true }))
}

async fn handler(event: LambdaEvent<Value>) -> Result<Value, Error> {
    let sku = event.payload["sku"].as_str().ok_or("sku is required")?.to_owned();
    reserve(sku).await
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    set_default_store(DynamoDbStore::builder().table_name("circuit-breakers").build()?)?;
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
