//! The ledger's writes after a charge: [`Ledger::settle`] records how an attempt ended,
//! and parking an outcome unknown (also a stale claim [`Ledger::claim`] met) counts
//! `PaymentOutcomeUnknown` once per order.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;

use super::attempt::{Attempt, Settlement};
use super::item::{COUNTED, MAX_DETAIL_BYTES, n, s, text};
use super::outcome_unknown::log_outcome_unknown;
use super::table::{Ledger, LedgerError};
use crate::clock::unix_now;
use crate::text::truncate;

/// The condition every write after the call makes: the item is still this attempt's claim.
const HELD: &str = "attempt_id = :attempt AND #status = :in_progress";

/// A conditional write that did not hold, or failed.
enum Conditional {
    /// The item was no longer this attempt's claim.
    Failed,
    /// DynamoDB failed.
    Error(LedgerError),
}

impl Ledger {
    /// Records how `attempt` ended; each write holds only if the item is still this
    /// attempt's claim (a lease that ran out was parked meanwhile: that stands). An error
    /// means nothing was recorded: for [`Settlement::Unknown`] the order must then be kept
    /// (its record not deleted) until a later copy parks it.
    pub async fn settle(
        &self,
        attempt: &Attempt,
        settlement: Settlement,
        detail: &str,
    ) -> Result<(), LedgerError> {
        let status = match settlement {
            Settlement::Charged => "charged",
            Settlement::Declined => "declined",
            Settlement::Unknown => return self.park(attempt, detail).await.map(|_| ()),
            Settlement::NotCharged => {
                let deleted = self
                    .dynamodb
                    .delete_item()
                    .table_name(&self.table)
                    .key("order_id", s(&attempt.order_id))
                    .condition_expression(HELD)
                    .expression_attribute_names("#status", "status")
                    .expression_attribute_values(":attempt", s(&attempt.attempt_id))
                    .expression_attribute_values(":in_progress", s("in_progress"))
                    .send()
                    .await;
                return match deleted {
                    Ok(_) => Ok(()),
                    Err(SdkError::ServiceError(e))
                        if e.err().is_conditional_check_failed_exception() =>
                    {
                        Ok(())
                    }
                    Err(e) => Err(self.error(e)),
                };
            }
        };
        match self.update_status(attempt, status, detail).await {
            Ok(()) => Ok(()),
            Err(Conditional::Failed) => {
                tracing::warn!(order_id = %attempt.order_id, status, "the claim was no longer this attempt's; its record stands");
                Ok(())
            }
            Err(Conditional::Error(error)) => Err(error),
        }
    }

    /// Parks `attempt` as `unknown` and counts `PaymentOutcomeUnknown`; true when the item
    /// now says `unknown` for this attempt (also when an SDK retry's first try wrote it and
    /// the retry failed its condition), false when the attempt no longer held it.
    pub(super) async fn park(&self, attempt: &Attempt, detail: &str) -> Result<bool, LedgerError> {
        let parked = match self.update_status(attempt, "unknown", detail).await {
            Ok(()) => true,
            Err(Conditional::Failed) => self.read(&attempt.order_id).await?.is_some_and(|item| {
                text(&item, "status") == "unknown"
                    && text(&item, "attempt_id") == attempt.attempt_id
            }),
            Err(Conditional::Error(error)) => return Err(error),
        };
        if parked {
            self.count_unknown(&attempt.order_id, detail).await;
        } else {
            tracing::warn!(order_id = %attempt.order_id, "the claim was no longer this attempt's; its record stands");
        }
        Ok(parked)
    }

    /// Counts `PaymentOutcomeUnknown` for a parked order, then marks its item counted so
    /// the copies that meet it later do not count it again: at least once per order (twice
    /// only if the mark fails or two copies meet the unmarked item at once), never zero.
    /// The mark also drops any `expiration` left by an older park: a parked item never expires.
    pub(super) async fn count_unknown(&self, order_id: &str, detail: &str) {
        log_outcome_unknown(order_id, detail);
        let marked = self
            .dynamodb
            .update_item()
            .table_name(&self.table)
            .key("order_id", s(order_id))
            .update_expression("SET #counted = :now REMOVE expiration")
            .condition_expression("#status = :unknown")
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#counted", COUNTED)
            .expression_attribute_values(":unknown", s("unknown"))
            .expression_attribute_values(":now", n(unix_now()))
            .send()
            .await;
        if let Err(error) = marked {
            tracing::warn!(%order_id, error = %self.error(error), "could not mark the parked order counted: a later copy counts it again");
        }
    }

    /// Sets `status` and `detail` on the item if it is still `attempt`'s claim; parking
    /// (`unknown`) also removes its `expiration`: the only record of a possibly charged
    /// order stays until an operator settles it.
    async fn update_status(
        &self,
        attempt: &Attempt,
        status: &str,
        detail: &str,
    ) -> Result<(), Conditional> {
        let mut expression =
            "SET #status = :status, detail = :detail, settled_at = :now".to_owned();
        if status == "unknown" {
            expression.push_str(" REMOVE expiration");
        }
        let updated = self
            .dynamodb
            .update_item()
            .table_name(&self.table)
            .key("order_id", s(&attempt.order_id))
            .update_expression(expression)
            .condition_expression(HELD)
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":status", s(status))
            .expression_attribute_values(":detail", s(&truncate(detail, MAX_DETAIL_BYTES)))
            .expression_attribute_values(":now", n(unix_now()))
            .expression_attribute_values(":attempt", s(&attempt.attempt_id))
            .expression_attribute_values(":in_progress", s("in_progress"))
            .send()
            .await;
        match updated {
            Ok(_) => Ok(()),
            Err(SdkError::ServiceError(e))
                if matches!(e.err(), UpdateItemError::ConditionalCheckFailedException(_)) =>
            {
                Err(Conditional::Failed)
            }
            Err(e) => Err(Conditional::Error(self.error(e))),
        }
    }
}
