//! `Lru`: a map bounded to a capacity that evicts its least recently used entry. A use
//! counter per entry: a hit is one increment, an eviction one scan of the entries, only
//! when a new key comes to a full map (a thousand comparisons for the default bound, far
//! below the cost of the store read a new key may bring).

use std::collections::HashMap;
use std::sync::Arc;

/// At most `capacity` values by key; the least recently used goes first.
#[derive(Debug)]
pub(crate) struct Lru<V> {
    entries: HashMap<Arc<str>, (V, u64)>,
    uses: u64,
    capacity: usize,
}

impl<V: Clone> Lru<V> {
    /// An empty map of at most `capacity` (at least 1) values.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            entries: HashMap::new(),
            uses: 0,
            capacity: capacity.max(1),
        }
    }

    /// `key`'s value, now the most recently used.
    pub(crate) fn get(&mut self, key: &str) -> Option<V> {
        self.uses += 1;
        let uses = self.uses;
        self.entries.get_mut(key).map(|(value, used)| {
            *used = uses;
            value.clone()
        })
    }

    /// `key`'s value, leaving the order as it is.
    pub(crate) fn peek(&self, key: &str) -> Option<&V> {
        self.entries.get(key).map(|(value, _)| value)
    }

    /// Adds `value` under `key` as the most recently used, evicting the least recently used
    /// entry if the map is full.
    pub(crate) fn insert(&mut self, key: Arc<str>, value: V) {
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            self.evict(self.entries.len() + 1 - self.capacity);
        }
        self.uses += 1;
        self.entries.insert(key, (value, self.uses));
    }

    /// Bounds the map to `capacity` (at least 1), evicting what is over it.
    pub(crate) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity.max(1);
        let over = self.entries.len().saturating_sub(self.capacity);
        self.evict(over);
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Evicts the `n` least recently used entries.
    fn evict(&mut self, n: usize) {
        for _ in 0..n {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| Arc::clone(key));
            if let Some(key) = oldest {
                self.entries.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_key_goes_first() {
        let mut lru = Lru::new(2);
        lru.insert("a".into(), 1);
        lru.insert("b".into(), 2);
        assert_eq!(lru.get("a"), Some(1));
        lru.insert("c".into(), 3);
        assert_eq!(
            (lru.peek("a"), lru.peek("b"), lru.peek("c")),
            (Some(&1), None, Some(&3))
        );
        assert_eq!(lru.len(), 2);
    }

    #[test]
    fn a_smaller_capacity_evicts_down_to_it_and_never_below_one() {
        let mut lru = Lru::new(3);
        for (i, key) in ["a", "b", "c"].into_iter().enumerate() {
            lru.insert(key.into(), i);
        }
        lru.set_capacity(0);
        assert_eq!(lru.len(), 1);
        assert_eq!(lru.peek("c"), Some(&2), "the most recent stays");
        lru.insert("c".into(), 5);
        assert_eq!(
            (lru.len(), lru.peek("c")),
            (1, Some(&5)),
            "replacing evicts nothing"
        );
    }
}
