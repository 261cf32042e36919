//! The one registry of circuits per name and store: the circuit every `#[circuit_breaker]`
//! call site naming it shares, and what a warm-up read for it, kept for a circuit created
//! after the read.
//!
//! An entry keeps its store alive, so the store's address, which identifies it, is never
//! reused while the entry exists.

use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use super::circuit::Circuit;
use crate::config::CircuitBreakerConfig;
use crate::protocol::CircuitRecord;
use crate::store::{StateStore, same_store};

/// What the registry knows of one name on one store.
struct Entry {
    name: Arc<str>,
    store: Arc<dyn StateStore>,
    /// The circuit the call sites share, once the first of them ran.
    shared: Option<Arc<Circuit>>,
    /// The last warm-up read of the record, and when it started.
    warmed: Option<(Option<CircuitRecord>, Instant)>,
}

static REGISTRY: LazyLock<Mutex<Vec<Entry>>> = LazyLock::new(Mutex::default);

fn entries() -> MutexGuard<'static, Vec<Entry>> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The entry of `name` on `store`, added if there is none.
fn entry<'a>(
    entries: &'a mut Vec<Entry>,
    name: &str,
    store: &Arc<dyn StateStore>,
) -> &'a mut Entry {
    let index = match entries
        .iter()
        .position(|e| &*e.name == name && same_store(&e.store, store))
    {
        Some(index) => index,
        None => {
            entries.push(Entry {
                name: name.into(),
                store: Arc::clone(store),
                shared: None,
                warmed: None,
            });
            entries.len() - 1
        }
    };
    &mut entries[index]
}

/// A circuit of its own (not shared): created after a warm-up read its record, it starts
/// with that record, a cache hit from the first call.
pub(super) fn own_circuit(
    name: Arc<str>,
    store: Arc<dyn StateStore>,
    config: CircuitBreakerConfig,
) -> Arc<Circuit> {
    let circuit = Arc::new(Circuit::new(name, None, store, config));
    let warmed = entries()
        .iter()
        .find(|e| e.name == *circuit.name() && same_store(&e.store, circuit.store()))
        .and_then(|e| e.warmed.clone());
    if let Some((record, read_started)) = warmed {
        circuit.adopt_warmed(record, read_started);
    }
    circuit
}

/// The circuit the call sites naming `name` with `store` share, created by the first of
/// them with its `config` (later ones' configs are not used).
pub(super) fn shared_circuit(
    name: &str,
    store: Arc<dyn StateStore>,
    config: CircuitBreakerConfig,
) -> Arc<Circuit> {
    let mut entries = entries();
    let entry = entry(&mut entries, name, &store);
    let warmed = &entry.warmed;
    let circuit = entry.shared.get_or_insert_with(|| {
        let circuit = Arc::new(Circuit::new(name.into(), None, store, config));
        if let Some((record, read_started)) = warmed {
            circuit.adopt_warmed(record.clone(), *read_started);
        }
        circuit
    });
    Arc::clone(circuit)
}

/// A warm-up read `record` of `name` on `store`, from `read_started` on: kept for a
/// circuit created later, and handed to the shared circuit if there is one already.
pub(super) fn warmed(
    name: &str,
    store: &Arc<dyn StateStore>,
    record: Option<CircuitRecord>,
    read_started: Instant,
) {
    let shared = {
        let mut entries = entries();
        let entry = entry(&mut entries, name, store);
        entry.warmed = Some((record.clone(), read_started));
        entry.shared.clone()
    };
    if let Some(circuit) = shared {
        circuit.adopt_warmed(record, read_started);
    }
}
