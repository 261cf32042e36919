//! `IndexCopy`: this environment's copy of a keyed circuit's index item (`{name}#keys`),
//! read at most once per `local_cache_max_age`, and the index writes: a key named before
//! its trip (within the cap), removed after its close.
//!
//! The copy also remembers this environment's own recent index writes for [`GRACE`]-long:
//! an index read (eventually consistent) that started before one of them landed must not
//! undo it, or the key's next read would take an open key for a closed one. The writes
//! themselves are in [`writes`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::clock::Clock;
use crate::config::{CircuitBreakerConfig, millis};
use crate::observe::KeyedMetrics;
use crate::protocol::{CircuitRecord, CircuitState};
use crate::store::{KeyIndex, KeyIndexWrite, StateStore, StoreError, key_item_id_encoded};

/// The cap on open keys unless the user sets one.
pub(crate) const DEFAULT_MAX_OPEN_KEYS: u32 = 1_000;

/// An index entry older than this (on top of the longest recovery wait) is checked when
/// the index is read: its key's item is read, and the entry removed or refreshed.
const STALE_ENTRY_MILLIS: u64 = 3_600_000;

/// Each environment takes an entry for stale this much later at most, by a delay of its
/// own per entry: the first to reach it checks it, the others' next reads show the
/// entry removed or refreshed. Without it every environment's read would check the same
/// oldest entry at once (a consistent read and an index write each).
const STALE_SPREAD_MILLIS: u64 = 1_800_000;

mod suspicions;
mod writes;

pub(crate) use suspicions::MAX_SUSPECTED_KEYS;
pub(crate) use writes::Naming;
use writes::new_token;

/// One own index write, remembered for [`IndexCopy::grace_millis`].
#[derive(Debug, Clone, Copy)]
struct OwnWrite {
    token: u64,
    /// Named with `token` (an add or refresh), or removed with it.
    named: bool,
    at: u64,
}

/// What this environment believes of the index.
#[derive(Debug, Default)]
struct Believed {
    index: KeyIndex,
    /// Until when (unix millis) the copy is used without reading; 0: never read.
    fresh_until: u64,
    /// After an error reading the index, it is left alone until then (unix millis).
    retry_at: u64,
    /// The last read's error, answered to key reads until `retry_at`.
    error: Option<StoreError>,
    /// This environment's recent index writes, by encoded key.
    own: HashMap<String, OwnWrite>,
}

impl Believed {
    /// The copy names `key` with `token`.
    fn name(&mut self, key: &str, token: u64) {
        if self.index.entries.insert(key.to_owned(), token).is_none() {
            self.index.open_keys = self.index.open_keys.saturating_add(1);
        }
    }

    /// The copy no longer names `key`.
    fn unname(&mut self, key: &str) {
        if self.index.entries.remove(key).is_some() {
            self.index.open_keys = self.index.open_keys.saturating_sub(1);
        }
    }

    /// Remembers this environment's write of `key` with `token` at `now`: `named` by an add
    /// or refresh, or removed.
    fn own_write(&mut self, key: &str, token: u64, named: bool, now: u64) {
        let write = OwnWrite {
            token,
            named,
            at: now,
        };
        self.own.insert(key.to_owned(), write);
    }
}

/// A keyed circuit's index as this environment sees it, and its writes.
pub(crate) struct IndexCopy {
    circuit: Arc<str>,
    store: Arc<dyn StateStore>,
    /// The store keeps key indexes; if not, every key's item is read and nothing is capped.
    kept: bool,
    clock: Clock,
    max_age_millis: u64,
    grace_millis: u64,
    /// A trip is sent at most this long after its naming's token (the store timeout): it
    /// then lands within the grace less the second the grace keeps for clock skew, before
    /// a reader may remove the entry.
    send_within_millis: u64,
    /// An entry older than this is checked on an index read.
    stale_entry_millis: u64,
    /// This environment's id: its delay past the stale age differs by entry and by
    /// environment.
    environment: Arc<str>,
    /// A suspicion's naming is removed by any reader this long after its token (the
    /// suspicion's fleet window, the grace and a second of clock skew).
    suspicion_millis: u64,
    error_backoff_millis: u64,
    cap: AtomicU32,
    metrics: KeyedMetrics,
    /// When (unix millis) the cap was last logged at WARN; 0: never.
    last_warning: AtomicU64,
    /// Refusals since that log.
    refused_since_warning: AtomicU64,
    believed: Mutex<Believed>,
    /// One task at a time reads the index; the others wait for its answer.
    reading: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for IndexCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexCopy")
            .field("circuit", &self.circuit)
            .field("cap", &self.cap())
            .field("index", &self.lock().index)
            .finish_non_exhaustive()
    }
}

