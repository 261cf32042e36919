//! Fleet reports: each circuit's failure counters for one fleet window live in an item of
//! their own, keyed `{circuit}#fleet@{window_start}` (in the sort key, with a composite
//! key), never in the circuit's item, which Powertools reads and replaces whole.
//!
//! A report is one unconditional UpdateItem: `ADD` is atomic on the server, so concurrent
//! reports sum exactly and there is nothing to condition on. It creates the item the first
//! time and answers the window's totals (`ReturnValues=ALL_NEW`: `UPDATED_NEW` need not
//! answer a counter an `ADD` of 0 left unchanged, and moto's does not).
//!
//! While a suspicion holds, reports go to the counters of its epoch instead,
//! `{circuit}#fleet@s{suspected_until}`: one item per suspicion, holding per slice of time
//! the failures (`f0` ... `f19`) and the successes the sampled calls stand for (`s0` ...),
//! and the reporters; the update answers the whole item (`ALL_NEW`, well under 1 KB).
//!
//! It is sent once, never retried by the SDK: `ADD` is not idempotent, and a retry of a
//! report whose answer was lost after it landed would count its failures, calls and
//! reporter twice (one environment could then meet `MIN_REPORTERS` alone). A report that
//! fails is lost; its failures still count towards the environment's own policy.

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use super::Shared;
use super::item::Item;
use crate::protocol::fleet::EPOCH_SLICES;
use crate::protocol::{EpochTally, FailureReport, FleetTally, SuspectReport};
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

/// The update every report to a suspicion's counters sends; `#f` and `#s` are its slice's.
const ADD_SUSPECT_REPORT: &str = "ADD #f :f, #s :s, #r :r SET #w = :w, #e = :e";

/// What every key of `circuit`'s counters starts with; the window's start follows.
pub(super) fn report_key_prefix(circuit: &str) -> String {
    format!("{circuit}#fleet@")
}

/// The key value of `circuit`'s counters for the window starting at `window_start`.
pub(crate) fn report_key_value(circuit: &str, window_start: u64) -> String {
    format!("{}{window_start}", report_key_prefix(circuit))
}

/// The key value of the counters of `circuit`'s suspicion ending at `epoch`.
pub(crate) fn epoch_key_value(circuit: &str, epoch: u64) -> String {
    format!("{}s{epoch}", report_key_prefix(circuit))
}

/// The attribute of an epoch's failures (`f`) or successes (`s`) in `slice`.
fn slice_attribute(kind: char, slice: usize) -> String {
    format!("{kind}{slice}")
}

/// Whether `item` holds a window's counters rather than a circuit.
pub(super) fn is_report_item(item: &Item) -> bool {
    item.contains_key(FLEET_WINDOW)
}

