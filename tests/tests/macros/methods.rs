//! The signature is re-emitted untouched: receivers, generics, `impl Trait` arguments,
//! `where` clauses, patterns, visibility and other attributes all keep working.

use std::fmt::Display;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{CircuitBreakerOpenError, CircuitInfo, circuit_breaker};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Default)]
struct Account {
    balance: u64,
    calls: AtomicU32,
}

impl Account {
    #[circuit_breaker(name = "method-ref", failure_threshold = 1, persistence_store = InMemoryStore::new())]
    fn balance(&self) -> Result<u64, BoxError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.balance == 0 {
            return Err("empty".into());
        }
        Ok(self.balance)
    }

    #[circuit_breaker(name = "method-mut", persistence_store = InMemoryStore::new())]
    #[inline]
    pub(crate) async fn deposit(&mut self, amount: u64) -> Result<u64, BoxError> {
        self.balance += amount;
        Ok(self.balance)
    }

    #[circuit_breaker(name = "method-owned", persistence_store = InMemoryStore::new())]
    #[must_use = "the account is returned"]
    pub fn close(self) -> Result<u64, BoxError> {
        Ok(self.balance)
    }

    #[circuit_breaker(name = "method-arc", on_circuit_open = Self::cached, persistence_store = InMemoryStore::new())]
    async fn shared(self: Arc<Self>, extra: u64) -> Result<u64, BoxError> {
        Ok(self.balance + extra)
    }

    fn cached(self: Arc<Self>, _extra: u64, _circuit: CircuitInfo) -> Result<u64, BoxError> {
        Ok(self.balance)
    }
}

#[tokio::test]
async fn every_receiver_kind_works() {
    let mut account = Account::default();
    assert_eq!(account.deposit(5).await.unwrap(), 5);
    assert_eq!(account.deposit(2).await.unwrap(), 7);
    assert_eq!(account.balance().unwrap(), 7);
    let shared = Arc::new(Account {
        balance: 3,
        ..Account::default()
    });
    assert_eq!(Arc::clone(&shared).shared(4).await.unwrap(), 7);
    assert_eq!(account.close().unwrap(), 7);

    let empty = Account::default();
    assert_eq!(empty.balance().unwrap_err().to_string(), "empty");
    let rejected = empty.balance().unwrap_err();
    assert!(rejected.downcast_ref::<CircuitBreakerOpenError>().is_some());
    assert_eq!(
        empty.calls.load(Ordering::SeqCst),
        1,
        "one call site, one circuit"
    );
}

#[circuit_breaker(name = "generic", failure_threshold = 2, persistence_store = InMemoryStore::new())]
fn describe<T, U: Display>(
    value: T,
    label: impl AsRef<str>,
    suffix: &U,
) -> Result<String, anyhow::Error>
where
    T: std::fmt::Debug + Clone,
{
    Ok(format!("{}: {:?}{suffix}", label.as_ref(), value.clone()))
}

#[test]
fn generic_fns_with_impl_trait_and_where_clauses() {
    assert_eq!(describe(3u8, "n", &'!').unwrap(), "n: 3!");
    assert_eq!(
        describe(vec!["a"], String::from("v"), &1).unwrap(),
        "v: [\"a\"]1"
    );
}

static GENERIC_ENTRIES: AtomicU32 = AtomicU32::new(0);

/// One call site: all instantiations share its circuit.
#[circuit_breaker(name = "generic-shared", failure_threshold = 2, persistence_store = InMemoryStore::new())]
async fn parse_as<T: std::str::FromStr>(text: &str) -> Result<T, anyhow::Error>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    GENERIC_ENTRIES.fetch_add(1, Ordering::SeqCst);
    Ok(text.parse::<T>()?)
}

#[tokio::test]
async fn instantiations_of_a_generic_fn_share_one_circuit() {
    assert_eq!(parse_as::<u8>("7").await.unwrap(), 7);
    assert!(parse_as::<u8>("x").await.is_err());
    assert!(parse_as::<f64>("y").await.is_err());
    let rejected = parse_as::<i64>("1").await.unwrap_err();
    assert!(rejected.downcast_ref::<CircuitBreakerOpenError>().is_some());
    assert_eq!(GENERIC_ENTRIES.load(Ordering::SeqCst), 3);
}

