//! Which reporters this environment remembers having counted in a fleet window or a
//! suspicion's epoch, so that it counts once per window as a reporter, within a bound.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

use super::Reporter;
use crate::store::StateStore;

/// Where a reporter last reported: its store, the window or epoch (its mark), and until
/// when (unix seconds) a report may still go to it.
pub(super) struct LastReport {
    pub(super) store: Weak<dyn StateStore>,
    pub(super) mark: u64,
    pub(super) until: u64,
}

/// The last fleet window each circuit or key of one environment reported in: only windows
/// and epochs that have not ended, so the entries are the circuits and keys that reported
/// within the last fleet window (and the suspicions still open), at most
/// [`MAX_REMEMBERED`].
#[derive(Default)]
pub(super) struct Windows {
    /// By circuit name, or a key's item id.
    pub(super) last: HashMap<Arc<str>, LastReport>,
    /// At this many entries, those whose window or epoch has ended go.
    pub(super) prune_at: usize,
    /// Full of reporters whose windows have not ended: no prune before this (unix
    /// seconds), so a stream of new reporters does not scan the map at each report.
    full_until: u64,
}

/// By environment (one in a Lambda process; a simulation runs many in one process).
pub(super) static LAST_WINDOWS: LazyLock<Mutex<HashMap<Arc<str>, Windows>>> =
    LazyLock::new(Mutex::default);

/// The fewest entries [`Windows`] prunes at.
pub(super) const PRUNE_AT_LEAST: usize = 1024;

/// The most reporters an environment remembers at once (about 150 bytes each: 600 KB): a keyed circuit
/// whose keys come from request data may see a stream of distinct failing keys, each a
/// reporter of its own. Past it, a new reporter of a window is not remembered and does not
/// count as a new one in the fleet's counters: the fleet's rule may need one more
/// environment's failures for such a key, never fewer.
pub(super) const MAX_REMEMBERED: usize = 4096;

impl Windows {
    /// Forgets the reporters whose window or epoch ended before `now` (unix seconds: no
    /// report can go to it any more), or whose store is gone; the next prune comes when
    /// the entries left have doubled.
    pub(super) fn prune(&mut self, now: u64) {
        self.last
            .retain(|_, last| last.store.strong_count() > 0 && last.until >= now);
        self.prune_at = (self.last.len() * 2).clamp(PRUNE_AT_LEAST, MAX_REMEMBERED);
        self.full_until = match self.last.len() >= MAX_REMEMBERED {
            true => now + 1,
            false => 0,
        };
    }
}

impl Reporter {
    /// Marks `mark` (a window's start, or an epoch with [`EPOCH_MARK`](super::EPOCH_MARK)), open until `until`
    /// (unix seconds), as reported in at `now` (unix seconds); whether this is the
    /// reporter's first report in it.
    pub(super) fn first_in(&self, mark: u64, until: u64, now: u64) -> bool {
        let mut environments = LAST_WINDOWS.lock().unwrap_or_else(PoisonError::into_inner);
        let windows = environments
            .entry(Arc::clone(&self.environment))
            .or_default();
        let key = Arc::clone(&self.circuit);
        let same_store = |other: &Weak<dyn StateStore>| {
            other.as_ptr().cast::<()>() == self.store.as_ptr().cast::<()>()
        };
        match windows.last.get_mut(&key) {
            Some(last) if same_store(&last.store) => {
                let first = last.mark != mark;
                (last.mark, last.until) = (mark, until);
                first
            }
            _ => {
                if windows.last.len() >= windows.prune_at && now >= windows.full_until {
                    windows.prune(now);
                }
                if windows.last.len() >= MAX_REMEMBERED {
                    return false;
                }
                let store = Weak::clone(&self.store);
                windows.last.insert(key, LastReport { store, mark, until });
                true
            }
        }
    }
}
