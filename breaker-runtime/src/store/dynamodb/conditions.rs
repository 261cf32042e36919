//! The protocol's conditions as DynamoDB condition expressions.
//!
//! Each expression says on the item what `RecordWrite::allowed` says on the decoded record.
//! Placeholders are fixed (`#st`, `:open`, ...); [`Expression::bind`] keeps only the names
//! and values an expression uses, because DynamoDB rejects unused ones.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::item::{
    AttributeNames, OPEN_UNTIL, OPENED_BY, OVERRIDE, OVERRIDE_AT, OVERRIDE_BY, OVERRIDE_REASON,
    OVERRIDE_UNTIL, PROBE_SUCCESSES, REOPEN_COUNT, SUSPECTED_UNTIL,
};

/// The item is absent or cannot be decoded, so the breaker reads a closed circuit without
/// an override: a state that is not `CLOSED`, `OPEN` or `HALF_OPEN`, an attribute of the
/// wrong type, a required one missing, or an override attribute that is broken the same
/// ways (`override` not `OPEN`, `DISABLED` or `SHADOW`, no `override_by` or `override_at`). Mirrors
/// `AttributeNames::decode`, except for numbers of the right type with impossible values,
/// which no condition can recognise.
macro_rules! unreadable {
    () => {
        "(attribute_not_exists(#st) \
        OR NOT (#st IN (:closed, :open, :half)) \
        OR (attribute_exists(#fc) AND NOT attribute_type(#fc, :num)) \
        OR (attribute_exists(#oa) AND NOT attribute_type(#oa, :num)) \
        OR (attribute_exists(#ow) AND NOT attribute_type(#ow, :str)) \
        OR (attribute_exists(#le) AND NOT attribute_type(#le, :num)) \
        OR (attribute_exists(#ps) AND NOT attribute_type(#ps, :num)) \
        OR (attribute_exists(#rc) AND NOT attribute_type(#rc, :num)) \
        OR (attribute_exists(#su) AND NOT attribute_type(#su, :num)) \
        OR (#st = :open AND attribute_not_exists(#oa)) \
        OR (#st = :half AND (attribute_not_exists(#ow) OR attribute_not_exists(#le))) \
        OR (attribute_exists(#ov) AND (NOT (#ov IN (:open, :disabled, :shadow)) \
            OR NOT attribute_type(#oby, :str) \
            OR NOT attribute_type(#oat, :num) \
            OR (attribute_exists(#ou) AND NOT attribute_type(#ou, :num)) \
            OR (attribute_exists(#or) AND NOT attribute_type(#or, :str)))))"
    };
}

/// The test for an unreadable item, which docs/dynamodb.md prints once and names.
#[cfg(test)]
pub(super) const UNREADABLE: &str = unreadable!();

/// No override holds at `:now` (on a readable item).
macro_rules! no_live_override {
    () => {
        "(attribute_not_exists(#ov) OR #ou <= :now)"
    };
}

/// Trip wins when the item decodes as closed without an override that holds at `:now`
/// (the trip's `opened_at`): absent or unreadable, so a broken item heals on the next trip
/// instead of pinning the circuit, or `CLOSED` with no live override.
pub(super) const TRIP: &str = concat!(
    unreadable!(),
    " OR (#st = :closed AND ",
    no_live_override!(),
    ")"
);

/// Election: on `OPEN` with the `opened_at` this environment read (or none, if it read
/// none) and no owner, or a takeover of an expired lease that finds the fleet's probe
/// successes as read (`:ps`; absent reads as 0); never while an override holds. An
/// election that read a count (`read_successes`) is a takeover: only the takeover branch.
pub(super) fn elect(read_opened_at: bool, read_successes: bool) -> String {
    let opening = match read_opened_at {
        true => "#oa = :expected",
        false => "attribute_not_exists(#oa)",
    };
    let takeover = "#st = :half AND #le < :now";
    let branches = match read_successes {
        true => format!("({takeover} AND #ps = :ps)"),
        false => format!(
            "((#st = :open AND attribute_not_exists(#ow) AND {opening}) \
            OR ({takeover} AND (attribute_not_exists(#ps) OR #ps = :zero)))"
        ),
    };
    format!("{branches} AND {}", no_live_override!())
}

