//! The item layout: attribute names, and the conversion between items and records.
//!
//! Powertools' layout, as in `docs/dynamodb.md`: `state` S, `failure_count` N, `opened_at` N,
//! `half_open_owner` S, `probe_lease_expiry` N, `expiration` N, keyed by the circuit name
//! (or by a static partition key plus the name as sort key); and an operator's override in
//! attributes of its own, which Powertools neither reads nor writes (see [`OVERRIDE`]).

use std::collections::HashMap;
use std::fmt;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::protocol::CircuitState;
use crate::protocol::{CircuitRecord, Override, OverrideKind};

/// The operator's override: `OPEN`, `DISABLED` or `SHADOW` (S). Its companions: [`OVERRIDE_UNTIL`]
/// (N, absent until released), [`OVERRIDE_BY`] (S), [`OVERRIDE_REASON`] (S, optional) and
/// [`OVERRIDE_AT`] (N). Fixed names: no Powertools attribute can be renamed to them.
pub(crate) const OVERRIDE: &str = "override";
pub(crate) const OVERRIDE_UNTIL: &str = "override_until";
pub(crate) const OVERRIDE_BY: &str = "override_by";
pub(crate) const OVERRIDE_REASON: &str = "override_reason";
pub(crate) const OVERRIDE_AT: &str = "override_at";

/// While half-open: the fleet's probe successes in a row (N; absent: 0). A fixed name,
/// ignored by Powertools, whose whole-item writes drop it (a takeover of theirs starts the
/// count again).
pub(crate) const PROBE_SUCCESSES: &str = "probe_successes";

/// While open or half-open: the reopens since the circuit last closed or tripped (N;
/// absent: 0), which back the recovery off. Written by a reopen, kept by an election and a
/// hand-over, dropped by every other write. A fixed name, ignored by Powertools, whose
/// whole-item writes (a trip, an election) drop it: the count starts again.
pub(crate) const REOPEN_COUNT: &str = "reopen_count";

/// While closed: the end of the fleet's suspicion, unix seconds (N; absent: none). Set by
/// the suspicion's `UpdateItem`, dropped by every whole-item put (a trip, ours or
/// Powertools') and by an override. A fixed name, ignored by Powertools.
pub(crate) const SUSPECTED_UNTIL: &str = "suspected_until";
/// While open or half-open after a breaker's trip: the probe owner id of the environment
/// whose trip wrote the opening (S), so that a trip whose answer was lost recognises its
/// own landed attempt. Written by a trip, kept by an election and a hand-over, dropped by
/// every other breaker write and by an override. A fixed name, ignored by Powertools, whose
/// whole-item writes drop it and whose close and reopen (`UpdateItem`s) keep it; read only
/// on an OPEN or HALF_OPEN item and when it is a string (else it reads as absent: no
/// condition tests it).
pub(crate) const OPENED_BY: &str = "opened_by";

/// While open after a failure that said how long to stay away: until when (unix seconds,
/// N) every breaker environment rejects, and from when the first probe may come. Written
/// by that trip or reopen (whole-item puts), kept by an election and a hand-over, dropped by
/// every other breaker write. A fixed name, ignored by Powertools, whose whole-item writes
/// drop it and whose reopen (an `UpdateItem`) keeps it: read only while later than
/// `opened_at`.
pub(crate) const OPEN_UNTIL: &str = "open_until";

/// A DynamoDB item.
pub(super) type Item = HashMap<String, AttributeValue>;

/// The attribute names of one table, after the builder's overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AttributeNames {
    pub(super) key: String,
    /// With a sort key, the partition key holds `static_pk_value` and the sort key the name.
    pub(super) sort_key: Option<String>,
    pub(super) static_pk_value: String,
    pub(super) state: String,
    pub(super) failure_count: String,
    pub(super) opened_at: String,
    pub(super) half_open_owner: String,
    pub(super) probe_lease_expiry: String,
    pub(super) expiry: String,
}

