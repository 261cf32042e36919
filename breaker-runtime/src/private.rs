//! What `#[circuit_breaker]` expands to. Not public API: no semver guarantees.
//!
//! The expansion resolves at compile time what the attribute cannot see (is the callback
//! async? is the store already an `Arc`? is the return type a `Result`?) with autoref
//! specialization: `(&value).__breaker_x_kind()` picks the by-value impl when it applies,
//! else the autoref fallback, and the tag it returns does the work.

use std::any::Any;
use std::future::{Future, IntoFuture, Ready};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

pub use crate::breaker::{
    CircuitBreaker, GuardedCall, Permit, PermitRequest, Recording, RunAdmitted, Stopped, classify,
    fast_permit, guarded_call, request_permit, request_permit_blocking, run_admitted,
};
pub use crate::config::CircuitBreakerConfig;
use crate::config::CircuitBreakerConfigBuilder;
pub use crate::default_store::default_store;
pub use crate::error::{CallAbandonedError, CircuitBreakerOpenError};
pub use crate::events::{CircuitInfo, CircuitTransition};
pub use crate::keyed::KeyedCircuitBreaker;
use crate::policy::SlidingWindow;
use crate::protocol::RecoveryBackoff;
pub use crate::protocol::machine::Outcome;
use crate::store::{StateStore, same_store};

// ---------------------------------------------------------------------------------------
// One circuit per (name, store), shared by every call site that names it.

/// The circuit of a call site, created by the first call site that names it with this
/// store. Later call sites share it (their `config` is not used) and add their hook to the
/// circuit's list. `track_caller`: a WARN about differing configs names the call sites.
#[track_caller]
pub fn shared_breaker(
    name: &'static str,
    store: Arc<dyn StateStore>,
    config: CircuitBreakerConfig,
    on_transition: Option<fn(CircuitTransition)>,
) -> CircuitBreaker {
    let breaker = CircuitBreaker::shared(name, store, config);
    match on_transition {
        Some(hook) => breaker.with_on_transition(hook),
        None => breaker,
    }
}

/// `on_transition = path`: a `fn(CircuitTransition)`.
pub fn transition_hook(hook: fn(CircuitTransition)) -> Option<fn(CircuitTransition)> {
    Some(hook)
}

// ---------------------------------------------------------------------------------------
// `keyed_by = expr`: one keyed circuit per (name, store), shared by every call site that
// names it, and the key's circuit per call.

/// The keyed circuits of `#[circuit_breaker(keyed_by = ..)]` call sites, per name and
/// store. An entry keeps its store alive, so the store's address is never reused while it
/// exists.
static KEYED: LazyLock<Mutex<Vec<KeyedEntry>>> = LazyLock::new(Mutex::default);

struct KeyedEntry {
    name: &'static str,
    store: Arc<dyn StateStore>,
    keyed: KeyedCircuitBreaker,
}

/// The keyed circuit of a call site, created by the first call site that names it with
/// this store (with its `config` and `max_open_keys`; later call sites' are not used).
/// Later call sites share it and add their hook to its list, as
/// [`shared_breaker`] does for a plain circuit.
pub fn shared_keyed_breaker(
    name: &'static str,
    store: Arc<dyn StateStore>,
    config: CircuitBreakerConfig,
    on_transition: Option<fn(CircuitTransition)>,
    max_open_keys: Option<u32>,
) -> KeyedCircuitBreaker {
    let keyed = {
        let mut entries = KEYED.lock().unwrap_or_else(PoisonError::into_inner);
        let found = (entries.iter())
            .find(|e| e.name == name && same_store(&e.store, &store))
            .map(|e| e.keyed.clone());
        found.unwrap_or_else(|| {
            let mut keyed = KeyedCircuitBreaker::new(name, Arc::clone(&store), config);
            if let Some(cap) = max_open_keys {
                keyed = (keyed.with_max_open_keys(cap)).expect("the attribute checks the cap");
            }
            entries.push(KeyedEntry {
                name,
                store,
                keyed: keyed.clone(),
            });
            keyed
        })
    };
    match on_transition {
        Some(hook) => keyed.with_on_transition(hook),
        None => keyed,
    }
}

/// What `keyed_by = expr` accepts: a value that is `AsRef<str>`.
#[diagnostic::on_unimplemented(
    message = "`keyed_by` expected an expression whose value is `AsRef<str>`, found `{Self}`",
    label = "not a `&str`, `String` or other `AsRef<str>` value",
    note = "for a number or another `Display` value, write `keyed_by = id.to_string()`"
)]
pub trait KeyExpr {
    /// The key.
    fn __breaker_key(&self) -> &str;
}