/// What one report adds to one counters item: `counters` are its two kind's own
/// (placeholder, attribute, amount); the reporter, the window or epoch and the TTL are
/// common to both kinds.
struct Addition {
    key_value: String,
    update: &'static str,
    counters: [(&'static str, String, u64); 2],
    new_reporter: u64,
    start: u64,
    expiration: u64,
    /// The tally's kind, as an error names it.
    kind: &'static str,
}

impl Shared {
    /// Adds `report` to `circuit`'s counters of its window; the window's totals after it.
    pub(super) async fn report(
        &self,
        circuit: &str,
        report: &FailureReport,
    ) -> Result<Option<FleetTally>, StoreError> {
        let addition = Addition {
            key_value: report_key_value(circuit, report.window_start),
            update: ADD_REPORT,
            counters: [
                ("f", FLEET_FAILURES.to_owned(), report.failures.into()),
                ("c", FLEET_CALLS.to_owned(), report.calls.into()),
            ],
            new_reporter: report.new_reporter.into(),
            start: report.window_start,
            expiration: report.expiration,
            kind: "fleet",
        };
        self.add(circuit, addition, tally).await.map(Some)
    }

    /// Adds `report` to the counters of `circuit`'s suspicion; the epoch's totals after it.
    pub(super) async fn report_suspected(
        &self,
        circuit: &str,
        report: &SuspectReport,
    ) -> Result<Option<EpochTally>, StoreError> {
        let slice = usize::from(report.slice).min(EPOCH_SLICES - 1);
        let addition = Addition {
            key_value: epoch_key_value(circuit, report.epoch),
            update: ADD_SUSPECT_REPORT,
            counters: [
                ("f", slice_attribute('f', slice), report.failures.into()),
                ("s", slice_attribute('s', slice), report.successes.into()),
            ],
            new_reporter: report.new_reporter.into(),
            start: report.epoch,
            expiration: report.expiration,
            kind: "suspicion",
        };
        self.add(circuit, addition, epoch_tally).await.map(Some)
    }

    /// Sends `addition` once (see the module's note on retries) and reads the item's
    /// counters it answers with `read`.
    async fn add<T>(
        &self,
        circuit: &str,
        addition: Addition,
        read: fn(&Item) -> Result<T, String>,
    ) -> Result<T, StoreError> {
        let mut request = self
            .client()
            .await
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.names.key(&addition.key_value)))
            .update_expression(addition.update);
        for (placeholder, attribute, amount) in addition.counters {
            request = request
                .expression_attribute_names(format!("#{placeholder}"), attribute)
                .expression_attribute_values(format!(":{placeholder}"), number(amount));
        }
        let output = request
            .expression_attribute_names("#r", FLEET_REPORTERS)
            .expression_attribute_names("#w", FLEET_WINDOW)
            .expression_attribute_names("#e", &self.names.expiry)
            .expression_attribute_values(":r", number(addition.new_reporter))
            .expression_attribute_values(":w", number(addition.start))
            .expression_attribute_values(":e", number(addition.expiration))
            .return_values(ReturnValue::AllNew)
            .customize()
            .config_override(
                aws_sdk_dynamodb::config::Builder::default().retry_config(RetryConfig::disabled()),
            )
            .send()
            .await
            .map_err(|e| self.error("UpdateItem", &e))?;
        read(&output.attributes.unwrap_or_default()).map_err(|problem| {
            StoreError::new(format!(
                "DynamoDB UpdateItem on table '{}' answered a malformed {} tally for \
                 circuit '{circuit}': {problem}",
                self.table, addition.kind
            ))
        })
    }
}

/// A count attribute: absent reads as 0.
fn optional_count(attributes: &Item, name: &str) -> Result<u64, String> {
    match attributes.get(name) {
        None => Ok(0),
        Some(AttributeValue::N(value)) => value
            .parse::<u64>()
            .map_err(|_| format!("attribute '{name}' is not a non-negative integer")),
        Some(_) => Err(format!("attribute '{name}' is not a number (N)")),
    }
}

/// The epoch's counters an update answered (slices nobody reported in are absent).
fn epoch_tally(attributes: &Item) -> Result<EpochTally, String> {
    let mut tally = EpochTally {
        reporters: optional_count(attributes, FLEET_REPORTERS)?,
        ..EpochTally::default()
    };
    for slice in 0..EPOCH_SLICES {
        tally.failures[slice] = optional_count(attributes, &slice_attribute('f', slice))?;
        tally.successes[slice] = optional_count(attributes, &slice_attribute('s', slice))?;
    }
    Ok(tally)
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
    fn an_epochs_answer_reads_per_slice() {
        let answer: Item = [
            ("f3", n("2")),
            ("s3", n("16")),
            ("f19", n("5")),
            (FLEET_REPORTERS, n("4")),
            (FLEET_WINDOW, n("1700000010")),
        ]
        .map(|(k, v)| (k.to_owned(), v))
        .into();
        let tally = epoch_tally(&answer).unwrap();
        assert_eq!((tally.failures[3], tally.successes[3]), (2, 16));
        assert_eq!(
            (tally.failures[19], tally.failures[0], tally.reporters),
            (5, 0, 4)
        );
        let mut bad = answer;
        bad.insert("s7".into(), AttributeValue::S("x".into()));
        assert!(epoch_tally(&bad).unwrap_err().contains("s7"));
        let key = names().key(&epoch_key_value("ce", 1_700_000_010));
        assert_eq!(key["id"], AttributeValue::S("ce#fleet@s1700000010".into()));
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
