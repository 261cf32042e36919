//! `Circuits`: the keys' circuits one environment keeps, at most `capacity` of them.
//!
//! A call on a key looks first in this thread's near cache ([`NEAR_SLOTS`] entries of the
//! keys it called last): no lock, no atomic read-modify-write, so a hot key costs about a
//! hash and a comparison more than a plain circuit, and threads calling one key do not
//! contend. A key the thread does not hold goes to the shared map, under a lock held for
//! a hash lookup only: a new key's circuit is built outside it.
//!
//! Eviction is S3-FIFO's: a new key enters a small queue (a tenth of the capacity); it
//! moves to the main queue if it was called again before reaching the small queue's
//! head, else it is evicted. The main queue gives each key as many more turns as it was
//! called since its last (up to three). A burst of one-off keys thus passes through the
//! small queue without evicting the hot keys of the main one, and an eviction is O(1),
//! amortized over the calls that set the counts it clears.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use foldhash::fast::FixedState;

use crate::breaker::CircuitBreaker;

/// A key as the map knows it: in full, or by its hashed form (a very long key). The two
/// never meet, whatever a whole key spells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    Whole = 0,
    Hashed = 1,
}

/// One key's circuit, and what eviction knows of its use.
struct KeyEntry {
    form: Form,
    key: Arc<str>,
    breaker: CircuitBreaker,
    /// Calls since the queue's last look at the key, up to [`MAX_TURNS`].
    turns: AtomicU8,
    /// Evicted: a near cache holding the entry must look it up again.
    evicted: AtomicBool,
}

/// The most turns a key earns in the main queue.
const MAX_TURNS: u8 = 3;

impl KeyEntry {
    /// A call on the key: a load, and a store only while the count is below its top, so a
    /// hot key's calls write nothing.
    fn called(&self) {
        let turns = self.turns.load(Ordering::Relaxed);
        if turns < MAX_TURNS {
            self.turns.store(turns + 1, Ordering::Relaxed);
        }
    }

    fn is(&self, form: Form, key: &str) -> bool {
        self.form == form && *self.key == *key && !self.evicted.load(Ordering::Relaxed)
    }
}

/// The entries of this thread's near cache; a small power of two.
const NEAR_SLOTS: usize = 64;

/// This thread's most recent keys, of any keyed circuit: by slot, the circuit's id and
/// the entry.
struct Near {
    slots: [Option<(u64, Arc<KeyEntry>)>; NEAR_SLOTS],
}

thread_local! {
    static NEAR: RefCell<Near> = const { RefCell::new(Near { slots: [const { None }; NEAR_SLOTS] }) };
}

/// Gives each keyed circuit its own id in the near caches.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// The shared map and its two queues.
struct Shared {
    /// By [`Form`]: each key's entry.
    entries: [HashMap<Arc<str>, Arc<KeyEntry>>; 2],
    small: VecDeque<Arc<KeyEntry>>,
    main: VecDeque<Arc<KeyEntry>>,
    capacity: usize,
}

impl Shared {
    fn len(&self) -> usize {
        self.small.len() + self.main.len()
    }

    fn small_capacity(&self) -> usize {
        (self.capacity / 10).max(1)
    }

    /// Evicts until at most `capacity` entries are left.
    fn evict_over(&mut self, capacity: usize) {
        while self.len() > capacity {
            self.evict_one();
        }
    }

    /// Evicts one entry: from the small queue if it holds its share (a key called again
    /// there moves to the main queue instead), else from the main queue (a key with turns
    /// left goes round again, one turn fewer).
    fn evict_one(&mut self) {
        // Other threads' calls may give turns back while this one looks: after two rounds
        // of every entry, the head goes whatever its turns.
        let mut looks = 2 * self.len() + 2;
        loop {
            looks -= 1;
            if looks == 0 {
                let head = self.small.pop_front().or_else(|| self.main.pop_front());
                if let Some(entry) = head {
                    self.remove(&entry);
                }
                return;
            }
            if self.small.len() >= self.small_capacity() || self.main.is_empty() {
                let Some(entry) = self.small.pop_front() else {
                    return;
                };
                match entry.turns.swap(0, Ordering::Relaxed) {
                    0 => return self.remove(&entry),
                    _ => self.main.push_back(entry),
                }
            } else {
                let Some(entry) = self.main.pop_front() else {
                    return;
                };
                match entry.turns.load(Ordering::Relaxed) {
                    0 => return self.remove(&entry),
                    turns => {
                        entry.turns.store(turns - 1, Ordering::Relaxed);
                        self.main.push_back(entry);
                    }
                }
            }
        }
    }

