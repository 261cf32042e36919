//! `Circuit`: the state one circuit shares between its clones, call sites and tasks. It
//! composes the parts that own that state (the closed state's counts, the cached record,
//! the published rejection, the store access, the hooks) and keeps them consistent: a new
//! record is adopted into the cache, then published to the closed and open paths.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Instant;

use super::cache::RecordCache;
use super::closed_counts::ClosedCounts;
use super::fleet_reports::{FleetReports, Reporter};
use super::hooks::Hooks;
use super::rejection::{self, PublishedRejection, Rejected};
use super::seam::Seam;
use super::store_access::StoreAccess;
use super::would_be::WouldBe;
use crate::config::{CircuitBreakerConfig, millis};
use crate::environment;
use crate::observe::CircuitMetrics;
use crate::protocol::CircuitRecord;
use crate::protocol::machine::{self, Thresholds};
use crate::store::StateStore;

/// The key a keyed circuit's key's circuit is of.
pub(crate) struct KeyOf {
    /// The key as the user named it.
    pub(crate) key: Arc<str>,
    /// The key's item id: the circuit the key reports to the fleet's counters as.
    pub(crate) item: Arc<str>,
    /// The store holding the key's item (not the key's view of it): with `item`, who
    /// reports, the same for every circuit of the key this environment makes.
    pub(crate) table: Weak<dyn StateStore>,
}

/// One circuit in this process: its config, its cached copy of the shared record, its
/// counters and hooks. Public in name only, for [`super::permit::CircuitHandle`]: the module is private.
pub struct Circuit {
    /// Written as probe owner: the process's id unless the config names one.
    environment_id: Arc<str>,
    /// Who this value's probes are in the store (`half_open_owner`).
    probe_owner: Arc<str>,
    config: CircuitBreakerConfig,
    thresholds: Thresholds,
    disabled: bool,
    hooks: Hooks,
    /// The record shadow mode would have written, and its hooks.
    would_be: WouldBe,
    /// What the circuit reports through the `metrics` facade (nothing without the feature).
    metrics: CircuitMetrics,
    /// Unix millis until which the circuit is known closed and fresh: the hot path's test.
    closed_until: AtomicU64,
    /// The open path's test: until when the cached record rejects, and what it reports.
    rejection: PublishedRejection,
    counts: ClosedCounts,
    reports: FleetReports,
    /// A guarded async call still running this long after admission is abandoned (ms);
    /// 0: no call timeout.
    call_timeout_millis: u64,
    /// Before the invocation deadline, this long is left for the store writes (ms).
    deadline_margin_millis: u64,
    /// A probe of this circuit is running in this process.
    probe_in_flight: AtomicBool,
    /// A task of this process is reading the store; others use the cached record.
    refreshing: AtomicBool,
    access: StoreAccess,
    cache: Mutex<RecordCache>,
}

impl std::fmt::Debug for Circuit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Circuit")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

