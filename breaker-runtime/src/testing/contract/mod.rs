//! The store contract: what every [`StateStore`] must do, checked case by case. Run it
//! against your own store (feature `contract`) from a multi-thread tokio runtime.
//!
//! Every transition is applied where its condition holds (it must win and leave
//! [`RecordWrite::applied_to`] the record before it) and where it fails (it must lose,
//! change nothing, and return the record that made it lose); each outcome is checked
//! against [`RecordWrite::allowed`], the reference `InMemoryStore` evaluates. Races run many
//! writers at once and demand exactly one winner, round after round. Fleet reports either
//! answer `None` (the store keeps no fleet counters) or add up exactly under concurrent
//! reporters, window by window, without touching the circuit's record. A store that keeps
//! keyed circuits' indexes applies each index write as its reference does, and concurrent
//! adds never pass the cap.
//!
//! [`RecordWrite::applied_to`]: crate::store::RecordWrite::applied_to
//! [`RecordWrite::allowed`]: crate::store::RecordWrite::allowed
//!
//! ```
//! use std::sync::Arc;
//! use breaker_runtime::store::InMemoryStore;
//! use breaker_runtime::testing::contract::run_contract;
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)] async fn main() {
//! run_contract(Arc::new(InMemoryStore::new())).await;
//! # }
//! ```
//!
//! Each case uses circuit names of its own, so one store (one table) serves the whole suite.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::store::StateStore;
pub use seeded::Seed;

mod backoff;
mod cases;
mod fleet;
mod hand_over;
mod key_index;
mod open_until;
mod overrides;
mod races;
mod seeded;
mod shadow;
mod support;
mod suspicion;

use backoff::*;
use cases::*;
use fleet::*;
use hand_over::*;
use key_index::*;
use open_until::*;
use overrides::*;
use races::*;
use shadow::*;
use suspicion::*;

/// Concurrent writers in each race.
pub(crate) const RACERS: usize = 24;
/// Rounds of each race.
pub(crate) const RACE_ROUNDS: usize = 20;
/// Fleet reports each of the `RACERS` concurrent reporters sends, one after another.
pub(crate) const REPORTS_PER_RACER: usize = 5;

/// A running contract case.
type CaseFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A contract case: its name, whether it races writers, and the check.
type Case = (
    &'static str,
    bool,
    fn(Arc<dyn StateStore>, String) -> CaseFuture,
);

/// Runs every case against `store`, in order; panics naming the first case that fails.
pub async fn run_contract(store: Arc<dyn StateStore>) {
    run_cases(store, |_| true).await;
}

/// Runs every case that writes one request at a time (all but the races), in order: the
/// contract's conditions, for a store whose conditional writes are not atomic under
/// concurrency (moto's DynamoDB). Panics naming the first case that fails.
///
/// ```
/// use std::sync::Arc;
/// use breaker_runtime::store::InMemoryStore;
/// use breaker_runtime::testing::contract::run_sequential_contract;
///
/// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)] async fn main() {
/// run_sequential_contract(Arc::new(InMemoryStore::new())).await;
/// # }
/// ```
pub async fn run_sequential_contract(store: Arc<dyn StateStore>) {
    run_cases(store, |racing| !racing).await;
}

/// Runs the cases that start from a record no breaker write leaves (as a Powertools
/// environment's writes leave it, such as an `OPEN` record carrying a probe count), which
/// `seed` puts as a circuit's item directly: the way the store's own backend can write a
/// raw item, which no [`StateStore`] method does. Panics naming the first case that fails.
///
/// A DynamoDB store's test seeds with a `PutItem` of the record's item
/// (breaker's own DynamoDB tests do so on dynalite and on moto).
///
/// ```
/// let names = breaker_runtime::testing::contract::seeded_case_names();
/// assert!(names.contains(&"an_election_from_an_open_record_carrying_a_count_starts_at_zero"));
/// ```
pub async fn run_seeded_contract(store: Arc<dyn StateStore>, seed: Seed) {
    let case = "an_election_from_an_open_record_carrying_a_count_starts_at_zero";
    let circuit = fresh_circuit(case);
    seeded::an_election_from_an_open_record_carrying_a_count_starts_at_zero(
        &*store, &circuit, &seed,
    )
    .await;
    eprintln!("contract case {case}: ok");
}

/// The names of the cases [`run_seeded_contract`] runs.
pub fn seeded_case_names() -> Vec<&'static str> {
    vec!["an_election_from_an_open_record_carrying_a_count_starts_at_zero"]
}

