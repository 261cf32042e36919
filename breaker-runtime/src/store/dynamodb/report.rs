//! Fleet reports: each circuit's failure counters for one fleet window live in an item of
//! their own, keyed `{circuit}#fleet@{window_start}` (in the sort key, with a composite
//! key), never in the circuit's item, which Powertools reads and replaces whole.
//!
//! A report is one unconditional UpdateItem: `ADD` is atomic on the server, so concurrent
//! reports sum exactly and there is nothing to condition on. It creates the item the first
//! time and answers the window's totals (`ReturnValues=ALL_NEW`: `UPDATED_NEW` need not
//! answer a counter an `ADD` of 0 left unchanged, and moto's does not).
//!
//! It is sent once, never retried by the SDK: `ADD` is not idempotent, and a retry of a
//! report whose answer was lost after it landed would count its failures, calls and
//! reporter twice (one environment could then meet `MIN_REPORTERS` alone). A report that
//! fails is lost; its failures still count towards the environment's own policy.

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use super::Shared;
use super::item::Item;
use crate::protocol::{FailureReport, FleetTally};
use crate::store::StoreError;

/// Failures reported in the window (N).
pub(crate) const FLEET_FAILURES: &str = "fleet_failures";
/// Calls reported with them (N).
pub(crate) const FLEET_CALLS: &str = "fleet_calls";
/// Environments that reported (N).
pub(crate) const FLEET_REPORTERS: &str = "fleet_reporters";
/// The window's start, unix seconds (N). Only report items have it: listings tell them
/// apart from circuits by it.
pub(crate) const FLEET_WINDOW: &str = "fleet_window";

/// The update every report sends; `#e` is the TTL attribute.
const ADD_REPORT: &str = "ADD #f :f, #c :c, #r :r SET #w = :w, #e = :e";

/// What every key of `circuit`'s counters starts with; the window's start follows.
pub(super) fn report_key_prefix(circuit: &str) -> String {
    format!("{circuit}#fleet@")
}

/// The key value of `circuit`'s counters for the window starting at `window_start`.
pub(crate) fn report_key_value(circuit: &str, window_start: u64) -> String {
    format!("{}{window_start}", report_key_prefix(circuit))
}

/// Whether `item` holds a window's counters rather than a circuit.
pub(super) fn is_report_item(item: &Item) -> bool {
    item.contains_key(FLEET_WINDOW)
}

impl Shared {
    /// Adds `report` to `circuit`'s counters of its window; the window's totals after it.
    pub(super) async fn report(
        &self,
        circuit: &str,
        report: &FailureReport,
    ) -> Result<Option<FleetTally>, StoreError> {
        let key = self
            .names
            .key(&report_key_value(circuit, report.window_start));
        let output = self
            .client()
            .await
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .update_expression(ADD_REPORT)
            .expression_attribute_names("#f", FLEET_FAILURES)
            .expression_attribute_names("#c", FLEET_CALLS)
            .expression_attribute_names("#r", FLEET_REPORTERS)
            .expression_attribute_names("#w", FLEET_WINDOW)
            .expression_attribute_names("#e", &self.names.expiry)
            .expression_attribute_values(":f", number(report.failures.into()))
            .expression_attribute_values(":c", number(report.calls.into()))
            .expression_attribute_values(":r", number(report.new_reporter.into()))
            .expression_attribute_values(":w", number(report.window_start))
            .expression_attribute_values(":e", number(report.expiration))
            .return_values(ReturnValue::AllNew)
            .customize()
            .config_override(
                aws_sdk_dynamodb::config::Builder::default().retry_config(RetryConfig::disabled()),
            )
            .send()
            .await
            .map_err(|e| self.error("UpdateItem", &e))?;
        let tally = tally(&output.attributes.unwrap_or_default()).map_err(|problem| {
            StoreError::new(format!(
                "DynamoDB UpdateItem on table '{}' answered a malformed fleet tally for \
                 circuit '{circuit}': {problem}",
                self.table
            ))
        })?;
        Ok(Some(tally))
    }
}

/// The counters an update answered.
fn tally(attributes: &Item) -> Result<FleetTally, String> {
    let count = |name: &str| match attributes.get(name) {
        Some(AttributeValue::N(value)) => value
            .parse::<u64>()
            .map_err(|_| format!("attribute '{name}' is not a non-negative integer")),
        Some(_) => Err(format!("attribute '{name}' is not a number (N)")),
        None => Err(format!("attribute '{name}' is missing")),
    };
    Ok(FleetTally {
        failures: count(FLEET_FAILURES)?,
        calls: count(FLEET_CALLS)?,
        reporters: count(FLEET_REPORTERS)?,
    })
}

fn number(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::super::item::tests_support::names;
    use super::*;

    fn n(value: &str) -> AttributeValue {
        AttributeValue::N(value.to_owned())
    }

    #[test]
    fn the_report_key_names_the_circuit_and_the_window() {
        let key = names().key(&report_key_value("ce", 1_700_000_000));
        assert_eq!(key["id"], AttributeValue::S("ce#fleet@1700000000".into()));
    }

    #[test]
    fn an_answer_reads_as_the_window_tally() {
        let answer: Item = [
            (FLEET_FAILURES, n("12")),
            (FLEET_CALLS, n("20")),
            (FLEET_REPORTERS, n("3")),
            (FLEET_WINDOW, n("1700000000")),
        ]
        .map(|(k, v)| (k.to_owned(), v))
        .into();
        assert_eq!(
            tally(&answer),
            Ok(FleetTally {
                failures: 12,
                calls: 20,
                reporters: 3
            })
        );
        assert!(is_report_item(&answer));
    }

    #[test]
    fn a_malformed_answer_names_the_attribute() {
        let mut answer: Item = [(FLEET_FAILURES, n("1")), (FLEET_CALLS, n("-1"))]
            .map(|(k, v)| (k.to_owned(), v))
            .into();
        assert!(tally(&answer).unwrap_err().contains(FLEET_CALLS));
        answer.insert(FLEET_CALLS.into(), n("1"));
        assert!(tally(&answer).unwrap_err().contains(FLEET_REPORTERS));
        answer.insert(FLEET_REPORTERS.into(), AttributeValue::S("1".into()));
        assert!(tally(&answer).unwrap_err().contains("not a number"));
    }
}
