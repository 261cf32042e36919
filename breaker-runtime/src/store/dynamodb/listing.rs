//! What an operator reads: every circuit of the table, or one, with what the breaker does
//! not need (the TTL, why an item cannot be read). The `breaker` CLI is built on it, through
//! [`crate::unstable`]: no semver guarantee.

use std::future::Future;

use aws_sdk_dynamodb::types::AttributeValue;

use super::item::Item;
use super::key_index::{KEY_INDEX, OPEN_KEYS};
use super::report::is_report_item;
use super::{DynamoDbStore, Shared, update_failed};
use crate::protocol::CircuitRecord;
use crate::store::StoreError;

mod index;

/// The suffix of an index item's id after the circuit's name.
const INDEX_SUFFIX: &str = "#keys";

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
    /// use breaker_runtime::store::implement::CircuitRecord;
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

/// A keyed circuit's index item (`{circuit}#keys`) as stored, for an operator: the keys
/// whose items the fleet reads, because they are (or were lately) not closed.
///
/// ```no_run
/// # async fn demo() -> Result<(), breaker_runtime::store::StoreError> {
/// use breaker_runtime::__protocol::decode_key;
/// use breaker_runtime::unstable::OperatorReads as _;
/// let store = breaker_runtime::store::DynamoDbStore::builder().table_name("circuits").build().unwrap();
/// if let Some(index) = store.inspect_key_index("webhooks").await? {
///     for (encoded, written_at_ms) in &index.entries {
///         println!("{} named since {written_at_ms}", decode_key(encoded));
///     }
///     assert!(index.malformed.is_empty(), "edited by hand: {:?}", index.malformed);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredKeyIndex {
    /// The keyed circuit's name (the item's id without `#keys`).
    pub circuit: String,
    /// The item's count of its entries (`open_keys`), which the cap is checked against.
    pub open_keys: u64,
    /// Each entry: the encoded key (decode it with [`decode_key`](crate::store::decode_key))
    /// and when it was written (unix milliseconds, from its token), sorted by key. Entries
    /// listed in `malformed` are not among them.
    pub entries: Vec<(String, u64)>,
    /// The attributes that are not what the breaker writes (an entry or the count edited
    /// by hand), sorted by attribute: `open_keys` reads as 0 when it is one of them.
    pub malformed: Vec<IndexProblem>,
    /// How many entry attributes (`k:...`) the item holds, malformed ones included: what
    /// `open_keys` should equal.
    pub entry_attributes: u64,
    /// The item's count of its suspicions (`suspected_keys`).
    pub suspected_keys: u64,
    /// Each suspicion (`s:...`): the encoded key and when it was named (unix
    /// milliseconds), sorted by key. Suspicions take no slot of the cap, and go once they
    /// have ended.
    pub suspected: Vec<(String, u64)>,
    /// The TTL attribute (unix seconds): `None`, as the breaker writes the index; one an
    /// older version set (the next write to the index removes it).
    pub expiration: Option<u64>,
}

/// An attribute of an index item that is not what the breaker writes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexProblem {
    /// The attribute's name (`k:...`, `s:...`, `open_keys` or `suspected_keys`).
    pub attribute: String,
    /// What is wrong with it.
    pub problem: String,
    /// Whether the breaker fails to read the whole index because of it (then every key's
    /// read fails, and the keys keep what their environments last believed); `false`: an
    /// entry whose key part no key encodes to, which the breaker reads and counts but
    /// which names no key's item.
    pub unreadable: bool,
}

impl IndexProblem {
    /// `attribute`, whose `problem` stops the breaker reading the whole index.
    fn unreadable(attribute: &str, problem: String) -> Self {
        let attribute = attribute.to_owned();
        Self {
            attribute,
            problem,
            unreadable: true,
        }
    }
}

/// Every item of a table an operator lists: the circuits (plain circuits and keyed
/// circuits' key items, by item id), and the keyed circuits' index items. The fleet's
/// failure counters are left out.
///
/// ```no_run
/// # async fn demo() -> Result<(), breaker_runtime::store::StoreError> {
/// use breaker_runtime::unstable::OperatorReads as _;
/// let store = breaker_runtime::store::DynamoDbStore::builder().table_name("circuits").build().unwrap();
/// let listing = store.listing().await?;
/// println!("{} circuit items, {} keyed circuits", listing.circuits.len(), listing.key_indexes.len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Listing {
    /// Circuit items, sorted by id.
    pub circuits: Vec<StoredCircuit>,
    /// Index items, sorted by circuit.
    pub key_indexes: Vec<StoredKeyIndex>,
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

    /// Every item as [`list`](OperatorReads::list) reads them, with the keyed circuits'
    /// index items besides (`list` leaves them out): one Scan or Query.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), breaker_runtime::store::StoreError> {
    /// use breaker_runtime::unstable::OperatorReads as _;
    /// let store = breaker_runtime::store::DynamoDbStore::builder().table_name("circuits").build().unwrap();
    /// for index in store.listing().await?.key_indexes {
    ///     println!("{}: {} keys named", index.circuit, index.entries.len());
    /// }
    /// # Ok(()) }
    /// ```
    fn listing(&self) -> impl Future<Output = Result<Listing, StoreError>> + Send;

    /// The index item of the keyed circuit `circuit`, strongly consistent; `None` if there
    /// is none.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), breaker_runtime::store::StoreError> {
    /// use breaker_runtime::unstable::OperatorReads as _;
    /// let store = breaker_runtime::store::DynamoDbStore::builder().table_name("circuits").build().unwrap();
    /// if let Some(index) = store.inspect_key_index("webhooks").await? {
    ///     println!("{} open keys", index.open_keys);
    /// }
    /// # Ok(()) }
    /// ```
    fn inspect_key_index(
        &self,
        circuit: &str,
    ) -> impl Future<Output = Result<Option<StoredKeyIndex>, StoreError>> + Send;

    /// One circuit's item, strongly consistent; `None` if there is none, an error if the
    /// item holds the fleet's failure counters or a keyed circuit's index.
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

