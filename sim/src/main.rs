//! `breaker-sim`: runs the fleet scenarios and prints their figures.
//!
//! ```text
//! breaker-sim                                   # every scenario: tables, charts in docs/scale/
//! breaker-sim --scenario outage --envs 1000     # one scenario, another fleet size
//! breaker-sim --scenario sparse --envs 200 --rate 0.25 --adaptive  # another shape, adaptive
//! breaker-sim --json                            # one JSON object per scenario per line
//! breaker-sim --scenario keyed --seed 1,2,3     # the keyed scenarios, three seeds each
//! breaker-sim --scenario managed --no-charts    # Managed Instances: 200 × 64 at once
//! breaker-sim --scenario outage --envs 1000 --concurrency 8 --rate 100  # another shape
//! ```
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Parser;

use breaker_sim::scenario::{KEYED_NAMES, MANAGED_NAMES, NAMES, Scenario};
use breaker_sim::{chart, fleet, report};

/// A deterministic fleet simulator: real circuit breakers, one virtual clock, DynamoDB's
/// limits.
#[derive(Debug, Parser)]
#[command(name = "breaker-sim", version)]
struct Args {
    /// Scenario to run (outage, sparse, sparse-10k, hang, background-errors, quiet-errors,
    /// quiet-errors-1k, sparse-10k-noisy, light,
    /// store-throttled, store-down-while-open, flapping, scale-100k, long-outage,
    /// recovery-capacity, recovery-capacity-slow-start, throttle-retry-after, brownout-capacity, keyed-rank100, keyed-rank100-alone,
    /// keyed-rank100-one-circuit, keyed-10pct, keyed-90pct, keyed-healthy,
    /// keyed-background-5pct, managed-outage, managed-background-1pct,
    /// managed-background-5pct, managed-hang), `all` (every scenario of one circuit),
    /// `keyed` (every keyed one) or `managed` (every Managed Instances one).
    #[arg(long, default_value = "all")]
    scenario: String,
    /// Environments, instead of the scenario's own fleet size.
    #[arg(long)]
    envs: Option<u32>,
    /// Calls per second in each environment, instead of the scenario's own rate.
    #[arg(long)]
    rate: Option<f64>,
    /// Invocations each environment runs at once, sharing its breaker (Managed Instances'
    /// `AWS_LAMBDA_MAX_CONCURRENCY`), instead of the scenario's own (1 but in `managed-*`).
    #[arg(long)]
    concurrency: Option<u32>,
    /// The breakers run the adaptive policy at its recommended setting
    /// (`AdaptivePolicy::default()`): a brownout sheds a share of the calls.
    #[arg(long)]
    adaptive: bool,
    /// Seed of every random draw: the same seed gives the same figures. A comma-separated
    /// list runs each scenario once per seed.
    #[arg(long = "seed", value_delimiter = ',', default_value = "1")]
    seeds: Vec<u64>,
    /// Virtual seconds to simulate, instead of the scenario's own.
    #[arg(long)]
    duration: Option<u64>,
    /// Overrides the breakers' `local_cache_max_age`, in seconds (a fleet far above 10,000
    /// environments needs a longer one to stay within the item's read limit).
    #[arg(long)]
    cache_age: Option<u64>,
    /// Print one JSON object per scenario per line instead of tables.
    #[arg(long)]
    json: bool,
    /// After the scenarios, print one markdown table of all of them.
    #[arg(long)]
    markdown: bool,
    /// Where to write the SVG charts (`<scenario>.svg`).
    #[arg(long, default_value = "docs/scale")]
    charts: PathBuf,
    /// Write no charts.
    #[arg(long)]
    no_charts: bool,
    /// Each environment trips on its own counts only: no fleet-wide failure reports.
    #[arg(long)]
    no_fleet_detection: bool,
    /// Handlers do not pass the invocation deadline on to the breaker (calls still
    /// running at the function timeout die with their invocation).
    #[arg(long)]
    no_deadline: bool,
    /// Percent of downstream calls failing at random throughout, instead of the
    /// scenario's own health schedule (0 to 100).
    #[arg(long)]
    failing: Option<f64>,
    /// Each reopen doubles the next wait, up to 10 × the recovery timeout
    /// (`RecoveryBackoff::doubling`); by default every opening waits the recovery timeout.
    #[arg(long)]
    backoff: bool,
}

