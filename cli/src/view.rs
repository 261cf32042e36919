//! How circuits are shown: a table, one circuit's details, or JSON. Every function takes
//! `now` (unix seconds), so ages and remaining times are computed once per view.

use std::time::{Duration, UNIX_EPOCH};

use breaker_runtime::store::{CircuitRecord, Override, OverrideKind};
use breaker_runtime::unstable::{Listing, OPENED_AT_UNTIL_RELEASED, StoredCircuit, StoredKeyIndex};
use comfy_table::Table;
use comfy_table::presets::UTF8_FULL_CONDENSED;
use serde_json::{Value, json};

use crate::printable::printable;
use crate::target::{KeyOf, Target};

/// One row of a listing: a circuit's item (a plain circuit's, or a key's of a keyed
/// circuit), or a keyed circuit's index, which stands for the keyed circuit.
#[derive(Debug, Clone)]
pub(crate) enum Row<'a> {
    Circuit {
        circuit: &'a StoredCircuit,
        /// The keyed circuit and key, for a key's item.
        key: Option<KeyOf>,
    },
    Keyed(&'a StoredKeyIndex),
}

/// The listing's rows: each keyed circuit's row, then its keys' items, in the order of
/// circuit names.
pub(crate) fn rows(listing: &Listing) -> Vec<Row<'_>> {
    let mut rows: Vec<Row<'_>> = (listing.circuits.iter())
        .map(|circuit| {
            let key = Target::new(&circuit.name, None).ok().and_then(|t| t.key);
            Row::Circuit { circuit, key }
        })
        .chain(listing.key_indexes.iter().map(Row::Keyed))
        .collect();
    rows.sort_by(|a, b| a.order().cmp(&b.order()));
    rows
}

impl<'a> Row<'a> {
    /// A circuit's item; `key` for a key's.
    pub(crate) fn circuit(circuit: &'a StoredCircuit, key: Option<KeyOf>) -> Self {
        Row::Circuit { circuit, key }
    }

    /// Where the row sorts: by circuit, the keyed circuit's row first, then its keys.
    fn order(&self) -> (&str, u8, String) {
        match self {
            Row::Circuit { circuit, key: None } => (&circuit.name, 0, String::new()),
            Row::Circuit { key: Some(key), .. } => (&key.circuit, 1, key.shown()),
            Row::Keyed(index) => (&index.circuit, 0, String::new()),
        }
    }

    /// What the row is called: `payments`, `webhooks[shop-17]`, `webhooks` (keyed).
    pub(crate) fn label(&self) -> String {
        match self {
            Row::Circuit { key: Some(key), .. } => key.label(),
            Row::Circuit { circuit, .. } => printable(&circuit.name),
            Row::Keyed(index) => printable(&index.circuit),
        }
    }

    /// The state the fleet acts on, or for a keyed circuit its open-key count.
    pub(crate) fn state(&self, now: u64) -> String {
        match self {
            Row::Circuit { circuit, .. } => effective(circuit, now),
            Row::Keyed(index) => keyed_state(index),
        }
    }

    /// The row as JSON: a circuit's item as [`json()`], a key's with `key` and `id`
    /// besides; a keyed circuit's index with its open keys, decoded.
    pub(crate) fn json(&self, now: u64) -> Value {
        match self {
            Row::Circuit { circuit, key } => {
                let mut value = json(circuit, now);
                if let Some(key) = key {
                    value["name"] = json!(key.circuit);
                    value["key"] = json!(key.key);
                    value["id"] = json!(circuit.name);
                }
                value
            }
            Row::Keyed(index) => json!({
                "name": index.circuit,
                "keyed": true,
                "open_keys": index.open_keys,
                "keys": index.entries.iter().map(|(encoded, _)| Target::of_entry(&index.circuit, encoded).key.and_then(|k| k.key)).collect::<Vec<_>>(),
                "ids": index.entries.iter().map(|(encoded, _)| Target::of_entry(&index.circuit, encoded).id).collect::<Vec<_>>(),
            }),
        }
    }
}

/// `KEYED: 2 open keys`: the index's count, which the cap holds.
pub(crate) fn keyed_state(index: &StoredKeyIndex) -> String {
    let plural = if index.open_keys == 1 { "" } else { "s" };
    format!("KEYED: {} open key{plural}", index.open_keys)
}

/// The state the fleet acts on: a holding override first, else the stored state.
pub(crate) fn effective(circuit: &StoredCircuit, now: u64) -> String {
    let record = match &circuit.record {
        Ok(record) => record,
        Err(_) => return "MALFORMED (read as CLOSED)".to_owned(),
    };
    let label = match record.live_override(now).map(|o| o.kind) {
        Some(OverrideKind::ForcedOpen) => "FORCED OPEN",
        Some(OverrideKind::Disabled) => "DISABLED",
        Some(OverrideKind::Shadow) => "SHADOW",
        None => return record.state.as_str().to_owned(),
    };
    match record.state == record.effective_state(now) {
        true => label.to_owned(),
        // A Powertools environment wrote the state under the override.
        false => format!("{label} (stored {})", record.state.as_str()),
    }
}

