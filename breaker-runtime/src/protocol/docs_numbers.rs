//! Numbers the docs quote, read from the code: the fleet rule's (README, docs/dynamodb.md)
//! with the default policy, and the count of the protocol's writes (README, docs/design.md,
//! docs/dynamodb.md, `protocol/write.rs`). A change to either fails here until the docs say
//! it.

use std::path::Path;

use super::fleet::{
    EPOCH_SLICES, EpochTally, FleetTally, MIN_REPORTERS, epoch_trips, fleet_suspects,
};
use super::fleet_policy::FleetPolicy;
use super::write::RecordWrite;

/// The fewest failures (with no success reported) that `trips` accepts.
fn fewest(trips: impl Fn(u64) -> bool) -> u64 {
    (1..1_000)
        .find(|&failures| trips(failures))
        .expect("some count trips")
}

fn doc(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_docs_quote_the_fleet_rule_as_it_is() {
    let policy = FleetPolicy::default();
    // A quiet fleet: each report is one failed call of its environment.
    let suspect = fewest(|failures| {
        let tally = FleetTally {
            failures,
            calls: failures,
            reporters: MIN_REPORTERS,
        };
        fleet_suspects(&tally, &policy)
    });
    let open = fewest(|failures| {
        let mut tally = EpochTally {
            reporters: MIN_REPORTERS,
            ..EpochTally::default()
        };
        tally.failures[EPOCH_SLICES - 1] = failures;
        epoch_trips(&tally, &policy).is_some()
    });
    assert_eq!((suspect, open), (3, 24), "then say so in the docs below");

    let readme = doc("README.md");
    let quoted = format!(
        "By default, {suspect} failures in one\n  window from two or more environments, making \
         half the calls reported, raise a suspicion;\n  {open} more failures under it"
    );
    assert!(readme.contains(&quoted), "README.md lacks: {quoted}");
    let store = doc("docs/dynamodb.md");
    let quoted = format!(
        "{suspect} failures\nreported by two or more environments raise a suspicion, and \
         {open} more under it open the\ncircuit."
    );
    assert!(store.contains(&quoted), "docs/dynamodb.md lacks: {quoted}");
    assert_eq!(policy.failure_rate, 50, "the docs say half the calls");
}

/// Whose write each is: `true` for the breaker's own, `false` for an operator's. A match with
/// no wildcard, so a new write does not compile until it is placed here (and counted).
fn breakers(write: &RecordWrite) -> bool {
    match write {
        RecordWrite::Trip { .. }
        | RecordWrite::Elect { .. }
        | RecordWrite::HandOver { .. }
        | RecordWrite::Close { .. }
        | RecordWrite::Reopen { .. }
        | RecordWrite::Suspect { .. } => true,
        RecordWrite::Override { .. } | RecordWrite::Release { .. } | RecordWrite::Reset { .. } => {
            false
        }
    }
}

/// The number as the docs spell it.
fn word(n: usize) -> &'static str {
    [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ][n]
}

