//! How a run's figures are shown: a readable table per scenario, one JSON object per line
//! (`--json`), and one markdown table of several scenarios (`--markdown`, for
//! docs/scale.md). All three come from the same rows, so they cannot disagree.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, Table};

use crate::metrics::Summary;

fn opt(value: Option<f64>, unit: &str) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.1}{unit}"))
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The figures of `s`, as (name, value) rows.
///
/// ```
/// # use breaker_sim::report::rows;
/// # let run = { let mut s = breaker_sim::scenario::Scenario::named("light").unwrap().scaled_to(2);
/// #   s.duration_ms = 10_000; breaker_sim::fleet::run(&s).unwrap() };
/// let rows = rows(&run.metrics.summary());
/// assert_eq!(rows[0], ("envs", "2".to_owned()));
/// ```
pub fn rows(s: &Summary) -> Vec<(&'static str, String)> {
    vec![
        ("envs", thousands(u64::from(s.envs))),
        ("virtual time", format!("{} s", s.duration_s)),
        ("calls", thousands(s.calls)),
        ("rejected", thousands(s.rejected)),
        ("downstream calls", thousands(s.downstream_calls)),
        (
            "downstream calls while open",
            thousands(s.downstream_calls_while_open),
        ),
        (
            "failed non-probe calls",
            thousands(s.failed_non_probe_calls),
        ),
        (
            "first failure to trip",
            opt(s.first_failure_to_trip_s, " s"),
        ),
        (
            "max non-probe calls per env while failing",
            thousands(u64::from(s.max_non_probe_calls_per_env_while_failing)),
        ),
        (
            "abandoned calls / killed invocations",
            format!(
                "{} / {}",
                thousands(s.abandoned_calls),
                thousands(s.killed_invocations)
            ),
        ),
        ("probes", thousands(s.probes)),
        (
            "max probes in flight",
            thousands(u64::from(s.max_probes_in_flight)),
        ),
        (
            "trips landed (by the fleet policy) / closes landed",
            format!("{} ({}) / {}", s.trips_won, s.fleet_trips_won, s.closes_won),
        ),
        ("recovery windows", thousands(s.windows as u64)),
        (
            "max elections won per window",
            thousands(u64::from(s.max_elections_won_per_window)),
        ),
        (
            "max election writes per window",
            thousands(u64::from(s.max_election_writes_per_window)),
        ),
        (
            "max election + probe hand-over writes per window",
            thousands(u64::from(s.max_probe_writes_per_window)),
        ),
        (
            "election writes outside windows",
            thousands(s.election_writes_outside_windows),
        ),
        (
            "store requests (reads / writes)",
            format!(
                "{} ({} / {})",
                thousands(s.store_requests),
                thousands(s.read_requests),
                thousands(s.write_requests)
            ),
        ),
        (
            "writes: trip / elect / hand-over / close+reopen / report",
            format!(
                "{} / {} / {} / {} / {}",
                thousands(s.trip_writes),
                thousands(s.election_writes),
                thousands(s.pass_writes),
                thousands(s.close_and_reopen_writes),
                thousands(s.report_writes)
            ),
        ),
        (
            "max report WCU/s outside trip bursts",
            thousands(u64::from(s.max_report_wcu_per_s)),
        ),
        ("throttled requests", thousands(s.throttled_requests)),
        (
            "throttled in / outside trip burst",
            format!(
                "{} / {}",
                thousands(s.throttled_in_trip_burst),
                thousands(s.throttled_outside_trip_burst)
            ),
        ),
        (
            "requests to an unreachable store",
            thousands(s.unreachable_requests),
        ),
        ("max RCU/s", format!("{:.1}", s.max_rcu_per_s)),
        ("max WCU/s", thousands(u64::from(s.max_wcu_per_s))),
        ("max open propagation", opt(s.max_open_propagation_s, " s")),
        (
            "max close propagation",
            opt(s.max_close_propagation_s, " s"),
        ),
        (
            "max rejecting after close",
            opt(s.max_rejecting_after_close_s, " s"),
        ),
        ("time to close after recovery", opt(s.time_to_close_s, " s")),
        ("close latency", opt(s.close_latency_s, " s")),
        (
            "store requests per million calls",
            thousands(s.store_requests_per_million_calls.round() as u64),
        ),
        (
            "store cost per million calls",
            format!("${:.4}", s.store_cost_per_million_calls_usd),
        ),
    ]
}

/// A readable table of one scenario's figures.
pub fn table(s: &Summary) -> String {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table.set_header(vec![s.scenario.as_str(), ""]);
    for (name, value) in rows(s) {
        table.add_row(vec![name.to_owned(), value]);
    }
    if let Some(column) = table.column_mut(1) {
        column.set_cell_alignment(CellAlignment::Right);
    }
    table.to_string()
}

/// One JSON object, on one line.
pub fn json_line(s: &Summary) -> Result<String, serde_json::Error> {
    serde_json::to_string(s)
}

/// A markdown table with one column per scenario.
pub fn markdown(summaries: &[Summary]) -> String {
    let mut out = String::from("| |");
    for s in summaries {
        out.push_str(&format!(" `{}` |", s.scenario));
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(summaries.len()));
    out.push('\n');
    let columns: Vec<_> = summaries.iter().map(rows).collect();
    let Some(first) = columns.first() else {
        return out;
    };
    for (i, (name, _)) in first.iter().enumerate() {
        out.push_str(&format!("| {name} |"));
        for column in &columns {
            out.push_str(&format!(" {} |", column[i].1));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(30_012_345), "30,012,345");
    }
}
