//! The batched read of the warm-up: every circuit of a function in one `BatchGetItem`
//! (eventually consistent, like every other read but the election's), which also opens the
//! client's connection before the first invocation.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};

use super::Shared;
use super::item::Item;
use crate::protocol::CircuitRecord;
use crate::store::StoreError;

/// Keys per `BatchGetItem` request: DynamoDB's limit.
const KEYS_PER_REQUEST: usize = 100;
/// Requests for the keys DynamoDB left unprocessed (throttling) before giving up.
const ROUNDS: usize = 3;

impl Shared {
    /// The records of `circuits`, in their order.
    pub(super) async fn read_many(
        &self,
        circuits: &[&str],
    ) -> Result<Vec<Option<CircuitRecord>>, StoreError> {
        // DynamoDB refuses a request that names one key twice.
        let mut unique: Vec<&str> = circuits.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let mut items: HashMap<String, Item> = HashMap::new();
        for chunk in unique.chunks(KEYS_PER_REQUEST) {
            self.fetch(chunk, &mut items).await?;
        }
        Ok(circuits
            .iter()
            .map(|circuit| items.get(*circuit).map(|item| self.decode(circuit, item)))
            .collect())
    }

    /// One chunk of keys, with the unprocessed ones asked again; items by circuit name.
    async fn fetch(
        &self,
        circuits: &[&str],
        items: &mut HashMap<String, Item>,
    ) -> Result<(), StoreError> {
        let mut keys: Vec<Item> = circuits.iter().map(|c| self.names.key(c)).collect();
        for _ in 0..ROUNDS {
            let request = KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .build()
                .map_err(|e| StoreError::new(format!("DynamoDB BatchGetItem request: {e}")))?;
            let output = self
                .client()
                .await
                .batch_get_item()
                .request_items(&self.table, request)
                .send()
                .await
                .map_err(|e| self.error("BatchGetItem", &e))?;
            let found = output
                .responses()
                .and_then(|responses| responses.get(&self.table))
                .map(Vec::as_slice)
                .unwrap_or_default();
            for item in found {
                if let Some(name) = self.name_of(item) {
                    items.insert(name.to_owned(), item.clone());
                }
            }
            keys = output
                .unprocessed_keys()
                .and_then(|unprocessed| unprocessed.get(&self.table))
                .map(|left| left.keys().to_vec())
                .unwrap_or_default();
            if keys.is_empty() {
                return Ok(());
            }
        }
        Err(StoreError::throttled(format!(
            "DynamoDB BatchGetItem on table '{}' left {} keys unprocessed after {ROUNDS} requests",
            self.table,
            keys.len()
        )))
    }

    /// The circuit an item belongs to: its key, or its sort key with a static partition key.
    pub(super) fn name_of<'i>(&self, item: &'i Item) -> Option<&'i str> {
        let attribute = self.names.sort_key.as_ref().unwrap_or(&self.names.key);
        match item.get(attribute) {
            Some(AttributeValue::S(name)) => Some(name),
            _ => None,
        }
    }
}