/// Every row as a table. With `marked` (the live view), a first column marks the rows
/// whose labels it holds with `*`.
pub(crate) fn table(rows: &[Row<'_>], now: u64, marked: Option<&[String]>) -> String {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    let header = [
        "CIRCUIT", "STATE", "SINCE", "FAILURES", "PROBE", "OVERRIDE", "TTL",
    ];
    let mark_column = marked.map(|_| "");
    table.set_header(mark_column.into_iter().chain(header));
    for row in rows {
        let label = row.label();
        let mark = marked.map(|marked| match marked.contains(&label) {
            true => "*".to_owned(),
            false => String::new(),
        });
        let (record, expiration) = match row {
            Row::Circuit { circuit, .. } => (circuit.record.as_ref().ok(), circuit.expiration),
            // The index keeps no TTL; one an older version set is shown with a warning.
            Row::Keyed(index) => (None, index.expiration),
        };
        table.add_row(mark.into_iter().chain([
            label,
            row.state(now),
            record.map_or("-".into(), |r| since(r, now)),
            record.map_or("-".into(), |r| r.failure_count.to_string()),
            record.map_or("-".into(), |r| probe(r, now)),
            record.map_or("-".into(), |r| override_summary(r, now)),
            ttl(expiration, now),
        ]));
    }
    let mut text = table.to_string();
    for row in rows {
        match row {
            Row::Circuit { circuit, .. } => {
                if let Err(problem) = &circuit.record {
                    text.push_str(&format!(
                        "\nwarning: {}: {}",
                        row.label(),
                        printable(problem)
                    ));
                }
            }
            Row::Keyed(index) => {
                for warning in index_warnings(index) {
                    text.push_str(&format!("\nwarning: {}: {warning}", row.label()));
                }
            }
        }
    }
    text
}

/// What is wrong with a keyed circuit's index, and what an operator can do: attributes the
/// breaker does not write, and a count that disagrees with the entries.
pub(crate) fn index_warnings(index: &StoredKeyIndex) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(at) = index.expiration {
        warnings.push(format!(
            "the index has a TTL ({}), left by an older version: DynamoDB would delete the \
             item and unname every key it names, open ones too; the next write to the index \
             (a key's trip or close, an override of a key, breaker reconcile) removes it",
            timestamp(at)
        ));
    }
    for problem in &index.malformed {
        let effect = match problem.unreadable {
            true => {
                "; the breaker cannot read this index: every read of its keys fails (each \
                 key keeps what its environment last believed, and a trip opens in that \
                 environment only) until the attribute is fixed or removed"
            }
            false => "; it counts against the cap: remove it, then run breaker reconcile",
        };
        warnings.push(format!("{}{effect}", printable(&problem.problem)));
    }
    let (count, entries) = (index.open_keys, index.entry_attributes);
    if count != entries && !index.malformed.iter().any(|p| p.attribute == "open_keys") {
        let effect = match count > entries {
            true => format!(
                "the cap counts {} more key(s) than the index names, and no close gives \
                 those slots back",
                count - entries
            ),
            false => format!(
                "the cap counts {} fewer key(s) than the index names, so as many more may open",
                entries - count
            ),
        };
        warnings.push(format!(
            "open_keys is {count} but the index has {entries} entries: {effect} (an entry \
             added or deleted by hand?); breaker reconcile {} sets the count to the entries",
            Target::new(&index.circuit, None)
                .map_or_else(|_| printable(&index.circuit), |t| t.args())
        ));
    }
    warnings
}

