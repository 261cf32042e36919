//! Compile errors of `#[circuit_breaker]`: one file per mistake in `tests/ui/`, each with
//! the exact expected `.stderr`. Regenerate with `TRYBUILD=overwrite` and review by eye.
//!
//! Only on stable: the wording of rustc's own diagnostics changes between releases.

#[rustversion::stable]
#[test]
fn compile_errors_point_at_the_mistake() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
