//! The index of a keyed circuit: one small item per circuit naming the keys whose items
//! must be read (open, half-open or suspected), so healthy keys cost no reads of their own.
//! [`KeyIndexWrite`] holds its five conditional writes and, like
//! [`RecordWrite`](super::RecordWrite), how a store applies them
//! ([`KeyIndexWrite::apply`]).

use std::collections::BTreeMap;

use super::key_ids::decode_key;

/// A keyed circuit's index as stored: the keys whose items must be read, each with the
/// token of its last add or refresh.
///
/// `#[non_exhaustive]`: build one with [`default`](Default::default) and set the public
/// fields.
///
/// ```
/// use breaker_runtime::store::implement::KeyIndex;
/// let mut index = KeyIndex::default();
/// index.entries.insert("shop%2317".into(), 1_700_000_000_000_123);
/// index.open_keys = 1;
/// assert_eq!(index.token("shop%2317"), Some(1_700_000_000_000_123));
/// assert_eq!(index.keys(), vec!["shop#17".to_owned()]);
/// assert_eq!(KeyIndex::written_at_millis(1_700_000_000_000_123), 1_700_000_000_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct KeyIndex {
    /// By encoded key (as in [`key_item_id`](super::key_item_id)): the entry's token,
    /// `written_at_millis * 1000 + a random number below 1000`.
    pub entries: BTreeMap<String, u64>,
    /// How many entries the index holds, as the store counts them (the cap's condition
    /// compares it).
    pub open_keys: u32,
    /// By encoded key: the keys under a suspicion of the fleet, each with the token of its
    /// naming. Apart from `entries`: a suspicion takes no slot of the cap, and goes once
    /// it has ended ([`KeyIndexWrite::Unsuspect`]).
    pub suspected: BTreeMap<String, u64>,
    /// How many suspicions the index holds, as the store counts them (bounded apart).
    pub suspected_keys: u32,
}

impl KeyIndex {
    /// The token of `encoded`'s entry, if the index names it.
    pub fn token(&self, encoded: &str) -> Option<u64> {
        self.entries.get(encoded).copied()
    }

    /// The token of `encoded`'s suspicion, if the index names one.
    pub fn suspicion(&self, encoded: &str) -> Option<u64> {
        self.suspected.get(encoded).copied()
    }

    /// The keys the index names, decoded ([`decode_key`]), in the order of their encoding.
    pub fn keys(&self) -> Vec<String> {
        self.entries.keys().map(|k| decode_key(k)).collect()
    }

    /// When (unix millis) the add or refresh that wrote `token` was made.
    pub fn written_at_millis(token: u64) -> u64 {
        token / 1000
    }
}

/// One conditional write to a keyed circuit's index (`{circuit}#keys`).
///
/// The index item has no TTL: it is one small item per circuit, and a deletion by TTL
/// would unname keys still open or under an operator's override; its entries go by the
/// removals and the stale-entry checks of the environments reading it. A store takes a TTL
/// attribute off the item at each write (one written by older versions).
/// `#[non_exhaustive]`: later versions may add writes; a store applies them with [`apply`](Self::apply) or as
/// the same conditions in its own words (docs/dynamodb.md).
///
/// ```
/// use breaker_runtime::store::implement::{KeyIndex, KeyIndexOutcome, KeyIndexWrite};
/// let mut index = None;
/// let add = |key: &str| KeyIndexWrite::Add { key: key.into(), token: 1, cap: Some(1) };
/// assert_eq!(add("a").apply(&mut index), KeyIndexOutcome::Won);
/// assert_eq!(add("a").apply(&mut index), KeyIndexOutcome::Exists(Some(1)));
/// assert_eq!(add("b").apply(&mut index), KeyIndexOutcome::CapReached(1));
/// let remove = KeyIndexWrite::Remove { key: "a".into(), token: 1 };
/// assert_eq!(remove.apply(&mut index), KeyIndexOutcome::Won);
/// assert_eq!(index.unwrap().open_keys, 0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyIndexWrite {
    /// Names `key` with `token`, counting it in `open_keys`. Allowed when the index does not
    /// name `key` and, with a `cap`, holds fewer than `cap` entries; creates the index.
    Add {
        /// The encoded key.
        key: String,
        /// The new entry's token.
        token: u64,
        /// At most this many entries (`max_open_keys`); `None`: no cap (an operator's
        /// override).
        cap: Option<u32>,
    },
    /// Gives `key`'s entry a new token (the key trips again while named). Allowed when
    /// the index names `key`.
    Refresh {
        /// The encoded key.
        key: String,
        /// The entry's new token.
        token: u64,
    },
    /// Removes `key`'s entry. Allowed when the entry's token is `token` (no add or refresh
    /// came since it was read).
    Remove {
        /// The encoded key.
        key: String,
        /// The token read.
        token: u64,
    },
    /// Names `key` as suspected with `token`, counting it in `suspected_keys`, not in
    /// `open_keys`. Allowed when the index names no suspicion of `key` and holds fewer
    /// than `cap` suspicions; creates the index.
    Suspect {
        /// The encoded key.
        key: String,
        /// The suspicion's token.
        token: u64,
        /// At most this many suspicions at once.
        cap: u32,
    },
    /// Removes `key`'s suspicion. Allowed when its token is `token`.
    Unsuspect {
        /// The encoded key.
        key: String,
        /// The token read.
        token: u64,
    },
}