/// The election's write: half-open, owned by this environment until the lease expires. An
/// election that read no count removes `probe_successes`: an `OPEN` item may carry one that
/// a Powertools reopen (an `UpdateItem`) kept, which is not this opening's.
pub(super) fn elect_update(read_successes: bool) -> &'static str {
    match read_successes {
        true => "SET #st = :half, #ow = :me, #le = :lease, #ex = :ttl",
        false => "SET #st = :half, #ow = :me, #le = :lease, #ex = :ttl REMOVE #ps",
    }
}

/// A probe's hand-over: the fleet's successes so far, and the lease ended.
pub(super) const HAND_OVER_UPDATE: &str = "SET #ps = :successes, #le = :lease, #ex = :ttl";

/// Close, reopen and hand-over: only the owner of a half-open item.
pub(super) const OWNER: &str = "#st = :half AND #ow = :me";

/// A suspicion: on an absent item, or a readable `CLOSED` one without a live override whose
/// suspicion has ended by `:now`. An unreadable item is left as it is (the next trip
/// replaces it).
pub(super) const SUSPECT: &str = concat!(
    "attribute_not_exists(#st) OR (NOT ",
    unreadable!(),
    " AND #st = :closed AND ",
    no_live_override!(),
    " AND (attribute_not_exists(#su) OR #su <= :now))"
);

/// The suspicion's write: the end of the suspicion and the TTL; an absent item becomes a
/// closed one that Powertools reads too (`state`, `failure_count`).
pub(super) const SUSPECT_UPDATE: &str =
    "SET #st = :closed, #fc = if_not_exists(#fc, :zero), #su = :until, #ex = :ttl";

/// An operator's close: no override holds at `:now`, or the item is absent or unreadable
/// (read as closed without one), which the close replaces.
pub(super) const RESET: &str = concat!(unreadable!(), " OR ", no_live_override!());

/// An operator's write that read no override: the item has none, or is absent or
/// unreadable (read as having none).
pub(super) const NO_OVERRIDE: &str = concat!(unreadable!(), " OR attribute_not_exists(#ov)");

/// An operator's write on the override it read (kind, time and author), on a readable item.
pub(super) const OVERRIDE_IS: &str = concat!(
    "NOT ",
    unreadable!(),
    " AND #ov = :okind AND #oat = :oat AND #oby = :oby"
);

/// A release of the override it read, which holds at `:now` (as the operator saw it).
pub(super) const RELEASE_LIVE: &str = concat!(
    "NOT ",
    unreadable!(),
    " AND #ov = :okind AND #oat = :oat AND #oby = :oby \
    AND (attribute_not_exists(#ou) OR #ou > :now)"
);

/// A release of the override it read, which has ended by `:now` (as the operator saw it).
pub(super) const RELEASE_ENDED: &str = concat!(
    "NOT ",
    unreadable!(),
    " AND #ov = :okind AND #oat = :oat AND #oby = :oby AND #ou <= :now"
);

/// Removes every override attribute.
const REMOVE_OVERRIDE: &str = "#ov, #ou, #oby, #or, #oat";

/// Removes what an override and a forced open's release start afresh from, as a trip does:
/// the probe (owner, lease, the fleet's successes), the reopens' count, a suspicion, the
/// trip's writer and the time a failure asked for.
const REMOVE_FRESH_START: &str = "#ow, #le, #ps, #rc, #su, #opb, #ut";

/// The update that sets an override: the state it forces, the override's attributes, and
/// the TTL (removed for an override until released). `:nuntil`, `:nreason` and `:ttl` are
/// bound only when `until`, `reason` and `ttl` say so.
pub(super) fn set_override(forced_open: bool, until: bool, reason: bool, ttl: bool) -> String {
    let mut set = vec!["#ov = :nkind", "#oby = :nby", "#oat = :nat"];
    let mut remove = vec![REMOVE_FRESH_START];
    match forced_open {
        true => set.extend(["#st = :open", "#oa = :opened"]),
        false => {
            set.extend(["#st = :closed", "#fc = :zero"]);
            remove.push("#oa");
        }
    }
    match until {
        true => set.push("#ou = :nuntil"),
        false => remove.push("#ou"),
    }
    match reason {
        true => set.push("#or = :nreason"),
        false => remove.push("#or"),
    }
    match ttl {
        true => set.push("#ex = :ttl"),
        false => remove.push("#ex"),
    }
    format!("SET {} REMOVE {}", set.join(", "), remove.join(", "))
}

