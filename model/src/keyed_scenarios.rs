//! The key index models checked: two or three environments, two keys, a cap of 1, under
//! the runtime's assumption on trip writes and without it. `deep` allows more naming
//! writes (`make model`).

use std::fmt::Write as _;

use stateright::Model;

use crate::keyed::{Action, Confirm, GraceFrom, KEYS, KeyedFleet, Landing, State};
use crate::scenarios::{Report, explore};

fn fleet(environments: Vec<&'static str>, tokens: u64) -> KeyedFleet {
    KeyedFleet {
        environments,
        cap: 1,
        tokens,
        landing: Landing::WithinGrace,
        grace_from: GraceFrom::Sent,
        stale_reads: false,
        confirm: Confirm::Consistent,
    }
}

/// Every key index model, named; `deep`: the larger ones of `make model`.
pub fn all(deep: bool) -> Vec<(&'static str, KeyedFleet)> {
    let h = |shallow: u64, deeper: u64| if deep { deeper } else { shallow };
    vec![
        ("keys: two environments", fleet(vec!["A", "B"], h(2, 3))),
        (
            "keys: three environments",
            fleet(vec!["A", "B", "C"], h(1, 1)),
        ),
        ("keys: trip writes landing after the grace", {
            let mut m = fleet(vec!["A", "B"], h(1, 2));
            m.landing = Landing::Late;
            m
        }),
        ("keys: the grace counted from the answer", {
            let mut m = fleet(vec!["A", "B"], h(1, 2));
            m.grace_from = GraceFrom::Answered;
            m
        }),
        ("keys: reads that miss a recent write", {
            let mut m = fleet(vec!["A", "B"], h(2, 3));
            m.stale_reads = true;
            m
        }),
        ("keys: a removal on an eventually consistent read", {
            let mut m = fleet(vec!["A", "B"], h(1, 2));
            m.stale_reads = true;
            m.confirm = Confirm::Nothing;
            m
        }),
    ]
}

/// Explores `model` breadth-first on two threads.
pub fn check(name: &'static str, model: KeyedFleet) -> Report {
    explore(name, model, |model, property, path| {
        trace(model, shortest(model, property, path))
    })
}

/// `path` up to the first state that breaks `property` (the checker's two threads may
/// report it further on).
fn shortest(
    model: &KeyedFleet,
    property: &str,
    mut path: Vec<(State, Option<Action>)>,
) -> Vec<(State, Option<Action>)> {
    let properties = model.properties();
    let Some(p) = properties.iter().find(|p| p.name == property) else {
        return path;
    };
    if let Some(first) = path.iter().position(|(s, _)| !(p.condition)(model, s)) {
        path.truncate(first + 1);
        if let Some(last) = path.last_mut() {
            last.1 = None;
        }
    }
    path
}

/// A counterexample, one line per step: the index, the keys' items, then the step.
fn trace(model: &KeyedFleet, path: Vec<(State, Option<Action>)>) -> String {
    let mut out = String::new();
    for (state, action) in path {
        let items: Vec<_> = (0..KEYS.len())
            .map(|k| {
                let r = state.items[k].read();
                format!("{}={:?}", KEYS[k], r.state)
            })
            .collect();
        let index = state.index.as_ref().map(|i| (&i.0.entries, i.0.open_keys));
        let ops: Vec<_> = state.envs.iter().map(|e| &e.op).collect();
        let _ = writeln!(
            out,
            "  index={index:?} items=[{}] grace past tokens <{} ops={ops:?}",
            items.join(" "),
            state.old_below,
        );
        if let Some(action) = action {
            let who = |env: usize| model.environments[env];
            let step = match action {
                Action::Trip { env, key } => format!("{} trips {}", who(env), KEYS[key]),
                Action::Read { env, key } => format!("{} reads {}", who(env), KEYS[key]),
                Action::Elect { env, key } => {
                    format!("{} elects itself on {}", who(env), KEYS[key])
                }
                Action::Close { env, key } => format!("{} closes {}", who(env), KEYS[key]),
                Action::Step(env) => format!("{}'s next store call", who(env)),
                Action::StaleRead(env) => {
                    format!("{}'s key read misses the item's last write", who(env))
                }
                Action::Drop(env) => format!("{}'s trip write never lands", who(env)),
                Action::CopyAges(env) => format!("{}'s copy passes its cache age", who(env)),
                other => format!("{other:?}"),
            };
            let _ = writeln!(out, "    -> {step}");
        }
    }
    out
}

/// The models outside the runtime's assumption or of the code before its fix, whose
/// counterexamples are expected (`make model` does not fail on them).
pub fn expected_to_fail(name: &str) -> bool {
    all(false).iter().any(|(n, m)| {
        *n == name
            && (m.landing == Landing::Late
                || m.grace_from == GraceFrom::Answered
                || m.confirm == Confirm::Nothing)
    })
}
