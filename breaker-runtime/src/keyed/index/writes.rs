//! The index writes of [`IndexCopy`]: a key named before its trip (within the cap),
//! refused past it, removed after its close or once its item reads settled.

use std::sync::atomic::Ordering;

use super::{IndexCopy, needs_reading};
use crate::protocol::CircuitRecord;
use crate::store::{
    KeyIndex, KeyIndexOutcome, KeyIndexWrite, StoreError, decode_key, key_item_id_encoded,
};

/// At most one WARN log of the cap per this long per environment (the rest at DEBUG).
const WARN_INTERVAL_MILLIS: u64 = 10_000;

/// How a key's trip went with the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Naming {
    /// The index names the key with a token made at this instant (unix millis; now if the
    /// store keeps no index): the trip may be written while [`IndexCopy::still_named`].
    Named(u64),
    /// The cap holds: the index names this many keys already.
    Refused(u32),
}

impl IndexCopy {
    /// Makes the index name `encoded` before its key's trip or suspicion: a refresh if the
    /// copy names it, else an add within the cap. A copy that shows the cap reached refuses
    /// without a write (for up to a cache age, until the copy is read again).
    pub(crate) async fn name(&self, encoded: &str) -> Result<Naming, StoreError> {
        if !self.kept {
            return Ok(Naming::Named(self.now()));
        }
        let (mut known, open) = {
            let believed = self.lock();
            let fresh = self.now() < believed.fresh_until;
            let open = believed.index.open_keys;
            (
                believed.index.token(encoded).is_some(),
                fresh.then_some(open),
            )
        };
        if !known && let Some(open) = open.filter(|open| *open >= self.cap()) {
            return Ok(self.refused(encoded, open));
        }
        // An add that meets the entry refreshes it, a refresh that meets none adds: twice
        // each at most, then the index is changing too fast to say.
        for _ in 0..4 {
            let now = self.now();
            let write = match known {
                true => KeyIndexWrite::Refresh {
                    key: encoded.to_owned(),
                    token: new_token(now),
                },
                false => KeyIndexWrite::Add {
                    key: encoded.to_owned(),
                    token: new_token(now),
                    cap: Some(self.cap()),
                },
            };
            match self.write(&write, now).await? {
                KeyIndexOutcome::Won => return Ok(Naming::Named(now)),
                KeyIndexOutcome::Exists(_) => known = true,
                KeyIndexOutcome::Lost(_) => known = false,
                KeyIndexOutcome::CapReached(open) => {
                    self.lock().index.open_keys = open;
                    self.metrics.open_keys(open);
                    return Ok(self.refused(encoded, open));
                }
            }
        }
        Err(StoreError::new(format!(
            "{}: the key index kept changing under the key's trip",
            self.circuit
        )))
    }

    /// Whether a trip named at `at` (unix millis) may still be sent: it would land before
    /// any reader could take the entry for one whose trip never came, and remove it (an
    /// environment frozen between the two writes, or a slow clock, would otherwise leave
    /// an open key unnamed).
    pub(crate) fn still_named(&self, at: u64) -> bool {
        !self.kept || self.now().saturating_sub(at) < self.send_within_millis
    }

