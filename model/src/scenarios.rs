//! The models checked: several small fleets, each with the actors a group of races
//! needs, so that each finishes in seconds. `deep` widens the horizon (`make model`).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use breaker_runtime::__protocol::Thresholds;
use breaker_runtime::{CircuitBreakerConfig, RecoveryBackoff};
use stateright::{Checker, Model};

use crate::fleet::{Action, Actor, Deadlines, Fleet, Reply, State, Store};

/// The thresholds of every model, in seconds that the model's clock counts: a 2 s
/// recovery, a 4 s lease, 2 probe successes to close (the default's 3 in the models that
/// set it: a close one success short is only seen with 3), and a 1 s fallback.
pub fn thresholds(backoff: RecoveryBackoff) -> Thresholds {
    Thresholds {
        failure_threshold: 1,
        success_threshold: 2,
        recovery_millis: 2_000,
        fallback_millis: 1_000,
        probe_lease_secs: 4,
        // `call_timeout` (3 s) and two store writes of at most 0.5 s each.
        probe_secs: 4,
        recovery_secs: 2,
        // Three recovery timeouts (the runtime's floor of a minute left out).
        refused_elections_millis: 6_000,
        backoff,
        max_open_for_secs: 300,
    }
}

fn breaker(process: &'static str, skew: u64) -> Actor {
    Actor::Breaker {
        process,
        skew,
        invocations: 1,
    }
}

fn fleet(actors: Vec<Actor>, horizon: u64) -> Fleet {
    Fleet {
        actors,
        thresholds: thresholds(RecoveryBackoff::none()),
        // With the lease of 4 s: `call_timeout + 2 × store_timeout <= probe_lease` holds
        // for a store timeout of up to 0.5 s.
        call_timeout: 3,
        deadlines: None,
        powertools_call: 6,
        horizon,
        replies: vec![Reply::Answered],
        store: Store::Answers,
        start_closed: false,
        closes_within: 16,
        open_for: None,
    }
}

