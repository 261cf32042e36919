//! The store circuits use when none is given: set in `main`, from the environment, or
//! in-memory.
//!
//! Inside a Lambda function (`AWS_LAMBDA_FUNCTION_NAME` is set) an in-memory store is never
//! a silent fallback: it keeps one circuit per execution environment and ignores every
//! operator's override, so a missing or invalid `CIRCUIT_BREAKER_TABLE` is a
//! [`DefaultStoreError`], returned by [`try_default_store`] and [`warm_up`](crate::warm_up)
//! and logged at ERROR, unless the in-memory store was chosen explicitly
//! (`CIRCUIT_BREAKER_STORE=memory`, or [`set_default_store`]).

use std::sync::{Arc, OnceLock};

use crate::error::CircuitBreakerConfigError;
use crate::store::{InMemoryStore, StateStore};

/// The variable that names the default store's DynamoDB table.
const TABLE_VARIABLE: &str = "CIRCUIT_BREAKER_TABLE";
/// The variable that chooses the default store's kind: `memory` or `dynamodb`.
const STORE_VARIABLE: &str = "CIRCUIT_BREAKER_STORE";
/// Set by Lambda in every function's environment.
const LAMBDA_VARIABLE: &str = "AWS_LAMBDA_FUNCTION_NAME";

static DEFAULT_STORE: OnceLock<Arc<dyn StateStore>> = OnceLock::new();
/// Why the store the environment describes could not be built, when it could not.
static PROBLEM: OnceLock<Option<DefaultStoreError>> = OnceLock::new();

/// The environment describes no usable default store inside a Lambda function: the
/// circuits would each keep their state in their own execution environment, and an
/// operator's override in the table would be ignored.
///
/// ```
/// let error = breaker_runtime::DefaultStoreError::new("CIRCUIT_BREAKER_TABLE", "is not set");
/// assert_eq!(error.variable(), "CIRCUIT_BREAKER_TABLE");
/// assert!(error.to_string().starts_with("CIRCUIT_BREAKER_TABLE is not set"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{variable} {problem}: inside a Lambda function the default store must be the shared \
     table (set {TABLE_VARIABLE}), or chosen in-memory explicitly ({STORE_VARIABLE}=memory)"
)]
pub struct DefaultStoreError {
    variable: &'static str,
    problem: String,
}

impl DefaultStoreError {
    /// An error about `variable`, saying what is wrong with it.
    pub fn new(variable: &'static str, problem: impl Into<String>) -> Self {
        Self {
            variable,
            problem: problem.into(),
        }
    }

    /// The environment variable to fix.
    pub fn variable(&self) -> &'static str {
        self.variable
    }
}

/// Makes `store` the store of every circuit that names none. Call it once, early in `main`,
/// before the first guarded call; later calls (or calls after a circuit already picked the
/// default) return an error and change nothing. A store given here is an explicit choice:
/// an [`InMemoryStore`] set here is no [`DefaultStoreError`], even inside Lambda.
///
/// ```
/// use breaker_runtime::store::InMemoryStore;
/// breaker_runtime::set_default_store(InMemoryStore::new()).unwrap();
/// assert!(breaker_runtime::set_default_store(InMemoryStore::new()).is_err());
/// assert!(breaker_runtime::try_default_store().is_ok());
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
/// else an [`InMemoryStore`] (logged once: state is then per process). Inside a Lambda
/// function an in-memory store not chosen explicitly is logged at ERROR (once) and
/// reported by [`try_default_store`].
///
/// ```
/// let store = breaker_runtime::default_store();
/// assert!(format!("{store:?}").contains("Store"));
/// ```
pub fn default_store() -> Arc<dyn StateStore> {
    Arc::clone(DEFAULT_STORE.get_or_init(|| {
        let resolved = resolve(|name| std::env::var(name).ok());
        let _ = PROBLEM.set(resolved.problem);
        resolved.store
    }))
}

/// [`default_store`], or the [`DefaultStoreError`] that makes it unfit inside a Lambda
/// function: `CIRCUIT_BREAKER_TABLE` missing, blank or not a table name, without
/// `CIRCUIT_BREAKER_STORE=memory`. Call it at init (after [`set_default_store`] if you use
/// it) and stop the function on an error. Outside Lambda (tests, local runs) an unset
/// table is the in-memory store, and no error.
///
/// ```
/// // A doc test is no Lambda function: without a table, the in-memory store.
/// let store = breaker_runtime::try_default_store().unwrap();
/// assert!(format!("{store:?}").contains("Store"));
/// ```
pub fn try_default_store() -> Result<Arc<dyn StateStore>, DefaultStoreError> {
    let store = default_store();
    match PROBLEM.get().and_then(Option::as_ref) {
        Some(problem) => Err(problem.clone()),
        None => Ok(store),
    }
}