#[derive(Debug, Clone, PartialEq)]
struct Point {
    x: i32,
    y: i32,
}

#[derive(Debug, Clone, PartialEq)]
struct Meters(f64);

#[circuit_breaker(name = "patterns", failure_threshold = 1, on_circuit_open = patterns_fallback, persistence_store = InMemoryStore::new())]
fn patterns(
    (a, b): (u32, u32),
    Point { x, y }: Point,
    Meters(m): Meters,
    mut n: u8,
) -> Result<String, String> {
    n += 1;
    if a == 0 {
        return Err("zero".into());
    }
    Ok(format!("{a} {b} {x} {y} {m} {n}"))
}

fn patterns_fallback(
    ab: (u32, u32),
    p: Point,
    m: Meters,
    n: u8,
    _: CircuitInfo,
) -> Result<String, String> {
    Ok(format!("fallback {ab:?} {p:?} {m:?} {n}"))
}

#[test]
fn pattern_arguments_are_rebuilt_for_the_callback() {
    assert_eq!(
        patterns((1, 2), Point { x: 3, y: 4 }, Meters(5.5), 6).unwrap(),
        "1 2 3 4 5.5 7"
    );
    assert_eq!(
        patterns((0, 2), Point { x: 3, y: 4 }, Meters(5.5), 6).unwrap_err(),
        "zero"
    );
    assert_eq!(
        patterns((9, 8), Point { x: 7, y: 6 }, Meters(0.5), 4).unwrap(),
        "fallback (9, 8) Point { x: 7, y: 6 } Meters(0.5) 4"
    );
}

trait Repository {
    fn find(&self, id: u32) -> Result<String, BoxError>;
}

struct Users;

impl Repository for Users {
    #[circuit_breaker(name = "trait-impl", persistence_store = InMemoryStore::new())]
    fn find(&self, id: u32) -> Result<String, BoxError> {
        Ok(format!("user {id}"))
    }
}

#[test]
fn trait_impl_methods_and_dyn_calls() {
    let repo: &dyn Repository = &Users;
    assert_eq!(repo.find(3).unwrap(), "user 3");
}

mod renamed {
    // `crate = path` for users who rename the dependency.
    pub use breaker_runtime as my_breaker;
}

#[circuit_breaker(name = "crate-override", crate = renamed::my_breaker, persistence_store = InMemoryStore::new())]
fn with_crate_override() -> Result<u8, BoxError> {
    Ok(1)
}

#[test]
fn the_crate_path_can_be_overridden() {
    assert_eq!(with_crate_override().unwrap(), 1);
}

/// `#[tracing::instrument]` outside `#[circuit_breaker]`: it expands first and the guard
/// wraps its instrumented body.
#[tracing::instrument(skip_all, fields(n))]
#[circuit_breaker(name = "instrument-outside", failure_threshold = 1, persistence_store = InMemoryStore::new())]
async fn instrumented_outside(n: u32) -> Result<u32, anyhow::Error> {
    if n == 0 {
        anyhow::bail!("zero");
    }
    Ok(n)
}

/// `#[tracing::instrument]` inside: the guard expands first and keeps it on the fn.
#[circuit_breaker(name = "instrument-inside", failure_threshold = 1, persistence_store = InMemoryStore::new())]
#[tracing::instrument(err)]
fn instrumented_inside(n: u32) -> Result<u32, anyhow::Error> {
    if n == 0 {
        anyhow::bail!("zero");
    }
    Ok(n)
}

#[tokio::test]
async fn tracing_instrument_in_either_order() {
    assert_eq!(instrumented_outside(3).await.unwrap(), 3);
    assert!(instrumented_outside(0).await.is_err());
    let rejected = instrumented_outside(3).await.unwrap_err();
    assert!(rejected.downcast_ref::<CircuitBreakerOpenError>().is_some());

    assert_eq!(instrumented_inside(3).unwrap(), 3);
    assert!(instrumented_inside(0).is_err());
    let rejected = instrumented_inside(3).unwrap_err();
    assert!(rejected.downcast_ref::<CircuitBreakerOpenError>().is_some());
}
