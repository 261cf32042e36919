//! `KeyedCircuitBreaker`: one circuit per key (a tenant, a host, a shard), fleet-wide, with
//! a cap on how many keys may be open at once. The jobs behind it each have a module:
//!
//! - [`key_store`]: the store a key's circuit sees: its item, read only when the index
//!   names it;
//! - [`index`]: this environment's copy of the keyed circuit's index, and its writes;
//! - [`circuits`]: the keys' circuits one environment keeps, within a bound;
//! - [`calls`]: a key's calls, each run by that key's circuit.

mod calls;
mod circuits;
mod index;
mod key_store;

// For the model checker's key index model, through `__protocol`.
pub use index::needs_reading;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::breaker::{CircuitBreaker, Hooks, KeyOf};
use crate::config::CircuitBreakerConfig;
use crate::config::limits::at_least_one;
use crate::error::CircuitBreakerConfigError;
use crate::events::CircuitTransition;
use crate::protocol::CircuitState;
use crate::store::{StateStore, decode_key, encode_key};
use circuits::{Circuits, Form};
use index::IndexCopy;
use key_store::KeyStore;

/// Keys longer than this (bytes) are kept in memory, and named to hooks, rejections and
/// logs, by the hashed form of their id (at most 64 bytes; [`decode_key`] for the names):
/// a thousand keys of a megabyte would otherwise hold a gigabyte.
pub(crate) const MAX_KEY_BYTES_IN_MEMORY: usize = 1024;

/// How this environment keeps `key`: in full, or by the encoded form of its id if longer
/// than [`MAX_KEY_BYTES_IN_MEMORY`] (the two forms never meet: [`Form`]).
fn kept_as(key: &str) -> (Form, Cow<'_, str>) {
    match key.len() <= MAX_KEY_BYTES_IN_MEMORY {
        true => (Form::Whole, Cow::Borrowed(key)),
        false => (Form::Hashed, Cow::Owned(encode_key(key))),
    }
}

/// The largest [`KeyedCircuitBreaker::with_max_open_keys`]: an index naming this many
/// keys and the most suspicions it names apart (1,000), each of the longest encoded form
/// (64 bytes) with its token, is 308 KB, within DynamoDB's 400 KB item limit with room
/// for the item's other attributes and an operator's overrides past the cap.
pub const MAX_OPEN_KEYS_LIMIT: u32 = 3_000;

/// The most bytes one index entry takes in a DynamoDB item: its attribute's name (`k:`
/// and at most 64 bytes of encoded key) and a number of 19 digits (11 bytes).
const MAX_INDEX_ENTRY_BYTES: usize = 2 + 64 + 11;

/// How many keys' circuits an environment keeps unless the user says otherwise.
pub(crate) const DEFAULT_MAX_KEYS_IN_MEMORY: usize = 1_000;

/// One circuit per key, each running the full protocol of a [`CircuitBreaker`] (trip, the
/// fleet's half-open, backoff, fleet counters, an operator's overrides) on an item of its
/// own, `{name}#key={key}` ([`key_item_id`](crate::store::key_item_id)). Clones share
/// everything.
///
/// Healthy keys cost no reads of their own: one small index item per circuit
/// (`{name}#keys`) names the keys that are not closed, and an environment reads it at most
/// once per `local_cache_max_age`; a key's own item is read only while the index names it.
/// At most [`max_open_keys`](Self::with_max_open_keys) keys are named at once: past it a
/// key that would trip is refused, keeps running, and a WARN log and the metric
/// `circuitbreaker_keys_refused_by_cap_total` say the cap holds. An environment keeps the
/// circuits of at most [`max_keys_in_memory`](Self::with_max_keys_in_memory) keys: a key
/// called once passes through a small queue, a key called again stays (S3-FIFO), so a
/// burst of one-off keys does not evict the hot ones.
///
/// Metrics carry the circuit's name, never the key (keys are unbounded); transitions,
/// rejections and logs carry the key ([`CircuitTransition::key`],
/// [`CircuitInfo::key`](crate::CircuitInfo::key)). A key longer than 1 KB is kept in
/// memory and named there by the hashed form of its id (its first 47 encoded bytes, `…~`
/// and 16 hex digits: [`decode_key`]), so memory stays bounded whatever the keys' length.
///
/// ```
/// use std::sync::Arc;
/// use breaker_runtime::{CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState, KeyedCircuitBreaker};
/// use breaker_runtime::store::InMemoryStore;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let config = CircuitBreakerConfig::builder().failure_threshold(2).build().unwrap();
/// let webhooks = KeyedCircuitBreaker::new("webhooks", Arc::new(InMemoryStore::new()), config)
///     .with_max_open_keys(100)
///     .unwrap();
///
/// for _ in 0..2 {
///     let _ = webhooks.call("shop-17", || async { Err::<(), _>(anyhow::anyhow!("503")) }).await;
/// }
/// let rejected = webhooks.call("shop-17", || async { Ok::<_, anyhow::Error>("never runs") }).await;
/// let open = rejected.unwrap_err().downcast::<CircuitBreakerOpenError>().unwrap();
/// assert_eq!((open.circuit.name(), open.circuit.key()), ("webhooks", Some("shop-17")));
///
/// // Other keys run.
/// let answer = webhooks.call("shop-18", || async { Ok::<_, anyhow::Error>(200) }).await;
/// assert_eq!(answer.unwrap(), 200);
/// assert_eq!(webhooks.open_keys(), vec!["shop-17".to_owned()]);
/// assert_eq!(webhooks.state("shop-18"), CircuitState::Closed);
/// # }
/// ```
#[derive(Clone)]
pub struct KeyedCircuitBreaker {
    inner: Arc<Keyed>,
}

