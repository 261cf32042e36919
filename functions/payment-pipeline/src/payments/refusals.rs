//! Telling one order's refusal from the API's. A 400, or a 422 without a decline code, is
//! either this order's shape (a field the provider refuses and validation let through) or
//! every order's (the provider changed its API). Only the second says the API is unwell:
//! a refusal counts toward opening the circuit once the same status refused another order
//! within [`REFUSAL_WINDOW`] in this environment, so one poison order retried on its own
//! never opens the circuit, and an API that refuses every order still does.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How far back another order's refusal corroborates this one's.
pub const REFUSAL_WINDOW: Duration = Duration::from_secs(60);

/// Refusals remembered: enough to find another order among a burst of one order's copies.
const REMEMBERED: usize = 32;

/// The recent refusals of this environment: when, the status, the order id.
#[derive(Debug, Default)]
pub(crate) struct RecentRefusals(VecDeque<(Instant, u16, String)>);

impl RecentRefusals {
    /// Records `order_id`'s refusal with `status` at `now`; true when another order was
    /// refused with the same status within [`REFUSAL_WINDOW`] before it.
    pub(crate) fn corroborated(&mut self, status: u16, order_id: &str, now: Instant) -> bool {
        self.0
            .retain(|(at, _, _)| now.saturating_duration_since(*at) <= REFUSAL_WINDOW);
        let corroborated = self
            .0
            .iter()
            .any(|(_, seen, id)| *seen == status && id != order_id);
        if self.0.len() == REMEMBERED {
            self.0.pop_front();
        }
        self.0.push_back((now, status, order_id.to_owned()));
        corroborated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_orders_refusals_never_corroborate_each_other_another_orders_do() {
        let start = Instant::now();
        let mut refusals = RecentRefusals::default();
        for n in 0..10 {
            let now = start + Duration::from_secs(n);
            assert!(!refusals.corroborated(400, "poison", now), "copy {n}");
        }
        // Another status does not corroborate; another order with the same status does.
        assert!(!refusals.corroborated(422, "other", start + Duration::from_secs(10)));
        assert!(refusals.corroborated(400, "other", start + Duration::from_secs(10)));
        // Out of the window, a refusal stands alone again.
        let later = start + Duration::from_secs(11) + REFUSAL_WINDOW;
        assert!(!refusals.corroborated(400, "third", later));
    }
}