/// The one repair an operator makes of a [`DynamoDbStore`] that the breaker never makes:
/// the `breaker` CLI's.
pub trait OperatorWrites {
    /// Sets the `open_keys` count of `circuit`'s index to `entries` if it still is `seen`
    /// (one conditional `UpdateItem`, which also removes a TTL an older version set);
    /// `false` if it is not (or the index is gone). The
    /// count drifts from the entries only by hand edits: every add and remove changes both
    /// by one, so a count still at `seen` still differs from the entries as read.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), breaker_runtime::store::StoreError> {
    /// use breaker_runtime::unstable::{OperatorReads as _, OperatorWrites as _};
    /// let store = breaker_runtime::store::DynamoDbStore::builder().table_name("circuits").build().unwrap();
    /// if let Some(index) = store.inspect_key_index("webhooks").await? {
    ///     store.reconcile_key_index("webhooks", index.open_keys, index.entry_attributes).await?;
    /// }
    /// # Ok(()) }
    /// ```
    fn reconcile_key_index(
        &self,
        circuit: &str,
        seen: u64,
        entries: u64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

impl OperatorWrites for DynamoDbStore {
    async fn reconcile_key_index(
        &self,
        circuit: &str,
        seen: u64,
        entries: u64,
    ) -> Result<bool, StoreError> {
        let shared = &self.shared;
        let id = crate::store::key_index_id(circuit);
        let sent = shared
            .client()
            .await
            .update_item()
            .table_name(&shared.table)
            .set_key(Some(shared.names.key(&id)))
            // The index keeps no TTL: one an older version set goes with any write.
            .update_expression("SET #n = :entries REMOVE #e")
            .condition_expression("attribute_exists(#ki) AND #n = :seen")
            .expression_attribute_names("#n", OPEN_KEYS)
            .expression_attribute_names("#ki", KEY_INDEX)
            .expression_attribute_names("#e", &shared.names.expiry)
            .expression_attribute_values(":entries", AttributeValue::N(entries.to_string()))
            .expression_attribute_values(":seen", AttributeValue::N(seen.to_string()))
            .send()
            .await;
        match sent {
            Ok(_) => Ok(true),
            Err(error) => match error.as_service_error().and_then(update_failed) {
                Some(_) => Ok(false),
                None => Err(shared.error("UpdateItem", &error)),
            },
        }
    }
}

impl OperatorReads for DynamoDbStore {
    async fn list(&self) -> Result<Vec<StoredCircuit>, StoreError> {
        Ok(self.listing().await?.circuits)
    }

    async fn listing(&self) -> Result<Listing, StoreError> {
        let shared = &self.shared;
        let mut listing = Listing::default();
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
            for item in items.unwrap_or_default() {
                if is_report_item(&item) {
                    continue;
                }
                match is_key_index_item(&item) {
                    true => listing.key_indexes.extend(shared.stored_index(&item)),
                    false => listing.circuits.extend(shared.stored(&item)),
                }
            }
            match next {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        listing.circuits.sort_by(|a, b| a.name.cmp(&b.name));
        listing
            .key_indexes
            .sort_by(|a, b| a.circuit.cmp(&b.circuit));
        Ok(listing)
    }

    async fn inspect_key_index(&self, circuit: &str) -> Result<Option<StoredKeyIndex>, StoreError> {
        let id = crate::store::key_index_id(circuit);
        let item = self.shared.get_item(&id, true).await?;
        match item {
            Some(item) if !is_key_index_item(&item) => Err(StoreError::new(format!(
                "item '{id}' in table '{}' is not a keyed circuit's index",
                self.shared.table
            ))),
            item => Ok(item.and_then(|item| self.shared.stored_index(&item))),
        }
    }

    async fn inspect(&self, circuit: &str) -> Result<Option<StoredCircuit>, StoreError> {
        let item = self.shared.get_item(circuit, true).await?;
        match item {
            Some(item) if is_report_item(&item) => Err(StoreError::new(format!(
                "item '{circuit}' in table '{}' holds fleet failure counters, not a circuit",
                self.shared.table
            ))),
            Some(item) if is_key_index_item(&item) => Err(StoreError::new(format!(
                "item '{circuit}' in table '{}' holds the key index of keyed circuit '{}', \
                 not a circuit",
                self.shared.table,
                circuit.strip_suffix(INDEX_SUFFIX).unwrap_or(circuit)
            ))),
            item => Ok(item.and_then(|item| self.shared.stored(&item))),
        }
    }
}

/// Whether `item` is a keyed circuit's index (it carries the `key_index` marker).
fn is_key_index_item(item: &Item) -> bool {
    item.contains_key(KEY_INDEX)
}

/// A number attribute, if it is one.
fn number(item: &Item, attribute: &str) -> Option<u64> {
    item.get(attribute)?.as_n().ok()?.parse().ok()
}

impl Shared {
    /// An item as an operator sees it; `None` for an item without a string name.
    fn stored(&self, item: &Item) -> Option<StoredCircuit> {
        Some(StoredCircuit {
            name: self.name_of(item)?.to_owned(),
            record: self.names.decode(item).map_err(|m| m.to_string()),
            expiration: number(item, &self.names.expiry),
        })
    }
}