struct Keyed {
    /// The config as given, which `config()` returns.
    config: CircuitBreakerConfig,
    /// The config each key's circuit runs with (`CircuitBreakerConfig::for_keys`).
    key_config: CircuitBreakerConfig,
    index: Arc<IndexCopy>,
    circuits: Circuits,
    max_keys_in_memory: AtomicUsize,
    hooks: Arc<Hooks>,
}

impl fmt::Debug for KeyedCircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedCircuitBreaker")
            .field("name", self.inner.index.circuit())
            .field("max_open_keys", &self.inner.index.cap())
            .field("keys_in_memory", &self.keys_in_memory())
            .field("open_keys", &self.open_keys())
            .field("config", &self.inner.config)
            .field("store", self.inner.index.store())
            .finish()
    }
}

impl KeyedCircuitBreaker {
    /// A keyed circuit named `name` whose keys' shared state lives in `store`; every key's
    /// circuit runs with `config`. At most 1,000 keys open at once and 1,000 keys' circuits
    /// in memory, unless set.
    ///
    /// A store that keeps no key index (see
    /// [`StateStore::keeps_key_index`](crate::store::StateStore::keeps_key_index)) works,
    /// without the savings: every key's item is read, and nothing caps the open keys.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreakerConfig, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// let hosts = KeyedCircuitBreaker::new("hosts", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
    /// assert_eq!((hosts.name(), hosts.max_open_keys(), hosts.max_keys_in_memory()), ("hosts", 1_000, 1_000));
    /// ```
    pub fn new(
        name: impl Into<String>,
        store: Arc<dyn StateStore>,
        config: CircuitBreakerConfig,
    ) -> Self {
        let name: Arc<str> = name.into().into();
        let key_config = config.for_keys();
        Self {
            inner: Arc::new(Keyed {
                index: Arc::new(IndexCopy::new(name, store, &key_config)),
                key_config,
                config,
                circuits: Circuits::new(DEFAULT_MAX_KEYS_IN_MEMORY),
                max_keys_in_memory: AtomicUsize::new(DEFAULT_MAX_KEYS_IN_MEMORY),
                hooks: Arc::default(),
            }),
        }
    }

    /// At most `cap` keys open or half-open at once, fleet-wide (suspicions are named apart
    /// and take no slot): past it a key
    /// that would trip is refused and keeps running. Every environment of the circuit
    /// should set the same cap: each enforces its own on the shared index. A cap of 0 is
    /// an error, as a count of 0 is to the config builder, and so is one above
    /// [`MAX_OPEN_KEYS_LIMIT`]: the index item names every open key, and DynamoDB refuses
    /// an item over 400 KB.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreakerConfig, CircuitBreakerConfigError, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// let hosts = || KeyedCircuitBreaker::new("hosts", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
    /// assert_eq!(hosts().with_max_open_keys(50)?.max_open_keys(), 50);
    /// let zero = hosts().with_max_open_keys(0).unwrap_err();
    /// assert_eq!(zero.to_string(), "max_open_keys must be at least 1, got 0");
    /// let huge = hosts().with_max_open_keys(10_000).unwrap_err();
    /// assert_eq!(huge.to_string(), "max_open_keys must be at most 3000 (an index of 308 KB with its suspicions), got 10000");
    /// # Ok::<(), CircuitBreakerConfigError>(())
    /// ```
    pub fn with_max_open_keys(self, cap: u32) -> Result<Self, CircuitBreakerConfigError> {
        at_least_one("max_open_keys", cap)?;
        if cap > MAX_OPEN_KEYS_LIMIT {
            return Err(CircuitBreakerConfigError::TooLarge {
                field: "max_open_keys",
                maximum: format!(
                    "{MAX_OPEN_KEYS_LIMIT} (an index of {} KB with its suspicions)",
                    (MAX_OPEN_KEYS_LIMIT + index::MAX_SUSPECTED_KEYS) as usize
                        * MAX_INDEX_ENTRY_BYTES
                        / 1000
                ),
                value: cap.to_string(),
            });
        }
        self.inner.index.set_cap(cap);
        Ok(self)
    }

