//! The SVG chart of a run, per virtual second: environments per believed state, calls that
//! reached the downstream (and probes), and the item's consumed units and throttled
//! attempts. Three stacked panels sharing the time axis, so a trip, the election herd and
//! the close line up by eye. Drawn with `plotters`' SVG backend (no font files needed: the
//! SVG carries text, the viewer renders it). The capacity chart ([`write_capacity`]) draws
//! the downstream's load against its capacity.

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::fleet::Run;

mod capacity;

pub use capacity::write_capacity;

const CLOSED: RGBColor = RGBColor(46, 139, 87);
const OPEN: RGBColor = RGBColor(200, 40, 40);
const HALF_OPEN: RGBColor = RGBColor(230, 150, 0);
const CALLS: RGBColor = RGBColor(30, 90, 200);
const PROBES: RGBColor = RGBColor(150, 40, 170);
const READS: RGBColor = RGBColor(30, 90, 200);
const WRITES: RGBColor = RGBColor(200, 40, 40);
const THROTTLED: RGBColor = RGBColor(0, 0, 0);

/// A line of a panel: its name, colour and value per second.
type Line = (&'static str, RGBColor, Vec<f64>);

/// Writes the chart of `run` to `path`.
pub fn write(run: &Run, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let seconds = run.metrics.seconds();
    let series = |f: &dyn Fn(&crate::metrics::Second) -> f64| -> Vec<f64> {
        seconds.iter().map(f).collect()
    };
    let panels: [(String, Vec<Line>); 3] = [
        (
            "environments per state".to_owned(),
            vec![
                ("CLOSED", CLOSED, series(&|s| f64::from(s.closed))),
                ("OPEN", OPEN, series(&|s| f64::from(s.open))),
                ("HALF_OPEN", HALF_OPEN, series(&|s| f64::from(s.half_open))),
            ],
        ),
        (
            "downstream calls per second".to_owned(),
            vec![
                ("all", CALLS, series(&|s| f64::from(s.downstream_calls))),
                ("probes", PROBES, series(&|s| f64::from(s.probes))),
            ],
        ),
        (
            "store per second (item limits: 3,000 RCU, 1,000 WCU)".to_owned(),
            vec![
                (
                    "RCU",
                    READS,
                    series(&|s| f64::from(s.read_half_units) / 2.0),
                ),
                ("WCU", WRITES, series(&|s| f64::from(s.write_units))),
                ("throttled", THROTTLED, series(&|s| f64::from(s.throttled))),
            ],
        ),
    ];
    let root = titled_svg(path, (960, 900), run)?;
    let seconds_len = seconds.len().max(1) as f64;
    for (area, (caption, lines)) in root.split_evenly((3, 1)).iter().zip(panels) {
        let top = lines
            .iter()
            .flat_map(|(_, _, values)| values.iter().copied())
            .fold(1.0f64, f64::max)
            * 1.05;
        let mut chart = seconds_panel(area, &caption, seconds_len, top)?;
        for (name, color, values) in lines {
            chart
                .draw_series(LineSeries::new(
                    values.iter().enumerate().map(|(i, v)| (i as f64, *v)),
                    color.stroke_width(2),
                ))?
                .label(name)
                .legend(legend_mark(color));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    }
    root.present()?;
    Ok(())
}

/// A panel whose x axis is the run's virtual seconds.
type SecondsPanel<'a, 'p> =
    ChartContext<'a, SVGBackend<'p>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A white SVG of `size` at `path`, titled with `run`'s scenario, fleet and seed: the area
/// under the title.
fn titled_svg<'p>(
    path: &'p Path,
    size: (u32, u32),
    run: &Run,
) -> Result<DrawingArea<SVGBackend<'p>, Shift>, Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    let s = &run.scenario;
    let title = match s.concurrency {
        0 | 1 => format!("{} — {} environments, seed {}", s.name, s.envs, s.seed),
        n => format!(
            "{} — {} environments × {n}, seed {}",
            s.name, s.envs, s.seed
        ),
    };
    Ok(root.titled(&title, ("sans-serif", 20))?)
}

/// A panel on `area` under `caption`, `seconds` wide and `top` high, its mesh drawn.
fn seconds_panel<'a, 'p>(
    area: &'a DrawingArea<SVGBackend<'p>, Shift>,
    caption: &str,
    seconds: f64,
    top: f64,
) -> Result<SecondsPanel<'a, 'p>, Box<dyn std::error::Error>> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..seconds, 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("virtual seconds")
        .light_line_style(WHITE)
        .draw()?;
    Ok(chart)
}

/// A line's mark in the legend, in `color`.
fn legend_mark(color: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
}

/// The legend of `chart`'s labelled lines, at `position`.
fn draw_legend<'a, 'p: 'a>(
    chart: &mut SecondsPanel<'a, 'p>,
    position: SeriesLabelPosition,
) -> Result<(), Box<dyn std::error::Error>> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