#[test]
fn the_docs_count_the_protocols_writes_as_they_are() {
    use super::record::{Override, OverrideKind};
    let set = Override {
        kind: OverrideKind::ForcedOpen,
        until: None,
        by: "alice".into(),
        at: 1,
        reason: None,
    };
    let writes = [
        RecordWrite::Trip {
            opened_by: None,
            failure_count: 5,
            opened_at: 1,
            expiration: 2,
            open_until: None,
        },
        RecordWrite::Elect {
            owner: "e".into(),
            expected_opened_at: None,
            expected_successes: 0,
            now: 1,
            lease_expiry: 2,
            expiration: 3,
        },
        RecordWrite::HandOver {
            owner: "e".into(),
            probe_successes: 1,
            lease_expiry: 2,
            expiration: 3,
        },
        RecordWrite::Close {
            owner: "e".into(),
            expiration: 3,
        },
        RecordWrite::Reopen {
            owner: "e".into(),
            opened_at: 1,
            failure_count: 1,
            reopen_count: 1,
            expiration: 3,
            open_until: None,
        },
        RecordWrite::Suspect {
            now: 1,
            until: 2,
            expiration: 3,
        },
        RecordWrite::Override {
            set: set.clone(),
            replaces: None,
            expiration: None,
        },
        RecordWrite::Release {
            released: set,
            now: 1,
            expiration: 3,
        },
        RecordWrite::Reset {
            now: 1,
            expiration: 3,
        },
    ];
    let own = writes.iter().filter(|write| breakers(write)).count();
    let (all, own, operators) = (word(writes.len()), word(own), word(writes.len() - own));
    let quotes = [
        (
            "README.md",
            format!("the protocol's {all} conditional writes, the breaker's {own}"),
        ),
        ("README.md", format!("the operator's {operators}, override")),
        (
            "docs/design.md",
            format!("the protocol's {all} conditional writes (the breaker's {own}:"),
        ),
        (
            "docs/design.md",
            format!("through {all} conditional writes: the breaker's {own} (trip,"),
        ),
        (
            "docs/dynamodb.md",
            format!("### The breaker's {own} writes"),
        ),
        (
            "docs/dynamodb.md",
            format!("The protocol has {all} conditional writes: the breaker's {own}"),
        ),
        (
            "docs/dynamodb.md",
            format!("The operator's {operators} writes"),
        ),
        (
            "breaker-runtime/src/protocol/write.rs",
            format!("the protocol's {all} conditional writes (the breaker's {own}:"),
        ),
        (
            "breaker-runtime/src/protocol/write.rs",
            format!("The first {own} are the breaker's own"),
        ),
    ];
    for (path, quote) in quotes {
        assert!(doc(path).contains(&quote), "{path} lacks: {quote}");
    }
}

/// The `"NAME"` literals in `text` that start with `prefix` and go on in capitals.
fn variables<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    let quoted = format!("\"{prefix}");
    text.match_indices(&quoted)
        .filter_map(|(at, _)| {
            let name = &text[at + 1..];
            let end = name.find('"')?;
            let name = &name[..end];
            name.chars()
                .all(|c| c.is_ascii_uppercase() || c == '_')
                .then_some(name)
        })
        .collect()
}

#[test]
fn the_readme_lists_every_variable_and_feature_the_crate_has() {
    let readme = doc("README.md");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut read = Vec::new();
    let mut dirs = vec![src];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                // The docs checks name their own switches (`BREAKER_DOCS`) and prefixes.
                && !path.ends_with("docs_numbers.rs")
                && !path.ends_with("requests_doc.rs")
            {
                let text = std::fs::read_to_string(&path).expect("source");
                for prefix in ["CIRCUIT_BREAKER_", "BREAKER_"] {
                    read.extend(variables(&text, prefix).into_iter().map(str::to_owned));
                }
            }
        }
    }
    read.sort();
    read.dedup();
    assert!(read.len() >= 4, "the crate's own variables: {read:?}");
    for variable in &read {
        assert!(
            readme.contains(&format!("| `{variable}` |")),
            "README.md's table of variables lacks {variable}"
        );
    }

    let manifest = doc("breaker-runtime/Cargo.toml");
    let features = &manifest[manifest.find("[features]").expect("[features]")..];
    let features = &features[..features[1..].find("\n[").expect("a next table") + 1];
    let defaults = features
        .lines()
        .find_map(|line| line.strip_prefix("default = "))
        .expect("default features");
    let sentence = &readme[readme.find("Features: ").expect("README's features")..];
    let (on, opt_in) = sentence
        .split_once("are on by default")
        .expect("which are on by default");
    let opt_in = &opt_in[..opt_in.find("are opt-in").expect("which are opt-in")];
    for line in features
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(" = ["))
    {
        let name = line.split(' ').next().expect("a name");
        if name == "default" {
            continue;
        }
        let default = defaults.contains(&format!("\"{name}\""));
        let listed = if default { on } else { opt_in };
        assert!(
            listed.contains(&format!("`{name}`")),
            "README.md says `{name}` is {} by default",
            if default { "not on" } else { "on" }
        );
    }
}