impl Circuit {
    /// A circuit named `name` on `store`; `key`: a keyed circuit's key, whose own circuit
    /// this is (its store maps the name to the key's item).
    pub(super) fn new(
        name: Arc<str>,
        key: Option<KeyOf>,
        store: Arc<dyn StateStore>,
        config: CircuitBreakerConfig,
    ) -> Self {
        let environment_id = environment::id_of(&config);
        // The probe owner written to the store: the configured id as it is (it names one
        // prober), else the process's id and this value's number, so that two values of
        // one circuit in one process (a tower layer and the attribute, a breaker per
        // record) never both read themselves the owner of one lease.
        let probe_owner: Arc<str> = match &config.environment_id {
            Some(id) => Arc::clone(id),
            None => environment::value_id().into(),
        };
        config.clock.keep_recent();
        let jitter_millis =
            environment::jitter_millis(config.recovery_jitter(), &environment_id, &name);
        let thresholds = Thresholds {
            failure_threshold: config.failure_threshold,
            success_threshold: config.success_threshold,
            recovery_millis: millis(config.recovery_timeout),
            // Long enough for the first environment's election to reach every copy (the
            // cache age, plus a second for replica lag), then spread.
            fallback_millis: millis(config.local_cache_max_age)
                .saturating_add(1000)
                .saturating_add(jitter_millis),
            probe_lease_secs: config.probe_lease.as_secs().max(1),
            probe_secs: match config.call_timeout {
                Some(call) => call
                    .saturating_add(config.store_timeout.saturating_mul(2))
                    .as_secs_f64()
                    .ceil() as u64,
                None => config.probe_lease.as_secs().max(1) / 2,
            },
            recovery_secs: config.recovery_timeout.as_secs_f64().ceil() as u64,
            refused_elections_millis: millis(config.recovery_timeout)
                .saturating_mul(3)
                .max(60_000),
            backoff: config.recovery_backoff.clone(),
            max_open_for_secs: config.max_open_for.as_secs().max(1),
        };
        let metrics = CircuitMetrics::new(&name, &config, key.is_none());
        let reporter = match &key {
            Some(key) => Reporter {
                environment: Arc::clone(&environment_id),
                circuit: Arc::clone(&key.item),
                store: Weak::clone(&key.table),
            },
            None => Reporter {
                environment: Arc::clone(&environment_id),
                circuit: Arc::clone(&name),
                store: Arc::downgrade(&store),
            },
        };
        Self {
            counts: ClosedCounts::new(&config),
            reports: FleetReports::new(
                config
                    .fleet_policy()
                    .filter(|_| store.keeps_fleet_counters()),
                reporter,
            ),
            call_timeout_millis: config.call_timeout.map_or(0, millis),
            deadline_margin_millis: millis(config.deadline_margin()),
            access: StoreAccess::new(store, name, key.map(|key| key.key), &config),
            cache: Mutex::new(RecordCache::new(millis(config.local_cache_max_age))),
            environment_id,
            probe_owner,
            thresholds,
            config,
            disabled: environment::breakers_disabled(),
            hooks: Hooks::default(),
            metrics,
            closed_until: AtomicU64::new(0),
            rejection: PublishedRejection::default(),
            probe_in_flight: AtomicBool::new(false),
            refreshing: AtomicBool::new(false),
            would_be: WouldBe::default(),
        }
    }

    pub(super) fn name(&self) -> &Arc<str> {
        self.access.name()
    }

    /// A keyed circuit's key, `None` for a plain circuit.
    pub(super) fn key(&self) -> Option<&Arc<str>> {
        self.access.key()
    }

    pub(super) fn store(&self) -> &Arc<dyn StateStore> {
        self.access.store()
    }

    pub(super) fn config(&self) -> &CircuitBreakerConfig {
        &self.config
    }

    /// The id this value elects, probes and ends its probes under.
    pub(super) fn probe_owner(&self) -> &str {
        &self.probe_owner
    }

    pub(super) fn thresholds(&self) -> &Thresholds {
        &self.thresholds
    }

    pub(super) fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// What the circuit reports through the `metrics` facade.
    #[inline]
    pub(super) fn metrics(&self) -> &CircuitMetrics {
        &self.metrics
    }

    /// The record shadow mode would have written.
    pub(super) fn would_be(&self) -> &WouldBe {
        &self.would_be
    }

    /// Where the circuit's transitions go at `now`, given the cached record: the one place
    /// that chooses the seam.
    pub(super) fn seam(&self, cache: &RecordCache, now: u64) -> Seam {
        Seam::at(self.config.shadow, cache.record(), now)
    }

    /// Every circuit is bypassed (`CIRCUIT_BREAKER_DISABLED`).
    #[inline]
    pub(super) fn disabled(&self) -> bool {
        self.disabled
    }

    /// Until when (unix millis) the circuit is known closed and fresh; 0: it is not.
    #[inline]
    pub(super) fn closed_until(&self) -> u64 {
        self.closed_until.load(Ordering::Acquire)
    }

    /// The closed state's counts.
    #[inline]
    pub(super) fn counts(&self) -> &ClosedCounts {
        &self.counts
    }

    /// The reports of this environment's failures to the fleet.
    pub(super) fn reports(&self) -> &FleetReports {
        &self.reports
    }