/// One circuit (or one key's circuit) in full, one field a line.
pub(crate) fn details(circuit: &StoredCircuit, target: &Target, now: u64) -> String {
    let mut lines = match &target.key {
        None => vec![("circuit", printable(&circuit.name))],
        Some(key) => vec![
            ("circuit", printable(&key.circuit)),
            (
                "key",
                key.key.as_deref().map_or_else(
                    || "(longer than its id holds: named by the item's id)".to_owned(),
                    printable,
                ),
            ),
            ("item", printable(&circuit.name)),
        ],
    };
    lines.push(("state", effective(circuit, now)));
    match &circuit.record {
        Err(problem) => lines.push(("malformed", printable(problem))),
        Ok(record) => {
            lines.push(("stored state", record.state.as_str().to_owned()));
            lines.push(("failures", record.failure_count.to_string()));
            lines.push(("opened", since(record, now)));
            lines.push(("probe", probe(record, now)));
            match &record.operator_override {
                None => lines.push(("override", "-".to_owned())),
                Some(o) => {
                    lines.push(("override", override_summary(record, now)));
                    lines.push(("set by", printable(&o.by)));
                    lines.push(("set at", timestamp(o.at)));
                    let reason = o.reason.as_deref().map_or("-".into(), printable);
                    lines.push(("reason", reason));
                }
            }
        }
    }
    lines.push(("ttl", ttl(circuit.expiration, now)));
    lines
        .iter()
        .map(|(field, value)| format!("{field:<13}{value}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One circuit as JSON: the stored attributes as numbers and strings, and the state the
/// fleet acts on.
pub(crate) fn json(circuit: &StoredCircuit, now: u64) -> Value {
    let mut value = json!({
        "name": circuit.name,
        "effective_state": effective(circuit, now),
        "expiration": circuit.expiration,
    });
    match &circuit.record {
        Err(problem) => value["malformed"] = json!(problem),
        Ok(record) => {
            value["state"] = json!(record.state.as_str());
            value["failure_count"] = json!(record.failure_count);
            value["opened_at"] = json!(record.opened_at);
            value["half_open_owner"] = json!(record.half_open_owner);
            value["probe_lease_expiry"] = json!(record.probe_lease_expiry);
            value["override"] = match &record.operator_override {
                None => Value::Null,
                Some(o) => override_json(o, now),
            };
        }
    }
    value
}

fn override_json(o: &Override, now: u64) -> Value {
    json!({
        "kind": o.kind.as_str(),
        "until": o.until,
        "by": o.by,
        "reason": o.reason,
        "at": o.at,
        "active": o.holds_at(now),
    })
}

/// Since when the circuit is open.
pub(crate) fn since(record: &CircuitRecord, now: u64) -> String {
    match record.opened_at {
        None => "-".to_owned(),
        Some(OPENED_AT_UNTIL_RELEASED) => "until released".to_owned(),
        Some(at) if at > now => format!("held until {}", timestamp(at)),
        Some(at) => format!("{} ago", span(now - at)),
    }
}

fn probe(record: &CircuitRecord, now: u64) -> String {
    match (&record.half_open_owner, record.probe_lease_expiry) {
        (Some(owner), Some(lease)) if lease >= now => {
            format!(
                "{} (lease {} left)",
                printable(owner),
                span(lease - now + 1)
            )
        }
        (Some(owner), Some(lease)) => format!(
            "{} (lease expired {} ago)",
            printable(owner),
            span(now - lease)
        ),
        (Some(owner), None) => printable(owner),
        _ => "-".to_owned(),
    }
}

/// `forced open by alice until 2026-12-01T03:00:00Z (29m 10s left): incident 42`.
pub(crate) fn override_summary(record: &CircuitRecord, now: u64) -> String {
    let Some(o) = &record.operator_override else {
        return "-".to_owned();
    };
    let end = match o.until {
        None => "until released".to_owned(),
        Some(until) if until > now => {
            format!("until {} ({} left)", timestamp(until), span(until - now))
        }
        Some(until) => format!("ended {} ago", span(now - until)),
    };
    let reason = o
        .reason
        .as_deref()
        .map(|r| format!(": {}", printable(r)))
        .unwrap_or_default();
    format!("{} by {} {end}{reason}", o.kind, printable(&o.by))
}

pub(crate) fn ttl(expiration: Option<u64>, now: u64) -> String {
    match expiration {
        None => "none".to_owned(),
        Some(at) if at > now => format!("in {}", span(at - now)),
        Some(_) => "due".to_owned(),
    }
}

/// RFC 3339 in UTC, to the second.
pub(crate) fn timestamp(unix_secs: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(unix_secs)).to_string()
}

/// `1h 30m`, `45s`.
pub(crate) fn span(secs: u64) -> String {
    humantime::format_duration(Duration::from_secs(secs)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_700_000_000;

    fn stored(record: CircuitRecord) -> StoredCircuit {
        let mut circuit = breaker_runtime::unstable::StoredCircuit::new("ce", Ok(record));
        circuit.expiration = Some(NOW + 3_600);
        circuit
    }

    #[test]
    fn an_override_shows_who_until_when_and_why() {
        let mut record = CircuitRecord::open(NOW + 1_800, 0);
        record.operator_override = Some(
            Override::new(OverrideKind::ForcedOpen, "alice", NOW)
                .until(NOW + 1_800)
                .reason("incident 42"),
        );
        assert_eq!(
            override_summary(&record, NOW),
            "forced open by alice until 2023-11-14T22:43:20Z (30m left): incident 42"
        );
        let circuit = stored(record);
        assert_eq!(effective(&circuit, NOW), "FORCED OPEN");
        assert_eq!(effective(&circuit, NOW + 1_800), "OPEN");
        let target = Target::new("ce", None).unwrap();
        assert!(details(&circuit, &target, NOW).contains("set by       alice"));
    }

    #[test]
    fn a_state_written_under_an_override_is_shown_beside_it() {
        let mut record = CircuitRecord::closed();
        record.operator_override = Some(Override::new(OverrideKind::ForcedOpen, "alice", NOW));
        assert_eq!(
            effective(&stored(record), NOW),
            "FORCED OPEN (stored CLOSED)"
        );
    }

    #[test]
    fn ages_leases_and_ttls_read_as_spans() {
        let probing = CircuitRecord::half_open(NOW - 90, 5, "env-1", NOW + 29);
        assert_eq!(since(&probing, NOW), "1m 30s ago");
        assert_eq!(probe(&probing, NOW), "env-1 (lease 30s left)");
        assert_eq!(ttl(None, NOW), "none");
        assert_eq!(ttl(Some(NOW + 3_660), NOW), "in 1h 1m");
    }
}
