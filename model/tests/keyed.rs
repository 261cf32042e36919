//! The key index models at their `make test` size: under the runtime's assumption every
//! property holds; without it (trip writes landing after the grace), and with the grace
//! counted from a read's answer (the runtime before its fix), the checker must keep
//! finding the races docs/design.md describes.

mod support;

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
    (
        "keys: a removal on an eventually consistent read",
        "every open or half-open key is named by the index",
    ),
];

#[test]
fn every_key_index_model_holds_its_properties() {
    let reports = keyed_scenarios::all(false)
        .into_iter()
        .map(|(name, model)| keyed_scenarios::check(name, model));
    support::only_expected_counterexamples(reports, EXPECTED, "the expected ones");
}
