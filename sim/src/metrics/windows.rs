//! The recovery windows of a run: when each opens and ends, the elections and hand-overs
//! made in it, and when the fleet may first elect in it.

use super::{Metrics, Window};
use crate::env_store::StoreRequest;
use crate::model::RequestOutcome;

impl Metrics {
    /// The window still running, if any.
    pub(super) fn open_window(&mut self) -> Option<&mut Window> {
        self.windows.last_mut().filter(|w| w.end_ms.is_none())
    }

    /// An opening landed at `t` (`opening`: its `opened_at` and reopens, if known).
    pub(super) fn start_window(&mut self, t: u64, opening: Option<(u64, u32)>) {
        self.end_window(t);
        self.windows.push(Window {
            start_ms: t,
            opening,
            ..Window::default()
        });
    }

    pub(super) fn end_window(&mut self, t: u64) {
        if let Some(window) = self.open_window() {
            window.end_ms = Some(t);
        }
    }

    pub(super) fn count_election(&mut self, r: &StoreRequest) {
        let Some(window) = self.open_window() else {
            let answered = r.outcome != RequestOutcome::Unreachable;
            self.election_writes_outside_windows +=
                u64::from(r.cost.attempts) * u64::from(answered);
            return;
        };
        window.elections_throttled += r.cost.throttled_attempts;
        match r.outcome {
            RequestOutcome::Won => window.elections_won += 1,
            RequestOutcome::Lost => window.elections_lost += 1,
            RequestOutcome::Unreachable => window.elections_unanswered += 1,
            RequestOutcome::Throttled | RequestOutcome::Served => {}
        }
    }

    /// A probe hand-over's attempts, in the window it was made in.
    pub(super) fn count_hand_over(&mut self, r: &StoreRequest) {
        if r.outcome == RequestOutcome::Unreachable {
            return;
        }
        if let Some(window) = self.open_window() {
            window.hand_over_writes += r.cost.attempts;
        }
    }

    /// When the fleet may first elect in `window` (virtual ms): its opening's second plus
    /// the backed-off recovery timeout. The stored `opened_at` is unix time on the writer's
    /// clock; it only seeds the backoff's jitter, as it does in the breaker.
    pub(super) fn first_election_ms(&self, window: &Window) -> u64 {
        let base = std::time::Duration::from_millis(self.recovery_ms);
        let (opened_at, reopens) = window.opening.unwrap_or((0, 0));
        let wait = self.backoff.wait(base, reopens, 1, opened_at);
        (window.start_ms / 1000 * 1000).saturating_add(wait.as_millis() as u64)
    }

    /// The recovery windows so far.
    pub fn windows(&self) -> &[Window] {
        &self.windows
    }
}
