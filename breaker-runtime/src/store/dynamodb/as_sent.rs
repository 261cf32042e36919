//! The store's requests and items as data, for breaker's model checker: the model applies
//! breaker's writes by evaluating these very requests on its items, so the model and the
//! store share one definition of each write. Not public API (`__protocol`).

use std::collections::HashMap;
use std::sync::LazyLock;

use aws_sdk_dynamodb::types::AttributeValue;

use super::DynamoDbStore;
use super::item::{OVERRIDE, OVERRIDE_AT, OVERRIDE_BY, OVERRIDE_REASON, OVERRIDE_UNTIL};
use super::writes::{Request, Written};
use crate::protocol::{CircuitRecord, RecordWrite};

/// The circuit every request and item here is for.
const CIRCUIT: &str = "circuit";

/// A request as the store sends it, on a table with the default attribute names.
#[derive(Debug)]
pub struct SentRequest {
    /// `ConditionExpression`.
    pub condition: String,
    /// `Item` of a `PutItem`; `None` for an `UpdateItem`.
    pub put: Option<HashMap<String, AttributeValue>>,
    /// `UpdateExpression` of an `UpdateItem`; `None` for a `PutItem`.
    pub update: Option<String>,
    /// `ExpressionAttributeNames`.
    pub names: HashMap<String, String>,
    /// `ExpressionAttributeValues`.
    pub values: HashMap<String, AttributeValue>,
}

/// A store with the default attribute names (it never connects).
fn default_store() -> &'static DynamoDbStore {
    static STORE: LazyLock<DynamoDbStore> = LazyLock::new(|| {
        DynamoDbStore::builder()
            .table_name("circuits")
            .build()
            .expect("the default attribute names are valid")
    });
    &STORE
}

/// The request the store sends for `transition`.
pub fn request_as_sent(transition: &RecordWrite) -> SentRequest {
    let store = default_store();
    let request = Request::of(&store.shared.names, CIRCUIT, transition);
    let (put, update) = match request.write {
        Written::Put(item) => (Some(item), None),
        Written::Update(update) => (None, Some(update)),
    };
    SentRequest {
        condition: request.condition,
        put,
        update,
        names: request.bound.names,
        values: request.bound.values,
    }
}

/// The item holding `record`, with the TTL `ttl` (`None`: no TTL attribute).
pub fn item_as_stored(record: &CircuitRecord, ttl: Option<u64>) -> HashMap<String, AttributeValue> {
    let store = default_store();
    let mut item = store
        .shared
        .names
        .item(CIRCUIT, record, ttl.unwrap_or_default());
    if ttl.is_none() {
        item.remove(&store.shared.names.expiry);
    }
    if let Some(o) = &record.operator_override {
        let number = |n: u64| AttributeValue::N(n.to_string());
        item.insert(OVERRIDE.into(), AttributeValue::S(o.kind.as_str().into()));
        item.insert(OVERRIDE_BY.into(), AttributeValue::S(o.by.clone()));
        item.insert(OVERRIDE_AT.into(), number(o.at));
        if let Some(until) = o.until {
            item.insert(OVERRIDE_UNTIL.into(), number(until));
        }
        if let Some(reason) = &o.reason {
            item.insert(OVERRIDE_REASON.into(), AttributeValue::S(reason.clone()));
        }
    }
    item
}

/// The record and TTL the store reads from `item`, or why it would read it as malformed.
pub fn record_as_read(
    item: &HashMap<String, AttributeValue>,
) -> Result<(CircuitRecord, Option<u64>), String> {
    let store = default_store();
    let names = &store.shared.names;
    let record = names.decode(item).map_err(|m| m.to_string())?;
    let ttl = match item.get(&names.expiry) {
        None => None,
        Some(AttributeValue::N(n)) => Some(n.parse().map_err(|e| format!("TTL {n}: {e}"))?),
        Some(other) => return Err(format!("TTL is not a number: {other:?}")),
    };
    Ok((record, ttl))
}