    /// The call timeout in ms, 0 for none.
    #[inline]
    pub(super) fn call_timeout_millis(&self) -> u64 {
        self.call_timeout_millis
    }

    /// What is left before the invocation deadline for the store writes, in ms.
    pub(super) fn deadline_margin_millis(&self) -> u64 {
        self.deadline_margin_millis
    }

    #[inline]
    pub(super) fn now(&self) -> u64 {
        self.config.clock.now_millis()
    }

    /// A recent time (see [`Clock::recent_millis`](crate::clock::Clock)), for the closed
    /// and open paths.
    #[inline]
    pub(super) fn recent_now(&self) -> u64 {
        self.config.clock.recent_millis()
    }

    /// `recent`, or the clock's time if the recent time is not known.
    #[cold]
    #[inline]
    pub(super) fn known(&self, recent: u64) -> u64 {
        match recent {
            crate::clock::UNKNOWN => self.now(),
            recent => recent,
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, RecordCache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes `record` the believed state and republishes it.
    pub(super) fn adopt(&self, cache: &mut RecordCache, record: CircuitRecord) {
        if cache.adopt(record) {
            self.counts.reset();
            self.reports.reset();
            // The circuit closed or left the closed state: a slow start ramps from a close.
            let closed = cache.record().state == crate::protocol::CircuitState::Closed;
            match closed && self.config.slow_start.is_some() {
                true => cache.start_ramp(self.now()),
                false => cache.end_ramp(),
            }
        }
        self.publish(cache);
    }

    /// Tells the hot path until when the circuit is known closed (0: it is not), and the
    /// open path until when the cached record rejects (asked of the machine itself, so
    /// whatever it decides from the record is what the open path does). A probe in flight
    /// in this process is left out: it only adds rejections, which the locked path makes.
    pub(super) fn publish(&self, cache: &RecordCache) {
        let now = self.now();
        // The closed path judges by a recent time, which lags the clock by up to a tick.
        let lag = self.config.clock.recent_lag_millis();
        let seam = self.seam(cache, now);
        let runs_closed = seam.runs_closed(machine::runs_closed(cache.record(), now), || {
            self.would_be.closed()
        });
        // A slow start in its ramp, or an adaptive policy that sheds, keeps calls off the
        // closed path: they set the share of calls admitted. Neither a circuit in shadow nor
        // an override that holds sheds (`shedding::admit`).
        let shedding = seam.turns_calls_away(cache.record(), now)
            && self.counts.throttle().is_some_and(|t| t.share(now) > 0);
        let closed_until = match runs_closed && cache.ramp_from() == 0 && !shedding {
            true => cache.trusted_until().saturating_sub(lag),
            false => 0,
        };
        self.closed_until.store(closed_until, Ordering::Release);
        let now = self.now();
        let rejects = |at: u64| self.rejects(cache, at, true);
        let until = rejection::rejects_until(now, cache.trusted_until(), rejects);
        self.rejection
            .publish(until, Rejected::of(cache.record(), now, &self.thresholds));
    }

    /// Takes a record a warm-up read (from `read_started` on) as if this circuit had read
    /// it then: trusted for `local_cache_max_age` from the read. Only a circuit that has
    /// neither read nor written anything yet takes it; what it knows is newer.
    pub(super) fn adopt_warmed(&self, record: Option<CircuitRecord>, read_started: Instant) {
        let Some(left) = self
            .config
            .local_cache_max_age
            .checked_sub(read_started.elapsed())
        else {
            return;
        };
        self.adopt_seeded(record, self.now().saturating_add(millis(left)));
    }

    /// Takes `record` as the circuit's cache, trusted until `fresh_until` (unix millis),
    /// if the circuit has neither read nor written anything yet: a warm-up's read, or a
    /// keyed circuit's index that does not name the key.
    pub(super) fn adopt_seeded(&self, record: Option<CircuitRecord>, fresh_until: u64) {
        let mut cache = self.lock();
        if !cache.untouched() || fresh_until <= self.now() {
            return;
        }
        cache.trust_until(fresh_until);
        self.adopt(&mut cache, record.unwrap_or_default());
    }
}

mod decisions;
mod store_io;