/// What a [`KeyIndexWrite`] met.
///
/// ```
/// use breaker_runtime::store::implement::{KeyIndexOutcome, KeyIndexWrite};
/// let mut index = None;
/// let refresh = KeyIndexWrite::Refresh { key: "a".into(), token: 2 };
/// assert_eq!(refresh.apply(&mut index), KeyIndexOutcome::Lost(None), "no entry to refresh");
/// let add = KeyIndexWrite::Add { key: "a".into(), token: 1, cap: None };
/// assert_eq!(add.apply(&mut index), KeyIndexOutcome::Won);
/// assert_eq!(add.apply(&mut index), KeyIndexOutcome::Exists(Some(1)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyIndexOutcome {
    /// The condition held; the index now says what the write said.
    Won,
    /// An add (or a suspect) met an entry (or a suspicion) of its key: that one's token
    /// (`None` if the store does not say).
    Exists(Option<u64>),
    /// An add met the cap: the index holds this many entries (a suspect: this many
    /// suspicions).
    CapReached(u32),
    /// A refresh met no entry of its key, or a remove another token (or an add lost to an
    /// index that changed before the store could say why): the index as it is (`None`:
    /// there is none).
    Lost(Option<KeyIndex>),
}

impl KeyIndexWrite {
    /// The encoded key the write is about.
    pub fn key(&self) -> &str {
        match self {
            Self::Add { key, .. }
            | Self::Refresh { key, .. }
            | Self::Remove { key, .. }
            | Self::Suspect { key, .. }
            | Self::Unsuspect { key, .. } => key,
        }
    }

    /// Applies the write to `index` (`None`: no index item) if its condition holds,
    /// atomically as far as the caller holds `index`: the reference every store must match.
    pub fn apply(&self, index: &mut Option<KeyIndex>) -> KeyIndexOutcome {
        match self {
            Self::Add { key, token, cap } => add(index, Named::Entry, key, *token, *cap),
            Self::Suspect { key, token, cap } => {
                add(index, Named::Suspicion, key, *token, Some(*cap))
            }
            Self::Refresh { key, token, .. } => {
                match index.as_mut().and_then(|i| i.entries.get_mut(key)) {
                    Some(entry) => {
                        *entry = *token;
                        KeyIndexOutcome::Won
                    }
                    None => KeyIndexOutcome::Lost(index.clone()),
                }
            }
            Self::Remove { key, token } => remove(index, Named::Entry, key, *token),
            Self::Unsuspect { key, token } => remove(index, Named::Suspicion, key, *token),
        }
    }
}

/// Which of an index's namings a write is about: an entry (counted by `open_keys`) or a
/// suspicion (counted by `suspected_keys`).
#[derive(Clone, Copy)]
enum Named {
    Entry,
    Suspicion,
}

impl Named {
    /// The namings of this kind in `index`, and their count.
    fn of(self, index: &mut KeyIndex) -> (&mut BTreeMap<String, u64>, &mut u32) {
        match self {
            Self::Entry => (&mut index.entries, &mut index.open_keys),
            Self::Suspicion => (&mut index.suspected, &mut index.suspected_keys),
        }
    }
}

