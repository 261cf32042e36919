//! The operator's side of parked orders: list the items whose charge outcome is unknown,
//! and settle one once the payment provider said what became of it. A parked item never
//! expires; settling it is the only way it ends.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

use super::item::{Item, MAX_DETAIL_BYTES, n, number, s, text};
use super::table::{Ledger, LedgerError};
use crate::clock::unix_now;
use crate::text::truncate;

/// One parked order, as an operator needs it to ask the payment provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedOrder {
    /// The order id, also the idempotency key its charge was sent with.
    pub order_id: String,
    /// Its amount's value, currency and customer (the ledger's `contents`).
    pub contents: String,
    /// Why it was parked (a timeout, a 504, a lease that ran out).
    pub detail: String,
    /// When its attempt started and when it was parked (Unix seconds; 0 if unknown).
    pub started_at: u64,
    /// When it was parked (Unix seconds; 0 if unknown).
    pub parked_at: u64,
}

/// What the payment provider said about a parked order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// It was charged: the item becomes `charged`, every later copy a duplicate.
    Charged,
    /// It was not: the item is deleted, so a redriven copy charges it.
    NotCharged,
}

/// Why a parked order could not be settled.
#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    /// The order is not parked (no item, or another status): nothing was changed.
    #[error("order {0} is not parked as unknown: nothing changed")]
    NotParked(String),
    /// DynamoDB failed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

impl Ledger {
    /// Every parked (`unknown`) order: a paginated `Scan` filtered on `status`. Parked
    /// orders are rare and this is an operator's occasional command, so the table needs no
    /// index; the scan reads (and bills) the whole table.
    pub async fn parked(&self) -> Result<Vec<ParkedOrder>, LedgerError> {
        let mut parked = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .client()
                .scan()
                .table_name(self.table())
                .filter_expression("#status = :unknown")
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":unknown", s("unknown"))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| self.error(e))?;
            parked.extend(page.items().iter().map(|item| ParkedOrder {
                order_id: text(item, "order_id").to_owned(),
                contents: text(item, "contents").to_owned(),
                detail: text(item, "detail").to_owned(),
                started_at: number(item, "started_at"),
                parked_at: number(item, "settled_at"),
            }));
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        parked.sort_by_key(|order| (order.parked_at, order.order_id.clone()));
        Ok(parked)
    }

    /// Settles the parked order `order_id` as the provider answered, noting `note` (who
    /// and why) in its `detail`; only while it is still `unknown`. A charged order expires
    /// like any other (`LEDGER_TTL_DAYS` from now); a not-charged one is deleted.
    pub async fn settle_parked(
        &self,
        order_id: &str,
        resolution: Resolution,
        note: &str,
    ) -> Result<(), SettleError> {
        let now = unix_now();
        let result = match resolution {
            Resolution::Charged => self
                .client()
                .update_item()
                .table_name(self.table())
                .key("order_id", s(order_id))
                .update_expression(
                    "SET #status = :charged, detail = :detail, settled_at = :now, expiration = :expiration",
                )
                .condition_expression("#status = :unknown")
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":charged", s("charged"))
                .expression_attribute_values(":unknown", s("unknown"))
                .expression_attribute_values(
                    ":detail",
                    s(&truncate(&format!("settled by hand: {note}"), MAX_DETAIL_BYTES)),
                )
                .expression_attribute_values(":now", n(now))
                .expression_attribute_values(":expiration", n(now + self.ttl().as_secs()))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| self.settle_error(e, order_id)),
            Resolution::NotCharged => self
                .client()
                .delete_item()
                .table_name(self.table())
                .key("order_id", s(order_id))
                .condition_expression("#status = :unknown")
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":unknown", s("unknown"))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| self.settle_error(e, order_id)),
        };
        if result.is_ok() {
            tracing::info!(%order_id, ?resolution, note, "parked order settled by hand");
        }
        result
    }

    /// Why a settling write failed: its condition (the order is still `unknown`) did not
    /// hold, so the order is not parked; else the ledger's error.
    fn settle_error<E, R>(&self, error: SdkError<E, R>, order_id: &str) -> SettleError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug,
    {
        let code = error
            .as_service_error()
            .and_then(ProvideErrorMetadata::code);
        match code {
            Some("ConditionalCheckFailedException") => SettleError::NotParked(order_id.to_owned()),
            _ => SettleError::Ledger(self.error(error)),
        }
    }
}
