//! The ids of a keyed circuit's items: one per key (`{circuit}#key={encoded key}`) and one
//! index per circuit (`{circuit}#keys`).
//!
//! A key is encoded so that its id splits without ambiguity whatever the circuit's name and
//! the key hold: `%` becomes `%25`, `#` becomes `%23` and `~` becomes `%7E`, nothing else.
//! The encoded key therefore holds no `#`, and an id splits at its LAST `#key=`. A key
//! longer than [`MAX_KEY_BYTES`] once encoded is shortened to a prefix of the encoded key,
//! `~` and 64 bits of the SHA-256 of the whole key: since `~` is always encoded, a `~` in an
//! id's key part marks the hashed form, which no short key can produce.

use std::fmt::Write as _;

use sha2::{Digest as _, Sha256};

/// The longest a key's part of an item id may be, in bytes: a key longer than this once
/// encoded is replaced in the id by a prefix, `~` and a hash of the whole key (64 bytes at
/// most). It bounds the size of each entry of the index item.
///
/// ```
/// use breaker_runtime::__protocol::{MAX_KEY_BYTES, key_item_id};
/// let long = "x".repeat(500);
/// let id = key_item_id("webhooks", &long);
/// assert_eq!(id.len(), "webhooks#key=".len() + MAX_KEY_BYTES);
/// ```
pub const MAX_KEY_BYTES: usize = 64;

/// How many bytes of the encoded key the hashed form keeps, before `~` and the 16 hex digits.
const HASHED_PREFIX_BYTES: usize = MAX_KEY_BYTES - 1 - 16;

const KEY_SEPARATOR: &str = "#key=";
const INDEX_SUFFIX: &str = "#keys";
const HASH_MARK: char = '~';

/// The id of `key`'s item in the keyed circuit `circuit`: `{circuit}#key={encoded key}`.
///
/// The key may hold any character (and may be empty); `%`, `#` and `~` are percent-encoded,
/// and a key longer than [`MAX_KEY_BYTES`] once encoded takes its hashed form. Different
/// keys give different ids (up to a collision of the 64-bit hash, from SHA-256, between two
/// long keys with the same 47-byte prefix).
///
/// ```
/// use breaker_runtime::__protocol::key_item_id;
/// assert_eq!(key_item_id("webhooks", "shop-17"), "webhooks#key=shop-17");
/// assert_eq!(key_item_id("webhooks", "a#b%c~d"), "webhooks#key=a%23b%25c%7Ed");
/// assert_eq!(key_item_id("webhooks", ""), "webhooks#key=");
/// ```
pub fn key_item_id(circuit: &str, key: &str) -> String {
    key_item_id_encoded(circuit, &encode_key(key))
}

/// The id of the key item whose key encodes to `encoded` (an index entry's key): not
/// [`key_item_id`] of its [`decode_key`], which for a hashed key is a display form that
/// encodes to another id.
pub(crate) fn key_item_id_encoded(circuit: &str, encoded: &str) -> String {
    let mut id = String::with_capacity(circuit.len() + KEY_SEPARATOR.len() + encoded.len());
    id.push_str(circuit);
    id.push_str(KEY_SEPARATOR);
    id.push_str(encoded);
    id
}

/// The id of the index item of the keyed circuit `circuit`: `{circuit}#keys`. It names the
/// keys whose items are not known closed.
///
/// ```
/// assert_eq!(breaker_runtime::__protocol::key_index_id("webhooks"), "webhooks#keys");
/// ```
pub fn key_index_id(circuit: &str) -> String {
    format!("{circuit}{INDEX_SUFFIX}")
}

/// The circuit and the encoded key of a key item's id, or `None` if `id` is not one (a plain
/// circuit, an index, fleet counters, or a key part that no key encodes to).
///
/// ```
/// use breaker_runtime::__protocol::{key_item_id, split_key_item_id};
/// let id = key_item_id("a#key=b", "c#d");
/// assert_eq!(split_key_item_id(&id), Some(("a#key=b", "c%23d")));
/// assert_eq!(split_key_item_id("webhooks"), None);
/// assert_eq!(split_key_item_id("webhooks#keys"), None);
/// assert_eq!(split_key_item_id("webhooks#key=x#fleet@1700000000"), None);
/// ```
pub fn split_key_item_id(id: &str) -> Option<(&str, &str)> {
    let at = id.rfind(KEY_SEPARATOR)?;
    let (circuit, encoded) = (&id[..at], &id[at + KEY_SEPARATOR.len()..]);
    is_encoded_key(encoded).then_some((circuit, encoded))
}