/// Every model, named; `deep`: the longer horizons of `make model`.
pub fn all(deep: bool) -> Vec<(&'static str, Fleet)> {
    let h = |shallow: u64, deeper: u64| if deep { deeper } else { shallow };
    let mut models = vec![
        (
            "three environments, skewed clocks",
            fleet(
                vec![breaker("A", 0), breaker("B", 1), breaker("C", 0)],
                h(8, 11),
            ),
        ),
        ("two values of one circuit in one process", {
            fleet(
                // Without an `environment_id`, each value probes as `<process id>#<n>`.
                vec![breaker("A#0", 0), breaker("A#1", 0), breaker("B", 1)],
                h(7, 10),
            )
        }),
        ("an environment running two invocations at once", {
            // Lambda Managed Instances: A's two invocations share its cache and its one
            // probe slot, and each ends at its own deadline (every 5 s, the second's 2 s
            // after the first's), which may cut a probe or a closed call short before
            // `call_timeout`. A closed call of one runs across the other's steps.
            let concurrent = Actor::Breaker {
                process: "A",
                skew: 0,
                invocations: 2,
            };
            let mut m = fleet(vec![concurrent, breaker("B", 1)], h(7, 11));
            m.deadlines = Some(Deadlines {
                secs: 5,
                stagger: 2,
            });
            m.start_closed = true;
            m
        }),
        ("answers lost after the write landed", {
            let mut m = fleet(vec![breaker("A", 0), breaker("B", 1)], h(7, 9));
            m.replies = vec![Reply::Answered, Reply::Lost, Reply::Retried];
            m.start_closed = true;
            m
        }),
        ("a Powertools 3.37.0 environment", {
            let powertools = Actor::Powertools {
                skew: 0,
                resets_count: true,
            };
            fleet(
                vec![breaker("A", 0), breaker("B", 1), powertools],
                h(10, 12),
            )
        }),
        (
            "retry-after openings with a Powertools 3.37.0 environment",
            {
                // Every breaker failure asks for 5 s (more than the 2 s recovery): its trips and
                // reopens write `open_until`, which Powertools ignores and keeps on its reopen.
                let powertools = Actor::Powertools {
                    skew: 0,
                    resets_count: true,
                };
                let mut m = fleet(
                    vec![breaker("A", 0), breaker("B", 1), powertools],
                    h(10, 12),
                );
                m.open_for = Some(5);
                m.start_closed = true;
                m.closes_within = 24;
                m
            },
        ),
        ("an operator's override", {
            let mut m = fleet(
                vec![breaker("A", 0), breaker("B", 1), Actor::Operator],
                h(6, 8),
            );
            m.start_closed = true;
            m
        }),
        ("an operator's override of retry-after openings", {
            // The breakers' failures ask for 5 s: an override and its release must drop the
            // time on DynamoDB as the in-memory store does.
            let mut m = fleet(
                vec![breaker("A", 0), breaker("B", 1), Actor::Operator],
                h(6, 8),
            );
            m.start_closed = true;
            m.open_for = Some(5);
            m
        }),
        ("backed-off reopens", {
            let mut m = fleet(vec![breaker("A", 0), breaker("B", 1)], h(12, 16));
            m.thresholds = thresholds(RecoveryBackoff::exponential(2, Duration::from_secs(8)));
            m.closes_within = 30;
            m
        }),
        ("probes handed over at the default success threshold", {
            // Three successes from probes that hand over (quiet probers) or keep their
            // lease (busy ones), across two environments: a hand-over that counts one
            // success too many closes a probe early, which 2 successes cannot show.
            let mut m = fleet(vec![breaker("A", 0), breaker("B", 1)], h(11, 14));
            // The default, 3 (Powertools' too).
            m.thresholds.success_threshold = CircuitBreakerConfig::default().success_threshold();
            m.closes_within = 20;
            m
        }),
        ("a store that refuses elections", {
            // Past the bound: the first refusal at 2 s, alone from 9 s (6 s of refusals and
            // the fallback), standalone probes and their outcomes after it.
            let mut m = fleet(vec![breaker("A", 0), breaker("B", 1)], h(12, 16));
            m.store = Store::RefusesElections;
            m.closes_within = 10;
            m
        }),
    ];
    if deep {
        models.push((
            "a Powertools 3.37.0 environment at the default thresholds",
            {
                // Five failures to trip and three probe successes to close, as the runtime's
                // and Powertools' defaults: the other models shrink them to 1 and 2.
                let powertools = Actor::Powertools {
                    skew: 0,
                    resets_count: true,
                };
                let mut m = fleet(vec![breaker("A", 0), breaker("B", 1), powertools], 13);
                let defaults = CircuitBreakerConfig::default();
                m.thresholds.failure_threshold = defaults.failure_threshold();
                m.thresholds.success_threshold = defaults.success_threshold();
                m.closes_within = 24;
                m
            },
        ));
    }
    models
}

