//! `DynamoDbStore`: the shared state of every circuit in one DynamoDB table, so a whole
//! Lambda fleet opens, probes and closes together.
//!
//! Every [`RecordWrite`] is one conditional write whose condition says in DynamoDB's words
//! what [`RecordWrite::allowed`] says on a record; a lost write returns the item that beat it
//! (`ReturnValuesOnConditionCheckFailure=ALL_OLD`), or, when the server sends none back
//! (dynalite), the result of one consistent read. Reads are eventually consistent: the
//! breaker reads at most once per `local_cache_max_age`, and every write is conditional, so
//! a stale read costs at most a lost write.
//!
//! SDK errors stop here: the breaker sees won, lost, or a [`StoreError`] (and fails open).

use std::sync::Arc;

use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use tokio::sync::OnceCell;

use super::{KeyIndex, KeyIndexOutcome, KeyIndexWrite, StateStore, StoreError, StoreFuture};
use crate::protocol::{
    CircuitRecord, EpochTally, FailureReport, FleetTally, RecordWrite, SuspectReport, WriteOutcome,
};

#[doc(hidden)]
pub mod as_sent;
mod batch;
mod builder;
mod client;
mod conditions;
mod iam;
mod item;
mod key_index;
mod listing;
mod report;
#[cfg(test)]
mod requests_doc;
mod writes;

pub use builder::DynamoDbStoreBuilder;
use client::ClientSource;
use conditions::Expression;
use item::{AttributeNames, Item};
pub use listing::{
    IndexProblem, Listing, OperatorReads, OperatorWrites, StoredCircuit, StoredKeyIndex,
};

/// The fleet-wide store: one item per circuit in a DynamoDB table, in the layout of
/// Powertools for AWS Lambda (Python), so Python and Rust functions can share a circuit.
///
/// The table needs a string partition key (`id` by default), or a string partition key
/// and a string sort key (see [`DynamoDbStoreBuilder::sort_key_attr`]); enable TTL on
/// `expiration`. The function needs `dynamodb:GetItem`, `PutItem` and `UpdateItem` on it,
/// and `BatchGetItem` to [warm up](crate::warm_up) at init. Fleet-wide failure counts live
/// in items of their own, one per circuit and fleet window (`{circuit}#fleet@{window}`),
/// which the TTL removes: a policy limited by `dynamodb:LeadingKeys` must allow both
/// ([`iam_leading_keys`](Self::iam_leading_keys), [`IAM_ACTIONS`](Self::IAM_ACTIONS)).
/// Cheap to clone (clones share one client).
///
/// ```no_run
/// use std::sync::{Arc, LazyLock};
/// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig};
/// use breaker_runtime::store::DynamoDbStore;
///
/// // Building is synchronous and does no I/O: a static can hold the store.
/// static STORE: LazyLock<DynamoDbStore> = LazyLock::new(|| {
///     DynamoDbStore::builder().table_name("circuit-breakers").build().expect("valid store")
/// });
///
/// # #[tokio::main] async fn main() {
/// let breaker = CircuitBreaker::new("payment-backend", Arc::new(STORE.clone()), CircuitBreakerConfig::default());
/// let paid: Result<&str, anyhow::Error> = breaker.call(|| async { Ok("paid") }).await;
/// # }
/// ```
///
/// # Retries and timeouts
///
/// The breaker bounds each store call with its `store_timeout` (1 s by default) and fails
/// open past it. A client the store builds itself (from [`DynamoDbStoreBuilder::sdk_config`]
/// or the environment) is tuned to fit in that budget: at most 2 attempts with a 20–100 ms
/// back-off, and a 500 ms connect timeout, so one dropped connection is retried instead of
/// eating the whole budget. A client passed to [`DynamoDbStoreBuilder::client`] is used as
/// given.
#[derive(Debug, Clone)]
pub struct DynamoDbStore {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    table: String,
    names: AttributeNames,
    source: ClientSource,
    /// Built on first use: loading the AWS config is async and may read the environment.
    client: OnceCell<Client>,
}

impl DynamoDbStore {
    /// A builder; only [`table_name`](DynamoDbStoreBuilder::table_name) is required.
    ///
    /// ```
    /// use breaker_runtime::store::DynamoDbStore;
    /// let store = DynamoDbStore::builder()
    ///     .table_name("circuit-breakers")
    ///     .key_attr("pk")
    ///     .sort_key_attr("sk")
    ///     .static_pk_value("circuit_breaker#orders")
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(store.table_name(), "circuit-breakers");
    /// ```
    pub fn builder() -> DynamoDbStoreBuilder {
        DynamoDbStoreBuilder::default()
    }

    /// The table this store reads and writes.
    pub fn table_name(&self) -> &str {
        &self.shared.table
    }
}

impl Shared {
    fn new(table: String, names: AttributeNames, source: ClientSource) -> Self {
        let client = match &source {
            ClientSource::Given(client) => OnceCell::new_with(Some(client.clone())),
            _ => OnceCell::new(),
        };
        Self {
            table,
            names,
            source,
            client,
        }
    }

    async fn client(&self) -> &Client {
        self.client
            .get_or_init(|| async {
                match &self.source {
                    ClientSource::Given(client) => client.clone(),
                    ClientSource::SdkConfig(config) => client::own_client(config),
                    ClientSource::Environment => client::own_client(
                        &aws_config::defaults(BehaviorVersion::latest()).load().await,
                    ),
                }
            })
            .await
    }

