//! The last N calls: one bit per call in a failed bitmap and a slow bitmap, a cursor, and
//! how many slots were ever written. Counts are popcounts of the bitmaps, taken only when a
//! call failed or was slow, so they always match what the window holds.
//!
//! A good call on a window of good calls reads two words and writes the cursor: no
//! read-modify-write, no lock.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use super::{Counts, Sample};

#[derive(Debug)]
pub(crate) struct CountWindow {
    len: u32,
    failed: Box<[AtomicU64]>,
    slow: Box<[AtomicU64]>,
    /// The slot the next call writes.
    cursor: AtomicU32,
    /// Slots written since the window was emptied, up to `len`.
    filled: AtomicU32,
}

impl CountWindow {
    /// An empty window of `len` calls (≥ 1).
    pub(crate) fn new(len: u32) -> Self {
        let len = len.max(1);
        let words = len.div_ceil(64) as usize;
        Self {
            len,
            failed: (0..words).map(|_| AtomicU64::new(0)).collect(),
            slow: (0..words).map(|_| AtomicU64::new(0)).collect(),
            cursor: AtomicU32::new(0),
            filled: AtomicU32::new(0),
        }
    }

    #[inline]
    pub(crate) fn record(&self, sample: Sample) -> Option<Counts> {
        // Load and store, not fetch_add: two threads recording at once may take the same
        // slot, and one outcome is lost; the bitmaps stay consistent.
        let slot = self.cursor.load(Relaxed);
        let next = slot + 1;
        self.cursor
            .store(if next >= self.len { 0 } else { next }, Relaxed);
        let filled = self.filled.load(Relaxed);
        if filled < self.len {
            self.filled.store(filled + 1, Relaxed);
        }
        let (word, bit) = ((slot / 64) as usize, 1u64 << (slot % 64));
        set_bit(&self.failed[word], bit, sample.failed());
        set_bit(&self.slow[word], bit, sample.slow());
        if sample.good() {
            return None;
        }
        Some(self.counts())
    }

    pub(crate) fn counts(&self) -> Counts {
        Counts {
            calls: self.filled.load(Relaxed).min(self.len),
            failures: ones(&self.failed),
            slow: ones(&self.slow),
        }
    }

    pub(crate) fn reset(&self) {
        for word in self.failed.iter().chain(self.slow.iter()) {
            word.store(0, Relaxed);
        }
        self.cursor.store(0, Relaxed);
        self.filled.store(0, Relaxed);
    }
}

/// Sets or clears `bit` in `word`; writes only when it changes.
#[inline]
fn set_bit(word: &AtomicU64, bit: u64, on: bool) {
    let is_on = word.load(Relaxed) & bit != 0;
    match (is_on, on) {
        (false, true) => {
            word.fetch_or(bit, Relaxed);
        }
        (true, false) => {
            word.fetch_and(!bit, Relaxed);
        }
        _ => {}
    }
}

fn ones(words: &[AtomicU64]) -> u32 {
    words
        .iter()
        .map(|word| word.load(Relaxed).count_ones())
        .sum()
}
