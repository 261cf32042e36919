//! The key index models at their `make test` size: under the runtime's assumption every
//! property holds; without it (trip writes landing after the grace), and with the grace
//! counted from a read's answer (the runtime before its fix), the checker must keep
//! finding the races docs/design.md describes.

use breaker_model::keyed_scenarios;

/// (model, property) pairs the checker must find: the races outside the runtime's
/// assumption, or of the code before its fix.
const EXPECTED: &[(&str, &str)] = &[
    (
        "keys: trip writes landing after the grace",
        "every open or half-open key is named by the index",
    ),
    (
        "keys: the grace counted from the answer",
        "every open or half-open key is named by the index",
    ),
];

#[test]
fn every_key_index_model_holds_its_properties() {
    let mut found = Vec::new();
    for (name, model) in keyed_scenarios::all(false) {
        let report = keyed_scenarios::check(name, model);
        eprintln!(
            "{name}: {} states ({} distinct), depth {}, {:.1} s",
            report.states,
            report.unique,
            report.depth,
            report.elapsed.as_secs_f64()
        );
        assert!(report.unique > 1_000, "{name} explored too little");
        for (property, trace) in report.counterexamples {
            if !EXPECTED.contains(&(name, property)) {
                eprintln!("{name} fails \"{property}\":\n{trace}");
            }
            found.push((name, property));
        }
    }
    found.sort();
    let mut expected = EXPECTED.to_vec();
    expected.sort();
    assert_eq!(
        found, expected,
        "counterexamples beyond (or short of) the expected ones"
    );
}