    /// The cap refused `encoded`'s trip: the metric counts it, and a WARN log says so,
    /// at most once per [`WARN_INTERVAL_MILLIS`] per environment (naming this key and how
    /// many were refused since the last one): with most keys failing, every failing key
    /// would log at each of its trips. The others log at DEBUG.
    fn refused(&self, encoded: &str, open_keys: u32) -> Naming {
        self.metrics.refused_by_cap();
        let refused = self.refused_since_warning.fetch_add(1, Ordering::Relaxed) + 1;
        let now = self.now();
        let last = self.last_warning.load(Ordering::Relaxed);
        let due = last == 0 || now.saturating_sub(last) >= WARN_INTERVAL_MILLIS;
        if due
            && self
                .last_warning
                .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.refused_since_warning
                .fetch_sub(refused, Ordering::Relaxed);
            tracing::warn!(
                circuit = %self.circuit,
                key = %decode_key(encoded),
                open_keys,
                max_open_keys = self.cap(),
                refused,
                "key not opened: max_open_keys reached"
            );
        } else {
            tracing::debug!(
                circuit = %self.circuit,
                key = %decode_key(encoded),
                open_keys,
                "key not opened: max_open_keys reached"
            );
        }
        Naming::Refused(open_keys)
    }

    /// After this environment's close of `encoded`, sent at `sent` (unix millis), won: its
    /// entry goes, unless it was written within the grace before the close was sent (a
    /// trip of the key since, whose item write may land after the close: a later reader
    /// removes it). The token is the copy's, or a consistent read's.
    pub(crate) async fn closed(&self, encoded: &str, sent: u64) {
        if !self.kept {
            return;
        }
        let copied = self.lock().index.token(encoded);
        let token = match copied {
            Some(token) => Some(token),
            None => match self.store.read_key_index(&self.circuit, true).await {
                Ok(index) => index.and_then(|index| index.token(encoded)),
                Err(_) => None,
            },
        };
        if let Some(token) = token {
            self.remove_if_settled(encoded, token, None, sent).await;
        }
    }

    /// A key read sent at `sent` (unix millis) because the index names it (with `token`)
    /// found `record`: an entry of a key that is closed with nothing to read (or has no
    /// item) and older than the grace when the read was sent goes, once a consistent read
    /// of the item agrees. The read that found `record` may have missed a write that had
    /// landed (an operator's override, whose naming's token comes from the CLI's clock and
    /// may look older than the grace): only a consistent read cannot.
    pub(crate) async fn read_through(
        &self,
        encoded: &str,
        token: u64,
        record: Option<&CircuitRecord>,
        sent: u64,
    ) {
        if !self.settled(token, Some(record), sent) {
            return;
        }
        let item = key_item_id_encoded(&self.circuit, encoded);
        let sent = self.now();
        let Ok(record) = self.store.read_consistent(&item).await else {
            return;
        };
        self.remove_if_settled(encoded, token, Some(record.as_ref()), sent)
            .await;
    }

    /// Whether `encoded`'s entry of `token` may go: written the grace before `sent` and,
    /// when `record` is given, the key's item needs no reading. The grace counts to when
    /// the call the removal rests on (the key's read, or its close) was sent, not to its
    /// answer: a trip named by `token` may land until the grace ends, so only a call sent
    /// after that is sure to see it (or to come before it, for a close).
    fn settled(&self, token: u64, record: Option<Option<&CircuitRecord>>, sent: u64) -> bool {
        let now = self.now();
        let settled = record.is_none_or(|record| !needs_reading(record, now / 1000));
        let old = sent.saturating_sub(KeyIndex::written_at_millis(token)) >= self.grace_millis;
        settled && old
    }

    /// Removes `encoded`'s entry if it is [`settled`](Self::settled).
    async fn remove_if_settled(
        &self,
        encoded: &str,
        token: u64,
        record: Option<Option<&CircuitRecord>>,
        sent: u64,
    ) {
        if !self.settled(token, record, sent) {
            return;
        }
        let remove = KeyIndexWrite::Remove {
            key: encoded.to_owned(),
            token,
        };
        let _ = self.write(&remove, self.now()).await;
    }

    /// Sends `write` and brings the copy up to what the store answered.
    pub(super) async fn write(
        &self,
        write: &KeyIndexWrite,
        now: u64,
    ) -> Result<KeyIndexOutcome, StoreError> {
        let outcome = self.store.apply_key_index(&self.circuit, write).await;
        if let Err(error) = &outcome {
            tracing::warn!(circuit = %self.circuit, key = %decode_key(write.key()), %error, "key index write failed");
        }
        let outcome = outcome?;
        let mut believed = self.lock();
        let key = write.key();
        if matches!(
            write,
            KeyIndexWrite::Suspect { .. } | KeyIndexWrite::Unsuspect { .. }
        ) {
            believed.suspicion_written(write, &outcome);
            self.metrics.suspected_keys(believed.index.suspected_keys);
            return Ok(outcome);
        }
        match (write, &outcome) {
            (
                KeyIndexWrite::Add { token, .. } | KeyIndexWrite::Refresh { token, .. },
                KeyIndexOutcome::Won,
            ) => {
                believed.name(key, *token);
                believed.own_write(key, *token, true, now);
            }
            (KeyIndexWrite::Remove { token, .. }, KeyIndexOutcome::Won) => {
                believed.unname(key);
                believed.own_write(key, *token, false, now);
            }
            (_, KeyIndexOutcome::Exists(Some(token))) => believed.name(key, *token),
            (_, KeyIndexOutcome::Lost(index)) => {
                match index.as_ref().and_then(|index| index.token(key)) {
                    Some(token) => believed.name(key, token),
                    None => believed.unname(key),
                }
                believed.index.open_keys = index.as_ref().map_or(0, |index| index.open_keys);
            }
            _ => {}
        }
        self.metrics.open_keys(believed.index.open_keys);
        Ok(outcome)
    }
}

/// A new entry token at `now` (unix millis): the time, then three random digits, so two
/// environments naming a key in the same millisecond still write different tokens.
pub(super) fn new_token(now: u64) -> u64 {
    let random = (uuid::Uuid::new_v4().as_u128() % 1000) as u64;
    now.saturating_mul(1000).saturating_add(random)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tracing::Level;

    use std::sync::Arc;

    use super::*;
    use crate::config::CircuitBreakerConfig;
    use crate::store::InMemoryStore;
    use crate::test_logs::Logs;
    use crate::testing::ManualClock;

    #[tokio::test(flavor = "current_thread")]
    async fn the_cap_warns_once_per_interval_with_the_refusals_since() {
        let clock = ManualClock::new();
        let config = CircuitBreakerConfig::builder()
            .clock(clock.clone())
            .build()
            .unwrap();
        let copy = IndexCopy::new("webhooks".into(), Arc::new(InMemoryStore::new()), &config);
        copy.set_cap(1);
        let logs = Logs::default();
        let _guard = tracing::subscriber::set_default(logs.clone());

        assert!(matches!(copy.name("a").await, Ok(Naming::Named(_))));
        for key in ["b", "c", "d"] {
            assert_eq!(copy.name(key).await, Ok(Naming::Refused(1)), "{key}");
        }
        let warnings = logs.at(Level::WARN);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("key=b") && warnings[0].contains("refused=1"));

        clock.advance(Duration::from_millis(WARN_INTERVAL_MILLIS));
        assert_eq!(copy.name("e").await, Ok(Naming::Refused(1)));
        let warnings = logs.at(Level::WARN);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[1].contains("key=e") && warnings[1].contains("refused=3"));
    }
}
