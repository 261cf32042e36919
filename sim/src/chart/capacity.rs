//! The capacity chart of a run, per virtual second: the calls that reached the downstream
//! against its capacity and the fleet's full rate, so an overload after the return (the
//! admitted line above the capacity line) shows by eye. Same style as the run's chart.

use std::path::Path;

use plotters::prelude::*;

use super::{CALLS, OPEN, draw_legend, legend_mark, seconds_panel, titled_svg};
use crate::fleet::Run;
use crate::summary::CapacityFigures;

/// Writes the capacity chart of `run`, whose capacity figures are `figures`, to `path`.
pub fn write_capacity(
    figures: &CapacityFigures,
    run: &Run,
    path: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let admitted = &figures.admitted_per_s;
    let capacity = &figures.capacity_per_s;
    let full_rate = figures.full_rate_per_s;
    let root = titled_svg(path, (960, 400), run)?;
    let seconds_len = admitted.len().max(1) as f64;
    let top = admitted
        .iter()
        .chain(capacity.iter().flatten())
        .map(|v| f64::from(*v))
        .fold(full_rate.max(1.0), f64::max)
        * 1.05;
    let caption = "calls reaching the downstream per second, and its capacity";
    let mut chart = seconds_panel(&root, caption, seconds_len, top)?;
    chart
        .draw_series(LineSeries::new(
            admitted
                .iter()
                .enumerate()
                .map(|(i, v)| (i as f64, f64::from(*v))),
            CALLS.stroke_width(2),
        ))?
        .label("admitted")
        .legend(legend_mark(CALLS));
    // One line per stretch of finite capacity: an unlimited one has no line.
    let mut stretches: Vec<Vec<(f64, f64)>> = Vec::new();
    for (i, c) in capacity.iter().enumerate() {
        let point = c.map(|c| (i as f64, f64::from(c)));
        match (point, i.checked_sub(1).and_then(|p| capacity[p])) {
            (Some(point), Some(_)) => stretches.last_mut().into_iter().for_each(|s| s.push(point)),
            (Some(point), None) => stretches.push(vec![point]),
            (None, _) => {}
        }
    }
    for (n, stretch) in stretches.into_iter().enumerate() {
        let series = chart.draw_series(LineSeries::new(stretch, OPEN.stroke_width(2)))?;
        if n == 0 {
            series.label("capacity").legend(legend_mark(OPEN));
        }
    }
    const FULL_RATE: RGBColor = RGBColor(150, 150, 150);
    chart
        .draw_series(LineSeries::new(
            [(0.0, full_rate), (seconds_len, full_rate)],
            FULL_RATE.stroke_width(1),
        ))?
        .label("the fleet's full rate")
        .legend(legend_mark(FULL_RATE));
    draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present()?;
    Ok(())
}
