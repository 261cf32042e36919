//! How far an attempt got, kept outside its future: a guarded charge abandoned at its
//! deadline is dropped mid-way, and whoever awaited it settles what it left behind.

use std::sync::Mutex;

use super::attempt::{Attempt, Settlement};

/// Where an attempt stands. [`Ledger::claim`](super::Ledger::claim) and the charge write it;
/// the caller of an abandoned charge reads it.
#[derive(Debug, Default)]
pub struct Progress(Mutex<Phase>);

/// One step of an attempt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Phase {
    /// Nothing written yet.
    #[default]
    Idle,
    /// This attempt's claim is being put, or holds the order; nothing sent.
    Claiming(Attempt),
    /// The charge was sent: its outcome is unknown until it answers.
    Sending(Attempt),
    /// The API answered with this outcome; it is being recorded.
    Settling(Attempt, Settlement, String),
}

impl Progress {
    /// Records the attempt's next step.
    pub fn set(&self, phase: Phase) {
        *self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = phase;
    }

    /// The last step recorded.
    pub fn phase(&self) -> Phase {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}
