//! `make model`: every model at its deeper horizon, with sizes, times and counterexamples.

use breaker_model::scenarios;

fn main() {
    let deep = !std::env::args().any(|a| a == "--shallow");
    let mut failed = false;
    for (name, model) in scenarios::all(deep) {
        let report = scenarios::check(name, model);
        println!(
            "{name}: {} states ({} distinct), depth {}, {:.1} s",
            report.states,
            report.unique,
            report.depth,
            report.elapsed.as_secs_f64()
        );
        for (property, trace) in &report.counterexamples {
            failed = true;
            println!("  FAILS \"{property}\":\n{trace}");
        }
    }
    if failed {
        std::process::exit(1);
    }
}
