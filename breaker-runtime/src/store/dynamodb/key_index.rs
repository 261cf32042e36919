//! A keyed circuit's index item, `{circuit}#keys`: top-level attributes only, so the
//! first write needs no item to exist.
//!
//! | attribute | type | |
//! |---|---|---|
//! | `key_index` | N | always 1: marks the item |
//! | `open_keys` | N | how many entries there are (`ADD`ed with each add and remove) |
//! | `k:{encoded key}` | N | one per named key: its token |
//! | `suspected_keys` | N | how many suspicions there are (`ADD`ed with each suspect and unsuspect) |
//! | `s:{encoded key}` | N | one per suspected key: its token |
//!
//! The item has no TTL: every write REMOVEs the TTL attribute (older versions set one, and
//! its deletion would unname keys still open).
//!
//! Each [`KeyIndexWrite`] is one conditional `UpdateItem` (the key's attribute name sent as
//! a placeholder: an encoded key may hold any character but `#` and `~`); a lost one
//! answers the item that beat it (`ALL_OLD`), or, when the server sends none back, one
//! consistent read. An item that is not a well-formed index is an error naming the
//! attribute, never a panic: the keyed circuit's keys then fail open like any read error.

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};

use super::item::Item;
use super::{Shared, update_failed};
use crate::store::{KeyIndex, KeyIndexOutcome, KeyIndexWrite, StoreError, key_index_id};

/// Marks a keyed circuit's index item (N, always 1).
pub(super) const KEY_INDEX: &str = "key_index";
/// The index item's count of its entries (N).
pub(super) const OPEN_KEYS: &str = "open_keys";
/// The prefix of an index entry's attribute: `k:{encoded key}` (N, a token).
pub(super) const ENTRY_PREFIX: &str = "k:";
/// The index item's count of its suspicions (N).
pub(super) const SUSPECTED_KEYS: &str = "suspected_keys";
/// The prefix of a suspicion's attribute: `s:{encoded key}` (N, a token).
pub(super) const SUSPICION_PREFIX: &str = "s:";

/// Add: names the key and counts it, unless it is named already. A suspect is the same
/// write on the key's `s:` attribute (`#k`) and the suspicions' count (`#n`).
const ADD: &str = "SET #k = :token, #ki = :one ADD #n :one REMOVE #e";
const ADD_IF_ABSENT: &str = "attribute_not_exists(#k)";
/// Add within the cap: also fewer than `:cap` entries.
const ADD_IF_ROOM: &str = "attribute_not_exists(#k) AND (attribute_not_exists(#n) OR #n < :cap)";
/// Refresh: a new token for a named key.
const REFRESH: &str = "SET #k = :token REMOVE #e";
const REFRESH_IF_NAMED: &str = "attribute_exists(#k)";
/// Remove: the entry goes if its token is the one read (an unsuspect: the suspicion).
const REMOVE: &str = "REMOVE #k, #e ADD #n :minus_one";
const REMOVE_IF_TOKEN: &str = "#k = :token";

/// One request: its update, its condition, and what they use.
struct Request<'a> {
    update: &'static str,
    condition: &'static str,
    /// Placeholder and attribute name.
    names: Vec<(&'static str, &'a str)>,
    values: Vec<(&'static str, AttributeValue)>,
}

impl Shared {
    /// The index of `circuit`, strongly consistently if `consistent`; `None` if there is
    /// none, an error if the item is not a well-formed index.
    pub(super) async fn read_key_index(
        &self,
        circuit: &str,
        consistent: bool,
    ) -> Result<Option<KeyIndex>, StoreError> {
        let id = key_index_id(circuit);
        let item = self.get_item(&id, consistent).await?;
        item.map(|item| self.decode_index(&id, &item)).transpose()
    }

