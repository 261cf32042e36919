//! Composite keys (`--pk`) and renamed attributes: the CLI reads and writes the item the
//! functions' store is configured for.

use aws_sdk_dynamodb::types::AttributeValue;
use breaker_runtime::store::{OverrideKind, RecordWrite, StateStore as _, WriteOutcome};
use devstack::fixtures::shared_table;
use devstack::wall_clock::unix_secs;

use crate::support::Table;

#[tokio::test]
async fn composite_keys_and_renamed_attributes_are_flags() {
    let table = Table::new().await;
    let dynalite = &table.dynalite;
    let store = shared_table::create(dynalite)
        .await
        .expect("table")
        .client(dynalite.client())
        .state_attr("status")
        .expiry_attr("ttl")
        .build()
        .expect("valid store");
    let now = unix_secs();
    let trip = RecordWrite::Trip {
        opened_by: None,
        failure_count: 4,
        opened_at: now,
        expiration: now + 3_630,
        open_until: None,
    };
    assert_eq!(store.apply("inventory", &trip).await, Ok(WriteOutcome::Won));
    // Another partition of the shared table: not a circuit of this layout.
    dynalite
        .client()
        .put_item()
        .table_name("shared")
        .item("pk", AttributeValue::S("orders#1".into()))
        .item("sk", AttributeValue::S("line-1".into()))
        .send()
        .await
        .expect("PutItem");

    let layout = [
        "--table",
        "shared",
        "--key-attr",
        "pk",
        "--sort-key-attr",
        "sk",
        "--pk",
        "circuit_breaker#orders",
        "--state-attr",
        "status",
        "--expiry-attr",
        "ttl",
    ];
    let with_layout = |extra: &[&'static str]| -> Vec<&'static str> {
        layout.iter().chain(extra).copied().collect()
    };
    let json = table
        .breaker(&with_layout(&["list", "--json"]))
        .await
        .json();
    let circuits = json.as_array().expect("an array");
    assert_eq!(circuits.len(), 1, "{json}");
    assert_eq!(circuits[0]["name"], "inventory");
    assert_eq!(circuits[0]["state"], "OPEN");
    assert!(
        circuits[0]["expiration"].as_u64().is_some(),
        "TTL read from `ttl`"
    );

    let disabled = table
        .breaker(&with_layout(&["disable", "inventory", "--by", "dana"]))
        .await;
    disabled.ok();
    let record = store
        .read("inventory")
        .await
        .expect("read")
        .expect("a record");
    let set = record.operator_override.expect("an override");
    assert_eq!(
        (set.kind, set.by.as_str()),
        (OverrideKind::Disabled, "dana")
    );
    assert_eq!(record.state, breaker_runtime::CircuitState::Closed);
}