/// Why an item could not be decoded. Names the attribute, for the warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Malformed {
    pub(super) attribute: String,
    pub(super) problem: &'static str,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "attribute '{}' {}", self.attribute, self.problem)
    }
}

impl AttributeNames {
    /// The primary key of `circuit`'s item.
    pub(super) fn key(&self, circuit: &str) -> Item {
        match &self.sort_key {
            None => HashMap::from([(self.key.clone(), s(circuit))]),
            Some(sort_key) => HashMap::from([
                (self.key.clone(), s(&self.static_pk_value)),
                (sort_key.clone(), s(circuit)),
            ]),
        }
    }

    /// The whole item for `record` (a Put replaces every attribute, so none are left over).
    pub(super) fn item(&self, circuit: &str, record: &CircuitRecord, expiration: u64) -> Item {
        let mut item = self.key(circuit);
        item.insert(self.state.clone(), s(record.state.as_str()));
        item.insert(self.failure_count.clone(), n(record.failure_count.into()));
        if let Some(opened_at) = record.opened_at {
            item.insert(self.opened_at.clone(), n(opened_at));
        }
        if let Some(owner) = &record.half_open_owner {
            item.insert(self.half_open_owner.clone(), s(owner));
        }
        if let Some(lease) = record.probe_lease_expiry {
            item.insert(self.probe_lease_expiry.clone(), n(lease));
        }
        if record.probe_successes > 0 {
            item.insert(PROBE_SUCCESSES.to_owned(), n(record.probe_successes.into()));
        }
        if record.reopen_count > 0 {
            item.insert(REOPEN_COUNT.to_owned(), n(record.reopen_count.into()));
        }
        if let Some(until) = record.suspected_until {
            item.insert(SUSPECTED_UNTIL.to_owned(), n(until));
        }
        if let Some(writer) = &record.opened_by {
            item.insert(OPENED_BY.to_owned(), s(writer));
        }
        if let Some(until) = record.open_until {
            item.insert(OPEN_UNTIL.to_owned(), n(until));
        }
        item.insert(self.expiry.clone(), n(expiration));
        item
    }

    /// Decodes an item. Every known attribute that is present must have its type and a
    /// valid value; `OPEN` needs `opened_at`, `HALF_OPEN` needs the owner and the lease.
    /// `failure_count` may be absent (0). The TTL attribute is not read.
    pub(super) fn decode(&self, item: &Item) -> Result<CircuitRecord, Malformed> {
        let state = match self.string(item, &self.state)? {
            None => return Err(self.malformed(&self.state, "is missing")),
            Some("CLOSED") => CircuitState::Closed,
            Some("OPEN") => CircuitState::Open,
            Some("HALF_OPEN") => CircuitState::HalfOpen,
            Some(_) => {
                return Err(self.malformed(&self.state, "is not CLOSED, OPEN or HALF_OPEN"));
            }
        };
        let failure_count = self.count(item, &self.failure_count)?;
        let record = CircuitRecord {
            state,
            failure_count,
            opened_at: self.number(item, &self.opened_at)?,
            half_open_owner: self.string(item, &self.half_open_owner)?.map(str::to_owned),
            probe_lease_expiry: self.number(item, &self.probe_lease_expiry)?,
            probe_successes: self.count(item, PROBE_SUCCESSES)?,
            reopen_count: self.count(item, REOPEN_COUNT)?,
            operator_override: self.operator_override(item)?,
            suspected_until: self.number(item, SUSPECTED_UNTIL)?,
            // Only an opening has a writer: Powertools' close (an `UpdateItem`) leaves the
            // attribute on a CLOSED item.
            opened_by: match item.get(OPENED_BY) {
                Some(AttributeValue::S(writer)) if state != CircuitState::Closed => {
                    Some(writer.clone())
                }
                _ => None,
            },
            // As `opened_by`: Powertools' close keeps the attribute on a CLOSED item.
            open_until: match state {
                CircuitState::Closed => None,
                _ => self.number(item, OPEN_UNTIL)?,
            },
        };
        match state {
            CircuitState::Open if record.opened_at.is_none() => {
                Err(self.malformed(&self.opened_at, "is missing on an OPEN item"))
            }
            CircuitState::HalfOpen if record.half_open_owner.is_none() => {
                Err(self.malformed(&self.half_open_owner, "is missing on a HALF_OPEN item"))
            }
            CircuitState::HalfOpen if record.probe_lease_expiry.is_none() => {
                Err(self.malformed(&self.probe_lease_expiry, "is missing on a HALF_OPEN item"))
            }
            _ => Ok(record),
        }
    }

