//! The store circuits use when none is given: set in `main`, from the environment, or
//! in-memory.

use std::sync::{Arc, OnceLock};

use crate::error::CircuitBreakerConfigError;
use crate::store::{InMemoryStore, StateStore};

static DEFAULT_STORE: OnceLock<Arc<dyn StateStore>> = OnceLock::new();

/// Makes `store` the store of every circuit that names none. Call it once, early in `main`,
/// before the first guarded call; later calls (or calls after a circuit already picked the
/// default) return an error and change nothing.
///
/// ```
/// use breaker_runtime::store::InMemoryStore;
/// breaker_runtime::set_default_store(InMemoryStore::new()).unwrap();
/// assert!(breaker_runtime::set_default_store(InMemoryStore::new()).is_err());
/// ```
pub fn set_default_store(
    store: impl StateStore + 'static,
) -> Result<(), CircuitBreakerConfigError> {
    let store: Arc<dyn StateStore> = Arc::new(store);
    DEFAULT_STORE.set(store).map_err(|_| {
        CircuitBreakerConfigError::Conflict(
            "the default store is already set (or already in use); call set_default_store once, \
             before the first guarded call"
                .into(),
        )
    })
}

/// The process default store: the one given to [`set_default_store`]; else, if
/// `CIRCUIT_BREAKER_TABLE` is set (feature `dynamodb`), a `DynamoDbStore` on that table;
/// else an [`InMemoryStore`] (logged once: state is then per process).
///
/// ```
/// let store = breaker_runtime::default_store();
/// assert!(format!("{store:?}").contains("Store"));
/// ```
pub fn default_store() -> Arc<dyn StateStore> {
    Arc::clone(DEFAULT_STORE.get_or_init(store_from_environment))
}

fn store_from_environment() -> Arc<dyn StateStore> {
    #[cfg(feature = "dynamodb")]
    if let Some(store) = dynamodb_from_environment() {
        return store;
    }
    tracing::info!(
        "circuit breaker: no default store set and CIRCUIT_BREAKER_TABLE unset; \
         using an in-memory store (state is per execution environment)"
    );
    Arc::new(InMemoryStore::new())
}

#[cfg(feature = "dynamodb")]
fn dynamodb_from_environment() -> Option<Arc<dyn StateStore>> {
    let table = std::env::var("CIRCUIT_BREAKER_TABLE")
        .ok()
        .filter(|t| !t.trim().is_empty())?;
    match crate::store::DynamoDbStore::builder()
        .table_name(table.clone())
        .build()
    {
        Ok(store) => Some(Arc::new(store)),
        Err(error) => {
            tracing::error!(%table, %error, "CIRCUIT_BREAKER_TABLE is set but the store is invalid; using in-memory");
            None
        }
    }
}
