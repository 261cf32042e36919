//! The capacity chart of a run, per virtual second: the calls that reached the downstream
//! against its capacity and the fleet's full rate, so an overload after the return (the
//! admitted line above the capacity line) shows by eye. Same style as the run's chart.

use std::path::Path;

use plotters::prelude::*;

use super::{CALLS, OPEN};
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
    let root = SVGBackend::new(path, (960, 400)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!(
        "{} — {} environments, seed {}",
        run.scenario.name, run.scenario.envs, run.scenario.seed
    );
    let root = root.titled(&title, ("sans-serif", 20))?;
    let seconds_len = admitted.len().max(1) as f64;
    let top = admitted
        .iter()
        .chain(capacity.iter().flatten())
        .map(|v| f64::from(*v))
        .fold(full_rate.max(1.0), f64::max)
        * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "calls reaching the downstream per second, and its capacity",
            ("sans-serif", 15),
        )
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..seconds_len, 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("virtual seconds")
        .light_line_style(WHITE)
        .draw()?;
    let legend = |color: RGBColor| {
        move |(x, y): (i32, i32)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
    };
    chart
        .draw_series(LineSeries::new(
            admitted
                .iter()
                .enumerate()
                .map(|(i, v)| (i as f64, f64::from(*v))),
            CALLS.stroke_width(2),
        ))?
        .label("admitted")
        .legend(legend(CALLS));
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
            series.label("capacity").legend(legend(OPEN));
        }
    }
    const FULL_RATE: RGBColor = RGBColor(150, 150, 150);
    chart
        .draw_series(LineSeries::new(
            [(0.0, full_rate), (seconds_len, full_rate)],
            FULL_RATE.stroke_width(1),
        ))?
        .label("the fleet's full rate")
        .legend(legend(FULL_RATE));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