impl IndexCopy {
    pub(crate) fn new(
        circuit: Arc<str>,
        store: Arc<dyn StateStore>,
        config: &CircuitBreakerConfig,
    ) -> Self {
        let longest_wait = config
            .recovery_backoff
            .longest_wait(config.recovery_timeout);
        Self {
            kept: store.keeps_key_index(),
            metrics: KeyedMetrics::new(&circuit),
            circuit,
            store,
            clock: config.clock.clone(),
            max_age_millis: millis(config.local_cache_max_age),
            grace_millis: grace_millis(config),
            send_within_millis: grace_millis(config)
                .saturating_sub(millis(config.store_timeout))
                .saturating_sub(CLOCK_SKEW_MILLIS),
            stale_entry_millis: STALE_ENTRY_MILLIS.saturating_add(millis(longest_wait)),
            suspicion_millis: suspicions::life_millis(config),
            environment: crate::environment::id_of(config),
            error_backoff_millis: millis(config.store_error_backoff),
            cap: AtomicU32::new(DEFAULT_MAX_OPEN_KEYS),
            last_warning: AtomicU64::new(0),
            refused_since_warning: AtomicU64::new(0),
            believed: Mutex::default(),
            reading: tokio::sync::Mutex::const_new(()),
        }
    }

    pub(crate) fn circuit(&self) -> &Arc<str> {
        &self.circuit
    }

    pub(crate) fn store(&self) -> &Arc<dyn StateStore> {
        &self.store
    }

    /// Whether the store keeps the index.
    pub(crate) fn kept(&self) -> bool {
        self.kept
    }

    pub(crate) fn cap(&self) -> u32 {
        self.cap.load(Ordering::Relaxed)
    }

    /// `cap` is at least 1: the keyed circuit's setter refuses 0.
    pub(crate) fn set_cap(&self, cap: u32) {
        self.cap.store(cap, Ordering::Relaxed);
    }

    /// This environment's clock, unix millis.
    pub(crate) fn now(&self) -> u64 {
        self.clock.now_millis()
    }

    fn lock(&self) -> MutexGuard<'_, Believed> {
        self.believed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The keys the copy names, decoded (no I/O).
    pub(crate) fn named_keys(&self) -> Vec<String> {
        self.lock().index.keys()
    }

    /// Until when (unix millis) a new circuit of `encoded` may take itself for closed
    /// without a read: the copy is fresh and does not name the key.
    pub(crate) fn closed_until(&self, encoded: &str) -> Option<u64> {
        if !self.kept {
            return None;
        }
        let believed = self.lock();
        let fresh = self.now() < believed.fresh_until;
        let named =
            believed.index.token(encoded).is_some() || believed.index.suspicion(encoded).is_some();
        (fresh && !named).then_some(believed.fresh_until)
    }

    /// How the index names `encoded`, from a copy at most a cache age old (read if it is
    /// older): its entry's token, and whether it names a suspicion of the key.
    pub(crate) async fn naming(&self, encoded: &str) -> Result<(Option<u64>, bool), StoreError> {
        self.refresh_if_stale().await?;
        let believed = self.lock();
        let suspected = believed.index.suspicion(encoded).is_some();
        Ok((believed.index.token(encoded), suspected))
    }

    /// Reads the index if the copy is older than the cache age; one task reads, the others
    /// wait for it. After an error the index is left alone for the store's error back-off,
    /// and every key read in that time fails without a call.
    async fn refresh_if_stale(&self) -> Result<(), StoreError> {
        if let Some(answer) = self.fresh_or_failed() {
            return answer;
        }
        let reading = self.reading.lock().await;
        if let Some(answer) = self.fresh_or_failed() {
            return answer;
        }
        let (stale, expired) = self.read_index().await?;
        drop(reading);
        // Checked once the other tasks may use the copy: they need not wait for it.
        if let Some((encoded, token)) = stale {
            self.check_stale_entry(&encoded, token).await;
        }
        self.unsuspect(expired).await;
        Ok(())
    }

    /// Reads the index into the copy; the stale entry this environment checks, if any, and
    /// the ended suspicions it removes.
    async fn read_index(&self) -> Result<(Option<(String, u64)>, Vec<(String, u64)>), StoreError> {
        let started = self.now();
        let read = self.store.read_key_index(&self.circuit, false).await;
        let now = self.now();
        let mut believed = self.lock();
        match read {
            Ok(index) => {
                believed.error = None;
                believed.index = self.merged(&mut believed.own, index.unwrap_or_default(), now);
                believed.fresh_until = started.saturating_add(self.max_age_millis);
                self.metrics.open_keys(believed.index.open_keys);
                self.metrics.suspected_keys(believed.index.suspected_keys);
                let stale = self.stale_entry(&believed.index, now);
                Ok((stale, self.ended_suspicions(&believed.index, now)))
            }
            Err(error) => {
                believed.retry_at = now.saturating_add(self.error_backoff_millis);
                believed.error = Some(error.clone());
                Err(error)
            }
        }
    }

    /// `Some` answer when the copy needs no read: fresh, or the index is left alone after an
    /// error.
    fn fresh_or_failed(&self) -> Option<Result<(), StoreError>> {
        let now = self.now();
        let believed = self.lock();
        if now < believed.fresh_until {
            return Some(Ok(()));
        }
        match &believed.error {
            Some(error) if now < believed.retry_at => Some(Err(error.clone())),
            _ => None,
        }
    }