    /// Applies `write` to `circuit`'s index item: one conditional `UpdateItem`.
    pub(super) async fn apply_key_index(
        &self,
        circuit: &str,
        write: &KeyIndexWrite,
    ) -> Result<KeyIndexOutcome, StoreError> {
        let prefix = match write {
            KeyIndexWrite::Suspect { .. } | KeyIndexWrite::Unsuspect { .. } => SUSPICION_PREFIX,
            _ => ENTRY_PREFIX,
        };
        let entry = format!("{prefix}{}", write.key());
        let request = self.request(write, &entry);
        let id = key_index_id(circuit);
        let mut sent = self
            .client()
            .await
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.names.key(&id)))
            .update_expression(request.update)
            .condition_expression(request.condition)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        for (placeholder, name) in request.names {
            sent = sent.expression_attribute_names(placeholder, name);
        }
        for (placeholder, value) in request.values {
            sent = sent.expression_attribute_values(placeholder, value);
        }
        let error = match sent.send().await {
            Ok(_) => return Ok(KeyIndexOutcome::Won),
            Err(error) => error,
        };
        let old = match error.as_service_error().and_then(update_failed) {
            Some(Some(item)) => Some(item.clone()),
            Some(None) => self.get_item(&id, true).await?,
            None => return Err(self.error("UpdateItem", &error)),
        };
        let index = old.map(|item| self.decode_index(&id, &item)).transpose()?;
        Ok(lost(write, index))
    }

    /// The update, condition, names and values of `write`, whose entry attribute is `entry`.
    fn request<'a>(&'a self, write: &KeyIndexWrite, entry: &'a str) -> Request<'a> {
        let names = vec![("#k", entry), ("#e", self.names.expiry.as_str())];
        match write {
            KeyIndexWrite::Add { token, cap, .. } => add(names, OPEN_KEYS, *token, *cap),
            KeyIndexWrite::Suspect { token, cap, .. } => {
                add(names, SUSPECTED_KEYS, *token, Some(*cap))
            }
            KeyIndexWrite::Refresh { token, .. } => Request {
                update: REFRESH,
                condition: REFRESH_IF_NAMED,
                names,
                values: vec![(":token", number(*token))],
            },
            KeyIndexWrite::Remove { token, .. } => remove(names, OPEN_KEYS, *token),
            KeyIndexWrite::Unsuspect { token, .. } => remove(names, SUSPECTED_KEYS, *token),
        }
    }

    /// An index item as the breaker reads it; an item that is not a well-formed index is
    /// an error naming its attribute.
    fn decode_index(&self, id: &str, item: &Item) -> Result<KeyIndex, StoreError> {
        decode_index(item).map_err(|problem| {
            StoreError::new(format!(
                "item '{id}' in table '{}' is not a well-formed key index: {problem}",
                self.table
            ))
        })
    }
}

/// An add (or a suspect) of the entry `names` bind to `#k`, counted in `count` and
/// within `cap` of it.
fn add<'a>(
    mut names: Vec<(&'static str, &'a str)>,
    count: &'static str,
    token: u64,
    cap: Option<u32>,
) -> Request<'a> {
    names.extend([("#ki", KEY_INDEX), ("#n", count)]);
    let mut values = vec![(":token", number(token)), (":one", number(1))];
    values.extend(cap.map(|cap| (":cap", number(cap.into()))));
    Request {
        update: ADD,
        condition: match cap {
            Some(_) => ADD_IF_ROOM,
            None => ADD_IF_ABSENT,
        },
        names,
        values,
    }
}

/// A remove (or an unsuspect) of the entry `names` bind to `#k`, if its token is `token`,
/// counted out of `count`.
fn remove<'a>(
    mut names: Vec<(&'static str, &'a str)>,
    count: &'static str,
    token: u64,
) -> Request<'a> {
    names.push(("#n", count));
    Request {
        update: REMOVE,
        condition: REMOVE_IF_TOKEN,
        names,
        values: vec![
            (":token", number(token)),
            (":minus_one", AttributeValue::N("-1".into())),
        ],
    }
}