    async fn read(
        &self,
        circuit: &str,
        consistent: bool,
    ) -> Result<Option<CircuitRecord>, StoreError> {
        let item = self.get_item(circuit, consistent).await?;
        Ok(item.map(|item| self.decode(circuit, &item)))
    }

    /// `circuit`'s item as stored; `None` if it has none.
    async fn get_item(&self, circuit: &str, consistent: bool) -> Result<Option<Item>, StoreError> {
        let output = self
            .client()
            .await
            .get_item()
            .table_name(&self.table)
            .set_key(Some(self.names.key(circuit)))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(|e| self.error("GetItem", &e))?;
        Ok(output.item)
    }

    /// An item as a record; a malformed one is a closed circuit, with a warning.
    fn decode(&self, circuit: &str, item: &Item) -> CircuitRecord {
        self.names.decode(item).unwrap_or_else(|malformed| {
            tracing::warn!(
                circuit,
                table = %self.table,
                attribute = %malformed.attribute,
                "circuit breaker item is malformed ({malformed}); treating the circuit as CLOSED"
            );
            CircuitRecord::closed()
        })
    }

    /// A lost condition: the item that beat the write, from the error or from one read.
    async fn lost(&self, circuit: &str, old: Option<&Item>) -> Result<WriteOutcome, StoreError> {
        let current = match old {
            Some(item) => Some(self.decode(circuit, item)),
            None => self.read(circuit, true).await?,
        };
        Ok(WriteOutcome::Lost(current))
    }

    /// Replaces the item with `item`, if `condition` holds.
    async fn put(
        &self,
        circuit: &str,
        item: Item,
        condition: &str,
        bound: Expression,
    ) -> Result<WriteOutcome, StoreError> {
        let sent = self
            .client()
            .await
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(bound.names))
            .set_expression_attribute_values(Some(bound.values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        self.answer(circuit, "PutItem", sent.map(drop), put_failed)
            .await
    }

    /// Updates the item in place (the election, and an operator's writes, which keep the
    /// attributes they do not own), if `condition` holds.
    async fn update(
        &self,
        circuit: &str,
        update: &str,
        condition: &str,
        bound: Expression,
    ) -> Result<WriteOutcome, StoreError> {
        let sent = self
            .client()
            .await
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.names.key(circuit)))
            .update_expression(update)
            .condition_expression(condition)
            .set_expression_attribute_names(Some(bound.names))
            .set_expression_attribute_values(Some(bound.values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        self.answer(circuit, "UpdateItem", sent.map(drop), update_failed)
            .await
    }

    /// The answer to a conditional write that was `sent` as `operation`: won, lost to the
    /// item the failed condition returned (`failed` finds it in the service's error), or
    /// an error.
    async fn answer<E, R>(
        &self,
        circuit: &str,
        operation: &str,
        sent: Result<(), SdkError<E, R>>,
        failed: fn(&E) -> Option<Option<&Item>>,
    ) -> Result<WriteOutcome, StoreError>
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug + 'static,
    {
        let Err(error) = sent else {
            return Ok(WriteOutcome::Won);
        };
        match error.as_service_error().and_then(failed) {
            Some(item) => self.lost(circuit, item).await,
            None => Err(self.error(operation, &error)),
        }
    }

    /// An SDK error as a store error (see [`client::store_error`]).
    fn error<E>(&self, operation: &str, error: &E) -> StoreError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        client::store_error(&self.table, operation, error)
    }
}

/// The item a put's failed condition returned.
fn put_failed(error: &PutItemError) -> Option<Option<&Item>> {
    match error {
        PutItemError::ConditionalCheckFailedException(failed) => Some(failed.item()),
        _ => None,
    }
}

/// The item an update's failed condition returned.
fn update_failed(error: &UpdateItemError) -> Option<Option<&Item>> {
    match error {
        UpdateItemError::ConditionalCheckFailedException(failed) => Some(failed.item()),
        _ => None,
    }
}

impl StateStore for DynamoDbStore {
    fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        Box::pin(self.shared.read(circuit, false))
    }

    fn read_consistent<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        Box::pin(self.shared.read(circuit, true))
    }

    fn read_many<'a>(
        &'a self,
        circuits: &'a [&'a str],
    ) -> StoreFuture<'a, Vec<Option<CircuitRecord>>> {
        Box::pin(self.shared.read_many(circuits))
    }

    fn apply<'a>(
        &'a self,
        circuit: &'a str,
        transition: &'a RecordWrite,
    ) -> StoreFuture<'a, WriteOutcome> {
        Box::pin(self.shared.apply(circuit, transition))
    }

    fn report<'a>(
        &'a self,
        circuit: &'a str,
        report: &'a FailureReport,
    ) -> StoreFuture<'a, Option<FleetTally>> {
        Box::pin(self.shared.report(circuit, report))
    }

    fn report_suspected<'a>(
        &'a self,
        circuit: &'a str,
        report: &'a SuspectReport,
    ) -> StoreFuture<'a, Option<EpochTally>> {
        Box::pin(self.shared.report_suspected(circuit, report))
    }

    fn keeps_key_index(&self) -> bool {
        true
    }

    fn read_key_index<'a>(
        &'a self,
        circuit: &'a str,
        consistent: bool,
    ) -> StoreFuture<'a, Option<KeyIndex>> {
        Box::pin(self.shared.read_key_index(circuit, consistent))
    }

    fn apply_key_index<'a>(
        &'a self,
        circuit: &'a str,
        write: &'a KeyIndexWrite,
    ) -> StoreFuture<'a, KeyIndexOutcome> {
        Box::pin(self.shared.apply_key_index(circuit, write))
    }
}
