//! The one registry of circuits per name and store: the circuit every `#[circuit_breaker]`
//! call site naming it shares, and what a warm-up read for it, kept for a circuit created
//! after the read.
//!
//! An entry keeps its store alive, so the store's address, which identifies it, is never
//! reused while the entry exists.
//!
//! Sharing rules. Call sites naming one circuit on one store join one circuit, whose config
//! is the first site's: the fleet already shares one item per name, so one circuit per
//! process keeps their failures adding up and their probes one. A later site whose config
//! differs is not refused (that could only happen on a live call, turning a config mistake
//! into an outage) but logged at WARN once, naming both sites and the config in use.
//! `CircuitBreaker::new` is a circuit of its own by design (a tower layer beside the
//! attribute, a breaker per record): own counts and probe slot under its own probe owner id,
//! the same item as the call sites, as another environment of the fleet would be.

use std::panic::Location;
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
    /// The circuit the call sites share, once the first of them ran, with where that site
    /// is and its config as `Debug` prints it (to tell a later site's config apart).
    shared: Option<(Arc<Circuit>, &'static Location<'static>, String)>,
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
/// them (the caller's caller, `site`) with its `config`. A later site whose config differs
/// gets the first one's circuit and a WARN naming both sites.
#[track_caller]
pub(super) fn shared_circuit(
    name: &str,
    store: Arc<dyn StateStore>,
    config: CircuitBreakerConfig,
) -> Arc<Circuit> {
    let site = Location::caller();
    let settings = format!("{config:?}");
    let mut entries = entries();
    let entry = entry(&mut entries, name, &store);
    let warmed = &entry.warmed;
    let (circuit, first_site, first_settings) = entry.shared.get_or_insert_with(|| {
        let circuit = Arc::new(Circuit::new(name.into(), None, store, config));
        if let Some((record, read_started)) = warmed {
            circuit.adopt_warmed(record.clone(), *read_started);
        }
        (circuit, site, settings.clone())
    });
    let warning = config_conflict(
        name,
        (*first_site, first_settings.as_str()),
        (site, &settings),
    );
    let circuit = Arc::clone(circuit);
    drop(entries);
    if let Some(warning) = warning {
        tracing::warn!(circuit = name, "{warning}");
    }
    circuit
}

/// What a WARN says when a call site joins a circuit `first` created with another config;
/// `None` when the configs are the same.
fn config_conflict(
    name: &str,
    first: (&Location<'_>, &str),
    later: (&Location<'_>, &str),
) -> Option<String> {
    (first.1 != later.1).then(|| {
        format!(
            "circuit '{name}' at {} has another config than at {}, where the circuit was \
             created; both call sites share that one, with its config: {}. Give both sites \
             one config (`config = expr`), or each its own name",
            later.0, first.0, first.1
        )
    })
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
        entry
            .shared
            .as_ref()
            .map(|(circuit, ..)| Arc::clone(circuit))
    };
    if let Some(circuit) = shared {
        circuit.adopt_warmed(record, read_started);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::InMemoryStore;

    fn config(failure_threshold: u32) -> CircuitBreakerConfig {
        CircuitBreakerConfig::builder()
            .failure_threshold(failure_threshold)
            .build()
            .expect("valid")
    }

    #[test]
    fn call_sites_share_the_first_ones_circuit_and_a_different_config_names_both() {
        let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
        let first = shared_circuit("sharing-rules", Arc::clone(&store), config(3));
        let same = shared_circuit("sharing-rules", Arc::clone(&store), config(3));
        let other = shared_circuit("sharing-rules", Arc::clone(&store), config(7));
        assert!(Arc::ptr_eq(&first, &same) && Arc::ptr_eq(&first, &other));
        assert_eq!(
            other.config().failure_threshold(),
            3,
            "the first site's config"
        );

        let (here, there) = (Location::caller(), Location::caller());
        let three = format!("{:?}", config(3));
        assert_eq!(config_conflict("c", (here, &three), (there, &three)), None);
        let warning = config_conflict("c", (here, &three), (there, &format!("{:?}", config(7))))
            .expect("configs differ");
        assert!(warning.contains(&here.to_string()) && warning.contains(&there.to_string()));
        assert!(warning.contains("failure_threshold: 3"), "{warning}");
    }
}
