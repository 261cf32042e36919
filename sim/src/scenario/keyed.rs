//! The keyed scenarios: one circuit per key over a Zipf key space, some keys failing.

use super::{Scenario, s};
use crate::downstream::{Health, HealthSchedule};
use crate::keys::{FailingKeys, Guarding, KeySpace};
use crate::traffic::Rate;

/// Each keyed scenario: its name, which keys fail, how the calls are guarded, and what it
/// shows. The rest of the situation is the same for all (`Scenario::keyed`).
#[rustfmt::skip]
const CATALOGUE: [(&str, FailingKeys, Guarding, &str); 8] = [
    ("keyed-rank100", FailingKeys::Rank(100), Guarding::Keyed, "1,000 environments at 10 calls/s over 5,000 keys (Zipf 1), a circuit per key; the key at rank 100 is down from 10 s to 130 s"),
    ("keyed-rank100-alone", FailingKeys::Rank(100), Guarding::OnlyKey(100), "as keyed-rank100, only the rank-100 key's calls, guarded by one plain circuit"),
    ("keyed-rank100-one-circuit", FailingKeys::Rank(100), Guarding::OneCircuit, "as keyed-rank100, every key's calls guarded by one plain circuit"),
    ("keyed-10pct", FailingKeys::Share(0.1), Guarding::Keyed, "as keyed-rank100, 10 % of the keys (every tenth rank) down from 10 s to 130 s"),
    ("keyed-10pct-plain-per-key", FailingKeys::Share(0.1), Guarding::PlainPerKey, "as keyed-10pct, each key guarded by a plain circuit of its own (no index, no cap, none forgotten)"),
    ("keyed-90pct", FailingKeys::Share(0.9), Guarding::Keyed, "as keyed-rank100, 90 % of the keys (all but every tenth rank) down from 10 s to 130 s"),
    ("keyed-healthy", FailingKeys::None, Guarding::Keyed, "as keyed-rank100, every key healthy"),
    ("keyed-background-5pct", FailingKeys::Share(1.0), Guarding::Keyed, "as keyed-rank100, every key's calls failing at 5 % for the whole 300 s: the key rule's false trips"),
];

/// The failing keys' health in the scenario called `name`: 5 % of calls failing for the
/// whole run in the background scenario, else down from 10 s to 130 s.
fn health(name: &str) -> HealthSchedule {
    if name.starts_with("keyed-background") {
        HealthSchedule::new(vec![(0, Health::Failing(0.05))])
    } else {
        HealthSchedule::new(vec![(s(10), Health::Down), (s(130), Health::Up)])
    }
}

impl Scenario {
    /// 1,000 environments at 10 calls/s calling 5,000 keys (Zipf, exponent 1); the
    /// `failing` keys' downstream as [`health`] says.
    fn keyed(name: &str, about: &str, failing: FailingKeys, guarding: Guarding) -> Self {
        Self {
            health: health(name),
            keys: Some(KeySpace {
                guarding,
                ..KeySpace::new(5_000, 1.0, failing)
            }),
            ..Self::base(name, about, 1_000, Rate::PerEnv(10.0), 300)
        }
    }

    /// The keyed scenario called `name`.
    pub(super) fn keyed_named(name: &str) -> Option<Self> {
        let (_, failing, guarding, about) = CATALOGUE.iter().find(|entry| entry.0 == name)?;
        Some(Self::keyed(name, about, *failing, *guarding))
    }
}
