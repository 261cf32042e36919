//! `make model`: every model at its deeper horizon, with sizes, times and counterexamples.
//! `--shallow`: the `make test` sizes; `--keys`: the key index models only; `--only TEXT`:
//! the models whose names hold TEXT.

use breaker_model::{keyed_scenarios, scenarios};

fn main() {
    let deep = !std::env::args().any(|a| a == "--shallow");
    let keys_only = std::env::args().any(|a| a == "--keys");
    let args: Vec<String> = std::env::args().collect();
    let only = args
        .windows(2)
        .find(|pair| pair[0] == "--only")
        .map(|pair| pair[1].clone());
    let chosen = |name: &str| only.as_deref().is_none_or(|text| name.contains(text));
    let mut reports = Vec::new();
    if !keys_only {
        for (name, model) in scenarios::all(deep).into_iter().filter(|(n, _)| chosen(n)) {
            reports.push(scenarios::check(name, model));
            print(reports.last().expect("just pushed"));
        }
    }
    for (name, model) in keyed_scenarios::all(deep)
        .into_iter()
        .filter(|(n, _)| chosen(n))
    {
        reports.push(keyed_scenarios::check(name, model));
        print(reports.last().expect("just pushed"));
    }
    let failed = reports
        .iter()
        .any(|r| !r.counterexamples.is_empty() && !keyed_scenarios::expected_to_fail(r.name));
    if failed {
        std::process::exit(1);
    }
}

fn print(report: &scenarios::Report) {
    println!(
        "{}: {} states ({} distinct), depth {}, {:.1} s",
        report.name,
        report.states,
        report.unique,
        report.depth,
        report.elapsed.as_secs_f64()
    );
    for (property, trace) in &report.counterexamples {
        println!("  FAILS \"{property}\":\n{trace}");
    }
}
