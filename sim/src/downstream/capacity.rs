//! The downstream's capacity by virtual time, as a schedule like its health: "unlimited,
//! then 0 while down, then 30 % of the fleet's peak ramping to 100 % over 120 s".

/// How many calls per second the downstream serves during a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capacity {
    /// Any load.
    Unlimited,
    /// At most this many calls per second.
    PerSecond(u32),
    /// `from` calls per second at the phase's start, growing linearly to `to` over
    /// `over_ms`, then `to`.
    Ramp {
        /// Calls per second at the start.
        from: u32,
        /// Calls per second at the end, and after.
        to: u32,
        /// How long the ramp lasts, ms.
        over_ms: u64,
    },
}

/// Capacity by virtual time: each phase holds from its start until the next one's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapacitySchedule {
    /// `(from virtual ms, capacity)`, in order of time; before the first phase: unlimited.
    phases: Vec<(u64, Capacity)>,
}

impl Default for CapacitySchedule {
    fn default() -> Self {
        Self::unlimited()
    }
}

impl CapacitySchedule {
    /// Phases `(from ms, capacity)`; sorted by time here.
    ///
    /// ```
    /// use breaker_sim::downstream::{Capacity, CapacitySchedule};
    /// let s = CapacitySchedule::new(vec![
    ///     (30_000, Capacity::PerSecond(0)),
    ///     (90_000, Capacity::Ramp { from: 3_000, to: 10_000, over_ms: 120_000 }),
    /// ]);
    /// assert_eq!(s.at(29_999), None);
    /// assert_eq!(s.at(30_000), Some(0));
    /// assert_eq!(s.at(150_000), Some(6_500));
    /// assert_eq!(s.at(999_000), Some(10_000));
    /// assert_eq!(s.ramp_start(), Some(90_000));
    /// ```
    pub fn new(mut phases: Vec<(u64, Capacity)>) -> Self {
        phases.sort_by_key(|(from, _)| *from);
        Self { phases }
    }

    /// Serves any load, always: every scenario's default.
    pub fn unlimited() -> Self {
        Self::new(Vec::new())
    }

    /// Unlimited at every instant.
    pub fn is_unlimited(&self) -> bool {
        self.phases.iter().all(|(_, c)| *c == Capacity::Unlimited)
    }

    /// Calls per second at `now_ms`; `None`: unlimited.
    pub fn at(&self, now_ms: u64) -> Option<u32> {
        let (from, capacity) = self.phases.iter().rev().find(|(from, _)| *from <= now_ms)?;
        match *capacity {
            Capacity::Unlimited => None,
            Capacity::PerSecond(n) => Some(n),
            Capacity::Ramp {
                from: a,
                to: b,
                over_ms,
            } => {
                let done = match over_ms {
                    0 => 1.0,
                    _ => ((now_ms - from) as f64 / over_ms as f64).min(1.0),
                };
                Some((f64::from(a) + (f64::from(b) - f64::from(a)) * done).round() as u32)
            }
        }
    }

    /// The capacity of virtual second `second`: the schedule's at the second's start, so
    /// it holds for the whole bucket its calls are counted in.
    pub fn of_second(&self, second: u64) -> Option<u32> {
        self.at(second * 1000)
    }

    /// When the first ramp starts, if any: the downstream's return, as far as capacity
    /// goes.
    pub fn ramp_start(&self) -> Option<u64> {
        self.phases
            .iter()
            .find(|(_, c)| matches!(c, Capacity::Ramp { .. }))
            .map(|(from, _)| *from)
    }

    /// The same schedule with every finite capacity times `factor` (a reduced fleet's),
    /// rounded; a positive one stays at least 1, so only a zero capacity sheds every call.
    ///
    /// ```
    /// use breaker_sim::downstream::{Capacity, CapacitySchedule};
    /// let s = CapacitySchedule::new(vec![(0, Capacity::PerSecond(0)), (10, Capacity::PerSecond(3_000))]);
    /// assert_eq!(s.scaled(0.01).at(10), Some(30));
    /// ```
    pub fn scaled(self, factor: f64) -> Self {
        let scale = |n: u32| match n {
            0 => 0,
            n => ((f64::from(n) * factor).round() as u32).max(1),
        };
        let phases = self
            .phases
            .into_iter()
            .map(|(from, capacity)| {
                let capacity = match capacity {
                    Capacity::Unlimited => Capacity::Unlimited,
                    Capacity::PerSecond(n) => Capacity::PerSecond(scale(n)),
                    Capacity::Ramp { from, to, over_ms } => Capacity::Ramp {
                        from: scale(from),
                        to: scale(to),
                        over_ms,
                    },
                };
                (from, capacity)
            })
            .collect();
        Self { phases }
    }
}
