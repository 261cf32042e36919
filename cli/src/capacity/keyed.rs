//! `breaker capacity --keys N`: what a keyed circuit's items take from a fleet.
//!
//! - **The index** (`NAME#keys`) is read like a plain circuit's item: once per
//!   `local_cache_max_age` and call gap per environment, whatever the number of keys, at
//!   0.5 read unit per started 4 KB of its size (eventually consistent).
//! - **A key's item** is read only while the index names it (the key open, half-open or
//!   lately so): by each environment calling that key, once per cache age and gap between
//!   its calls to that key. A healthy key costs no reads at all.
//! - **Without an index** (a circuit per key, as `CircuitBreaker::new(format!(..))` gives)
//!   every key's item is read that way, healthy or not: the figure the index saves.
//! - **Index writes**: each key's trip adds it (a write charged 1 write unit per started
//!   KB of the index's size, so a full index costs more per write), and each close
//!   removes it.
//!
//! Calls are spread evenly over the keys, and over the environments.

use super::{Fleet, ITEM_READ_UNITS_PER_S, Settings, reads_per_s};

/// An index item's attributes other than its entries (id, `key_index`, `open_keys`: the
/// index has no TTL), in bytes, plus the circuit's name.
const INDEX_BASE_BYTES: f64 = 32.0;
/// An entry's bytes beyond its encoded key: the `k:` prefix and a 19-digit token number.
const ENTRY_OVERHEAD_BYTES: f64 = 2.0 + 11.0;
/// A read unit covers 4 KB of an eventually consistent read, at half a unit.
const READ_UNIT_BYTES: f64 = 4096.0;
/// A write unit covers 1 KB.
const WRITE_UNIT_BYTES: f64 = 1024.0;

/// The keyed circuit's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Keys {
    /// Keys called through the circuit.
    pub(crate) keys: u32,
    /// Keys down at once.
    pub(crate) open_keys: u32,
    /// A key's length once encoded, bytes (at most 64).
    pub(crate) key_bytes: u32,
    /// `max_open_keys`.
    pub(crate) max_open_keys: u32,
    /// The circuit's name, bytes.
    pub(crate) name_bytes: u32,
}

/// What the keyed circuit's items take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct KeyedEstimate {
    /// Index reads a second (the same however many keys).
    pub(crate) index_reads_per_s: f64,
    /// Its size and read units a second with no key open, and with the open keys (as many
    /// as the cap lets in).
    pub(crate) index_bytes_healthy: f64,
    pub(crate) index_read_units_healthy: f64,
    pub(crate) index_bytes_open: f64,
    pub(crate) index_read_units_open: f64,
    /// Keys the index names while the open keys are down: at most the cap.
    pub(crate) named_keys: u32,
    /// The named keys' item reads a second, and their read units.
    pub(crate) key_item_reads_per_s: f64,
    pub(crate) key_item_read_units_per_s: f64,
    /// Every key's item read as a plain circuit's would be, healthy: no index.
    pub(crate) without_index_reads_per_s: f64,
    pub(crate) without_index_read_units_per_s: f64,
    /// Write units one index write takes with the open keys named (each trip and close).
    pub(crate) index_write_units_per_write: f64,
    /// The index at the cap: its size and the write units of one write.
    pub(crate) index_bytes_at_cap: f64,
    pub(crate) index_write_units_at_cap: f64,
    /// The least `local_cache_max_age` that keeps the index's reads, at the open keys'
    /// size, within the item's read units.
    pub(crate) cache_age_for_limit_s: f64,
}

/// The index's size in bytes with `entries` keys of `key_bytes`.
fn index_bytes(keys: &Keys, entries: u32) -> f64 {
    INDEX_BASE_BYTES
        + f64::from(keys.name_bytes)
        + f64::from(entries) * (ENTRY_OVERHEAD_BYTES + f64::from(keys.key_bytes))
}

/// Read units of one eventually consistent read of an item of `bytes`.
fn read_units(bytes: f64) -> f64 {
    0.5 * (bytes / READ_UNIT_BYTES).ceil().max(1.0)
}

/// Write units of one write to an item of `bytes`.
fn write_units(bytes: f64) -> f64 {
    (bytes / WRITE_UNIT_BYTES).ceil().max(1.0)
}