/// Names `key` with `token` among `named`, counting it, unless it is named already or
/// (with a `cap`) the count has reached it; creates the index, but not for a refusal.
fn add(
    index: &mut Option<KeyIndex>,
    named: Named,
    key: &str,
    token: u64,
    cap: Option<u32>,
) -> KeyIndexOutcome {
    let current = index.get_or_insert_with(KeyIndex::default);
    let (namings, count) = named.of(current);
    if let Some(existing) = namings.get(key) {
        return KeyIndexOutcome::Exists(Some(*existing));
    }
    if let Some(cap) = cap
        && *count >= cap
    {
        let counted = *count;
        if *current == KeyIndex::default() {
            *index = None;
        }
        return KeyIndexOutcome::CapReached(counted);
    }
    namings.insert(key.to_owned(), token);
    *count = count.saturating_add(1);
    KeyIndexOutcome::Won
}

/// Removes `key`'s naming among `named` if its token is `token`.
fn remove(index: &mut Option<KeyIndex>, named: Named, key: &str, token: u64) -> KeyIndexOutcome {
    let Some(current) = index.as_mut() else {
        return KeyIndexOutcome::Lost(None);
    };
    let (namings, count) = named.of(current);
    if namings.get(key) != Some(&token) {
        return KeyIndexOutcome::Lost(index.clone());
    }
    namings.remove(key);
    // ADD -1: the count follows the namings, whatever it was.
    *count = count.saturating_sub(1);
    KeyIndexOutcome::Won
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(key: &str, token: u64, cap: Option<u32>) -> KeyIndexWrite {
        KeyIndexWrite::Add {
            key: key.into(),
            token,
            cap,
        }
    }

    #[test]
    fn a_refresh_needs_the_entry_and_a_remove_its_token() {
        let mut index = None;
        let refresh = KeyIndexWrite::Refresh {
            key: "a".into(),
            token: 2,
        };
        assert_eq!(refresh.apply(&mut index), KeyIndexOutcome::Lost(None));
        assert_eq!(add("a", 1, None).apply(&mut index), KeyIndexOutcome::Won);
        assert_eq!(refresh.apply(&mut index), KeyIndexOutcome::Won);
        let stale = KeyIndexWrite::Remove {
            key: "a".into(),
            token: 1,
        };
        let KeyIndexOutcome::Lost(Some(current)) = stale.apply(&mut index) else {
            panic!("a remove with an old token must lose");
        };
        assert_eq!(current.token("a"), Some(2));
        assert_eq!(current.open_keys, 1);
    }

    #[test]
    fn the_cap_counts_entries_and_an_uncapped_add_passes_it() {
        let mut index = None;
        assert_eq!(
            add("a", 1, Some(0)).apply(&mut index),
            KeyIndexOutcome::CapReached(0)
        );
        assert_eq!(index, None, "a refused add creates nothing");
        assert_eq!(add("a", 1, Some(2)).apply(&mut index), KeyIndexOutcome::Won);
        assert_eq!(add("b", 1, Some(2)).apply(&mut index), KeyIndexOutcome::Won);
        assert_eq!(
            add("c", 1, Some(2)).apply(&mut index),
            KeyIndexOutcome::CapReached(2)
        );
        assert_eq!(add("c", 1, None).apply(&mut index), KeyIndexOutcome::Won);
        assert_eq!(index.as_ref().map(|i| i.open_keys), Some(3));
    }

    #[test]
    fn suspicions_are_counted_and_capped_apart_from_open_keys() {
        let mut index = None;
        let suspect = |key: &str, token| KeyIndexWrite::Suspect {
            key: key.into(),
            token,
            cap: 2,
        };
        assert_eq!(suspect("a", 1).apply(&mut index), KeyIndexOutcome::Won);
        assert_eq!(
            suspect("a", 2).apply(&mut index),
            KeyIndexOutcome::Exists(Some(1))
        );
        assert_eq!(suspect("b", 1).apply(&mut index), KeyIndexOutcome::Won);
        assert_eq!(
            suspect("c", 1).apply(&mut index),
            KeyIndexOutcome::CapReached(2)
        );
        assert_eq!(
            add("c", 1, Some(1)).apply(&mut index),
            KeyIndexOutcome::Won,
            "the cap of open keys is untouched"
        );
        let stale = KeyIndexWrite::Unsuspect {
            key: "a".into(),
            token: 2,
        };
        assert!(matches!(stale.apply(&mut index), KeyIndexOutcome::Lost(_)));
        let unsuspect = KeyIndexWrite::Unsuspect {
            key: "a".into(),
            token: 1,
        };
        assert_eq!(unsuspect.apply(&mut index), KeyIndexOutcome::Won);
        let index = index.unwrap();
        assert_eq!((index.open_keys, index.suspected_keys), (1, 1));
        assert_eq!((index.token("c"), index.suspicion("b")), (Some(1), Some(1)));
    }
}
