//! A minimal Lambda function that reads one DynamoDB item per invocation, guarded by one
//! `#[circuit_breaker]` on the default store (`CIRCUIT_BREAKER_TABLE`): the twin of
//! `lambda_dynamodb_plain`; the difference between the two is what breaker costs a function
//! (docs/performance.md).
//!
//! Environment: `CIRCUIT_BREAKER_TABLE`; `LEDGER_TABLE`, a table keyed by `order_id` (S). Event: `{"order_id": "..."}`.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::{Value, json};

/// Whether the order is in the table; five failures in a row open the `ledger` circuit.
#[breaker_runtime::circuit_breaker(name = "ledger")]
async fn lookup(client: Client, table: String, order_id: String) -> Result<bool, Error> {
    let item = client
        .get_item()
        .table_name(table)
        .key("order_id", AttributeValue::S(order_id))
        .send()
        .await?;
    Ok(item.item().is_some())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = Client::new(&config);
    let table = std::env::var("LEDGER_TABLE").map_err(|_| "LEDGER_TABLE is not set")?;
    run(service_fn(|event: LambdaEvent<Value>| {
        let order_id = event.payload["order_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let (client, table) = (client.clone(), table.clone());
        async move {
            let found = lookup(client, table, order_id).await?;
            Ok::<_, Error>(json!({ "found": found }))
        }
    }))
    .await
}
