//! What an operator reads: every circuit of the table, or one, with what the breaker does
//! not need (the TTL, why an item cannot be read). The `breaker` CLI is built on it, through
//! [`crate::unstable`]: no semver guarantee.

use std::future::Future;

use aws_sdk_dynamodb::types::AttributeValue;

use super::item::Item;
use super::report::is_report_item;
use super::{DynamoDbStore, Shared};
use crate::protocol::CircuitRecord;
use crate::store::StoreError;

/// One circuit's item as stored, for an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredCircuit {
    /// The circuit's name (the key, or the sort key of a composite key).
    pub name: String,
    /// The decoded record, or why the item cannot be decoded (the breaker then treats the
    /// circuit as closed).
    pub record: Result<CircuitRecord, String>,
    /// The TTL attribute (unix seconds); `None`: the item does not expire.
    pub expiration: Option<u64>,
}

impl StoredCircuit {
    /// A circuit named `name` whose item decoded to `record` (or did not, and why), without
    /// a TTL.
    ///
    /// ```
    /// use breaker_runtime::store::CircuitRecord;
    /// use breaker_runtime::unstable::StoredCircuit;
    /// let circuit = StoredCircuit::new("payment-backend", Ok(CircuitRecord::closed()));
    /// assert_eq!(circuit.expiration, None);
    /// ```
    pub fn new(name: impl Into<String>, record: Result<CircuitRecord, String>) -> Self {
        Self {
            name: name.into(),
            record,
            expiration: None,
        }
    }
}

/// An operator's reads of a [`DynamoDbStore`]: the `breaker` CLI's, not the breaker's.
pub trait OperatorReads {
    /// Every circuit in the table, sorted by name: a Scan (`dynamodb:Scan`), or with a
    /// composite key a Query of the static partition key (`dynamodb:Query`). Strongly
    /// consistent, paginated. The fleet's failure counters are not circuits: their items
    /// are left out.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), breaker_runtime::store::StoreError> {
    /// use breaker_runtime::unstable::OperatorReads as _;
    /// let store = breaker_runtime::store::DynamoDbStore::builder().table_name("circuits").build().unwrap();
    /// for circuit in store.list().await? {
    ///     println!("{}: {:?}", circuit.name, circuit.record.map(|r| r.state));
    /// }
    /// # Ok(()) }
    /// ```
    fn list(&self) -> impl Future<Output = Result<Vec<StoredCircuit>, StoreError>> + Send;

    /// One circuit's item, strongly consistent; `None` if there is none, an error if the
    /// item holds the fleet's failure counters.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), breaker_runtime::store::StoreError> {
    /// use breaker_runtime::unstable::OperatorReads as _;
    /// let store = breaker_runtime::store::DynamoDbStore::builder().table_name("circuits").build().unwrap();
    /// if let Some(circuit) = store.inspect("payment-backend").await? {
    ///     println!("expires at {:?}", circuit.expiration);
    /// }
    /// # Ok(()) }
    /// ```
    fn inspect(
        &self,
        circuit: &str,
    ) -> impl Future<Output = Result<Option<StoredCircuit>, StoreError>> + Send;
}

impl OperatorReads for DynamoDbStore {
    async fn list(&self) -> Result<Vec<StoredCircuit>, StoreError> {
        let shared = &self.shared;
        let mut circuits = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let (items, next) = match &shared.names.sort_key {
                None => {
                    let page = shared
                        .client()
                        .await
                        .scan()
                        .table_name(&shared.table)
                        .consistent_read(true)
                        .set_exclusive_start_key(start.take())
                        .send()
                        .await
                        .map_err(|e| shared.error("Scan", &e))?;
                    (page.items, page.last_evaluated_key)
                }
                Some(_) => {
                    let page = shared
                        .client()
                        .await
                        .query()
                        .table_name(&shared.table)
                        .consistent_read(true)
                        .key_condition_expression("#pk = :pk")
                        .expression_attribute_names("#pk", &shared.names.key)
                        .expression_attribute_values(
                            ":pk",
                            AttributeValue::S(shared.names.static_pk_value.clone()),
                        )
                        .set_exclusive_start_key(start.take())
                        .send()
                        .await
                        .map_err(|e| shared.error("Query", &e))?;
                    (page.items, page.last_evaluated_key)
                }
            };
            circuits.extend(
                items
                    .unwrap_or_default()
                    .iter()
                    .filter(|i| !is_report_item(i))
                    .filter_map(|i| shared.stored(i)),
            );
            match next {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        circuits.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(circuits)
    }

    async fn inspect(&self, circuit: &str) -> Result<Option<StoredCircuit>, StoreError> {
        let item = self.shared.get_item(circuit, true).await?;
        match item {
            Some(item) if is_report_item(&item) => Err(StoreError::new(format!(
                "item '{circuit}' in table '{}' holds fleet failure counters, not a circuit",
                self.shared.table
            ))),
            item => Ok(item.and_then(|item| self.shared.stored(&item))),
        }
    }
}

impl Shared {
    /// An item as an operator sees it; `None` for an item without a string name.
    fn stored(&self, item: &Item) -> Option<StoredCircuit> {
        let name_attr = self.names.sort_key.as_ref().unwrap_or(&self.names.key);
        let name = item.get(name_attr)?.as_s().ok()?.clone();
        let expiration = item
            .get(&self.names.expiry)
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok());
        Some(StoredCircuit {
            name,
            record: self.names.decode(item).map_err(|m| m.to_string()),
            expiration,
        })
    }
}
