//! The `on_transition` (and `on_shadow`) hooks of one circuit: a list, each run with its
//! panic caught.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, PoisonError, RwLock};

use crate::events::CircuitTransition;

/// One hook of events `E`.
pub(crate) type Hook<E = CircuitTransition> = Arc<dyn Fn(E) + Send + Sync>;

/// Every hook added to a circuit, in the order added.
pub(crate) struct Hooks<E = CircuitTransition>(RwLock<Vec<Hook<E>>>);

impl<E> Default for Hooks<E> {
    fn default() -> Self {
        Self(RwLock::default())
    }
}

impl<E: Clone> Hooks<E> {
    pub(crate) fn push(&self, hook: Hook<E>) {
        self.0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(hook);
    }

    /// Runs every hook with `transition`; a panicking hook is logged and the others run.
    pub(crate) fn run(&self, transition: &E, circuit_name: &str) {
        // Copied (a few `Arc`s) so no lock is held while user code runs.
        let hooks = self
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for hook in hooks {
            let copy = transition.clone();
            if catch_unwind(AssertUnwindSafe(|| hook(copy))).is_err() {
                tracing::error!(
                    circuit = %circuit_name,
                    "hook panicked; the transition or verdict stands"
                );
            }
        }
    }
}
