//! What both model tests check of a set of models: each explored enough, and the
//! counterexamples found are exactly the expected (model, property) pairs.

use breaker_model::scenarios::Report;

/// Checks `reports` (one per model, as they finish) against `expected`, printing each
/// model's size and every counterexample that is not expected; `what` names the expected
/// pairs in the failure message.
pub fn only_expected_counterexamples(
    reports: impl IntoIterator<Item = Report>,
    expected: &[(&str, &str)],
    what: &str,
) {
    let mut found = Vec::new();
    for report in reports {
        let name = report.name;
        eprintln!(
            "{name}: {} states ({} distinct), depth {}, {:.1} s",
            report.states,
            report.unique,
            report.depth,
            report.elapsed.as_secs_f64()
        );
        assert!(report.unique > 1_000, "{name} explored too little");
        for (property, trace) in report.counterexamples {
            if !expected.contains(&(name, property)) {
                eprintln!("{name} fails \"{property}\":\n{trace}");
            }
            found.push((name, property));
        }
    }
    found.sort();
    let mut expected = expected.to_vec();
    expected.sort();
    assert_eq!(
        found, expected,
        "counterexamples beyond (or short of) {what}"
    );
}