async fn run_cases(store: Arc<dyn StateStore>, selected: impl Fn(bool) -> bool) {
    for (name, _, case) in cases()
        .into_iter()
        .filter(|(_, racing, _)| selected(*racing))
    {
        let circuit = fresh_circuit(name);
        let started = std::time::Instant::now();
        case(Arc::clone(&store), circuit).await;
        eprintln!("contract case {name}: ok in {:?}", started.elapsed());
    }
}

/// The names of every case, in the order [`run_contract`] runs them.
pub fn case_names() -> Vec<&'static str> {
    cases().iter().map(|(name, _, _)| *name).collect()
}

macro_rules! case {
    ($name:ident) => {
        (stringify!($name), false, |store, circuit| {
            Box::pin(async move { $name(&*store, &circuit).await })
        })
    };
    (race $name:ident) => {
        (stringify!($name), true, |store, circuit| {
            Box::pin(async move { $name(store, circuit).await })
        })
    };
}

fn cases() -> Vec<Case> {
    vec![
        case!(read_of_an_unknown_circuit_is_none),
        case!(trip_wins_on_an_absent_record),
        case!(trip_loses_on_open_and_returns_it),
        case!(trip_loses_on_half_open_and_returns_it),
        case!(trip_wins_again_after_close),
        case!(election_wins_on_open_with_the_read_opened_at),
        case!(election_loses_on_a_stale_opened_at),
        case!(election_loses_on_an_absent_record),
        case!(election_loses_on_closed),
        case!(election_loses_while_the_lease_is_live),
        case!(election_loses_when_the_lease_expires_this_second),
        case!(election_takes_over_an_expired_lease),
        case!(close_by_the_owner_wins_and_clears_the_record),
        case!(close_by_another_environment_loses),
        case!(close_loses_on_open_absent_and_closed),
        case!(reopen_by_the_owner_wins_with_a_new_opened_at),
        case!(reopen_by_another_environment_loses),
        case!(a_reopen_counts_and_an_election_and_a_hand_over_keep_the_count),
        case!(a_close_a_trip_an_override_and_a_reset_leave_no_count),
        case!(a_former_owner_cannot_close_or_reopen_after_a_takeover),
        case!(a_trip_names_its_writer_until_the_opening_changes),
        case!(an_opening_keeps_the_time_it_asked_for_until_the_opening_changes),
        case!(forced_open_creates_an_open_record_that_outlasts_it),
        case!(forced_open_until_released_keeps_failures_and_ends_the_probe),
        case!(disable_closes_and_no_trip_or_election_wins_under_it),
        case!(shadow_closes_refuses_breaker_writes_and_releases),
        case!(an_override_replaces_only_the_one_it_read),
        case!(release_ends_only_the_override_it_names),
        case!(breaker_writes_win_again_once_an_override_ended),
        case!(reset_closes_unless_an_override_holds),
        case!(releasing_an_ended_forced_open_keeps_the_probe_that_followed),
        case!(a_hand_over_counts_the_success_and_frees_the_lease),
        case!(only_the_owner_hands_over),
        case!(an_override_ends_the_fleets_probe_count),
        case!(a_suspicion_marks_a_closed_circuit_until_it_ends_and_a_trip_drops_it),
        case!(suspicion_reports_add_up_per_slice_or_are_not_kept),
        case!(a_key_index_names_refreshes_and_removes_keys_by_token),
        case!(race concurrent_elections_have_exactly_one_winner),
        case!(race concurrent_takeovers_of_a_handed_over_probe_have_exactly_one_winner),
        case!(race concurrent_trips_have_exactly_one_winner),
        case!(race close_and_takeover_race_has_exactly_one_winner),
        case!(race reports_add_up_exactly_in_their_own_window_or_are_not_kept),
        case!(race concurrent_adds_never_pass_the_cap),
    ]
}

fn fresh_circuit(case: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{case}-{}-{n}", std::process::id())
}