fn scenarios(args: &Args) -> anyhow::Result<Vec<Scenario>> {
    let scenarios = if args.scenario == "all" {
        Scenario::all()
    } else if args.scenario == "keyed" {
        Scenario::all_keyed()
    } else if args.scenario == "managed" {
        Scenario::all_managed()
    } else {
        match Scenario::named(&args.scenario) {
            Some(scenario) => vec![scenario],
            None => bail!(
                "unknown scenario '{}': one of {}, {}, {}, all, keyed or managed",
                args.scenario,
                NAMES.join(", "),
                KEYED_NAMES.join(", "),
                MANAGED_NAMES.join(", ")
            ),
        }
    };
    let mut seeded = Vec::with_capacity(scenarios.len() * args.seeds.len());
    for scenario in scenarios {
        for seed in &args.seeds {
            seeded.push(Scenario {
                seed: *seed,
                ..scenario.clone()
            });
        }
    }
    let mut scenarios = seeded;
    for scenario in &mut scenarios {
        if let Some(envs) = args.envs {
            if envs == 0 || envs >= breaker_sim::traffic::MAX_ENVS {
                bail!(
                    "--envs must be between 1 and {}",
                    breaker_sim::traffic::MAX_ENVS - 1
                );
            }
            scenario.envs = envs;
        }
        if let Some(rate) = args.rate {
            if !(rate > 0.0 && rate <= 1_000.0) {
                bail!("--rate must be above 0 and at most 1,000 calls per second");
            }
            scenario.rate = breaker_sim::traffic::Rate::PerEnv(rate);
        }
        if let Some(concurrency) = args.concurrency {
            if !(1..=1_024).contains(&concurrency) {
                bail!("--concurrency must be between 1 and 1,024");
            }
            scenario.concurrency = concurrency;
        }
        if args.adaptive {
            scenario.breaker.adaptive = Some(breaker_runtime::AdaptivePolicy::default());
        }
        if let Some(secs) = args.cache_age {
            scenario.breaker.local_cache_max_age = std::time::Duration::from_secs(secs);
            // A warm fleet's refreshes are spread over its cache age.
            scenario.start_spread_ms = scenario.start_spread_ms.max(secs * 1000);
        }
        if let Some(duration) = args.duration {
            scenario.duration_ms = duration * 1000;
        }
        if args.no_fleet_detection {
            scenario.breaker.fleet_policy = None;
        }
        if args.no_deadline {
            scenario.deadline_aware = false;
        }
        if let Some(percent) = args.failing {
            if !(0.0..=100.0).contains(&percent) {
                bail!("--failing must be a percentage between 0 and 100");
            }
            *scenario = scenario.clone().failing(percent / 100.0);
        }
        if args.backoff {
            scenario.breaker.recovery_backoff = breaker_runtime::RecoveryBackoff::doubling();
        }
    }
    Ok(scenarios)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let scenarios = scenarios(&args)?;
    if !args.no_charts {
        std::fs::create_dir_all(&args.charts)
            .with_context(|| format!("creating {}", args.charts.display()))?;
    }
    let mut summaries = Vec::with_capacity(scenarios.len());
    let mut keyed = Vec::new();
    for scenario in &scenarios {
        let started = Instant::now();
        let run = fleet::run(scenario)
            .with_context(|| format!("configuring the breakers of {}", scenario.name))?;
        let summary = run.metrics.summary();
        eprintln!(
            "{}: {} environments, {} calls in {} virtual s, {:.1} s of wall time",
            scenario.name,
            scenario.envs,
            summary.calls,
            scenario.duration_ms / 1000,
            started.elapsed().as_secs_f64()
        );
        if let Some(figures) = run.keyed {
            if args.json {
                println!("{}", serde_json::to_string(&figures)?);
            } else {
                println!("{}\n{}\n", scenario.about, report::keyed_table(&figures));
            }
            keyed.push(figures);
            continue;
        }
        if !args.no_charts {
            let path = args.charts.join(format!("{}.svg", scenario.name));
            chart::write(&run, &path)
                .map_err(|e| anyhow::anyhow!("{e}"))
                .with_context(|| format!("writing {}", path.display()))?;
            let path = args.charts.join(format!("{}-capacity.svg", scenario.name));
            chart::write_capacity(&summary.capacity, &run, &path)
                .map_err(|e| anyhow::anyhow!("{e}"))
                .with_context(|| format!("writing {}", path.display()))?;
        }
        if args.json {
            println!("{}", report::json_line(&summary)?);
        } else {
            println!("{}\n{}\n", scenario.about, report::table(&summary));
        }
        summaries.push(summary);
    }
    if args.markdown {
        if !summaries.is_empty() {
            println!("{}", report::markdown(&summaries));
        }
        if !keyed.is_empty() {
            println!("{}", report::keyed_markdown(&keyed));
        }
    }
    for line in report::keyed_comparisons(&keyed) {
        println!("{line}");
    }
    Ok(())
}