    /// `read` with this environment's own writes of the last [`GRACE`](grace_millis) that
    /// it does not show yet.
    fn merged(
        &self,
        own: &mut HashMap<String, OwnWrite>,
        mut read: KeyIndex,
        now: u64,
    ) -> KeyIndex {
        own.retain(|_, write| now.saturating_sub(write.at) < self.grace_millis);
        for (encoded, write) in own.iter() {
            let shown = read.token(encoded);
            match write.named {
                true if shown.is_none() => {
                    read.entries.insert(encoded.clone(), write.token);
                    read.open_keys = read.open_keys.saturating_add(1);
                }
                false if shown == Some(write.token) => {
                    read.entries.remove(encoded);
                    read.open_keys = read.open_keys.saturating_sub(1);
                }
                _ => {}
            }
        }
        read
    }

    /// The entry of `index` furthest past the stale age at `now` as this environment
    /// counts it (the age plus its own delay for that entry, up to
    /// [`STALE_SPREAD_MILLIS`]), if any: checked once per index read, so a read costs at
    /// most one more read and write, and environments reach an entry at different times.
    fn stale_entry(&self, index: &KeyIndex, now: u64) -> Option<(String, u64)> {
        index
            .entries
            .iter()
            .filter_map(|(encoded, token)| {
                let past =
                    self.past_due(*token, now, self.stale_entry_millis, STALE_SPREAD_MILLIS)?;
                Some((past, encoded, *token))
            })
            .max_by_key(|(past, _, _)| *past)
            .map(|(_, encoded, token)| (encoded.clone(), token))
    }

    /// How long past `after` millis from its token's time an entry named with `token` is
    /// at `now`, as this environment counts it: plus a delay of its own for that entry, up
    /// to `spread` millis, so that the fleet's environments reach it at different times.
    /// `None` if not past.
    fn past_due(&self, token: u64, now: u64, after: u64, spread: u64) -> Option<u64> {
        // From the token's time, not its random digits: reproducible in a simulation.
        let written = KeyIndex::written_at_millis(token);
        let delay = crate::environment::spread(spread, &self.environment, written);
        let past = now
            .saturating_sub(written)
            .checked_sub(after.saturating_add(delay))?;
        (past > 0).then_some(past)
    }

    /// An entry nobody refreshed or removed for the stale age (its key's environments were
    /// all evicted or frozen): the key's item decides, read consistently: closed, it goes;
    /// else it is refreshed, so the next read does not check it again.
    async fn check_stale_entry(&self, encoded: &str, token: u64) {
        let item = key_item_id_encoded(&self.circuit, encoded);
        let Ok(record) = self.store.read_consistent(&item).await else {
            return;
        };
        let now = self.now();
        let write = match needs_reading(record.as_ref(), now / 1000) {
            false => KeyIndexWrite::Remove {
                key: encoded.to_owned(),
                token,
            },
            true => KeyIndexWrite::Refresh {
                key: encoded.to_owned(),
                token: new_token(now),
            },
        };
        let _ = self.write(&write, now).await;
    }
}

/// How long after an entry's add or refresh no environment removes it for its key's item
/// reading closed: the trip that wrote it may still be on its way (two store calls and a
/// second of clock skew).
pub(crate) fn grace_millis(config: &CircuitBreakerConfig) -> u64 {
    millis(config.store_timeout)
        .saturating_mul(2)
        .saturating_add(CLOCK_SKEW_MILLIS)
}

/// The clock skew between environments the grace allows for.
const CLOCK_SKEW_MILLIS: u64 = 1_000;

/// Whether a key whose item holds `record` (`None`: no item) must be read by the fleet at
/// `now` (unix seconds): open or half-open, under an operator's override, or suspected.
pub fn needs_reading(record: Option<&CircuitRecord>, now: u64) -> bool {
    record.is_some_and(|record| {
        record.state != CircuitState::Closed
            || record.live_override(now).is_some()
            || record.live_suspicion(now).is_some()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::InMemoryStore;

    #[test]
    fn environments_reach_a_stale_entry_at_different_times() {
        let copies: Vec<IndexCopy> = (0..100)
            .map(|i| {
                let config = CircuitBreakerConfig::builder()
                    .environment_id(format!("env-{i}"))
                    .build()
                    .unwrap();
                IndexCopy::new("webhooks".into(), Arc::new(InMemoryStore::new()), &config)
            })
            .collect();
        let named_at = 1_700_000_000_000;
        let mut index = KeyIndex::default();
        index.entries.insert("a".into(), named_at * 1000 + 7);
        index.open_keys = 1;
        let stale_age = copies[0].stale_entry_millis;
        let checking = |past: u64| {
            let now = named_at + stale_age + past;
            copies
                .iter()
                .filter(|c| c.stale_entry(&index, now).is_some())
                .count()
        };
        assert_eq!(checking(0), 0);
        let first_minute = checking(60_000);
        assert!(
            (1..=15).contains(&first_minute),
            "{first_minute} of 100 in the first minute"
        );
        assert_eq!(
            checking(STALE_SPREAD_MILLIS + 1),
            100,
            "every one within the spread"
        );
    }
}