    fn remove(&mut self, entry: &KeyEntry) {
        entry.evicted.store(true, Ordering::Relaxed);
        self.entries[entry.form as usize].remove(&entry.key);
    }
}

/// The circuits of at most `capacity` keys.
pub(crate) struct Circuits {
    id: u64,
    /// Seeds the near caches' slot hash (random per circuit: hostile keys cannot aim at a
    /// hot key's slot; the shared map keeps std's randomly seeded hasher).
    near_hash: FixedState,
    shared: Mutex<Shared>,
}

impl Circuits {
    /// No circuits yet, at most `capacity` (at least 1).
    pub(crate) fn new(capacity: usize) -> Self {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Self {
            id,
            near_hash: FixedState::with_seed(RandomState::new().hash_one(id)),
            shared: Mutex::new(Shared {
                entries: [HashMap::new(), HashMap::new()],
                small: VecDeque::new(),
                main: VecDeque::new(),
                capacity: capacity.max(1),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `run` on `key`'s circuit: the one kept, or a new one from `make` (called
    /// without the lock; if another thread kept one meanwhile, that one is used).
    pub(crate) fn with<R>(
        &self,
        form: Form,
        key: &str,
        make: impl FnOnce() -> CircuitBreaker,
        run: impl FnOnce(&CircuitBreaker) -> R,
    ) -> R {
        let slot = (self.near_hash.hash_one(key) as usize) & (NEAR_SLOTS - 1);
        let mut run = Some(run);
        let near = NEAR.try_with(|near| {
            // A call made from inside another's `run` (a nested call) reads the cache and
            // leaves it as it is.
            if let Ok(near) = near.try_borrow()
                && let Some((id, entry)) = &near.slots[slot]
                && *id == self.id
                && entry.is(form, key)
            {
                entry.called();
                let run = run.take().expect("taken once");
                return Some(run(&entry.breaker));
            }
            None
        });
        if let Ok(Some(answer)) = near {
            return answer;
        }
        let entry = self.entry(form, key, make);
        let _ = NEAR.try_with(|near| {
            if let Ok(mut near) = near.try_borrow_mut() {
                near.slots[slot] = Some((self.id, Arc::clone(&entry)));
            }
        });
        let run = run.take().expect("taken once");
        run(&entry.breaker)
    }

    /// `key`'s entry from the shared map, or a new one.
    fn entry(&self, form: Form, key: &str, make: impl FnOnce() -> CircuitBreaker) -> Arc<KeyEntry> {
        if let Some(entry) = self.lock().entries[form as usize].get(key) {
            entry.called();
            return Arc::clone(entry);
        }
        let made = Arc::new(KeyEntry {
            form,
            key: key.into(),
            breaker: make(),
            turns: AtomicU8::new(0),
            evicted: AtomicBool::new(false),
        });
        let mut shared = self.lock();
        if let Some(entry) = shared.entries[form as usize].get(key) {
            entry.called();
            return Arc::clone(entry);
        }
        let capacity = shared.capacity;
        shared.evict_over(capacity - 1);
        shared.entries[form as usize].insert(Arc::clone(&made.key), Arc::clone(&made));
        shared.small.push_back(Arc::clone(&made));
        made
    }

    /// `key`'s circuit if kept, its use left as it is.
    pub(crate) fn peek(&self, form: Form, key: &str) -> Option<CircuitBreaker> {
        let shared = self.lock();
        shared.entries[form as usize]
            .get(key)
            .map(|entry| entry.breaker.clone())
    }

    /// Bounds the map to `capacity` (at least 1), evicting what is over it.
    pub(crate) fn set_capacity(&self, capacity: usize) {
        let mut shared = self.lock();
        shared.capacity = capacity.max(1);
        let capacity = shared.capacity;
        shared.evict_over(capacity);
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests;