/// The key an encoded key part stands for, for display: lossless for a key in full; a
/// hashed form (a long key) gives its decoded prefix, then `…~` and the 16 hex digits of the
/// hash, since the rest of the key is not in the id. An escape that no key produces is kept
/// as it is.
///
/// ```
/// use breaker_runtime::__protocol::{decode_key, key_item_id, split_key_item_id};
/// let id = key_item_id("webhooks", "a#b%c~d");
/// let (_, encoded) = split_key_item_id(&id).unwrap();
/// assert_eq!(decode_key(encoded), "a#b%c~d");
///
/// let long = "é".repeat(40);
/// let id = key_item_id("webhooks", &long);
/// let shown = decode_key(split_key_item_id(&id).unwrap().1);
/// assert!(shown.starts_with("éé") && shown.contains("…~"));
/// ```
pub fn decode_key(encoded: &str) -> String {
    let (prefix, hash) = match encoded.rsplit_once(HASH_MARK) {
        Some((prefix, hash)) => (prefix, Some(hash)),
        None => (encoded, None),
    };
    let mut key = String::with_capacity(encoded.len());
    let mut rest = prefix;
    while let Some(at) = rest.find('%') {
        key.push_str(&rest[..at]);
        let escape = rest.get(at..at + 3);
        match escape.and_then(unescape) {
            Some(c) => {
                key.push(c);
                rest = &rest[at + 3..];
            }
            None => {
                key.push('%');
                rest = &rest[at + 1..];
            }
        }
    }
    key.push_str(rest);
    if let Some(hash) = hash {
        key.push('…');
        key.push(HASH_MARK);
        key.push_str(hash);
    }
    key
}

/// `key` as it appears in its item's id: percent-encoded, hashed if long.
pub(crate) fn encode_key(key: &str) -> String {
    let mut encoded = String::with_capacity(key.len().min(MAX_KEY_BYTES));
    // The byte length of `encoded` after each whole character (escapes are never cut).
    let mut cut = 0;
    for c in key.chars() {
        match c {
            '%' => encoded.push_str("%25"),
            '#' => encoded.push_str("%23"),
            '~' => encoded.push_str("%7E"),
            c => encoded.push(c),
        }
        if encoded.len() <= HASHED_PREFIX_BYTES {
            cut = encoded.len();
        }
    }
    if encoded.len() <= MAX_KEY_BYTES {
        return encoded;
    }
    encoded.truncate(cut);
    encoded.push(HASH_MARK);
    let _ = write!(encoded, "{:016x}", key_hash(key.as_bytes()));
    encoded
}

fn unescape(escape: &str) -> Option<char> {
    match escape {
        "%25" => Some('%'),
        "%23" => Some('#'),
        "%7E" => Some('~'),
        _ => None,
    }
}

/// Whether some key encodes to `encoded`.
fn is_encoded_key(encoded: &str) -> bool {
    match encoded.split_once(HASH_MARK) {
        None => encoded.len() <= MAX_KEY_BYTES && is_escaped(encoded),
        Some((prefix, hash)) => {
            prefix.len() <= HASHED_PREFIX_BYTES
                && is_escaped(prefix)
                && hash.len() == 16
                && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        }
    }
}

/// No `#` or `~`, and every `%` starts one of the three escapes.
fn is_escaped(part: &str) -> bool {
    if part.contains(['#', HASH_MARK]) {
        return false;
    }
    part.match_indices('%')
        .all(|(at, _)| part.get(at..at + 3).and_then(unescape).is_some())
}