/// The keyed circuit's load for `fleet` (its calls over every key) under `settings`.
pub(crate) fn estimate(fleet: &Fleet, settings: &Settings, keys: &Keys) -> KeyedEstimate {
    let age = settings.local_cache_max_age_s;
    let index_reads = reads_per_s(fleet, age);
    let per_key = Fleet {
        environments: fleet.environments,
        calls_per_second: fleet.calls_per_second / f64::from(keys.keys.max(1)),
    };
    let one_key_reads = reads_per_s(&per_key, age);
    let named = keys.open_keys.min(keys.max_open_keys);
    let healthy_bytes = index_bytes(keys, 0);
    let open_bytes = index_bytes(keys, named);
    let cap_bytes = index_bytes(keys, keys.max_open_keys);
    let key_item_reads = f64::from(named) * one_key_reads;
    let without_index = f64::from(keys.keys) * one_key_reads;
    // A key's item is small: one half unit a read.
    let small_read = read_units(0.0);
    let units_open = read_units(open_bytes);
    let reads_allowed = ITEM_READ_UNITS_PER_S / units_open;
    let cache_age_for_limit =
        (f64::from(fleet.environments) / reads_allowed - 1.0 / fleet.per_environment()).max(0.0);
    KeyedEstimate {
        index_reads_per_s: index_reads,
        index_bytes_healthy: healthy_bytes,
        index_read_units_healthy: index_reads * read_units(healthy_bytes),
        index_bytes_open: open_bytes,
        index_read_units_open: index_reads * units_open,
        named_keys: named,
        key_item_reads_per_s: key_item_reads,
        key_item_read_units_per_s: key_item_reads * small_read,
        without_index_reads_per_s: without_index,
        without_index_read_units_per_s: without_index * small_read,
        index_write_units_per_write: write_units(open_bytes),
        index_bytes_at_cap: cap_bytes,
        index_write_units_at_cap: write_units(cap_bytes),
        cache_age_for_limit_s: cache_age_for_limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            local_cache_max_age_s: 5.0,
            recovery_timeout_s: 30.0,
            failure_threshold: 5,
            report_interval_s: Some(1.0),
        }
    }

    fn keys(keys: u32, open_keys: u32) -> Keys {
        Keys {
            keys,
            open_keys,
            key_bytes: 16,
            max_open_keys: 1_000,
            name_bytes: 8,
        }
    }

    #[test]
    fn the_index_is_read_like_one_circuit_and_healthy_keys_cost_nothing() {
        // The simulator's keyed fleet: 1,000 environments at 10 calls/s over 5,000 keys.
        let fleet = Fleet {
            environments: 1_000,
            calls_per_second: 10_000.0,
        };
        let healthy = estimate(&fleet, &settings(), &keys(5_000, 0));
        let one_circuit = reads_per_s(&fleet, 5.0);
        assert_eq!(healthy.index_reads_per_s, one_circuit);
        assert_eq!(healthy.index_read_units_healthy, one_circuit * 0.5);
        assert_eq!(healthy.key_item_reads_per_s, 0.0);
        // Without the index every key's item is read: 5,000 keys at 0.002 calls/s per
        // environment each, nearly every call a read.
        let per_key = 10.0 / 5_000.0;
        let expected = 5_000.0 * 1_000.0 * per_key / (1.0 + per_key * 5.0);
        assert!((healthy.without_index_reads_per_s - expected).abs() < 1e-6);
        assert!(healthy.without_index_reads_per_s > 5.0 * healthy.index_reads_per_s);
    }

    #[test]
    fn open_keys_add_their_items_reads_and_grow_the_index() {
        let fleet = Fleet {
            environments: 1_000,
            calls_per_second: 10_000.0,
        };
        let one = estimate(&fleet, &settings(), &keys(5_000, 1));
        let ten = estimate(&fleet, &settings(), &keys(5_000, 10));
        assert!((ten.key_item_reads_per_s - 10.0 * one.key_item_reads_per_s).abs() < 1e-9);
        assert_eq!(ten.index_bytes_open, 32.0 + 8.0 + 10.0 * (13.0 + 16.0));
        assert_eq!(ten.index_write_units_per_write, 1.0);
        // At the cap of 1,000 keys of 64 bytes: ~77 KB, 20 % of DynamoDB's 400 KB.
        let long = Keys {
            key_bytes: 64,
            ..keys(5_000, 2_000)
        };
        let capped = estimate(&fleet, &settings(), &long);
        assert_eq!(capped.named_keys, 1_000, "the cap holds");
        assert_eq!(capped.index_bytes_at_cap, 32.0 + 8.0 + 1_000.0 * 77.0);
        assert_eq!(capped.index_write_units_at_cap, 76.0);
        // 9.5 read units a read: the item's 3,000 RCU/s hold 316 reads a second.
        assert_eq!(capped.index_read_units_open, capped.index_reads_per_s * 9.5);
        let age = 1_000.0 / (3_000.0 / 9.5) - 0.1;
        assert!(
            (capped.cache_age_for_limit_s - age).abs() < 1e-9,
            "{capped:?}"
        );
    }
}