    /// Keeps the circuits of at most `n` keys in this environment: past it a key called only
    /// once lately (else one called least often) is evicted, and with it its counts
    /// (failures towards a trip, a probe's successes so far); called again, the key starts
    /// afresh from its shared state. An
    /// `n` of 0 is an error, as a count of 0 is to the config builder.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreakerConfig, CircuitBreakerConfigError, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// let hosts = KeyedCircuitBreaker::new("hosts", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default())
    ///     .with_max_keys_in_memory(2)?;
    /// for host in ["a", "b", "c"] {
    ///     hosts.breaker(host);
    /// }
    /// assert_eq!(hosts.keys_in_memory(), 2);
    /// assert!(hosts.clone().with_max_keys_in_memory(0).is_err());
    /// # Ok::<(), CircuitBreakerConfigError>(())
    /// ```
    pub fn with_max_keys_in_memory(self, n: usize) -> Result<Self, CircuitBreakerConfigError> {
        at_least_one("max_keys_in_memory", n)?;
        self.inner.max_keys_in_memory.store(n, Ordering::Relaxed);
        self.inner.circuits.set_capacity(n);
        Ok(self)
    }

    /// Adds a hook that runs after each transition any key's circuit commits in this
    /// environment ([`CircuitTransition::key`] names the key), like
    /// [`CircuitBreaker::with_on_transition`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreakerConfig, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// let hosts = KeyedCircuitBreaker::new("hosts", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default())
    ///     .with_on_transition(|t| println!("{} {:?}: {} -> {}", t.name, t.key, t.from_state, t.to_state));
    /// # drop(hosts);
    /// ```
    pub fn with_on_transition(
        self,
        hook: impl Fn(CircuitTransition) + Send + Sync + 'static,
    ) -> Self {
        self.inner.hooks.push(Arc::new(hook));
        self
    }

    /// The keyed circuit's name: the name of every key's circuit, of its metrics and logs.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreakerConfig, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// let hosts = KeyedCircuitBreaker::new("hosts", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
    /// assert_eq!(hosts.name(), "hosts");
    /// assert_eq!(hosts.breaker("db-1").name(), "hosts");
    /// ```
    pub fn name(&self) -> &str {
        self.inner.index.circuit()
    }

