//! Each [`RecordWrite`] as one DynamoDB request: the condition that says what
//! `RecordWrite::allowed` says, and a whole-item put or an in-place update.

use aws_sdk_dynamodb::types::AttributeValue;

use super::{Shared, conditions};
use crate::protocol::{
    OPENED_AT_UNTIL_RELEASED, Override, OverrideKind, RecordWrite, WriteOutcome,
};
use crate::store::StoreError;

impl Shared {
    /// Applies `transition`: the election, the probe's hand-over, the suspicion and the
    /// operator's override and release update the item in place (keeping what they do not own); every other
    /// transition writes a whole new record.
    pub(super) async fn apply(
        &self,
        circuit: &str,
        transition: &RecordWrite,
    ) -> Result<WriteOutcome, StoreError> {
        match transition {
            RecordWrite::Trip { opened_at, .. } => {
                let values = vec![(":now", number(*opened_at))];
                self.put(circuit, transition, conditions::TRIP, values)
                    .await
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
                self.update(
                    circuit,
                    conditions::elect_update(read_successes),
                    &condition,
                    values,
                )
                .await
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
                self.update(
                    circuit,
                    conditions::HAND_OVER_UPDATE,
                    conditions::OWNER,
                    values,
                )
                .await
            }
            RecordWrite::Close { owner, .. } | RecordWrite::Reopen { owner, .. } => {
                let values = vec![(":me", AttributeValue::S(owner.clone()))];
                self.put(circuit, transition, conditions::OWNER, values)
                    .await
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
                self.update(
                    circuit,
                    conditions::SUSPECT_UPDATE,
                    conditions::SUSPECT,
                    values,
                )
                .await
            }
            RecordWrite::Reset { now, .. } => {
                let values = vec![(":now", number(*now))];
                self.put(circuit, transition, conditions::RESET, values)
                    .await
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
                self.update(circuit, &update, condition, values).await
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
                self.update(circuit, &update, condition, values).await
            }
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