impl<K: AsRef<str> + ?Sized> KeyExpr for K {
    #[inline(always)]
    fn __breaker_key(&self) -> &str {
        self.as_ref()
    }
}

/// `keyed_by = expr`: the key.
#[inline(always)]
pub fn key_str<K: KeyExpr + ?Sized>(key: &K) -> &str {
    key.__breaker_key()
}

// ---------------------------------------------------------------------------------------
// `persistence_store = expr`: an `Arc` of a store is used as is (so call sites sharing it
// share one circuit), any other store value is put in a new `Arc`.

/// An `Arc` of a store.
pub trait ArcOfStore {
    /// As a trait object, same allocation.
    fn into_dyn(self) -> Arc<dyn StateStore>;
}

impl ArcOfStore for Arc<dyn StateStore> {
    fn into_dyn(self) -> Arc<dyn StateStore> {
        self
    }
}

impl<S: StateStore + 'static> ArcOfStore for Arc<S> {
    fn into_dyn(self) -> Arc<dyn StateStore> {
        self
    }
}

/// Tag: the store expression is already an `Arc`.
#[derive(Debug)]
pub struct ArcStoreTag;

impl ArcStoreTag {
    /// The `Arc` as a trait object.
    pub fn into_store(self, store: impl ArcOfStore) -> Arc<dyn StateStore> {
        store.into_dyn()
    }
}

/// Tag: the store expression is a store value.
#[derive(Debug)]
pub struct ValueStoreTag;

impl ValueStoreTag {
    /// The value, in a new `Arc`.
    pub fn into_store(self, store: impl StateStore + 'static) -> Arc<dyn StateStore> {
        Arc::new(store)
    }
}

/// Picked when the store expression is an `Arc`.
pub trait StoreIsArc {
    /// The tag.
    fn __breaker_store_kind(&self) -> ArcStoreTag {
        ArcStoreTag
    }
}
impl<A: ArcOfStore> StoreIsArc for A {}

/// Picked otherwise (autoref).
pub trait StoreIsValue {
    /// The tag.
    fn __breaker_store_kind(&self) -> ValueStoreTag {
        ValueStoreTag
    }
}
// Unbounded, so a value that is not a store fails at `into_store` with a plain
// "`X: StateStore` is not satisfied" instead of a method-resolution error.
impl<T> StoreIsValue for &T {}

// ---------------------------------------------------------------------------------------
// `config = expr` and the config keys.

/// What `config =` accepts.
pub trait IntoConfig {
    /// The config.
    fn into_config(self) -> CircuitBreakerConfig;
}

impl IntoConfig for CircuitBreakerConfig {
    fn into_config(self) -> CircuitBreakerConfig {
        self
    }
}

impl IntoConfig for &CircuitBreakerConfig {
    fn into_config(self) -> CircuitBreakerConfig {
        self.clone()
    }
}

/// `config = expr`.
pub fn config(config: impl IntoConfig) -> CircuitBreakerConfig {
    config.into_config()
}

/// The config the attribute builds: the defaults (or a `config = expr`) with the
/// attribute's config keys applied as builder calls, one method per key, named and typed
/// as the key (`.failure_threshold(2u32)`, `.recovery_timeout(60u64)`, `.shadow(true)`).
/// The methods come from breaker-rules' table of settings, each the row's builder call.
#[derive(Debug)]
pub struct InlineConfig {
    builder: CircuitBreakerConfigBuilder,
}

/// The defaults, for the inline keys.
pub fn inline_config() -> InlineConfig {
    InlineConfig {
        builder: CircuitBreakerConfig::builder(),
    }
}

impl InlineConfig {
    /// `config = expr`, for the keys allowed beside it (`shadow`).
    pub fn over(config: CircuitBreakerConfig) -> Self {
        Self {
            builder: config.into_builder(),
        }
    }

    /// The built config. The macro checked every value at compile time against the same
    /// rules, so the build cannot fail here.
    pub fn build(self) -> CircuitBreakerConfig {
        checked(self.builder)
    }
}

/// One method of [`InlineConfig`] per row of the table that has a builder call.
macro_rules! inline_setters {
    ($(
        $key:ident: $group:ident, $value:expr, default $default:literal, builder $builder:literal,
        section $section:literal, doc $doc:literal
        $(=> |$b:ident, $v:ident: $ty:ty| $apply:expr)?;
    )*) => {
        impl InlineConfig {$($(
            #[doc = concat!("`", stringify!($key), "`: ", $doc, " (default ", $default, ").")]
            pub fn $key(self, $v: $ty) -> Self {
                let $b = self.builder;
                Self { builder: $apply }
            }
        )?)*}
    };
}

breaker_rules::knobs!(inline_setters);