/// The store the environment describes, and what is wrong with it inside Lambda.
struct Resolved {
    store: Arc<dyn StateStore>,
    problem: Option<DefaultStoreError>,
}

/// What `var` (an environment lookup) asks for. Logs its choice; a problem at ERROR.
fn resolve(var: impl Fn(&str) -> Option<String>) -> Resolved {
    let in_lambda = var(LAMBDA_VARIABLE).is_some_and(|name| !name.trim().is_empty());
    let chosen = var(STORE_VARIABLE).map(|kind| kind.trim().to_ascii_lowercase());
    match chosen.as_deref() {
        Some("memory") => {
            tracing::info!(
                "circuit breaker: {STORE_VARIABLE}=memory: using an in-memory store (state is per \
                 execution environment)"
            );
            return in_memory(None);
        }
        None | Some("dynamodb") => {}
        Some(other) => {
            let problem = DefaultStoreError::new(
                STORE_VARIABLE,
                format!("is {other:?}, expected memory or dynamodb"),
            );
            return fallback(problem, in_lambda);
        }
    }
    let table = var(TABLE_VARIABLE);
    match table.as_deref().map(str::trim) {
        None | Some("") if !in_lambda && chosen.is_none() => {
            tracing::info!(
                "circuit breaker: no default store set and {TABLE_VARIABLE} unset; using an \
                 in-memory store (state is per execution environment)"
            );
            in_memory(None)
        }
        None => fallback(DefaultStoreError::new(TABLE_VARIABLE, "is not set"), true),
        Some("") => fallback(DefaultStoreError::new(TABLE_VARIABLE, "is blank"), true),
        Some(table) => match table_problem(table) {
            Some(problem) => fallback(DefaultStoreError::new(TABLE_VARIABLE, problem), in_lambda),
            None => on_table(table, in_lambda),
        },
    }
}

/// A store on `table`, when this build has one.
fn on_table(table: &str, in_lambda: bool) -> Resolved {
    #[cfg(feature = "dynamodb")]
    match crate::store::DynamoDbStore::builder()
        .table_name(table)
        .build()
    {
        Ok(store) => Resolved {
            store: Arc::new(store),
            problem: None,
        },
        Err(error) => fallback(
            DefaultStoreError::new(TABLE_VARIABLE, format!("names no usable table ({error})")),
            in_lambda,
        ),
    }
    #[cfg(not(feature = "dynamodb"))]
    fallback(
        DefaultStoreError::new(
            TABLE_VARIABLE,
            format!("is {table:?}, but breaker-runtime was built without its `dynamodb` feature"),
        ),
        in_lambda,
    )
}

/// The in-memory store in place of what `problem` says is broken: an error inside Lambda,
/// as before (logged, no error) outside it.
fn fallback(problem: DefaultStoreError, in_lambda: bool) -> Resolved {
    tracing::error!(
        variable = problem.variable(),
        error = %problem,
        "circuit breaker: the default store is unusable; using an in-memory store, so each \
         execution environment keeps its own circuit and operators' overrides are ignored"
    );
    in_memory(in_lambda.then_some(problem))
}

fn in_memory(problem: Option<DefaultStoreError>) -> Resolved {
    Resolved {
        store: Arc::new(InMemoryStore::new()),
        problem,
    }
}

/// What is wrong with `table` as a DynamoDB table name (3 to 255 of `A-Z a-z 0-9 _ - .`)
/// or table ARN, if anything.
fn table_problem(table: &str) -> Option<String> {
    let name = match table.strip_prefix("arn:") {
        Some(arn) => match arn.split_once(":table/") {
            Some((_, name)) => name,
            None => return Some(format!("is {table:?}: an ARN that names no table")),
        },
        None => table,
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if !(3..=255).contains(&name.len()) || !name.chars().all(allowed) {
        return Some(format!(
            "is {table:?}: a table name is 3 to 255 letters, digits, '_', '-' or '.'"
        ));
    }
    None
}

#[cfg(test)]
mod tests;