/// What a write that lost met, given the index as it is (`None`: no item). The index is
/// the one that beat the write, or (without `ALL_OLD`) one read after it: an add that
/// meets neither its key nor the cap there lost to an index that changed since, and says
/// so (`Lost`), so the breaker tries again rather than take a cap that no longer holds.
fn lost(write: &KeyIndexWrite, index: Option<KeyIndex>) -> KeyIndexOutcome {
    match write {
        KeyIndexWrite::Add { cap, .. } => match index {
            Some(index) => match index.token(write.key()) {
                Some(token) => KeyIndexOutcome::Exists(Some(token)),
                None if cap.is_some_and(|cap| index.open_keys >= cap) => {
                    KeyIndexOutcome::CapReached(index.open_keys)
                }
                None => KeyIndexOutcome::Lost(Some(index)),
            },
            None => KeyIndexOutcome::Lost(None),
        },
        KeyIndexWrite::Suspect { cap, .. } => match index {
            Some(index) => match index.suspicion(write.key()) {
                Some(token) => KeyIndexOutcome::Exists(Some(token)),
                None if index.suspected_keys >= *cap => {
                    KeyIndexOutcome::CapReached(index.suspected_keys)
                }
                None => KeyIndexOutcome::Lost(Some(index)),
            },
            None => KeyIndexOutcome::Lost(None),
        },
        _ => KeyIndexOutcome::Lost(index),
    }
}

/// `item` as a key index: the marker, a count and entries that are numbers.
fn decode_index(item: &Item) -> Result<KeyIndex, String> {
    if !item.contains_key(KEY_INDEX) {
        return Err(format!("attribute '{KEY_INDEX}' is missing"));
    }
    let counted = |name: &str| match item.get(name) {
        None => Ok(0),
        Some(value) => count(name, value),
    };
    let mut index = KeyIndex {
        open_keys: counted(OPEN_KEYS)?,
        suspected_keys: counted(SUSPECTED_KEYS)?,
        ..KeyIndex::default()
    };
    for (attribute, value) in item {
        if let Some(key) = attribute.strip_prefix(ENTRY_PREFIX) {
            let token = token(attribute, value)?;
            index.entries.insert(key.to_owned(), token);
        } else if let Some(key) = attribute.strip_prefix(SUSPICION_PREFIX) {
            let token = token(attribute, value)?;
            index.suspected.insert(key.to_owned(), token);
        }
    }
    Ok(index)
}

/// The `open_keys` count: a non-negative number that fits (concurrent removes of entries
/// gone already could take it below 0 only if a store broke the conditions).
pub(super) fn count(attribute: &str, value: &AttributeValue) -> Result<u32, String> {
    let AttributeValue::N(number) = value else {
        return Err(format!("attribute '{attribute}' is not a number (N)"));
    };
    number
        .parse::<u32>()
        .map_err(|_| format!("attribute '{attribute}' is not a count: {number}"))
}

/// An entry's token: a non-negative integer.
pub(super) fn token(attribute: &str, value: &AttributeValue) -> Result<u64, String> {
    let AttributeValue::N(number) = value else {
        return Err(format!("attribute '{attribute}' is not a number (N)"));
    };
    number
        .parse::<u64>()
        .map_err(|_| format!("attribute '{attribute}' is not a token: {number}"))
}

