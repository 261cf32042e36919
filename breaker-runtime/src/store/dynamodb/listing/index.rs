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
        // A count that is not one reads as 0, and says so.
        let mut malformed = Vec::new();
        let mut counted = |attribute: &str| match item.get(attribute).map(|v| count(attribute, v)) {
            Some(Ok(count)) => u64::from(count),
            Some(Err(problem)) => {
                malformed.push(IndexProblem::unreadable(attribute, problem));
                0
            }
            None => 0,
        };
        let (open_keys, suspected_keys) = (counted(OPEN_KEYS), counted(SUSPECTED_KEYS));
        let mut index = StoredKeyIndex {
            circuit,
            open_keys,
            entries: Vec::new(),
            malformed,
            entry_attributes: 0,
            suspected_keys,
            suspected: Vec::new(),
            expiration: number(item, &self.names.expiry),
        };
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