/// The update that releases an override: a forced open that holds becomes an opening as
/// of `:now`; anything else keeps the state.
pub(super) fn release(forced_open_holds: bool) -> String {
    match forced_open_holds {
        true => {
            format!(
                "SET #st = :open, #oa = :now, #ex = :ttl REMOVE {REMOVE_OVERRIDE}, {REMOVE_FRESH_START}"
            )
        }
        false => format!("SET #ex = :ttl REMOVE {REMOVE_OVERRIDE}"),
    }
}

/// An expression's placeholders, bound to attribute names and values.
#[derive(Debug, Default)]
pub(super) struct Expression {
    pub(super) names: HashMap<String, String>,
    pub(super) values: HashMap<String, AttributeValue>,
}

impl Expression {
    /// Binds the placeholders that `expressions` use. `values` are the operation's own
    /// values (`:me`, `:expected`, ...); the state names and type names are added here.
    pub(super) fn bind(
        names: &AttributeNames,
        expressions: &[&str],
        values: impl IntoIterator<Item = (&'static str, AttributeValue)>,
    ) -> Self {
        let all_names = [
            ("#st", names.state.as_str()),
            ("#fc", &names.failure_count),
            ("#oa", &names.opened_at),
            ("#ow", &names.half_open_owner),
            ("#le", &names.probe_lease_expiry),
            ("#ps", PROBE_SUCCESSES),
            ("#rc", REOPEN_COUNT),
            ("#su", SUSPECTED_UNTIL),
            ("#opb", OPENED_BY),
            ("#ut", OPEN_UNTIL),
            ("#ex", &names.expiry),
            ("#ov", OVERRIDE),
            ("#ou", OVERRIDE_UNTIL),
            ("#oby", OVERRIDE_BY),
            ("#or", OVERRIDE_REASON),
            ("#oat", OVERRIDE_AT),
        ];
        let constants = [
            (":open", s("OPEN")),
            (":half", s("HALF_OPEN")),
            (":closed", s("CLOSED")),
            (":disabled", s("DISABLED")),
            (":shadow", s("SHADOW")),
            (":zero", AttributeValue::N("0".into())),
            (":num", s("N")),
            (":str", s("S")),
        ];
        let used = |placeholder: &str| expressions.iter().any(|e| uses(e, placeholder));
        Self {
            names: all_names
                .into_iter()
                .filter(|(placeholder, _)| used(placeholder))
                .map(|(placeholder, name)| (placeholder.to_owned(), name.to_owned()))
                .collect(),
            values: constants
                .into_iter()
                .chain(values)
                .filter(|(placeholder, _)| used(placeholder))
                .map(|(placeholder, value)| (placeholder.to_owned(), value))
                .collect(),
        }
    }
}

/// Whether `expression` mentions `placeholder` as a whole token (`:exp` is not in `:expected`).
fn uses(expression: &str, placeholder: &str) -> bool {
    expression.match_indices(placeholder).any(|(at, _)| {
        !expression[at + placeholder.len()..]
            .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_match_whole_tokens_only() {
        assert!(uses("#oa = :expected", ":expected"));
        assert!(!uses("#oa = :expected", ":exp"));
        assert!(uses("a, :exp)", ":exp"));
    }

    #[test]
    fn only_used_names_and_values_are_bound() {
        let names = super::super::item::tests_support::names();
        let bound = Expression::bind(&names, &[OWNER], [(":me", s("env")), (":ttl", s("x"))]);
        let mut keys: Vec<_> = bound.names.keys().cloned().collect();
        keys.sort();
        assert_eq!(keys, ["#ow", "#st"]);
        let mut values: Vec<_> = bound.values.keys().cloned().collect();
        values.sort();
        assert_eq!(values, [":half", ":me"]);
    }

    #[test]
    fn override_placeholders_do_not_shadow_each_other() {
        let update = set_override(false, false, true, true);
        assert!(update.ends_with("REMOVE #ow, #le, #ps, #rc, #su, #opb, #ut, #oa, #ou"));
        let released = release(false);
        assert!(uses(&released, "#oat") && !uses(&released, "#oa"));
        assert_eq!(
            release(false),
            "SET #ex = :ttl REMOVE #ov, #ou, #oby, #or, #oat"
        );
    }
}
