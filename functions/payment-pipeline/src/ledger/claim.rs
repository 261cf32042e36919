//! What the ledger answers before a charge, and how the item a claim ran into is read.

use super::attempt::Attempt;
use super::item::{Item, number, text};

/// What the ledger says about an order before it is charged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This attempt holds the order: charge it, then [`Ledger::settle`](super::Ledger::settle).
    Claimed(Attempt),
    /// Already charged: do not charge again.
    Charged,
    /// Already refused by the payment API: final.
    Declined,
    /// Another attempt holds it until this Unix second.
    InFlight {
        /// When its lease runs out.
        lease_until: u64,
    },
    /// An attempt's outcome is unknown: parked for reconciliation, never charged blindly.
    Unknown,
    /// The id belongs to another order (another amount, currency or customer): this one is
    /// not charged, and the other one is not answered for.
    Conflict,
}

/// What the item a claim ran into means.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// The claim's answer.
    Answer(Claim),
    /// Another attempt's claim whose lease ran out: to be parked as unknown.
    Expired(Attempt),
}

/// Reads the item a conditional put of `attempt` (made at `now`, for an order whose
/// [contents key](crate::Order::contents_key) is `contents`) ran into.
pub(super) fn found(item: &Item, attempt: &Attempt, contents: &str, now: u64) -> Found {
    // Items written before the contents were recorded carry none: taken as the same order.
    let theirs = text(item, "contents");
    if !theirs.is_empty() && theirs != contents {
        return Found::Answer(Claim::Conflict);
    }
    match text(item, "status") {
        "charged" => Found::Answer(Claim::Charged),
        "declined" => Found::Answer(Claim::Declined),
        // Our own put: the SDK retried it after a lost answer (an attempt timeout, a 500
        // after the write). It holds the order; nothing was sent yet.
        "in_progress" if text(item, "attempt_id") == attempt.attempt_id => {
            Found::Answer(Claim::Claimed(attempt.clone()))
        }
        "in_progress" => {
            let lease_until = number(item, "lease_until");
            if lease_until > now {
                Found::Answer(Claim::InFlight { lease_until })
            } else {
                Found::Expired(Attempt {
                    order_id: attempt.order_id.clone(),
                    attempt_id: text(item, "attempt_id").to_owned(),
                    lease_until,
                })
            }
        }
        _ => Found::Answer(Claim::Unknown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::item::{n, s};

    const CONTENTS: &str = "5 EUR ";

    fn item(status: &str, attempt_id: &str, lease_until: u64) -> Item {
        Item::from([
            ("order_id".to_owned(), s("o-1")),
            ("contents".to_owned(), s(CONTENTS)),
            ("status".to_owned(), s(status)),
            ("attempt_id".to_owned(), s(attempt_id)),
            ("lease_until".to_owned(), n(lease_until)),
        ])
    }

    fn attempt(attempt_id: &str, lease_until: u64) -> Attempt {
        Attempt {
            order_id: "o-1".into(),
            attempt_id: attempt_id.into(),
            lease_until,
        }
    }

    #[test]
    fn a_retried_put_that_meets_its_own_claim_holds_the_order() {
        // The first PutItem was written but its answer lost; the SDK's retry fails the
        // condition on that very item. Taking it for another attempt's would park an
        // order never sent as unknown once the lease ran out.
        let mine = attempt("a-1", 160);
        assert_eq!(
            found(&item("in_progress", "a-1", 160), &mine, CONTENTS, 100),
            Found::Answer(Claim::Claimed(mine.clone()))
        );
    }

    #[test]
    fn another_attempts_item_waits_stops_or_is_parked() {
        let mine = attempt("a-2", 170);
        assert_eq!(
            found(&item("in_progress", "a-1", 160), &mine, CONTENTS, 100),
            Found::Answer(Claim::InFlight { lease_until: 160 })
        );
        assert_eq!(
            found(&item("in_progress", "a-1", 100), &mine, CONTENTS, 100),
            Found::Expired(attempt("a-1", 100))
        );
        assert_eq!(
            found(&item("charged", "a-1", 160), &mine, CONTENTS, 100),
            Found::Answer(Claim::Charged)
        );
        assert_eq!(
            found(&item("declined", "a-1", 160), &mine, CONTENTS, 100),
            Found::Answer(Claim::Declined)
        );
        assert_eq!(
            found(&item("unknown", "a-1", 160), &mine, CONTENTS, 100),
            Found::Answer(Claim::Unknown)
        );
    }

    #[test]
    fn a_reused_id_with_other_contents_is_a_conflict_whatever_its_status() {
        let mine = attempt("a-2", 170);
        for status in ["charged", "declined", "unknown", "in_progress"] {
            assert_eq!(
                found(
                    &item(status, "a-1", 160),
                    &mine,
                    "5 EUR other-customer",
                    100
                ),
                Found::Answer(Claim::Conflict),
                "{status}"
            );
        }
        // An item from before contents were recorded is taken as the same order.
        let mut old = item("charged", "a-1", 160);
        old.remove("contents");
        assert_eq!(
            found(&old, &mine, "6 EUR ", 100),
            Found::Answer(Claim::Charged)
        );
    }
}
