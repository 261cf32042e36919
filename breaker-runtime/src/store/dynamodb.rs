//! `DynamoDbStore`: placeholder until the DynamoDB issue lands (every call fails open).

use super::{
    CircuitRecord, Close, ProbeElection, Reopen, StateStore, StoreError, StoreFuture, Trip,
    WriteOutcome,
};
use crate::CircuitBreakerConfigError;

/// The fleet-wide store on a DynamoDB table.
#[derive(Debug, Clone)]
pub struct DynamoDbStore {
    table_name: String,
}

/// Builds a [`DynamoDbStore`].
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct DynamoDbStoreBuilder {
    table_name: Option<String>,
}

impl DynamoDbStore {
    /// A builder.
    pub fn builder() -> DynamoDbStoreBuilder {
        DynamoDbStoreBuilder::default()
    }
}

impl DynamoDbStoreBuilder {
    /// The table's name (required).
    pub fn table_name(mut self, table_name: impl Into<String>) -> Self {
        self.table_name = Some(table_name.into());
        self
    }

    /// Validates and builds.
    pub fn build(self) -> Result<DynamoDbStore, CircuitBreakerConfigError> {
        let table_name = self
            .table_name
            .ok_or(CircuitBreakerConfigError::Missing("table_name"))?;
        Ok(DynamoDbStore { table_name })
    }
}

fn unimplemented<'a, T: Send + 'a>(table: &str) -> StoreFuture<'a, T> {
    let error = StoreError::new(format!("DynamoDbStore on {table} is not implemented yet"));
    Box::pin(std::future::ready(Err(error)))
}

impl StateStore for DynamoDbStore {
    fn read<'a>(&'a self, _: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        unimplemented(&self.table_name)
    }
    fn trip<'a>(&'a self, _: &'a str, _: &'a Trip) -> StoreFuture<'a, WriteOutcome> {
        unimplemented(&self.table_name)
    }
    fn elect_probe<'a>(
        &'a self,
        _: &'a str,
        _: &'a ProbeElection,
    ) -> StoreFuture<'a, WriteOutcome> {
        unimplemented(&self.table_name)
    }
    fn close_if_owner<'a>(&'a self, _: &'a str, _: &'a Close) -> StoreFuture<'a, WriteOutcome> {
        unimplemented(&self.table_name)
    }
    fn reopen_if_owner<'a>(&'a self, _: &'a str, _: &'a Reopen) -> StoreFuture<'a, WriteOutcome> {
        unimplemented(&self.table_name)
    }
}
