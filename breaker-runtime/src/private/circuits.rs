//! One circuit per (name, store), shared by every call site that names it; with
//! `keyed_by = expr`, one keyed circuit per (name, store) and the key's circuit per call.

use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use crate::breaker::CircuitBreaker;
use crate::config::CircuitBreakerConfig;
use crate::events::CircuitTransition;
use crate::keyed::KeyedCircuitBreaker;
use crate::store::{StateStore, same_store};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
