//! What a per-circuit command acts on: a circuit's item, or with `--key` one key's item of
//! a keyed circuit (`{name}#key={encoded key}`), and how the command names it.

use anyhow::bail;
use breaker_runtime::__protocol::{decode_key, key_item_id, split_key_item_id};

use crate::printable::printable;

/// The item a command reads and writes, and its name for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The item's id (or sort key value).
    pub(crate) id: String,
    /// The keyed circuit and the key, when the item is a key's.
    pub(crate) key: Option<KeyOf>,
}

/// A key of a keyed circuit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyOf {
    /// The keyed circuit's name.
    pub(crate) circuit: String,
    /// The key as encoded in its item's id and in the index.
    pub(crate) encoded: String,
    /// The key as given (`--key`), or decoded from an item id; `None` for a long key read
    /// from an id, which holds only a prefix of it and a hash: such a key is named by its
    /// item's id, which every command takes back.
    pub(crate) key: Option<String>,
}

impl Target {
    /// `name`, or with `key` that key's item of the keyed circuit `name`. A name that is a
    /// key item's id (`webhooks#key=shop-17`, as `breaker list --json` gives it) is that key.
    pub(crate) fn new(name: &str, key: Option<&str>) -> anyhow::Result<Self> {
        if name.trim().is_empty() {
            bail!("the circuit name must not be empty");
        }
        let Some(key) = key else {
            let key = split_key_item_id(name).map(|(circuit, encoded)| KeyOf {
                circuit: circuit.to_owned(),
                encoded: encoded.to_owned(),
                key: (!is_hashed(encoded)).then(|| decode_key(encoded)),
            });
            return Ok(Self {
                id: name.to_owned(),
                key,
            });
        };
        if is_shown_hash(key) {
            bail!(
                "'{key}' is how breaker shows a long key (its prefix, '…~' and a hash), not the \
                 key itself: name it by its item id, as `breaker list` or `breaker show {name} \
                 --keys` prints it ({name}#key=…)"
            );
        }
        let id = key_item_id(name, key);
        let encoded = split_key_item_id(&id)
            .map(|(_, encoded)| encoded.to_owned())
            .expect("a key item's id splits");
        Ok(Self {
            key: Some(KeyOf {
                circuit: name.to_owned(),
                encoded,
                key: Some(key.to_owned()),
            }),
            id,
        })
    }

    /// The key an index of `circuit` names by `encoded` (an entry's attribute without `k:`).
    pub(crate) fn of_entry(circuit: &str, encoded: &str) -> Self {
        let key = KeyOf {
            circuit: circuit.to_owned(),
            encoded: encoded.to_owned(),
            key: (!is_hashed(encoded)).then(|| decode_key(encoded)),
        };
        Self {
            id: key.id(),
            key: Some(key),
        }
    }

    /// `webhooks[shop-17]` for a key, else the circuit's name; printable.
    pub(crate) fn label(&self) -> String {
        match &self.key {
            Some(key) => key.label(),
            None => printable(&self.id),
        }
    }

    /// The command-line arguments that name it again: `webhooks --key shop-17`, or a
    /// hashed key's item id.
    pub(crate) fn args(&self) -> String {
        match &self.key {
            Some(KeyOf {
                circuit,
                key: Some(key),
                ..
            }) => format!("{} --key {}", quoted(circuit), quoted(key)),
            Some(key) => quoted(&key.id()),
            None => quoted(&self.id),
        }
    }
}

impl KeyOf {
    /// `webhooks[shop-17]`, or a hashed key's item id; printable.
    pub(crate) fn label(&self) -> String {
        match &self.key {
            Some(key) => format!("{}[{}]", printable(&self.circuit), printable(key)),
            None => printable(&self.id()),
        }
    }

    /// The key as a command takes it back: the key, or a hashed key's item id (the key
    /// itself is not in the table); printable.
    pub(crate) fn shown(&self) -> String {
        printable(self.key.as_deref().unwrap_or(&self.id()))
    }

    /// The key's item id.
    pub(crate) fn id(&self) -> String {
        format!("{}#key={}", self.circuit, self.encoded)
    }
}

/// Whether an encoded key is the hashed form of a long key: `~` is always escaped in a key,
/// so one in the encoded form marks the hash.
fn is_hashed(encoded: &str) -> bool {
    encoded.contains('~')
}

/// Whether `key` is the shown form of a long key (`decode_key` of a hashed id, as hooks and
/// logs name a key over 1 KB): a prefix, `…~` and 16 hex digits. Given to `--key`, it would
/// name a key of its own that no environment calls.
fn is_shown_hash(key: &str) -> bool {
    key.rsplit_once("…~")
        .is_some_and(|(_, hash)| hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `text` as a shell word: as is when it is plain, else in single quotes.
fn quoted(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || "-_.:/@+=,".contains(c));
    match plain {
        true => printable(text),
        false => format!("'{}'", printable(&text.replace('\'', r"'\''"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_targets_its_item_and_reads_as_circuit_and_key() {
        let target = Target::new("webhooks", Some("shop#17")).unwrap();
        assert_eq!(target.id, "webhooks#key=shop%2317");
        assert_eq!(target.label(), "webhooks[shop#17]");
        assert_eq!(target.args(), "webhooks --key 'shop#17'");
    }

    #[test]
    fn a_key_items_id_is_that_key() {
        let target = Target::new("webhooks#key=shop%2317", None).unwrap();
        let key = target.key.as_ref().expect("a key");
        assert_eq!(
            (key.circuit.as_str(), key.key.as_deref()),
            ("webhooks", Some("shop#17"))
        );
        assert_eq!(target.id, "webhooks#key=shop%2317");
        assert_eq!(Target::new("payments", None).unwrap().key, None);
    }

    #[test]
    fn a_hashed_key_is_named_by_its_item_id() {
        let long = "k".repeat(100);
        let id = key_item_id("webhooks", &long);
        let target = Target::new(&id, None).unwrap();
        let key = target.key.as_ref().expect("a key");
        assert_eq!(key.key, None, "the id does not hold the key");
        assert_eq!(
            (target.label(), key.shown(), key.id()),
            (id.clone(), id.clone(), id.clone())
        );
        assert_eq!(target.args(), format!("'{id}'"));
        // Given whole, the key names itself.
        let given = Target::new("webhooks", Some(&long)).unwrap();
        assert_eq!(given.id, id);
        assert_eq!(given.args(), format!("webhooks --key {long}"));
    }

    #[test]
    fn the_shown_form_of_a_long_key_is_refused_as_a_key() {
        let long = "k".repeat(2_000);
        let shown = decode_key(
            split_key_item_id(&key_item_id("webhooks", &long))
                .unwrap()
                .1,
        );
        let refused = Target::new("webhooks", Some(&shown))
            .unwrap_err()
            .to_string();
        assert!(refused.contains("item id"), "{refused}");
        // A key that only looks a little like it is a key.
        assert!(Target::new("webhooks", Some("a…~xyz")).is_ok());
    }

    #[test]
    fn an_empty_key_is_a_key_and_an_empty_name_is_refused() {
        let target = Target::new("webhooks", Some("")).unwrap();
        assert_eq!(
            (target.id.as_str(), target.label()),
            ("webhooks#key=", "webhooks[]".into())
        );
        assert!(Target::new(" ", Some("k")).is_err());
    }
}
