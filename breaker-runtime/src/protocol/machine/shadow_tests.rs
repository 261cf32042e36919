//! The shadow decisions: who is in shadow, and the would-be record's verdicts.

use super::tests::thresholds;
use super::*;
use crate::protocol::Override;
use crate::protocol::record::OverrideKind;
use crate::protocol::state::CircuitState;

const ME: &str = "env-me";
const T0: u64 = 1_700_000_000_000;

fn with(kind: OverrideKind, until: Option<u64>) -> CircuitRecord {
    let set = Override::new(kind, "ops", T0 / 1000);
    CircuitRecord {
        operator_override: Some(match until {
            Some(until) => set.until(until),
            None => set,
        }),
        ..CircuitRecord::closed()
    }
}

#[test]
fn an_operators_shadow_runs_every_call_and_refuses_a_trip() {
    let shadow = with(OverrideKind::Shadow, None);
    assert_eq!(
        admit(&shadow, ME, T0, &thresholds(), &Local::default()),
        Admission::Run
    );
    assert!(runs_closed(&shadow, T0));
    assert!(!may_trip(&shadow, T0), "a shadowed fleet writes no trip");
    // Opened under it by a Powertools environment, which ignores overrides: still runs.
    let reopened = CircuitRecord {
        operator_override: shadow.operator_override.clone(),
        ..CircuitRecord::open(T0 / 1000, 5)
    };
    assert_eq!(
        admit(&reopened, ME, T0, &thresholds(), &Local::default()),
        Admission::Run
    );
}

#[test]
fn the_operators_shadow_shadows_every_environment_and_other_overrides_win_over_the_config() {
    let until = T0 / 1000 + 60;
    let shadow = with(OverrideKind::Shadow, Some(until));
    assert!(shadowed(false, &shadow, T0));
    assert!(
        !shadowed(false, &shadow, until * 1000),
        "it ends at its `until`"
    );
    assert!(shadowed(true, &CircuitRecord::closed(), T0));
    assert!(!shadowed(false, &CircuitRecord::closed(), T0));
    for kind in [OverrideKind::ForcedOpen, OverrideKind::Disabled] {
        assert!(!shadowed(true, &with(kind, None), T0), "{kind:?} decides");
    }
}

#[test]
fn the_would_be_record_rejects_then_elects_at_once_at_the_recovery_timeout() {
    let opened = T0 / 1000;
    let would_be = CircuitRecord::open(opened, 3);
    assert_eq!(
        would_admit(&would_be, ME, T0 + 29_999, &thresholds(), false),
        Admission::Reject
    );
    // No fallback, no verifying read: the would-be opening is this environment's own.
    assert!(matches!(
        would_admit(&would_be, ME, T0 + 30_000, &thresholds(), false),
        Admission::Elect(RecordWrite::Elect { .. })
    ));
    // A would-be probe in flight: the next call would have been rejected.
    assert_eq!(
        would_admit(&would_be, ME, T0 + 30_000, &thresholds(), true),
        Admission::Reject
    );
    let probing = CircuitRecord::half_open(opened, 3, ME, opened + 40);
    assert_eq!(
        would_admit(&probing, ME, T0 + 30_000, &thresholds(), false),
        Admission::Probe
    );
    assert_eq!(
        would_admit(&CircuitRecord::closed(), ME, T0, &thresholds(), false),
        Admission::Run
    );
}

#[test]
fn shadow_is_stored_and_read_back_as_its_own_kind() {
    assert_eq!(OverrideKind::Shadow.as_str(), "SHADOW");
    assert_eq!(OverrideKind::parse("SHADOW"), Some(OverrideKind::Shadow));
    assert_eq!(OverrideKind::Shadow.acts_as(), CircuitState::Closed);
    assert_eq!(OverrideKind::Shadow.to_string(), "shadowed");
}
