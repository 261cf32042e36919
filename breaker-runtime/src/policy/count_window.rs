//! The last N calls: two bits per call (failed, slow) packed 32 calls to a word, a cursor,
//! and how many slots were ever written. Counts are popcounts of the words, taken only when
//! a call failed or was slow, so they always match what the window holds.
//!
//! A good call on a window of good calls reads the position and one word and writes the
//! position: no read-modify-write, no lock.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::Sample;
use crate::protocol::Counts;

/// Calls per word: two bits each.
const PER_WORD: u32 = 32;
/// The failed bits of a word (the even ones); the slow bits are the odd ones.
const FAILED_BITS: u64 = 0x5555_5555_5555_5555;

#[derive(Debug)]
pub(crate) struct CountWindow {
    len: u32,
    slots: Box<[AtomicU64]>,
    /// `filled << 32 | cursor`: the slots written since the window was emptied (up to
    /// `len`), and the slot the next call writes. One word, read and written once a call.
    position: AtomicU64,
}

impl CountWindow {
    /// An empty window of `len` calls (≥ 1).
    pub(crate) fn new(len: u32) -> Self {
        let len = len.max(1);
        Self {
            len,
            slots: (0..len.div_ceil(PER_WORD))
                .map(|_| AtomicU64::new(0))
                .collect(),
            position: AtomicU64::new(0),
        }
    }

    /// Takes the next slot; returns it.
    #[inline]
    fn advance(&self) -> u32 {
        // Load and store, not a read-modify-write: two threads recording at once may take
        // the same slot, and one outcome is lost; the words stay consistent.
        let position = self.position.load(Relaxed);
        let (slot, filled) = (position as u32, (position >> 32) as u32);
        let next = if slot + 1 >= self.len { 0 } else { slot + 1 };
        let filled = if filled < self.len {
            filled + 1
        } else {
            filled
        };
        self.position
            .store((u64::from(filled) << 32) | u64::from(next), Relaxed);
        slot
    }

    #[inline]
    pub(crate) fn record(&self, sample: Sample) -> Option<Counts> {
        let slot = self.advance();
        // Always there: the cursor stays below `len`.
        let word = self.slots.get((slot / PER_WORD) as usize)?;
        let shift = (slot % PER_WORD) * 2;
        let bits = u64::from(sample.bits()) << shift;
        let held = word.load(Relaxed) & (0b11 << shift);
        if held != bits {
            // Only the bits that change: XOR flips exactly those, whatever other threads
            // wrote to the word's other slots meanwhile.
            word.fetch_xor(held ^ bits, Relaxed);
        }
        if sample.good() {
            return None;
        }
        Some(self.counts())
    }

    pub(crate) fn counts(&self) -> Counts {
        let (mut failures, mut slow) = (0, 0);
        for word in self.slots.iter() {
            let word = word.load(Relaxed);
            failures += (word & FAILED_BITS).count_ones();
            slow += (word & !FAILED_BITS).count_ones();
        }
        Counts {
            calls: ((self.position.load(Relaxed) >> 32) as u32).min(self.len),
            failures,
            slow,
        }
    }

    pub(crate) fn reset(&self) {
        for word in self.slots.iter() {
            word.store(0, Relaxed);
        }
        self.position.store(0, Relaxed);
    }
}