/// What a check found.
#[derive(Debug)]
pub struct Report {
    /// The model's name.
    pub name: &'static str,
    /// States visited, and distinct ones.
    pub states: usize,
    /// Distinct states.
    pub unique: usize,
    /// The deepest path explored.
    pub depth: usize,
    /// Wall time.
    pub elapsed: Duration,
    /// Each property that failed, with its shortest counterexample.
    pub counterexamples: Vec<(&'static str, String)>,
}

/// Explores `model` breadth-first on two threads.
pub fn check(name: &'static str, model: Fleet) -> Report {
    explore(name, model, |model, _, path| trace(model, path))
}

/// Explores any of the crate's models breadth-first on two threads; `trace` writes a
/// property's counterexample from the path the checker found.
pub(crate) fn explore<M>(
    name: &'static str,
    model: M,
    trace: impl Fn(&M, &'static str, Vec<(M::State, Option<M::Action>)>) -> String,
) -> Report
where
    M: Model + Clone + Send + Sync + 'static,
    M::State: Clone + Eq + std::hash::Hash + std::fmt::Debug + Send + Sync + 'static,
    M::Action: Clone + Eq + std::fmt::Debug + Send + Sync + 'static,
{
    let started = Instant::now();
    let checker = model.clone().checker().threads(2).spawn_bfs().join();
    let mut counterexamples: Vec<_> = checker
        .discoveries()
        .into_iter()
        .map(|(property, path)| (property, trace(&model, property, path.into_vec())))
        .collect();
    counterexamples.sort();
    Report {
        name,
        states: checker.state_count(),
        unique: checker.unique_state_count(),
        depth: checker.max_depth(),
        elapsed: started.elapsed(),
        counterexamples,
    }
}

/// A counterexample, one line per step: the time, the step, the item after it.
fn trace(model: &Fleet, path: Vec<(State, Option<Action>)>) -> String {
    let mut out = String::new();
    let mut previous: Option<State> = None;
    for (state, action) in path {
        if let (Some(before), Some(_)) = (&previous, &action) {
            let _ = before;
        }
        let r = state.item.read();
        let _ = writeln!(
            out,
            "  t={} {:?} {:?} fc={} oa={:?} owner={:?} lease={:?} ps={} rc={} ov={:?} probes={:?}{}{}",
            state.t,
            r.state,
            state.item.record.is_some(),
            r.failure_count,
            r.opened_at,
            r.half_open_owner,
            r.probe_lease_expiry,
            r.probe_successes,
            r.reopen_count,
            r.operator_override.as_ref().map(|o| (o.kind, o.until)),
            state
                .actors
                .iter()
                .map(|a| (a.probe, a.revoked))
                .collect::<Vec<_>>(),
            invocations(&state),
            state
                .disagreement
                .as_ref()
                .map(|d| format!("\n    DISAGREE: {d}"))
                .unwrap_or_default(),
        );
        if let Some(action) = action {
            let _ = writeln!(out, "    -> {}", describe(model, &action));
        }
        previous = Some(state);
    }
    out
}

/// The invocations of the breakers that run several at once: which one's probe holds the
/// slot, and when each closed call in flight started.
fn invocations(state: &State) -> String {
    state
        .actors
        .iter()
        .filter(|a| !a.calls.is_empty())
        .map(|a| format!(" prober={} calls={:?}", a.prober, a.calls))
        .collect()
}

fn describe(model: &Fleet, action: &Action) -> String {
    let who = |i: usize| match &model.actors[i] {
        Actor::Breaker { process, .. } => format!("{process}#{i}"),
        Actor::Powertools { .. } => "Powertools".to_owned(),
        Actor::Operator => "operator".to_owned(),
    };
    // An invocation named only where an environment runs several at once.
    let by = |i: usize, invocation: usize| match model.invocations(i) {
        1 => who(i),
        _ => format!("{} invocation {invocation}", who(i)),
    };
    match action {
        Action::Call {
            actor,
            invocation,
            quiet,
            reply,
        } => format!(
            "{} calls (quiet: {quiet}, reply: {reply:?})",
            by(*actor, *invocation)
        ),
        Action::EndProbe {
            actor,
            invocation,
            success,
            reply,
        } => format!(
            "{} probe ends (success: {success}, reply: {reply:?})",
            by(*actor, *invocation)
        ),
        Action::Trip {
            actor,
            invocation,
            reply,
        } => match model.invocations(*actor) {
            1 => format!("{} trips (reply: {reply:?})", who(*actor)),
            _ => format!(
                "{}'s closed call fails (reply: {reply:?})",
                by(*actor, *invocation)
            ),
        },
        Action::Run { actor, invocation } => {
            format!("{} starts a closed call", by(*actor, *invocation))
        }
        Action::Return { actor, invocation } => {
            format!("{}'s closed call succeeds", by(*actor, *invocation))
        }
        Action::Suspect(actor) => format!("{} raises a suspicion", who(*actor)),
        Action::PtCall(actor) => format!("{} calls", who(*actor)),
        Action::PtEnd { actor, success } => {
            format!("{} probe ends (success: {success})", who(*actor))
        }
        Action::PtTrip(actor) => format!("{} trips", who(*actor)),
        other => format!("{other:?}"),
    }
}
