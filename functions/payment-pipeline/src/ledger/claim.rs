//! The ledger's first write for an order, before its charge: [`Ledger::claim`], what it
//! answers ([`Claim`]), and how the item a claim ran into is read.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;

use super::attempt::{Attempt, Settlement};
use super::item::{COUNTED, Item, n, number, s, text};
use super::progress::{Phase, Progress};
use super::table::{Ledger, LedgerError};
use crate::clock::unix_now;
use crate::order::Order;

/// What the ledger says about an order before it is charged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This attempt holds the order: charge it, then [`Ledger::settle`].
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

impl Ledger {
    /// Claims `order` for one attempt, or says why it must not be charged now.
    /// Each attempt is recorded in `progress` before its put, so a caller whose future was
    /// dropped can release a put that may have landed.
    pub async fn claim(&self, order: &Order, progress: &Progress) -> Result<Claim, LedgerError> {
        let order_id = order.order_id.as_str();
        let contents = order.contents_key();
        // A claim can vanish between the failed put and the read (its attempt released it),
        // or a stale attempt can settle while it is being parked: then look again. Three
        // rounds cover any realistic race.
        for _ in 0..3 {
            let now = unix_now();
            let attempt = Attempt {
                order_id: order_id.to_owned(),
                attempt_id: uuid::Uuid::new_v4().to_string(),
                lease_until: now + self.lease.as_secs(),
            };
            progress.set(Phase::Claiming(attempt.clone()));
            let put = self
                .dynamodb
                .put_item()
                .table_name(&self.table)
                .item("order_id", s(order_id))
                .item("status", s("in_progress"))
                .item("attempt_id", s(&attempt.attempt_id))
                .item("idempotency_key", s(order_id))
                .item("contents", s(&contents))
                .item("started_at", n(now))
                .item("lease_until", n(attempt.lease_until))
                .item("expiration", n(now + self.ttl.as_secs()))
                .condition_expression("attribute_not_exists(order_id)")
                .send()
                .await;
            match put {
                Ok(_) => return Ok(Claim::Claimed(attempt)),
                Err(SdkError::ServiceError(e))
                    if matches!(e.err(), PutItemError::ConditionalCheckFailedException(_)) => {}
                Err(e) => {
                    let error = self.error(e);
                    // The put may have been written though no answer says so (its last try
                    // timed out, a 500 after the write): release it, or every copy of the
                    // order would wait out the lease and then park it as unknown, unsent.
                    if let Err(release) = self.settle(&attempt, Settlement::NotCharged, "").await {
                        tracing::warn!(%order_id, error = %release, "could not release a claim whose put failed");
                    }
                    return Err(error);
                }
            }
            let Some(item) = self.read(order_id).await? else {
                continue;
            };
            match found(&item, &attempt, &contents, now) {
                Found::Answer(Claim::Unknown) => {
                    // Parked, but perhaps never counted: the park's write landed and its
                    // answer did not (an SDK timeout, a killed process). Count it now.
                    if !item.contains_key(COUNTED) {
                        self.count_unknown(order_id, text(&item, "detail")).await;
                    }
                    return Ok(Claim::Unknown);
                }
                Found::Answer(claim) => return Ok(claim),
                Found::Expired(stale) => {
                    // Its attempt died mid-call (killed, timed out): the charge may have
                    // gone through. Park it; never charge it again blindly. If it settled
                    // or released the order meanwhile, what it wrote is the answer: look again.
                    if self.park(&stale, "its attempt's lease ran out").await? {
                        return Ok(Claim::Unknown);
                    }
                }
            }
        }
        Ok(Claim::InFlight {
            lease_until: unix_now() + 1,
        })
    }
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