/// The built config; an error here is a value the attribute should have refused.
fn checked(builder: CircuitBreakerConfigBuilder) -> CircuitBreakerConfig {
    builder.build().unwrap_or_else(|error| {
        panic!("#[circuit_breaker] let through a value its compile-time check refuses: {error}")
    })
}

// ---------------------------------------------------------------------------------------
// Rejection without a callback.

/// A return type that can report a rejected call.
#[diagnostic::on_unimplemented(
    message = "`#[circuit_breaker]` without `on_circuit_open` expected a return type `Result<T, E>` with `E: From<CircuitBreakerOpenError>`, found `{Self}`",
    label = "this return type cannot carry `CircuitBreakerOpenError`",
    note = "return `Result<T, E>` whose `E` is `anyhow::Error`, `lambda_runtime::Error`, `Box<dyn Error + Send + Sync>` or an error enum with a `#[from] CircuitBreakerOpenError` variant",
    note = "or add `on_circuit_open = fallback` to return something else when the circuit is open"
)]
pub trait OpenCircuitResult {
    /// The value a rejected call returns.
    fn rejected(error: CircuitBreakerOpenError) -> Self;
}

impl<T, E: From<CircuitBreakerOpenError>> OpenCircuitResult for Result<T, E> {
    fn rejected(error: CircuitBreakerOpenError) -> Self {
        Err(error.into())
    }
}

/// A return type that can also report an async call abandoned at its deadline.
#[diagnostic::on_unimplemented(
    message = "an async `#[circuit_breaker]` fn expected a return type `Result<T, E>` with `E: From<CircuitBreakerOpenError> + From<CallAbandonedError>`, found `{Self}`",
    label = "this return type cannot carry `CircuitBreakerOpenError` and `CallAbandonedError`",
    note = "return `Result<T, E>` whose `E` is `anyhow::Error`, `lambda_runtime::Error`, `Box<dyn Error + Send + Sync>` or an error enum with `#[from] CircuitBreakerOpenError` and `#[from] CallAbandonedError` variants",
    note = "or add `on_circuit_open = fallback` to return something else when the circuit is open (an admitted call then runs to its end)"
)]
pub trait StoppedCallResult: OpenCircuitResult {
    /// The value an abandoned call returns.
    fn abandoned(error: CallAbandonedError) -> Self;
}

impl<T, E> StoppedCallResult for Result<T, E>
where
    E: From<CircuitBreakerOpenError> + From<CallAbandonedError>,
{
    fn abandoned(error: CallAbandonedError) -> Self {
        Err(error.into())
    }
}

/// `Err(CircuitBreakerOpenError.into())`.
#[cold]
pub fn reject<R: OpenCircuitResult>(circuit: CircuitInfo) -> R {
    R::rejected(CircuitBreakerOpenError::new(circuit))
}

/// A guarded call rejected (`Err(CircuitBreakerOpenError.into())`) or abandoned
/// (`Err(CallAbandonedError.into())`).
#[cold]
pub fn stop<R: StoppedCallResult>(stopped: Stopped) -> R {
    match stopped {
        Stopped::Rejected(circuit) => reject(circuit),
        Stopped::Abandoned(abandoned) => R::abandoned(*abandoned),
    }
}

// ---------------------------------------------------------------------------------------
// `on_circuit_open` of an async fn: an async fn (awaited) or a plain fn (its value).

/// Tag: the callback returned a future.
#[derive(Debug)]
pub struct FutureFallbackTag;

impl FutureFallbackTag {
    /// The future, to await.
    pub fn resolve<F: IntoFuture>(self, fallback: F) -> F::IntoFuture {
        fallback.into_future()
    }
}

/// Tag: the callback returned a value.
#[derive(Debug)]
pub struct ValueFallbackTag;

impl ValueFallbackTag {
    /// The value, as a ready future.
    pub fn resolve<T>(self, fallback: T) -> Ready<T> {
        std::future::ready(fallback)
    }
}

/// Picked when the callback returned a future.
pub trait FallbackIsFuture {
    /// The tag.
    fn __breaker_fallback_kind(&self) -> FutureFallbackTag {
        FutureFallbackTag
    }
}
impl<F: Future> FallbackIsFuture for F {}

/// Picked otherwise (autoref).
pub trait FallbackIsValue {
    /// The tag.
    fn __breaker_fallback_kind(&self) -> ValueFallbackTag {
        ValueFallbackTag
    }
}
impl<T> FallbackIsValue for &T {}

// ---------------------------------------------------------------------------------------
// What counts: every `Err` of a `Result`; for other return types only panics.

