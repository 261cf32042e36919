//! A key's suspicion in the index: named apart from the open keys (`s:` entries, counted
//! by `suspected_keys`), so that suspicions never take a slot of `max_open_keys`, and
//! removed by any reader once the suspicion has ended: a key suspected once and never
//! called again holds nothing past its suspicion's window, and keys from request data
//! (a host, a tenant id) cannot fill the cap with suspicions.

use super::{Believed, CLOCK_SKEW_MILLIS, IndexCopy, grace_millis, writes::new_token};
use crate::config::{CircuitBreakerConfig, millis};
use crate::store::{KeyIndex, KeyIndexOutcome, KeyIndexWrite, StoreError, decode_key};

/// At most this many suspicions named at once: with [`crate::MAX_OPEN_KEYS_LIMIT`] open
/// keys, the index stays within 308 KB. Past it a suspicion is not written (the key's own
/// policy still trips it) until the suspicions named end.
pub(crate) const MAX_SUSPECTED_KEYS: u32 = 1_000;

/// Ended suspicions one index read removes at most: each removal is a write of the whole
/// index item (its size in write units), made inside a key's read.
const REMOVED_PER_READ: usize = 3;

/// Each environment takes a suspicion's naming for ended this much later at most, by a
/// delay of its own per naming: the first environment to reach it removes it, and the
/// others' next reads show it gone, rather than every reader of the fleet sending the
/// same removal (each charged at the item's size, won or lost).
const REMOVAL_SPREAD_MILLIS: u64 = 300_000;

/// How long after its token a suspicion's naming may go: its window, the grace of the
/// trip that may follow, and the clock skew between environments.
pub(super) fn life_millis(config: &CircuitBreakerConfig) -> u64 {
    let window = config.fleet.unwrap_or_default().window;
    millis(window)
        .saturating_add(grace_millis(config))
        .saturating_add(CLOCK_SKEW_MILLIS)
}

impl Believed {
    /// The copy after `write` (a suspect or an unsuspect) met `outcome`.
    pub(super) fn suspicion_written(&mut self, write: &KeyIndexWrite, outcome: &KeyIndexOutcome) {
        let key = write.key();
        let suspected = &mut self.index.suspected;
        match (write, outcome) {
            (KeyIndexWrite::Suspect { token, .. }, KeyIndexOutcome::Won) => {
                suspected.insert(key.to_owned(), *token);
            }
            (KeyIndexWrite::Unsuspect { .. }, KeyIndexOutcome::Won) => {
                suspected.remove(key);
            }
            (_, KeyIndexOutcome::Exists(Some(token))) => {
                suspected.insert(key.to_owned(), *token);
            }
            (_, KeyIndexOutcome::Lost(index)) => {
                match index.as_ref().and_then(|index| index.suspicion(key)) {
                    Some(token) => suspected.insert(key.to_owned(), token),
                    None => suspected.remove(key),
                };
            }
            _ => {}
        }
        self.index.suspected_keys = self.index.suspected.len() as u32;
    }
}

impl IndexCopy {
    /// Names a suspicion of `encoded` before its suspicion is written: `false` if the index
    /// holds [`MAX_SUSPECTED_KEYS`] already (the suspicion is then not written). A naming
    /// of an earlier suspicion is removed first, so that this one's lasts its whole life.
    pub(crate) async fn suspect(&self, encoded: &str) -> Result<bool, StoreError> {
        if !self.kept {
            return Ok(true);
        }
        for _ in 0..3 {
            let now = self.now();
            let write = KeyIndexWrite::Suspect {
                key: encoded.to_owned(),
                token: new_token(now),
                cap: MAX_SUSPECTED_KEYS,
            };
            match self.write(&write, now).await? {
                KeyIndexOutcome::Won => return Ok(true),
                // Named for this suspicion by another environment: the same instant, give
                // or take the trip's grace. An older naming is an earlier suspicion's,
                // which readers would remove before this one ends: named again.
                KeyIndexOutcome::Exists(Some(token)) if self.named_for_now(token, now) => {
                    return Ok(true);
                }
                KeyIndexOutcome::Exists(token) => {
                    let token = token.unwrap_or_default();
                    let unsuspect = KeyIndexWrite::Unsuspect {
                        key: encoded.to_owned(),
                        token,
                    };
                    self.write(&unsuspect, now).await?;
                }
                KeyIndexOutcome::CapReached(suspected) => {
                    tracing::debug!(
                        circuit = %self.circuit,
                        key = %decode_key(encoded),
                        suspected,
                        "suspicion not named: the index names as many suspicions as it may"
                    );
                    return Ok(false);
                }
                KeyIndexOutcome::Lost(_) => {}
            }
        }
        Err(StoreError::new(format!(
            "{}: the key index kept changing under the key's suspicion",
            self.circuit
        )))
    }

    /// Whether a suspicion named with `token` is the one being written at `now` (unix
    /// millis): named within the grace before it.
    fn named_for_now(&self, token: u64, now: u64) -> bool {
        now.saturating_sub(KeyIndex::written_at_millis(token)) < self.grace_millis
    }

    /// The ended suspicions of `index` this environment removes after its read at `now`:
    /// at most [`REMOVED_PER_READ`], those furthest past their end as this environment
    /// counts it (the suspicion's life plus its own delay for that naming, up to
    /// [`REMOVAL_SPREAD_MILLIS`]), so that the fleet's readers reach each one at different
    /// times.
    pub(super) fn ended_suspicions(&self, index: &KeyIndex, now: u64) -> Vec<(String, u64)> {
        let mut ended: Vec<(u64, &String, u64)> = index
            .suspected
            .iter()
            .filter_map(|(key, token)| {
                let past =
                    self.past_due(*token, now, self.suspicion_millis, REMOVAL_SPREAD_MILLIS)?;
                Some((u64::MAX - past, key, *token))
            })
            .collect();
        ended.sort_unstable();
        ended
            .into_iter()
            .take(REMOVED_PER_READ)
            .map(|(_, key, token)| (key.clone(), token))
            .collect()
    }

    /// Removes the namings of `ended` suspicions (each conditional on its token).
    pub(super) async fn unsuspect(&self, ended: Vec<(String, u64)>) {
        for (key, token) in ended {
            let unsuspect = KeyIndexWrite::Unsuspect { key, token };
            let now = self.now();
            if self.write(&unsuspect, now).await.is_err() {
                return;
            }
        }
    }
}
