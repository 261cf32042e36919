//! Each [`RecordWrite`] as one DynamoDB request: the condition that says what
//! `RecordWrite::allowed` says, and a whole-item put or an in-place update.

use aws_sdk_dynamodb::types::AttributeValue;

use super::Shared;
use super::conditions::{self, Expression};
use super::item::{AttributeNames, Item};
use crate::protocol::{
    OPENED_AT_UNTIL_RELEASED, Override, OverrideKind, RecordWrite, WriteOutcome,
};
use crate::store::StoreError;

impl Shared {
    /// Applies `transition` by sending its [`Request`].
    pub(super) async fn apply(
        &self,
        circuit: &str,
        transition: &RecordWrite,
    ) -> Result<WriteOutcome, StoreError> {
        let request = Request::of(&self.names, circuit, transition);
        match request.write {
            Written::Put(item) => {
                self.put(circuit, item, &request.condition, request.bound)
                    .await
            }
            Written::Update(update) => {
                self.update(circuit, &update, &request.condition, request.bound)
                    .await
            }
        }
    }
}

/// What a request writes when its condition holds.
#[derive(Debug)]
pub(super) enum Written {
    /// `PutItem`: the whole item.
    Put(Item),
    /// `UpdateItem`: its update expression.
    Update(String),
}

/// One [`RecordWrite`] as the DynamoDB request the store sends: its condition, its
/// placeholders bound, and a whole-item put or an update expression.
#[derive(Debug)]
pub(super) struct Request {
    pub(super) condition: String,
    pub(super) write: Written,
    pub(super) bound: Expression,
}

impl Request {
    /// The election, the probe's hand-over, the suspicion and the operator's override and
    /// release update the item in place (keeping what they do not own); every other
    /// transition writes a whole new record.
    pub(super) fn of(names: &AttributeNames, circuit: &str, transition: &RecordWrite) -> Self {
        let put =
            |condition: &str, values| Self::put(names, circuit, transition, condition, values);
        let in_place =
            |update: &str, condition: &str, values| Self::update(names, update, condition, values);
        match transition {
            RecordWrite::Trip { opened_at, .. } => {
                let values = vec![(":now", number(*opened_at))];
                put(conditions::TRIP, values)
            }
            RecordWrite::Elect {
                owner,
                expected_opened_at,
                expected_successes,
                now,
                lease_expiry,
                expiration,
            } => {
                let mut values = vec![
                    (":me", AttributeValue::S(owner.clone())),
                    (":now", number(*now)),
                    (":lease", number(*lease_expiry)),
                    (":ttl", number(*expiration)),
                ];
                values.extend(expected_opened_at.map(|expected| (":expected", number(expected))));
                let read_successes = *expected_successes > 0;
                if read_successes {
                    values.push((":ps", number((*expected_successes).into())));
                }
                let condition = conditions::elect(expected_opened_at.is_some(), read_successes);
                in_place(conditions::elect_update(read_successes), &condition, values)
            }
            RecordWrite::HandOver {
                owner,
                probe_successes,
                lease_expiry,
                expiration,
            } => {
                let values = vec![
                    (":me", AttributeValue::S(owner.clone())),
                    (":successes", number((*probe_successes).into())),
                    (":lease", number(*lease_expiry)),
                    (":ttl", number(*expiration)),
                ];
                in_place(conditions::HAND_OVER_UPDATE, conditions::OWNER, values)
            }
            RecordWrite::Close { owner, .. } | RecordWrite::Reopen { owner, .. } => {
                let values = vec![(":me", AttributeValue::S(owner.clone()))];
                put(conditions::OWNER, values)
            }
            RecordWrite::Suspect {
                now,
                until,
                expiration,
            } => {
                let values = vec![
                    (":now", number(*now)),
                    (":until", number(*until)),
                    (":ttl", number(*expiration)),
                ];
                in_place(conditions::SUSPECT_UPDATE, conditions::SUSPECT, values)
            }
            RecordWrite::Reset { now, .. } => {
                let values = vec![(":now", number(*now))];
                put(conditions::RESET, values)
            }
            RecordWrite::Override {
                set,
                replaces,
                expiration,
            } => {
                let forced_open = set.kind == OverrideKind::ForcedOpen;
                let update = conditions::set_override(
                    forced_open,
                    set.until.is_some(),
                    set.reason.is_some(),
                    expiration.is_some(),
                );
                let mut values = vec![
                    (":nkind", AttributeValue::S(set.kind.as_str().to_owned())),
                    (":nby", AttributeValue::S(set.by.clone())),
                    (":nat", number(set.at)),
                    (
                        ":opened",
                        number(set.until.unwrap_or(OPENED_AT_UNTIL_RELEASED)),
                    ),
                ];
                values.extend(set.until.map(|until| (":nuntil", number(until))));
                values.extend(
                    set.reason
                        .clone()
                        .map(|reason| (":nreason", AttributeValue::S(reason))),
                );
                values.extend(expiration.map(|ttl| (":ttl", number(ttl))));
                let condition = match replaces {
                    None => conditions::NO_OVERRIDE,
                    Some(replaced) => {
                        values.extend(override_values(replaced));
                        conditions::OVERRIDE_IS
                    }
                };
                in_place(&update, condition, values)
            }
            RecordWrite::Release {
                released,
                now,
                expiration,
            } => {
                let holds = released.holds_at(*now);
                let update =
                    conditions::release(holds && released.kind == OverrideKind::ForcedOpen);
                let condition = match holds {
                    true => conditions::RELEASE_LIVE,
                    false => conditions::RELEASE_ENDED,
                };
                let mut values = vec![(":now", number(*now)), (":ttl", number(*expiration))];
                values.extend(override_values(released));
                in_place(&update, condition, values)
            }
        }
    }

    /// A put of the record `transition` leaves (which does not depend on the one it
    /// replaces), if `condition` holds.
    fn put(
        names: &AttributeNames,
        circuit: &str,
        transition: &RecordWrite,
        condition: &str,
        values: Vec<(&'static str, AttributeValue)>,
    ) -> Self {
        let record = transition.applied_to(None);
        Self {
            condition: condition.to_owned(),
            write: Written::Put(names.item(
                circuit,
                &record,
                transition.expiration().unwrap_or_default(),
            )),
            bound: Expression::bind(names, &[condition], values),
        }
    }

    /// An update of the item in place, if `condition` holds.
    fn update(
        names: &AttributeNames,
        update: &str,
        condition: &str,
        values: Vec<(&'static str, AttributeValue)>,
    ) -> Self {
        Self {
            condition: condition.to_owned(),
            write: Written::Update(update.to_owned()),
            bound: Expression::bind(names, &[condition, update], values),
        }
    }
}

fn number(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// The values [`conditions::OVERRIDE_IS`] compares the stored override with.
fn override_values(expected: &Override) -> [(&'static str, AttributeValue); 3] {
    [
        (
            ":okind",
            AttributeValue::S(expected.kind.as_str().to_owned()),
        ),
        (":oat", number(expected.at)),
        (":oby", AttributeValue::S(expected.by.clone())),
    ]
}
