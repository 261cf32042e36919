//! The rows of the capacity figures: the downstream's return, its load against its
//! capacity, and the store's load per second.

use super::{opt, thousands};
use crate::summary::{BrownoutFigures, CapacityFigures};

/// Seconds after the return at which the table shows the load against the capacity: its
/// start, a recovery timeout in, and the end of a 120 s ramp.
const CHECKPOINTS_S: [u64; 3] = [10, 30, 120];

/// The figures of `c`, as (name, value) rows.
pub(super) fn rows(c: &CapacityFigures) -> Vec<(&'static str, String)> {
    let after_return = |figure: Option<u64>| figure.map_or_else(|| "–".to_owned(), thousands);
    vec![
        ("the downstream's return", opt(c.returned_at_s, " s")),
        (
            "failed calls / openings after the return",
            format!(
                "{} / {}",
                after_return(c.failed_calls_after_return),
                after_return(c.reopens_after_return)
            ),
        ),
        (
            "admitted/s (capacity) at return +10 / +30 / +120 s",
            checkpoints(c),
        ),
        (
            "admitted above capacity (after the return)",
            format!(
                "{} ({})",
                thousands(c.admitted_above_capacity),
                after_return(c.admitted_above_capacity_after_return)
            ),
        ),
        (
            "95 % of the full rate after the return",
            opt(c.full_rate_after_return_s, " s"),
        ),
        (
            "failures carrying a retry-after",
            thousands(c.retry_after_answers),
        ),
        (
            "store reads/s: mean / max",
            format!(
                "{:.1} / {}",
                c.store_reads_per_s,
                thousands(u64::from(c.max_store_reads_per_s))
            ),
        ),
        (
            "store writes/s: mean / max",
            format!(
                "{:.1} / {}",
                c.store_writes_per_s,
                thousands(u64::from(c.max_store_writes_per_s))
            ),
        ),
    ]
}

/// The calls admitted, and the capacity, in the seconds [`CHECKPOINTS_S`] after the return.
fn checkpoints(c: &CapacityFigures) -> String {
    let Some(back) = c.returned_at_s else {
        return "–".to_owned();
    };
    let at = |offset: u64| {
        let second = (back.ceil() as u64 + offset) as usize;
        let admitted = c.admitted_per_s.get(second).copied();
        let capacity = c.capacity_per_s.get(second).copied().flatten();
        match (admitted, capacity) {
            (None, _) => "–".to_owned(),
            (Some(a), Some(cap)) => format!(
                "{} ({})",
                thousands(u64::from(a)),
                thousands(u64::from(cap))
            ),
            (Some(a), None) => format!("{} (∞)", thousands(u64::from(a))),
        }
    };
    CHECKPOINTS_S.map(at).join(" / ")
}

/// The brownout figures of `b`, as (name, value) rows.
pub(super) fn brownout_rows(b: &BrownoutFigures) -> Vec<(&'static str, String)> {
    let percent = |share: Option<f64>| {
        share.map_or_else(|| "–".to_owned(), |s| format!("{:.1} %", s * 100.0))
    };
    vec![
        ("calls shed (adaptive)", thousands(b.shed_calls)),
        (
            "while capacity is limited: served / capacity",
            format!(
                "{} / {} = {}",
                thousands(b.served_while_limited),
                thousands(b.capacity_while_limited),
                percent(b.goodput_share_while_limited)
            ),
        ),
        (
            "while capacity is limited: failed / admitted",
            format!(
                "{} = {}",
                thousands(b.failed_while_limited),
                percent(b.failed_share_of_admitted_while_limited)
            ),
        ),
        (
            "outage start to 95 % rejected or shed",
            opt(b.outage_to_95_turned_away_s, " s"),
        ),
    ]
}