/// The first 64 bits of the SHA-256 of `bytes`, big-endian: stable across versions and
/// platforms (the id of a key must never change). Keys are often user-controlled (a
/// webhook's URL): a hash that is not cryptographic would let a crafted key with a victim's
/// 47-byte prefix share the victim's item; finding a second key for a given SHA-256 prefix
/// of 64 bits takes about 2^64 hashes.
fn key_hash(bytes: &[u8]) -> u64 {
    let digest = Sha256::digest(bytes);
    let mut first = [0; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_key_hash_is_the_sha256_prefix() {
        // SHA-256("") and SHA-256("abc"), FIPS 180-2's vectors, their first 8 bytes.
        assert_eq!(key_hash(b""), 0xe3b0_c442_98fc_1c14);
        assert_eq!(key_hash(b"abc"), 0xba78_16bf_8f01_cfea);
        let id = key_item_id("c", &"k".repeat(65));
        assert_eq!(id, format!("c#key={}~f39cdc2584758c99", "k".repeat(47)));
    }

    #[test]
    fn a_key_of_exactly_max_bytes_stays_whole() {
        let key = "k".repeat(MAX_KEY_BYTES);
        assert_eq!(key_item_id("c", &key), format!("c#key={key}"));
        let longer = "k".repeat(MAX_KEY_BYTES + 1);
        let id = key_item_id("c", &longer);
        let (_, encoded) = split_key_item_id(&id).unwrap();
        assert_eq!(
            encoded,
            format!("{}~{:016x}", "k".repeat(47), key_hash(longer.as_bytes()))
        );
    }

    #[test]
    fn escapes_count_towards_the_limit_and_are_never_cut() {
        // 22 × "%23" = 66 bytes encoded: hashed, and the prefix ends on a whole escape.
        let key = "#".repeat(22);
        let id = key_item_id("c", &key);
        let (_, encoded) = split_key_item_id(&id).unwrap();
        let (prefix, _) = encoded.split_once('~').unwrap();
        assert_eq!(prefix, "%23".repeat(15));
        assert!(decode_key(encoded).starts_with(&"#".repeat(15)));
    }

    #[test]
    fn ids_that_no_key_produces_do_not_split() {
        for id in [
            "c#key=%zz",
            "c#key=%2",
            "c#key=a~b",
            "c#key=a~0123456789ABCDEF",
            "c#key=x#fleet@s17",
            "c#keys",
            &format!("c#key={}", "k".repeat(MAX_KEY_BYTES + 1)),
        ] {
            assert_eq!(split_key_item_id(id), None, "{id}");
        }
    }

    #[test]
    fn decode_keeps_an_escape_no_key_produces() {
        assert_eq!(decode_key("50%zz%"), "50%zz%");
    }

    proptest! {
        #[test]
        fn keys_round_trip_unless_hashed(circuit in ".{0,12}", key in ".{0,40}") {
            let id = key_item_id(&circuit, &key);
            let (c, encoded) = split_key_item_id(&id).unwrap();
            prop_assert_eq!(c, circuit.as_str());
            let hashed = encode_whole(&key).len() > MAX_KEY_BYTES;
            prop_assert_eq!(encoded.contains('~'), hashed);
            if !hashed {
                prop_assert_eq!(decode_key(encoded), key);
            }
        }

        #[test]
        fn every_key_part_is_bounded(key in ".{0,200}") {
            let encoded = encode_key(&key);
            prop_assert!(encoded.len() <= MAX_KEY_BYTES);
            prop_assert!(!encoded.contains('#'));
        }

        #[test]
        fn different_keys_give_different_ids(
            circuit in "[a-z#=%~]{0,8}",
            a in "[a-z#%~=]{0,70}",
            b in "[a-z#%~=]{0,70}",
        ) {
            prop_assume!(a != b);
            prop_assert_ne!(key_item_id(&circuit, &a), key_item_id(&circuit, &b));
        }

        #[test]
        fn a_key_item_never_looks_like_another_circuits(
            c1 in "[a-z#=]{0,10}", k1 in "[a-z#=~]{0,10}",
            c2 in "[a-z#=]{0,10}", k2 in "[a-z#=~]{0,10}",
        ) {
            prop_assume!((c1.as_str(), k1.as_str()) != (c2.as_str(), k2.as_str()));
            let id = key_item_id(&c1, &k1);
            prop_assert_ne!(&id, &key_item_id(&c2, &k2));
            prop_assert_ne!(&id, &key_index_id(&c2));
        }
    }

    /// The encoding without the length limit.
    fn encode_whole(key: &str) -> String {
        key.replace('%', "%25")
            .replace('#', "%23")
            .replace('~', "%7E")
    }
}
