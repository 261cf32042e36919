//! The `on_transition` hooks of one circuit: a list, each run with its panic caught.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, PoisonError, RwLock};

use crate::state::CircuitTransition;

/// One hook.
pub(super) type Hook = Arc<dyn Fn(CircuitTransition) + Send + Sync>;

/// Every hook added to a circuit, in the order added.
#[derive(Default)]
pub(super) struct Hooks(RwLock<Vec<Hook>>);

impl Hooks {
    pub(super) fn push(&self, hook: Hook) {
        self.0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(hook);
    }

    /// Runs every hook with `transition`; a panicking hook is logged and the others run.
    pub(super) fn run(&self, transition: &CircuitTransition) {
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
                    circuit = %transition.circuit_name,
                    "on_transition hook panicked; the transition stands"
                );
            }
        }
    }
}
