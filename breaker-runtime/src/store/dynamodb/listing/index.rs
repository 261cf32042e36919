//! A keyed circuit's index item as an operator sees it: its entries, its suspicions, and
//! every attribute the breaker would not have written.

use super::super::item::Item;
use super::super::key_index::{
    ENTRY_PREFIX, OPEN_KEYS, SUSPECTED_KEYS, SUSPICION_PREFIX, count, token,
};
use super::{INDEX_SUFFIX, IndexProblem, Shared, StoredKeyIndex, number};

impl Shared {
    /// An index item as an operator sees it; `None` for one without a string name.
    pub(super) fn stored_index(&self, item: &Item) -> Option<StoredKeyIndex> {
        let name = self.name_of(item)?;
        let circuit = name.strip_suffix(INDEX_SUFFIX).unwrap_or(name).to_owned();
        let mut index = StoredKeyIndex {
            circuit,
            open_keys: 0,
            entries: Vec::new(),
            malformed: Vec::new(),
            entry_attributes: 0,
            suspected_keys: 0,
            suspected: Vec::new(),
            expiration: number(item, &self.names.expiry),
        };
        if let Some(value) = item.get(SUSPECTED_KEYS) {
            match count(SUSPECTED_KEYS, value) {
                Ok(count) => index.suspected_keys = count.into(),
                Err(problem) => index
                    .malformed
                    .push(IndexProblem::unreadable(SUSPECTED_KEYS, problem)),
            }
        }
        if let Some(value) = item.get(OPEN_KEYS) {
            match count(OPEN_KEYS, value) {
                Ok(count) => index.open_keys = count.into(),
                Err(problem) => index.malformed.push(IndexProblem {
                    attribute: OPEN_KEYS.to_owned(),
                    problem,
                    unreadable: true,
                }),
            }
        }
        for (attribute, value) in item {
            if let Some(key) = attribute.strip_prefix(SUSPICION_PREFIX) {
                // The breaker fails to read the whole index on a malformed suspicion.
                match token(attribute, value) {
                    Ok(token) => index.suspected.push((key.to_owned(), token / 1000)),
                    Err(problem) => index
                        .malformed
                        .push(IndexProblem::unreadable(attribute, problem)),
                }
                continue;
            }
            let Some(key) = attribute.strip_prefix(ENTRY_PREFIX) else {
                continue;
            };
            index.entry_attributes += 1;
            let problem = |problem: String, unreadable| IndexProblem {
                attribute: attribute.clone(),
                problem,
                unreadable,
            };
            match token(attribute, value) {
                Err(why) => index.malformed.push(problem(why, true)),
                // The breaker reads it, but it names no key's item.
                Ok(_) if crate::store::split_key_item_id(&format!("c#key={key}")).is_none() => {
                    index.malformed.push(problem(
                        format!("attribute '{attribute}' names no key: no key encodes to '{key}'"),
                        false,
                    ));
                }
                // A token is the write's unix milliseconds × 1000 plus a random part.
                Ok(token) => index.entries.push((key.to_owned(), token / 1000)),
            }
        }
        index.entries.sort();
        index.suspected.sort();
        index
            .malformed
            .sort_by(|a, b| a.attribute.cmp(&b.attribute));
        Some(index)
    }
}