fn number(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(value: &str) -> AttributeValue {
        AttributeValue::N(value.into())
    }

    fn item(pairs: &[(&str, AttributeValue)]) -> Item {
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), value.clone()))
            .collect()
    }

    #[test]
    fn an_index_item_decodes_its_entries_and_count() {
        let index = decode_index(&item(&[
            ("id", AttributeValue::S("webhooks#keys".into())),
            (KEY_INDEX, n("1")),
            (OPEN_KEYS, n("2")),
            ("k:shop%2317", n("1700000000000123")),
            ("k:", n("7")),
            ("expiration", n("1700003600")),
        ]))
        .unwrap();
        assert_eq!(index.open_keys, 2);
        assert_eq!(index.token("shop%2317"), Some(1_700_000_000_000_123));
        assert_eq!(index.token(""), Some(7), "the empty key is a key");
        assert_eq!(index.entries.len(), 2);
        assert!(index.suspected.is_empty());
        let suspected = decode_index(&item(&[
            (KEY_INDEX, n("1")),
            (SUSPECTED_KEYS, n("1")),
            ("s:shop%2317", n("1700000000000456")),
        ]))
        .unwrap();
        assert_eq!((suspected.open_keys, suspected.suspected_keys), (0, 1));
        assert_eq!(
            suspected.suspicion("shop%2317"),
            Some(1_700_000_000_000_456)
        );
        assert_eq!(
            suspected.token("shop%2317"),
            None,
            "a suspicion is no entry"
        );
    }

    #[test]
    fn a_malformed_index_is_an_error_naming_the_attribute() {
        let cases = [
            (item(&[(OPEN_KEYS, n("1"))]), "'key_index' is missing"),
            (
                item(&[
                    (KEY_INDEX, n("1")),
                    (OPEN_KEYS, AttributeValue::S("1".into())),
                ]),
                "'open_keys' is not a number",
            ),
            (
                item(&[(KEY_INDEX, n("1")), (OPEN_KEYS, n("-1"))]),
                "'open_keys' is not a count: -1",
            ),
            (
                item(&[(KEY_INDEX, n("1")), ("k:a", AttributeValue::Bool(true))]),
                "'k:a' is not a number",
            ),
            (
                item(&[(KEY_INDEX, n("1")), ("k:a", n("1.5"))]),
                "'k:a' is not a token: 1.5",
            ),
            (
                item(&[(KEY_INDEX, n("1")), ("s:a", n("x"))]),
                "'s:a' is not a token: x",
            ),
            (
                item(&[(KEY_INDEX, n("1")), (SUSPECTED_KEYS, n("-2"))]),
                "'suspected_keys' is not a count: -2",
            ),
        ];
        for (item, problem) in cases {
            let error = decode_index(&item).unwrap_err();
            assert!(error.contains(problem), "{error} should say {problem}");
        }
    }

    #[test]
    fn every_request_binds_exactly_the_placeholders_it_uses() {
        let store = crate::store::DynamoDbStore::builder()
            .table_name("t")
            .build()
            .unwrap();
        let writes = [
            KeyIndexWrite::Add {
                key: "a".into(),
                token: 1,
                cap: Some(3),
            },
            KeyIndexWrite::Add {
                key: "a".into(),
                token: 1,
                cap: None,
            },
            KeyIndexWrite::Suspect {
                key: "a".into(),
                token: 1,
                cap: 3,
            },
            KeyIndexWrite::Unsuspect {
                key: "a".into(),
                token: 1,
            },
            KeyIndexWrite::Refresh {
                key: "a".into(),
                token: 1,
            },
            KeyIndexWrite::Remove {
                key: "a".into(),
                token: 1,
            },
        ];
        for write in &writes {
            let request = store.shared.request(write, "k:a");
            let text = format!("{} {}", request.update, request.condition);
            let used = |placeholder: &str| {
                text.split(|c: char| !(c.is_alphanumeric() || "#:_".contains(c)))
                    .any(|token| token == placeholder)
            };
            for (placeholder, _) in &request.names {
                assert!(used(placeholder), "{write:?}: {placeholder} unused");
            }
            for (placeholder, _) in &request.values {
                assert!(used(placeholder), "{write:?}: {placeholder} unused");
            }
            let bound = request.names.len() + request.values.len();
            let mentioned = text
                .split(|c: char| !(c.is_alphanumeric() || "#:_".contains(c)))
                .filter(|t| t.starts_with('#') || t.starts_with(':'))
                .collect::<std::collections::BTreeSet<_>>()
                .len();
            assert_eq!(bound, mentioned, "{write:?}: every placeholder bound");
        }
    }

    #[test]
    fn a_lost_add_tells_an_entry_from_the_cap() {
        let add = KeyIndexWrite::Add {
            key: "a".into(),
            token: 2,
            cap: Some(1),
        };
        let mut index = KeyIndex::default();
        index.entries.insert("b".into(), 5);
        index.open_keys = 1;
        assert_eq!(
            lost(&add, Some(index.clone())),
            KeyIndexOutcome::CapReached(1)
        );
        let emptier = KeyIndex::default();
        assert_eq!(
            lost(&add, Some(emptier.clone())),
            KeyIndexOutcome::Lost(Some(emptier)),
            "an index read after a remove: try again"
        );
        index.entries.insert("a".into(), 4);
        assert_eq!(lost(&add, Some(index)), KeyIndexOutcome::Exists(Some(4)));
        assert_eq!(lost(&add, None), KeyIndexOutcome::Lost(None));
    }
}