    /// The config as given. Every key's circuit runs with it, but for the fleet policy's
    /// window, six times longer for a key (an hour at most): a key is called far less than
    /// a whole circuit, and its fleet rule gathers its evidence over that window
    /// (`docs/design.md`, "Rarely called keys").
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use breaker_runtime::{CircuitBreakerConfig, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// let config = CircuitBreakerConfig::builder().failure_threshold(3).build().unwrap();
    /// let hosts = KeyedCircuitBreaker::new("hosts", Arc::new(InMemoryStore::new()), config);
    /// assert_eq!(hosts.config().failure_threshold(), 3);
    /// let window = |config: &CircuitBreakerConfig| config.fleet_policy().map(|p| p.window());
    /// assert_eq!(window(hosts.config()), Some(Duration::from_secs(10)));
    /// assert_eq!(window(hosts.breaker("shop-1").config()), Some(Duration::from_secs(60)));
    /// ```
    pub fn config(&self) -> &CircuitBreakerConfig {
        &self.inner.config
    }

    /// The cap on keys open at once.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreakerConfig, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// let hosts = KeyedCircuitBreaker::new("hosts", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
    /// assert_eq!(hosts.max_open_keys(), 1_000);
    /// assert!(hosts.clone().with_max_open_keys(0).is_err(), "a cap of 0 is refused");
    /// assert_eq!(hosts.max_open_keys(), 1_000, "and the cap is left as it was");
    /// ```
    pub fn max_open_keys(&self) -> u32 {
        self.inner.index.cap()
    }

    /// The bound on the keys' circuits this environment keeps.
    pub fn max_keys_in_memory(&self) -> usize {
        self.inner.max_keys_in_memory.load(Ordering::Relaxed)
    }

    /// How many keys' circuits this environment keeps now.
    pub fn keys_in_memory(&self) -> usize {
        self.inner.circuits.len()
    }

    /// The circuit of `key`: the one this environment keeps, or a new one (no I/O). A new
    /// key the index copy does not name starts known closed, as fresh as the copy; a tower
    /// user builds a layer per key on it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreakerConfig, CircuitState, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// let hosts = KeyedCircuitBreaker::new("hosts", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
    /// let db1 = hosts.breaker("db-1.internal");
    /// assert_eq!((db1.name(), db1.state()), ("hosts", CircuitState::Closed));
    /// ```
    pub fn breaker(&self, key: &str) -> CircuitBreaker {
        self.with_breaker(key, CircuitBreaker::clone)
    }

    /// Runs `run` on `key`'s circuit, kept or new, without cloning it.
    pub(crate) fn with_breaker<R>(&self, key: &str, run: impl FnOnce(&CircuitBreaker) -> R) -> R {
        let (form, kept) = kept_as(key);
        let make = || self.new_breaker(key, form, &kept);
        self.inner.circuits.with(form, &kept, make, run)
    }

    /// A new circuit for `key`, kept as `kept`, its transitions handed to the keyed
    /// circuit's hooks.
    fn new_breaker(&self, key: &str, form: Form, kept: &str) -> CircuitBreaker {
        let inner = &self.inner;
        let store = KeyStore::new(Arc::clone(&inner.index), key);
        let closed_until = inner.index.closed_until(store.encoded());
        let hooks = Arc::clone(&inner.hooks);
        let name = Arc::clone(inner.index.circuit());
        let named = match form {
            Form::Whole => key.into(),
            Form::Hashed => decode_key(kept).into(),
        };
        let key = KeyOf {
            key: named,
            item: store.item().into(),
            table: Arc::downgrade(inner.index.store()),
        };
        CircuitBreaker::for_key(
            Arc::clone(inner.index.circuit()),
            key,
            Arc::new(store),
            inner.key_config.clone(),
            closed_until,
        )
        .with_on_transition(move |transition| hooks.run(&transition, &name))
    }

    /// The state this environment believes `key`'s circuit is in, from its cache (no I/O,
    /// and what eviction knows of the key's use is left as it is). A key this environment keeps
    /// no circuit for reads as closed: its first call reads its item if the index names it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreakerConfig, CircuitState, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let config = CircuitBreakerConfig::builder().failure_threshold(1).build().unwrap();
    /// let hosts = KeyedCircuitBreaker::new("hosts", Arc::new(InMemoryStore::new()), config);
    /// let _ = hosts.call("db-1", || async { Err::<(), _>(anyhow::anyhow!("refused")) }).await;
    /// assert_eq!(hosts.state("db-1"), CircuitState::Open);
    /// assert_eq!(hosts.state("db-2"), CircuitState::Closed);
    /// # }
    /// ```
    pub fn state(&self, key: &str) -> CircuitState {
        let (form, kept) = kept_as(key);
        match self.inner.circuits.peek(form, &kept) {
            Some(breaker) => breaker.state(),
            None => CircuitState::Closed,
        }
    }

    /// The keys this environment's copy of the index names (open, half-open, or under an
    /// operator's override; not those only suspected), decoded ([`decode_key`](crate::store::decode_key)),
    /// in the order of their encoding; no I/O. Empty on a store that keeps no key index.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreakerConfig, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let config = CircuitBreakerConfig::builder().failure_threshold(1).build().unwrap();
    /// let hosts = KeyedCircuitBreaker::new("hosts", Arc::new(InMemoryStore::new()), config);
    /// assert!(hosts.open_keys().is_empty());
    /// let _ = hosts.call("db#1", || async { Err::<(), _>(anyhow::anyhow!("refused")) }).await;
    /// assert_eq!(hosts.open_keys(), vec!["db#1".to_owned()]);
    /// # }
    /// ```
    pub fn open_keys(&self) -> Vec<String> {
        self.inner.index.named_keys()
    }
}

#[cfg(test)]
mod tests;