    /// The override attributes, if `override` is set; it then needs `override_by` and
    /// `override_at`.
    fn operator_override(&self, item: &Item) -> Result<Option<Override>, Malformed> {
        let Some(kind) = self.string(item, OVERRIDE)? else {
            return Ok(None);
        };
        let kind = OverrideKind::parse(kind)
            .ok_or_else(|| self.malformed(OVERRIDE, "is not OPEN, DISABLED or SHADOW"))?;
        let by = self
            .string(item, OVERRIDE_BY)?
            .ok_or_else(|| self.malformed(OVERRIDE_BY, "is missing on an override"))?;
        let at = self
            .number(item, OVERRIDE_AT)?
            .ok_or_else(|| self.malformed(OVERRIDE_AT, "is missing on an override"))?;
        Ok(Some(Override {
            kind,
            until: self.number(item, OVERRIDE_UNTIL)?,
            by: by.to_owned(),
            reason: self.string(item, OVERRIDE_REASON)?.map(str::to_owned),
            at,
        }))
    }

    fn malformed(&self, attribute: &str, problem: &'static str) -> Malformed {
        Malformed {
            attribute: attribute.to_owned(),
            problem,
        }
    }

    fn string<'i>(&self, item: &'i Item, name: &str) -> Result<Option<&'i str>, Malformed> {
        match item.get(name) {
            None => Ok(None),
            Some(AttributeValue::S(value)) => Ok(Some(value)),
            Some(_) => Err(self.malformed(name, "is not a string (S)")),
        }
    }

    /// A non-negative integer N.
    /// A count that fits a `u32`; absent: 0.
    fn count(&self, item: &Item, name: &str) -> Result<u32, Malformed> {
        match self.number(item, name)? {
            None => Ok(0),
            Some(count) => {
                u32::try_from(count).map_err(|_| self.malformed(name, "is out of range"))
            }
        }
    }

    fn number(&self, item: &Item, name: &str) -> Result<Option<u64>, Malformed> {
        match item.get(name) {
            None => Ok(None),
            Some(AttributeValue::N(value)) => value
                .parse()
                .map(Some)
                .map_err(|_| self.malformed(name, "is not a non-negative integer")),
            Some(_) => Err(self.malformed(name, "is not a number (N)")),
        }
    }
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

#[cfg(test)]
pub(super) mod tests_support {
    use super::AttributeNames;