/// Picked for `Result`: `Err` is a failure.
pub trait ResultOutcome {
    /// The outcome.
    fn __breaker_outcome(&self) -> Outcome;
}

impl<T, E> ResultOutcome for Result<T, E> {
    #[inline]
    fn __breaker_outcome(&self) -> Outcome {
        match self {
            Ok(_) => Outcome::Success,
            Err(_) => Outcome::Failure,
        }
    }
}

/// Picked otherwise (autoref): a returned value is a success.
pub trait OtherOutcome {
    /// The outcome.
    #[inline]
    fn __breaker_outcome(&self) -> Outcome {
        Outcome::Success
    }
}
impl<T> OtherOutcome for &T {}

/// `ignored = path`: counts the errors the predicate does not match.
#[inline]
pub fn not<E>(ignored: impl Fn(&E) -> bool) -> impl Fn(&E) -> bool {
    move |error| !ignored(error)
}

// ---------------------------------------------------------------------------------------
// Running the body.

/// Runs a sync body, turning a panic into `Err(payload)`.
#[inline]
pub fn catch_unwind_sync<R, F: FnOnce() -> R>(body: F) -> Result<R, Box<dyn Any + Send>> {
    catch_unwind(AssertUnwindSafe(body))
}

/// `future`, typed: pins the output type so `?` in an async body infers.
#[inline(always)]
pub fn output_is<T, F: Future<Output = T>>(future: F) -> F {
    future
}

/// The body of a fn returning a future, run when first polled (after the permit).
pub async fn lazy_future<F, Fut>(body: F) -> Fut::Output
where
    F: FnOnce() -> Fut,
    Fut: IntoFuture,
{
    body().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_and_fleet_keys_reach_the_config() {
        let config = inline_config()
            .call_timeout_ms(2_500)
            .fleet_failure_threshold(20)
            .build();
        assert_eq!(config.call_timeout(), Some(Duration::from_millis(2_500)));
        let fleet = config.fleet_policy().expect("fleet detection stays on");
        assert_eq!((fleet.failure_threshold, fleet.failure_rate), (20, 50));

        let local_only = inline_config().fleet_detection(false).build();
        assert_eq!(local_only.call_timeout(), None);
        assert_eq!(local_only.fleet_policy(), None);
    }

    #[test]
    fn the_halves_of_a_slow_call_rate_and_a_time_window_reach_the_config() {
        let config = inline_config()
            .slow_call_duration_ms(800)
            .slow_call_rate(60)
            .window_secs(30)
            .build();
        assert_eq!(
            config.slow_call_duration(),
            Some(Duration::from_millis(800))
        );
        assert_eq!(config.slow_call_rate(), Some(60));
        assert_eq!(
            config.sliding_window(),
            Some(SlidingWindow::Time(Duration::from_secs(30)))
        );
    }

    #[test]
    fn the_documented_cap_on_open_keys_is_the_default() {
        let store: Arc<dyn StateStore> = Arc::new(crate::store::InMemoryStore::new());
        let keyed = KeyedCircuitBreaker::new("cap", store, CircuitBreakerConfig::default());
        let default = breaker_rules::knobs::knob("max_open_keys")
            .expect("a key")
            .default;
        assert_eq!(default, keyed.max_open_keys().to_string());
    }

    #[test]
    fn call_sites_of_one_name_and_store_share_a_keyed_circuit_with_the_first_ones_cap() {
        let store: Arc<dyn StateStore> = Arc::new(crate::store::InMemoryStore::new());
        let config = CircuitBreakerConfig::default;
        let first =
            shared_keyed_breaker("shared-keyed", Arc::clone(&store), config(), None, Some(7));
        let second =
            shared_keyed_breaker("shared-keyed", Arc::clone(&store), config(), None, Some(9));
        assert_eq!(second.max_open_keys(), 7, "the first call site's cap");
        first.breaker("k");
        assert_eq!(second.keys_in_memory(), 1, "one keyed circuit");
        let other: Arc<dyn StateStore> = Arc::new(crate::store::InMemoryStore::new());
        let elsewhere = shared_keyed_breaker("shared-keyed", other, config(), None, None);
        assert_eq!(
            (elsewhere.keys_in_memory(), elsewhere.max_open_keys()),
            (0, 1_000)
        );
    }

    #[test]
    fn the_documented_fleet_defaults_are_the_defaults() {
        let fleet = crate::FleetPolicy::default();
        let default = |key| breaker_rules::knobs::knob(key).expect("a key").default;
        let threshold = fleet.failure_threshold.to_string();
        assert_eq!(default("fleet_failure_threshold"), threshold);
        assert_eq!(
            default("fleet_failure_rate"),
            fleet.failure_rate.to_string()
        );
    }
}
