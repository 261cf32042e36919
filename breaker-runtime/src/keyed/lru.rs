//! `Lru`: a map bounded to a capacity that evicts its least recently used entry. A use
//! counter per entry: a hit is one increment, an eviction one scan of the entries, only
//! when a new key comes to a full map (a thousand comparisons for the default bound, far
//! below the cost of the store read a new key may bring).

use std::collections::HashMap;
use std::sync::Arc;

/// A key as the map knows it: in full, or by its hashed form (a very long key). The two
/// never meet, whatever a whole key spells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    Whole = 0,
    Hashed = 1,
}

/// At most `capacity` values by key; the least recently used goes first.
#[derive(Debug)]
pub(crate) struct Lru<V> {
    /// By [`Form`]: each key and its value, with when it was last used.
    entries: [HashMap<Arc<str>, (V, u64)>; 2],
    uses: u64,
    capacity: usize,
}

impl<V: Clone> Lru<V> {
    /// An empty map of at most `capacity` (at least 1) values.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            entries: [HashMap::new(), HashMap::new()],
            uses: 0,
            capacity: capacity.max(1),
        }
    }

    /// `key`'s value, now the most recently used.
    pub(crate) fn get(&mut self, form: Form, key: &str) -> Option<V> {
        self.uses += 1;
        let uses = self.uses;
        self.entries[form as usize]
            .get_mut(key)
            .map(|(value, used)| {
                *used = uses;
                value.clone()
            })
    }

    /// `key`'s value, leaving the order as it is.
    pub(crate) fn peek(&self, form: Form, key: &str) -> Option<&V> {
        self.entries[form as usize].get(key).map(|(value, _)| value)
    }

    /// Adds `value` under `key` as the most recently used, evicting the least recently used
    /// entry if the map is full.
    pub(crate) fn insert(&mut self, form: Form, key: Arc<str>, value: V) {
        let len = self.len();
        if !self.entries[form as usize].contains_key(&key) && len >= self.capacity {
            self.evict(len + 1 - self.capacity);
        }
        self.uses += 1;
        self.entries[form as usize].insert(key, (value, self.uses));
    }

    /// Bounds the map to `capacity` (at least 1), evicting what is over it.
    pub(crate) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity.max(1);
        let over = self.len().saturating_sub(self.capacity);
        self.evict(over);
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.iter().map(HashMap::len).sum()
    }

    /// Evicts the `n` least recently used entries.
    fn evict(&mut self, n: usize) {
        for _ in 0..n {
            let oldest = self
                .entries
                .iter()
                .enumerate()
                .flat_map(|(form, entries)| entries.iter().map(move |entry| (form, entry)))
                .min_by_key(|(_, (_, (_, used)))| *used)
                .map(|(form, (key, _))| (form, Arc::clone(key)));
            if let Some((form, key)) = oldest {
                self.entries[form].remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Form::Whole;
    use super::*;

    #[test]
    fn the_least_recently_used_key_goes_first() {
        let mut lru = Lru::new(2);
        lru.insert(Whole, "a".into(), 1);
        lru.insert(Whole, "b".into(), 2);
        assert_eq!(lru.get(Whole, "a"), Some(1));
        lru.insert(Whole, "c".into(), 3);
        assert_eq!(
            (
                lru.peek(Whole, "a"),
                lru.peek(Whole, "b"),
                lru.peek(Whole, "c")
            ),
            (Some(&1), None, Some(&3))
        );
        assert_eq!(lru.len(), 2);
    }

    #[test]
    fn a_smaller_capacity_evicts_down_to_it_and_never_below_one() {
        let mut lru = Lru::new(3);
        for (i, key) in ["a", "b", "c"].into_iter().enumerate() {
            lru.insert(Whole, key.into(), i);
        }
        lru.set_capacity(0);
        assert_eq!(lru.len(), 1);
        assert_eq!(lru.peek(Whole, "c"), Some(&2), "the most recent stays");
        lru.insert(Whole, "c".into(), 5);
        assert_eq!(
            (lru.len(), lru.peek(Whole, "c")),
            (1, Some(&5)),
            "replacing evicts nothing"
        );
    }

    #[test]
    fn a_hashed_form_and_a_whole_key_spelled_alike_are_two_keys_under_one_bound() {
        let mut lru = Lru::new(2);
        lru.insert(Whole, "p~0123".into(), 1);
        lru.insert(Form::Hashed, "p~0123".into(), 2);
        assert_eq!(
            (lru.get(Whole, "p~0123"), lru.get(Form::Hashed, "p~0123")),
            (Some(1), Some(2))
        );
        lru.insert(Whole, "c".into(), 3);
        assert_eq!(lru.len(), 2, "one bound for both forms");
        assert_eq!(
            lru.peek(Whole, "p~0123"),
            None,
            "the least recently used went"
        );
    }
}
