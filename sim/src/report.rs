//! How a run's figures are shown: a readable table per scenario, one JSON object per line
//! (`--json`), and one markdown table of several scenarios (`--markdown`, for
//! docs/scale.md). All three come from the same rows, so they cannot disagree.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, Table};

use crate::keyed_metrics::KeyedSummary;
use crate::metrics::Summary;

mod capacity;

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

/// The fleet: environments, and the invocations each runs at once where that is not one.
fn envs(s: &Summary) -> String {
    match &s.managed {
        None => thousands(u64::from(s.envs)),
        Some(m) => format!("{} × {}", thousands(u64::from(s.envs)), m.concurrency),
    }
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
    let mut rows = vec![
        ("envs", envs(s)),
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
                thousands(s.hand_over_writes),
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
    ];
    rows.extend(capacity::rows(&s.capacity));
    rows.extend(capacity::brownout_rows(&s.brownout));
    if let Some(m) = &s.managed {
        rows.push((
            "max probes at the downstream at once",
            thousands(u64::from(m.max_probes_at_downstream)),
        ));
    }
    rows
}

/// A readable table of one scenario's figures.
pub fn table(s: &Summary) -> String {
    table_of(&s.scenario, rows(s))
}

fn table_of(title: &str, rows: Vec<(&'static str, String)>) -> String {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table.set_header(vec![title, ""]);
    for (name, value) in rows {
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

/// A markdown table with one column per scenario (and per seed, named, where the runs
/// have more than one).
pub fn markdown(summaries: &[Summary]) -> String {
    let seeds = summaries.iter().any(|s| s.seed != summaries[0].seed);
    let titles = summaries
        .iter()
        .map(|s| match seeds {
            true => format!("`{}` seed {}", s.scenario, s.seed),
            false => format!("`{}`", s.scenario),
        })
        .collect();
    markdown_of(titles, summaries.iter().map(rows).collect())
}

/// A markdown table with one column of `rows` per title.
fn markdown_of(titles: Vec<String>, columns: Vec<Vec<(&'static str, String)>>) -> String {
    let mut out = String::from("| |");
    for title in &titles {
        out.push_str(&format!(" {title} |"));
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(titles.len()));
    out.push('\n');
    // The longest column names the rows: a managed run has rows the others lack ("–").
    let Some(longest) = columns.iter().max_by_key(|column| column.len()) else {
        return out;
    };
    for (name, _) in longest {
        out.push_str(&format!("| {name} |"));
        for column in &columns {
            let value = column.iter().find(|(n, _)| n == name).map(|(_, v)| v);
            out.push_str(&format!(" {} |", value.map_or("–", String::as_str)));
        }
        out.push('\n');
    }
    out
}

/// The figures of a keyed run, as (name, value) rows.
pub fn keyed_rows(s: &KeyedSummary) -> Vec<(&'static str, String)> {
    vec![
        ("guarding", s.guarding.clone()),
        ("seed", s.seed.to_string()),
        (
            "envs / keys",
            format!(
                "{} / {}",
                thousands(u64::from(s.envs)),
                thousands(u64::from(s.keys))
            ),
        ),
        (
            "failing keys (opened)",
            format!(
                "{} ({})",
                thousands(u64::from(s.failing_keys)),
                thousands(u64::from(s.failing_keys_opened))
            ),
        ),
        (
            "most called failing key not opened",
            s.first_failing_rank_not_opened
                .map_or_else(|| "–".to_owned(), |rank| format!("rank {rank}")),
        ),
        (
            "calls to failing keys: failed / rejected",
            format!(
                "{}: {} / {}",
                thousands(s.calls_to_failing),
                thousands(s.failed_calls_to_failing),
                thousands(s.rejected_calls_to_failing)
            ),
        ),
        (
            "calls to healthy keys: rejected",
            format!(
                "{}: {}",
                thousands(s.calls_to_healthy),
                thousands(s.rejected_calls_to_healthy)
            ),
        ),
        (
            "reads/s: index / items",
            format!("{:.1} / {:.1}", s.index_reads_per_s, s.item_reads_per_s),
        ),
        (
            "index read units/s",
            format!("{:.1}", s.index_read_units_per_s),
        ),
        (
            "max reads in a second",
            thousands(u64::from(s.max_reads_in_a_second)),
        ),
        (
            "writes (index / reports)",
            format!(
                "{} ({} / {})",
                thousands(s.writes),
                thousands(s.index_writes),
                thousands(s.report_writes)
            ),
        ),
        (
            "max writes per 10 s window",
            thousands(s.max_writes_per_window),
        ),
        (
            "throttled attempts (index writes)",
            format!(
                "{} ({})",
                thousands(s.throttled),
                thousands(s.index_throttled)
            ),
        ),
        (
            "index's largest size",
            format!("{} B", thousands(s.max_index_bytes as u64)),
        ),
        (
            "most keys open at once / named by the index / cap",
            format!(
                "{} / {} / {}",
                thousands(u64::from(s.max_open_keys)),
                thousands(u64::from(s.max_index_open_keys)),
                thousands(u64::from(s.cap))
            ),
        ),
        ("adds refused by the cap", thousands(s.cap_refusals)),
        (
            "suspicions refused (1,000 named)",
            thousands(s.suspicion_refusals),
        ),
        (
            "open keys the index did not name",
            thousands(s.unindexed_open_keys),
        ),
    ]
}

/// A readable table of one keyed run's figures.
pub fn keyed_table(s: &KeyedSummary) -> String {
    table_of(&s.scenario, keyed_rows(s))
}

/// A markdown table with one column per keyed run.
pub fn keyed_markdown(summaries: &[KeyedSummary]) -> String {
    let titles = summaries
        .iter()
        .map(|s| format!("`{}`", s.scenario))
        .collect();
    markdown_of(titles, summaries.iter().map(keyed_rows).collect())
}

/// The rank-100 key's comparisons, one line per seed that ran `keyed-rank100` with
/// `keyed-rank100-alone` (failed calls) or `keyed-rank100-one-circuit` (reads per second).
pub fn keyed_comparisons(summaries: &[KeyedSummary]) -> Vec<String> {
    let find = |name: &str, seed: u64| {
        summaries
            .iter()
            .find(|s| s.scenario == name && s.seed == seed)
    };
    let mut lines = Vec::new();
    for keyed in summaries.iter().filter(|s| s.scenario == "keyed-rank100") {
        let seed = keyed.seed;
        if let Some(alone) = find("keyed-rank100-alone", seed) {
            lines.push(format!(
                "seed {seed}: the rank-100 key's failed calls, keyed {} / alone {} = {:.2}× (target ≤ 2×)",
                keyed.failed_calls_to_failing,
                alone.failed_calls_to_failing,
                ratio(keyed.failed_calls_to_failing as f64, alone.failed_calls_to_failing as f64)
            ));
        }
        if let Some(one) = find("keyed-rank100-one-circuit", seed) {
            let reads = keyed.index_reads_per_s + keyed.item_reads_per_s;
            let one_reads = one.index_reads_per_s + one.item_reads_per_s;
            lines.push(format!(
                "seed {seed}: reads/s, keyed {reads:.1} / one circuit {one_reads:.1} = {:.2}× (target ≤ 1.2×)",
                ratio(reads, one_reads)
            ));
        }
    }
    for keyed in summaries.iter().filter(|s| s.scenario == "keyed-10pct") {
        let seed = keyed.seed;
        if let Some(plain) = find("keyed-10pct-plain-per-key", seed) {
            let missing = plain
                .opened_failing_ranks
                .iter()
                .filter(|rank| !keyed.opened_failing_ranks.contains(rank))
                .count();
            lines.push(format!(
                "seed {seed}: failing keys opened, keyed {} / a plain circuit per key {} of {}; opened by a plain circuit but not keyed: {missing}",
                keyed.failing_keys_opened, plain.failing_keys_opened, keyed.failing_keys
            ));
        }
    }
    lines
}

/// `a / b`, infinite for `a > 0 = b`, 1 for 0 / 0.
pub fn ratio(a: f64, b: f64) -> f64 {
    match (a, b) {
        (a, b) if b > 0.0 => a / b,
        (a, _) if a > 0.0 => f64::INFINITY,
        _ => 1.0,
    }
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
