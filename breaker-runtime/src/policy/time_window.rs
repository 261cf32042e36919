//! The calls of the last N seconds: N buckets, one per second, each stamped with the
//! second it counts. A call lands in its second's bucket (a bucket reused for a new second
//! is emptied first); counts sum the buckets still inside the window, and are taken only
//! when a call failed or was slow.
//!
//! The bucket of the current second is cached with its second, so a call within the same
//! second as the previous one does no division. A good call then reads the cache and one
//! bucket's counter and writes that counter: no read-modify-write, no lock.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use super::Sample;
use crate::protocol::Counts;

#[derive(Debug, Default)]
struct Bucket {
    /// The unix second this bucket counts.
    second: AtomicU64,
    calls: AtomicU32,
    failures: AtomicU32,
    slow: AtomicU32,
}

#[derive(Debug)]
pub(crate) struct TimeWindow {
    secs: u64,
    buckets: Box<[Bucket]>,
    /// The current second and its bucket: `second << 16 | index` (0: none yet).
    current: AtomicU64,
}

const INDEX_BITS: u32 = 16;

impl TimeWindow {
    /// An empty window of `secs` seconds (1 to 3600).
    pub(crate) fn new(secs: u64) -> Self {
        let secs = secs.clamp(1, 1 << INDEX_BITS);
        Self {
            secs,
            buckets: (0..secs).map(|_| Bucket::default()).collect(),
            current: AtomicU64::new(0),
        }
    }

    #[inline]
    pub(crate) fn record(&self, sample: Sample, now_millis: u64) -> Option<Counts> {
        let second = now_millis / 1000;
        let current = self.current.load(Relaxed);
        let index = match current >> INDEX_BITS == second && current != 0 {
            true => (current & ((1 << INDEX_BITS) - 1)) as usize,
            false => self.enter(second),
        };
        let bucket = &self.buckets[index];
        // Load and store: calls recorded at once by two threads may count as one.
        bucket
            .calls
            .store(bucket.calls.load(Relaxed).saturating_add(1), Relaxed);
        if sample.good() {
            return None;
        }
        if sample.failed() {
            bucket.failures.fetch_add(1, Relaxed);
        }
        if sample.slow() {
            bucket.slow.fetch_add(1, Relaxed);
        }
        Some(self.counts(now_millis))
    }

    /// A call in a second other than the cached one: find its bucket, emptied if it
    /// counted an older second, and cache it.
    #[inline(never)]
    fn enter(&self, second: u64) -> usize {
        let index = (second % self.secs) as usize;
        let bucket = &self.buckets[index];
        if bucket.second.load(Relaxed) != second {
            bucket.calls.store(0, Relaxed);
            bucket.failures.store(0, Relaxed);
            bucket.slow.store(0, Relaxed);
            bucket.second.store(second, Relaxed);
        }
        self.current
            .store((second << INDEX_BITS) | index as u64, Relaxed);
        index
    }

    pub(crate) fn counts(&self, now_millis: u64) -> Counts {
        let second = now_millis / 1000;
        // The window is the `secs` seconds up to and including this one.
        let oldest = second.saturating_sub(self.secs - 1);
        let mut counts = Counts::default();
        for bucket in self.buckets.iter() {
            let at = bucket.second.load(Relaxed);
            if at < oldest || at > second {
                continue;
            }
            counts.calls = counts.calls.saturating_add(bucket.calls.load(Relaxed));
            counts.failures = counts
                .failures
                .saturating_add(bucket.failures.load(Relaxed));
            counts.slow = counts.slow.saturating_add(bucket.slow.load(Relaxed));
        }
        // A failure counted between another thread's reads of `calls` and `failures`.
        counts.failures = counts.failures.min(counts.calls);
        counts.slow = counts.slow.min(counts.calls);
        counts
    }

    pub(crate) fn reset(&self) {
        for bucket in self.buckets.iter() {
            bucket.calls.store(0, Relaxed);
            bucket.failures.store(0, Relaxed);
            bucket.slow.store(0, Relaxed);
            bucket.second.store(0, Relaxed);
        }
        self.current.store(0, Relaxed);
    }
}