    /// The default names, on a simple key.
    pub(in crate::store::dynamodb) fn names() -> AttributeNames {
        AttributeNames {
            key: "id".into(),
            sort_key: None,
            static_pk_value: String::new(),
            state: "state".into(),
            failure_count: "failure_count".into(),
            opened_at: "opened_at".into(),
            half_open_owner: "half_open_owner".into(),
            probe_lease_expiry: "probe_lease_expiry".into(),
            expiry: "expiration".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::names;
    use super::*;

    #[test]
    fn every_state_round_trips() {
        let records = [
            CircuitRecord::closed(),
            CircuitRecord {
                state: CircuitState::Open,
                failure_count: 5,
                opened_at: Some(1_700_000_000),
                ..CircuitRecord::closed()
            },
            CircuitRecord {
                state: CircuitState::HalfOpen,
                failure_count: 5,
                opened_at: Some(1_700_000_000),
                half_open_owner: Some("env-1".into()),
                probe_lease_expiry: Some(1_700_000_060),
                probe_successes: 2,
                reopen_count: 3,
                operator_override: None,
                suspected_until: None,
                opened_by: Some("env-1#0".into()),
                open_until: None,
            },
            CircuitRecord {
                suspected_until: Some(1_700_000_010),
                ..CircuitRecord::closed()
            },
        ];
        for record in records {
            let item = names().item("ce", &record, 42);
            assert_eq!(item["id"], s("ce"));
            assert_eq!(item["expiration"], n(42));
            assert_eq!(names().decode(&item), Ok(record));
        }
    }

    /// Powertools' close is an `UpdateItem` that keeps `opened_by`: a CLOSED item has no
    /// writer of an opening, so the name left behind reads as absent.
    #[test]
    fn a_trips_writer_left_on_a_closed_item_reads_as_absent() {
        let item: Item = [
            ("id", s("ce")),
            ("state", s("CLOSED")),
            ("failure_count", n(0)),
            (OPENED_BY, s("env-1#0")),
        ]
        .map(|(k, v)| (k.to_owned(), v))
        .into();
        assert_eq!(names().decode(&item), Ok(CircuitRecord::closed()));
        let mut open = item;
        open.insert("state".into(), s("OPEN"));
        open.insert("opened_at".into(), n(1_700_000_000));
        let record = names().decode(&open).unwrap();
        assert_eq!(record.opened_by.as_deref(), Some("env-1#0"));
    }

    #[test]
    fn overrides_are_read_from_their_own_attributes() {
        let item: Item = [
            ("id", s("ce")),
            ("state", s("OPEN")),
            ("opened_at", n(1_700_001_800)),
            (OVERRIDE, s("OPEN")),
            (OVERRIDE_UNTIL, n(1_700_001_800)),
            (OVERRIDE_BY, s("alice")),
            (OVERRIDE_REASON, s("incident 42")),
            (OVERRIDE_AT, n(1_700_000_000)),
        ]
        .map(|(k, v)| (k.to_owned(), v))
        .into();
        let record = names().decode(&item).unwrap();
        let expected = Override::new(OverrideKind::ForcedOpen, "alice", 1_700_000_000)
            .until(1_700_001_800)
            .reason("incident 42");
        assert_eq!(record.operator_override, Some(expected));

        let mut unknown = item.clone();
        unknown.insert(OVERRIDE.into(), s("AJAR"));
        assert_eq!(names().decode(&unknown).unwrap_err().attribute, OVERRIDE);
        let mut anonymous = item;
        anonymous.remove(OVERRIDE_BY);
        assert_eq!(
            names().decode(&anonymous).unwrap_err().attribute,
            OVERRIDE_BY
        );
    }

    #[test]
    fn composite_key_puts_the_name_in_the_sort_key() {
        let names = AttributeNames {
            key: "pk".into(),
            sort_key: Some("sk".into()),
            static_pk_value: "circuit_breaker#fn".into(),
            ..names()
        };
        let key = names.key("ce");
        assert_eq!(key.len(), 2);
        assert_eq!(key["pk"], s("circuit_breaker#fn"));
        assert_eq!(key["sk"], s("ce"));
    }

    #[test]
    fn bad_items_name_the_attribute() {
        let cases: [(&[(&str, AttributeValue)], &str); 7] = [
            (&[], "state"),
            (&[("state", n(1))], "state"),
            (&[("state", s("AJAR"))], "state"),
            (&[("state", s("OPEN"))], "opened_at"),
            (&[("state", s("OPEN")), ("opened_at", s("x"))], "opened_at"),
            (
                &[
                    ("state", s("OPEN")),
                    ("opened_at", n(1)),
                    ("failure_count", AttributeValue::N("-1".into())),
                ],
                "failure_count",
            ),
            (
                &[
                    ("state", s("HALF_OPEN")),
                    ("opened_at", n(1)),
                    ("probe_lease_expiry", n(2)),
                ],
                "half_open_owner",
            ),
        ];
        for (attributes, bad) in cases {
            let item: Item = attributes
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect();
            let error = names().decode(&item).unwrap_err();
            assert_eq!(error.attribute, bad, "{item:?}");
        }
    }
}
