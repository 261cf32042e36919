//! How circuits are shown: a table, one circuit's details, or JSON. Every function takes
//! `now` (unix seconds), so ages and remaining times are computed once per view.

use std::time::{Duration, UNIX_EPOCH};

use breaker_runtime::store::{CircuitRecord, Override, OverrideKind};
use breaker_runtime::unstable::{OPENED_AT_UNTIL_RELEASED, StoredCircuit};
use comfy_table::Table;
use comfy_table::presets::UTF8_FULL_CONDENSED;
use serde_json::{Value, json};

/// `text` as a terminal may print it: control characters (escape sequences among them,
/// which could rewrite the screen or hide a line) shown escaped. Names, owners, reasons and
/// malformed-item text all come from the table, written by anyone with access to it.
pub(crate) fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect()
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

/// Every circuit as a table. With `marked` (the live view), a first column marks the rows
/// it names with `*`.
pub(crate) fn table(circuits: &[StoredCircuit], now: u64, marked: Option<&[String]>) -> String {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    let header = [
        "CIRCUIT", "STATE", "SINCE", "FAILURES", "PROBE", "OVERRIDE", "TTL",
    ];
    let mark_column = marked.map(|_| "");
    table.set_header(mark_column.into_iter().chain(header));
    for circuit in circuits {
        let mark = marked.map(|marked| match marked.contains(&circuit.name) {
            true => "*".to_owned(),
            false => String::new(),
        });
        let record = circuit.record.as_ref().ok();
        table.add_row(mark.into_iter().chain([
            printable(&circuit.name),
            effective(circuit, now),
            record.map_or("-".into(), |r| since(r, now)),
            record.map_or("-".into(), |r| r.failure_count.to_string()),
            record.map_or("-".into(), |r| probe(r, now)),
            record.map_or("-".into(), |r| override_summary(r, now)),
            ttl(circuit.expiration, now),
        ]));
    }
    let mut text = table.to_string();
    for circuit in circuits {
        if let Err(problem) = &circuit.record {
            text.push_str(&format!(
                "\nwarning: {}: {}",
                printable(&circuit.name),
                printable(problem)
            ));
        }
    }
    text
}

/// One circuit in full, one field a line.
pub(crate) fn details(circuit: &StoredCircuit, now: u64) -> String {
    let mut lines = vec![
        ("circuit", printable(&circuit.name)),
        ("state", effective(circuit, now)),
    ];
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
fn since(record: &CircuitRecord, now: u64) -> String {
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

fn ttl(expiration: Option<u64>, now: u64) -> String {
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
        assert!(details(&circuit, NOW).contains("set by       alice"));
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
