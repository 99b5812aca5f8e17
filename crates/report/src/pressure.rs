//! [`Pressures`]: every watched resource against its own limit, read from the resource
//! samples as they stream by (a few numbers per resource), closed into the
//! [`analysis::Watched`] list that [`analysis::diagnose`] judges.
//!
//! Which series are a resource and which its limit: a process group's CPU against its
//! allowance (`process.cpu_limit_percent`: its affinity and quota) and against one core;
//! the host's CPU, its busiest core, iowait and steal; fds against the process's or the
//! host's limit; memory against the host's; TIME_WAIT sockets against the ephemeral
//! port range; listen-queue overflows and failed connects
//! (events: any sustained rate counts); PostgreSQL connections against
//! `max_connections`; and Prometheus gauges paired by name as a pool's use and size
//! (`..._busy`/`..._active` beside `..._workers`/`..._size`/`..._max`); and a followed
//! log's lines by pattern (any line counts, from its first second), quoted with the
//! first line the monitor kept. Thresholds are the constants below;
//! `docs/DIAGNOSIS.md` explains each.

use std::collections::BTreeMap;

use analysis::diagnosis::{Brief, Crossing, Note, Resource, Unjudged, Watched};
use record::{
    PROM_LIMIT_SUFFIX, ResourceSeries, SampleBatch, SampleTables, SamplerKind, SeriesKind,
};

use crate::resources::{SUSTAINED_SAMPLES, Stat};
use crate::sampler_health::SamplerHealth;

/// A share of a limit at or above this (percent) is close to it: CPU of an allowance,
/// fds (the resource rows' fd warning uses the same), memory, connections, a pool.
pub const NEAR_LIMIT_PERCENT: f64 = crate::resources::FD_WARN_PERCENT;
/// The host's CPU (all cores) at or above this is busy: the resource rows' own
/// threshold, so the warning and the diagnosis agree.
pub const HOST_CPU_BUSY_PERCENT: f64 = crate::resources::CPU_BUSY_PERCENT;
/// One core at or above this while the host is not: pegged.
pub const CORE_PEGGED_PERCENT: f64 = 95.0;
/// A process group at or above this share of one core, and never above
/// [`ONE_CORE_MAX_PERCENT`], while it may use two cores or more: one thread's ceiling.
pub const ONE_CORE_PERCENT: f64 = 90.0;
/// See [`ONE_CORE_PERCENT`].
pub const ONE_CORE_MAX_PERCENT: f64 = 115.0;
/// CPU steal at or above this share of the host, while the host is busy (below).
pub const STEAL_PERCENT: f64 = 10.0;
/// Steal is judged only while the host's CPU (steal included) is at least this busy.
pub const STEAL_BUSY_PERCENT: f64 = 90.0;
/// iowait at or above this share of the host.
pub const IOWAIT_PERCENT: f64 = 20.0;
/// Samples in a row at a threshold that count when they last to the end of the samples
/// (fewer than the usual three: the run was cut short there).
pub const TRAILING_SAMPLES: u32 = 2;
/// Events (listen overflows, failed connects) at or above this rate per second.
pub const EVENTS_PER_SEC: f64 = 1.0;
/// An app's database connections busy at or above this share of the time: its pool
/// is full. Lower than [`NEAR_LIMIT_PERCENT`] because the server sees a connection
/// idle while the app hands it from one request to the next (back to its pool, to the
/// next thread): a pool that is never free reads 85-95% busy from the server's side,
/// less where the app's own work per transaction is long.
pub const DB_BUSY_PERCENT: f64 = 75.0;
/// Memory written to swap at or above this rate (bytes per second): memory ran short.
pub const SWAP_OUT_BYTES_PER_SEC: f64 = 1024.0 * 1024.0;
/// Retransmitted segments at or above this share (percent) of those sent: packets lost.
pub const RETRANSMIT_PERCENT: f64 = 1.0;
/// Fewer retransmits than this per second are never judged, whatever their share: a
/// quiet host's one lost segment is not a limit.
pub const RETRANSMITS_MIN_PER_SEC: f64 = 10.0;

/// What a series stands for in a resource's pressure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    ProcessCpu,
    ProcessCpuLimit,
    ProcessFdUse,
    ProcessFdLimit,
    ProcessRss,
    ProcessMemoryLimit,
    HostCpu,
    HostCore,
    HostIowait,
    HostSteal,
    HostMemoryUsed,
    HostMemoryTotal,
    SwapOut,
    NetRx(u32),
    NetTx(u32),
    NetSpeed(u32),
    SegmentsSent,
    Retransmits,
    ResetsSent,
    HostFds,
    HostFdsMax,
    TimeWait,
    EphemeralPorts,
    ListenOverflows,
    ConnectFailures,
    DbConnections,
    DbMaxConnections,
    DbBusy,
    DbTransactions,
    PoolUse(u32),
    PoolSize(u32),
    LogLines(u32),
}

/// One resource's pressure, by sampler and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Measure {
    CpuAllowance,
    OneCore,
    HostCpu,
    BusiestCore,
    Iowait,
    Steal,
    ProcessFds,
    HostFds,
    Memory,
    ProcessMemory,
    Swap,
    Network(u32),
    EphemeralPorts,
    ListenQueue,
    ConnectFailures,
    Retransmits,
    Resets,
    DbConnections,
    DbBusy,
    /// Tracked for the busy connections' evidence, never judged itself: transactions
    /// flatten whatever the limit is, as the requests served do.
    DbTransactions,
    Pool(u32),
    Log(u32),
}

/// One reading of a measure: its value in its own unit, its limit (`None` for events
/// and plain percentages), the share of that limit its threshold applies to, and how
/// many readings in a row at the threshold make a crossing.
struct Reading {
    measure: Measure,
    value: f64,
    limit: Option<f64>,
    share: f64,
    threshold: f64,
    sustain: u32,
}

/// The running figures of one measure.
#[derive(Debug, Clone, Default)]
struct Track {
    share: Stat,
    peak: f64,
    peak_at_unix_ns: u64,
    limit: Option<f64>,
    /// The lowest threshold its readings were held to (steal shrinks some), and the
    /// readings in a row a crossing needs.
    threshold: Option<(f64, u32)>,
}

/// A pool's gauges: the use gauge with its labels as a reader writes it, and the two
/// names (the evidence).
#[derive(Debug, Clone, Default)]
struct PoolNames {
    shown: String,
    use_name: String,
    size_name: String,
}

/// Aggregates sample batches into each resource's pressure; see the module documentation.
#[derive(Debug, Clone, Default)]
pub struct Pressures {
    /// By series id: its sampler and role.
    roles: Vec<Option<(u32, Role)>>,
    /// By series id: its sampler.
    series_samplers: Vec<u32>,
    /// By sampler id: its readings as a series in time.
    health: Vec<SamplerHealth>,
    /// Pool gauges by sampler and their name with its role word blanked, so the use and
    /// size of one pool find each other whichever comes first.
    pools: BTreeMap<(u32, String), u32>,
    /// By pool id: its gauges' names.
    pool_names: Vec<PoolNames>,
    /// Log patterns by sampler and name, and by id: the name and its first line.
    logs: BTreeMap<(u32, String), u32>,
    log_patterns: Vec<(String, Option<String>)>,
    /// Network interfaces by sampler and name, and by id: the name.
    interfaces: BTreeMap<(u32, String), u32>,
    interface_names: Vec<String>,
    /// The host's CPU steal at its latest reading, percent.
    latest_steal_percent: f64,
    tracks: BTreeMap<(u32, Measure), Track>,
    /// By sampler id: its kind and name.
    samplers: Vec<(SamplerKind, String)>,
}

impl Pressures {
    /// Adds batches whose ids index `tables` (the merged tables as read so far).
    pub fn add(&mut self, tables: &SampleTables, batches: &[SampleBatch]) {
        while self.samplers.len() < tables.samplers.len() {
            let info = &tables.samplers[self.samplers.len()];
            self.samplers.push((info.kind.clone(), info.name.clone()));
        }
        while self.roles.len() < tables.series.len() {
            let role = self.role_of(tables, self.roles.len());
            self.roles.push(role);
            self.series_samplers
                .push(tables.series[self.series_samplers.len()].sampler);
        }
        self.health
            .resize_with(self.samplers.len(), SamplerHealth::default);
        for batch in batches {
            self.add_batch(batch);
        }
    }

    fn role_of(&mut self, tables: &SampleTables, series: usize) -> Option<(u32, Role)> {
        use ResourceSeries as S;
        let info = &tables.series[series];
        let kind = &tables.samplers.get(info.sampler as usize)?.kind;
        if *kind == SamplerKind::Prom {
            if let Some(gauge) = info.name.strip_suffix(PROM_LIMIT_SUFFIX) {
                return self.hinted_pool(tables, series, gauge);
            }
            let role = self.pool_role(info.sampler, &info.name, &info.labels, info.kind)?;
            return Some((info.sampler, role));
        }
        if *kind == SamplerKind::Log {
            return self.log_role(info.sampler, &info.name, &info.labels);
        }
        let series = ResourceSeries::from_name(&info.name)?;
        // A series counts only from its own kind of sampler (an agent forwards samplers
        // with their kinds).
        if !series.name().starts_with(kind.name()) {
            return None;
        }
        let cpu = info.labels.get("cpu").map(String::as_str);
        let role = match series {
            S::ProcessCpuPercent => Role::ProcessCpu,
            S::ProcessCpuLimitPercent => Role::ProcessCpuLimit,
            S::ProcessFdUsePercent => Role::ProcessFdUse,
            S::ProcessFdLimit => Role::ProcessFdLimit,
            S::ProcessRssBytes => Role::ProcessRss,
            S::ProcessMemoryLimitBytes => Role::ProcessMemoryLimit,
            S::HostCpuPercent if cpu == Some("all") => Role::HostCpu,
            S::HostCpuPercent => Role::HostCore,
            S::HostCpuIowaitPercent => Role::HostIowait,
            S::HostCpuStealPercent => Role::HostSteal,
            S::HostMemoryUsedBytes => Role::HostMemoryUsed,
            S::HostMemoryTotalBytes => Role::HostMemoryTotal,
            S::HostSwapOutBytesPerSec => Role::SwapOut,
            S::HostNetRxBytesPerSec | S::HostNetTxBytesPerSec | S::HostNetSpeedBytesPerSec => {
                let interface = info.labels.get("interface")?;
                let id = self.interface(info.sampler, interface)?;
                match series {
                    S::HostNetRxBytesPerSec => Role::NetRx(id),
                    S::HostNetTxBytesPerSec => Role::NetTx(id),
                    _ => Role::NetSpeed(id),
                }
            }
            S::HostTcpSegmentsSentPerSec => Role::SegmentsSent,
            S::HostTcpRetransmitsPerSec => Role::Retransmits,
            S::HostTcpResetsSentPerSec => Role::ResetsSent,
            S::HostFdsOpen => Role::HostFds,
            S::HostFdsMax => Role::HostFdsMax,
            S::HostTcpTimeWait => Role::TimeWait,
            S::HostEphemeralPorts => Role::EphemeralPorts,
            S::HostTcpListenOverflowsPerSec => Role::ListenOverflows,
            S::HostTcpConnectFailuresPerSec => Role::ConnectFailures,
            S::PostgresConnections => Role::DbConnections,
            S::PostgresMaxConnections => Role::DbMaxConnections,
            S::PostgresBusyConnections => Role::DbBusy,
            S::PostgresTransactionsPerSec => Role::DbTransactions,
            _ => return None,
        };
        Some((info.sampler, role))
    }

    /// An interface's id, given on first sight.
    fn interface(&mut self, sampler: u32, name: &str) -> Option<u32> {
        id_on_first_sight(
            &mut self.interfaces,
            &mut self.interface_names,
            (sampler, name.to_owned()),
            || name.to_owned(),
        )
    }

    /// A gauge's maximum as the user hinted it (`max=GAUGE=LIMIT`): the pool's size,
    /// and the gauge itself (written before it, by name and labels) its use, whatever
    /// its name says.
    fn hinted_pool(
        &mut self,
        tables: &SampleTables,
        series: usize,
        gauge: &str,
    ) -> Option<(u32, Role)> {
        let info = &tables.series[series];
        let use_id = tables.series[..series].iter().position(|s| {
            s.sampler == info.sampler && s.name == gauge && s.labels == info.labels
        })?;
        let next = u32::try_from(self.pool_names.len()).ok()?;
        self.pool_names.push(PoolNames {
            shown: display_series(gauge, &info.labels),
            use_name: gauge.to_owned(),
            size_name: info.name.clone(),
        });
        self.roles[use_id] = Some((info.sampler, Role::PoolUse(next)));
        Some((info.sampler, Role::PoolSize(next)))
    }

    /// A Prometheus gauge whose name has a use word (`busy`, `active`, `in_use`...) or
    /// a size word (`workers`, `size`, `max`...) where its partner has the other.
    fn pool_role(
        &mut self,
        sampler: u32,
        name: &str,
        labels: &BTreeMap<String, String>,
        kind: SeriesKind,
    ) -> Option<Role> {
        if kind != SeriesKind::Gauge {
            return None;
        }
        let (blanked, is_use) = pool_word(name)?;
        let key = (sampler, format!("{blanked}{labels:?}"));
        let pool = id_on_first_sight(
            &mut self.pools,
            &mut self.pool_names,
            key,
            PoolNames::default,
        )?;
        let names = &mut self.pool_names[pool as usize];
        if is_use {
            names.shown = display_series(name, labels);
            names.use_name = name.to_owned();
            Some(Role::PoolUse(pool))
        } else {
            names.size_name = name.to_owned();
            Some(Role::PoolSize(pool))
        }
    }

    /// A log's lines per second of one pattern (not `all`); an example line is noted as
    /// its pattern's first when it is the first declared (the monitor declares an
    /// example when it first sees it).
    fn log_role(
        &mut self,
        sampler: u32,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> Option<(u32, Role)> {
        let pattern = labels.get("pattern").filter(|p| *p != "all")?;
        let id = id_on_first_sight(
            &mut self.logs,
            &mut self.log_patterns,
            (sampler, pattern.clone()),
            || (pattern.clone(), None),
        )?;
        match ResourceSeries::from_name(name)? {
            ResourceSeries::LogLinesPerSec => Some((sampler, Role::LogLines(id))),
            ResourceSeries::LogExample => {
                let line = labels.get("line").cloned();
                self.log_patterns[id as usize]
                    .1
                    .get_or_insert_with(|| line.unwrap_or_default());
                None
            }
            _ => None,
        }
    }

    /// Counts the batch's reading for its sampler; a jump back or a silence ends every
    /// stretch its tracks were in.
    fn check_continuity(&mut self, batch: &SampleBatch) {
        let whole_gap = batch.gaps.iter().find(|gap| gap.series.is_none());
        let sampler = whole_gap.map(|gap| gap.sampler).or_else(|| {
            let series = batch.values.first().map(|v| v.series as usize)?;
            self.series_samplers.get(series).copied()
        });
        let Some(health) = sampler.and_then(|s| self.health.get_mut(s as usize)) else {
            return;
        };
        let reason = whole_gap.map(|gap| gap.reason.as_str());
        if !health.add(batch.at_unix_ns, reason) {
            for (_, track) in self
                .tracks
                .iter_mut()
                .filter(|((s, _), _)| Some(*s) == sampler)
            {
                track.share.break_run();
            }
        }
    }

    /// A process's CPU is judged against what its cores could give: a core whose
    /// hypervisor takes a quarter of it gives three quarters, so the thresholds of one
    /// core and of an allowance shrink with the host's latest steal (at most by half).
    fn discount_steal(&self, reading: &mut Reading) {
        if matches!(reading.measure, Measure::OneCore | Measure::CpuAllowance) {
            let steal = self.latest_steal_percent.clamp(0.0, 50.0);
            reading.threshold *= 1.0 - steal / 100.0;
        }
    }

    /// What could not be judged for each sampler, with times from `start_unix_ns`.
    pub fn unjudged(&self, start_unix_ns: u64) -> Vec<Unjudged> {
        self.health
            .iter()
            .zip(&self.samplers)
            .flat_map(|(health, (_, name))| health.unjudged(name, start_unix_ns))
            .collect()
    }

    fn add_batch(&mut self, batch: &SampleBatch) {
        self.check_continuity(batch);
        // Values of one batch by sampler and role: summed (databases of one server),
        // except per-core CPU, whose busiest core counts.
        let mut values: BTreeMap<(u32, Role), f64> = BTreeMap::new();
        for value in &batch.values {
            let Some(Some((sampler, role))) = self.roles.get(value.series as usize).copied() else {
                continue;
            };
            let slot = values.entry((sampler, role)).or_insert(0.0);
            *slot = match role {
                Role::HostCore => slot.max(value.value),
                _ => *slot + value.value,
            };
        }
        let mut samplers: Vec<u32> = values.keys().map(|(sampler, _)| *sampler).collect();
        samplers.dedup();
        for sampler in samplers {
            let get = |role: Role| values.get(&(sampler, role)).copied();
            let pools = values.keys().filter_map(|&(s, role)| match role {
                Role::PoolUse(pool) if s == sampler => Some(pool),
                _ => None,
            });
            let links = values.keys().filter_map(|&(s, role)| match role {
                Role::NetSpeed(id) if s == sampler => Some(id),
                _ => None,
            });
            let logs = values.iter().filter_map(|(&(s, role), &value)| match role {
                Role::LogLines(id) if s == sampler => Some(Reading::event(Measure::Log(id), value)),
                _ => None,
            });
            let mut readings = readings(&get, pools);
            readings.extend(logs);
            readings.extend(links.filter_map(|id| network(&get, id)));
            if let Some(steal) = get(Role::HostSteal) {
                self.latest_steal_percent = steal;
            }
            for reading in &mut readings {
                self.discount_steal(reading);
            }
            for reading in readings {
                let track = self.tracks.entry((sampler, reading.measure)).or_default();
                track.add(batch.at_unix_ns, &reading);
            }
        }
    }

    /// Each watched resource, with times from `start_unix_ns` (the run's start).
    pub fn close(&self, start_unix_ns: u64) -> Vec<Watched> {
        let core_busy = |sampler: u32| {
            self.tracks
                .get(&(sampler, Measure::HostCpu))
                .is_some_and(|t| t.crossing().is_some())
        };
        self.tracks
            .iter()
            .filter(|((sampler, measure), track)| match measure {
                // Below its threshold, the group's allowance says its headroom.
                Measure::OneCore => track.crossing().is_some() && track.one_thread_ceiling(),
                // A busy host explains its busiest core.
                Measure::BusiestCore => !core_busy(*sampler),
                // A pattern that never matched says nothing (the log's other lines do).
                Measure::Log(_) => track.peak > 0.0,
                Measure::DbTransactions => false,
                _ => true,
            })
            .map(|(&(sampler, measure), track)| {
                self.watched(sampler, measure, track, start_unix_ns)
            })
            .collect()
    }

    fn watched(&self, sampler: u32, measure: Measure, track: &Track, start: u64) -> Watched {
        let (mut resource, series, unit) = describe(measure);
        let (kind, name) = &self.samplers[sampler as usize];
        let mut example = None;
        let (name, series) = match (measure, kind) {
            (Measure::Log(id), _) => {
                let (pattern, first_line) = &self.log_patterns[id as usize];
                if !LIMIT_PATTERNS.contains(&pattern.as_str())
                    && DEFAULT_SYMPTOMS.contains(&pattern.as_str())
                {
                    resource = Resource::LogSymptom;
                }
                example.clone_from(first_line);
                (
                    format!("{name} log ({pattern})"),
                    format!("log.lines_per_sec{{pattern={pattern}}}"),
                )
            }
            (Measure::Network(id), _) => {
                let interface = &self.interface_names[id as usize];
                (
                    format!("{} {interface}", analysis::diagnosis::HOST),
                    format!(
                        "host.net_rx_bytes_per_sec, host.net_tx_bytes_per_sec / \
                         host.net_speed_bytes_per_sec{{interface={interface}}}"
                    ),
                )
            }
            (Measure::Pool(pool), _) => {
                let names = &self.pool_names[pool as usize];
                // A labelled endpoint (`app:prom=URL`) names its pools; a bare URL
                // would only make the sentence longer.
                let shown = if name.contains("://") {
                    names.shown.clone()
                } else {
                    format!("{name} {}", names.shown)
                };
                (shown, format!("{} / {}", names.use_name, names.size_name))
            }
            (_, SamplerKind::Host) => (analysis::diagnosis::HOST.to_owned(), series.to_owned()),
            _ => (name.clone(), series.to_owned()),
        };
        let crossed = track.crossing().map(|(at, mean)| Crossing {
            at_ns: at.saturating_sub(start),
            value: match (measure, track.limit) {
                (Measure::OneCore, _) | (_, None) => mean,
                (_, Some(limit)) => mean / 100.0 * limit,
            },
        });
        Watched {
            name,
            resource,
            series,
            limit: match measure {
                Measure::HostCpu | Measure::BusiestCore => Some(100.0),
                _ => track.limit,
            },
            unit,
            peak: track.peak,
            peak_at_ns: track.peak_at_unix_ns.saturating_sub(start),
            brief: match (crossed, track.threshold) {
                (None, Some((threshold, sustain)))
                    if threshold.is_finite() && track.share.peak >= threshold =>
                {
                    Some(Brief { threshold, sustain })
                }
                _ => None,
            },
            crossed,
            example,
            note: self.note(sampler, measure),
        }
    }

    /// More evidence for a measure, from its sampler's other tracks.
    fn note(&self, sampler: u32, measure: Measure) -> Option<Note> {
        match measure {
            Measure::OneCore | Measure::CpuAllowance => {
                let steal = self
                    .tracks
                    .iter()
                    .filter(|((_, m), _)| *m == Measure::Steal)
                    .map(|(_, track)| track.peak)
                    .fold(0.0, f64::max);
                (steal >= STEAL_PERCENT).then_some(Note::Steal {
                    peak_percent: steal,
                })
            }
            Measure::DbBusy => {
                let transactions = self.tracks.get(&(sampler, Measure::DbTransactions))?;
                Some(Note::Transactions {
                    peak_per_sec: transactions.peak,
                })
            }
            _ => None,
        }
    }
}

impl Track {
    fn add(&mut self, at_unix_ns: u64, reading: &Reading) {
        if self.share.samples == 0 || reading.value > self.peak {
            (self.peak, self.peak_at_unix_ns) = (reading.value, at_unix_ns);
        }
        if let Some(limit) = reading.limit {
            self.limit = Some(self.limit.map_or(limit, |l| l.max(limit)));
        }
        let Reading {
            share,
            threshold,
            sustain,
            ..
        } = *reading;
        let lowest = self.threshold.map_or(threshold, |(t, _)| t.min(threshold));
        self.threshold = Some((lowest, sustain));
        self.share
            .add_sustained(at_unix_ns, share, threshold, sustain);
    }

    /// Its first sustained stretch at the threshold, or two samples or more at it that
    /// lasted to the end of the samples (a step a stop rule cut short).
    fn crossing(&self) -> Option<(u64, f64)> {
        self.share.crossing(TRAILING_SAMPLES)
    }

    /// Held at one core (never far beyond it) while allowed two or more, or while its
    /// allowance is not known (a file from before loadlab sampled it).
    fn one_thread_ceiling(&self) -> bool {
        self.peak <= ONE_CORE_MAX_PERCENT && self.limit.is_none_or(|limit| limit >= 200.0)
    }
}

/// The readings one sampler's values of one batch make.
fn readings(get: &dyn Fn(Role) -> Option<f64>, pools: impl Iterator<Item = u32>) -> Vec<Reading> {
    let mut out = Vec::new();
    match (get(Role::ProcessCpu), get(Role::ProcessCpuLimit)) {
        // A file from before the allowance was sampled: watched, never judged.
        (Some(cpu), None) => out.push(Reading::plain(Measure::CpuAllowance, cpu, f64::INFINITY)),
        (cpu, limit) => out.extend(Reading::of_limit(Measure::CpuAllowance, cpu, limit)),
    }
    let limited = [
        (Measure::Memory, Role::HostMemoryUsed, Role::HostMemoryTotal),
        (Measure::HostFds, Role::HostFds, Role::HostFdsMax),
        (
            Measure::EphemeralPorts,
            Role::TimeWait,
            Role::EphemeralPorts,
        ),
        (
            Measure::DbConnections,
            Role::DbConnections,
            Role::DbMaxConnections,
        ),
        (
            Measure::ProcessMemory,
            Role::ProcessRss,
            Role::ProcessMemoryLimit,
        ),
    ];
    for (measure, value, limit) in limited {
        out.extend(Reading::of_limit(measure, get(value), get(limit)));
    }
    for pool in pools {
        let (value, size) = (get(Role::PoolUse(pool)), get(Role::PoolSize(pool)));
        out.extend(Reading::of_limit(Measure::Pool(pool), value, size));
    }
    if let (Some(percent), Some(limit)) = (get(Role::ProcessFdUse), get(Role::ProcessFdLimit)) {
        out.push(Reading {
            measure: Measure::ProcessFds,
            value: percent / 100.0 * limit,
            limit: Some(limit),
            share: percent,
            threshold: NEAR_LIMIT_PERCENT,
            sustain: SUSTAINED_SAMPLES,
        });
    }
    if let Some(mut busy) =
        Reading::of_limit(Measure::DbBusy, get(Role::DbBusy), get(Role::DbConnections))
    {
        busy.threshold = DB_BUSY_PERCENT;
        out.push(busy);
    }
    if let (Some(retransmits), Some(sent)) = (get(Role::Retransmits), get(Role::SegmentsSent)) {
        let percent = if retransmits >= RETRANSMITS_MIN_PER_SEC && sent > 0.0 {
            retransmits / sent * 100.0
        } else {
            0.0
        };
        out.push(Reading::plain(
            Measure::Retransmits,
            percent,
            RETRANSMIT_PERCENT,
        ));
    }
    if let Some(steal) = get(Role::HostSteal) {
        // Steal takes CPU the host would have used only when it had none to spare: on an
        // idle host it is the neighbours' business, not this run's limit.
        let short = get(Role::HostCpu).is_some_and(|busy| busy >= STEAL_BUSY_PERCENT);
        let mut reading = Reading::plain(Measure::Steal, steal, STEAL_PERCENT);
        reading.share = if short { steal } else { 0.0 };
        out.push(reading);
    }
    if let Some(transactions) = get(Role::DbTransactions) {
        out.push(Reading::plain(
            Measure::DbTransactions,
            transactions,
            f64::INFINITY,
        ));
    }
    if let Some(cpu) = get(Role::ProcessCpu) {
        let mut one_core = Reading::plain(Measure::OneCore, cpu, ONE_CORE_PERCENT);
        one_core.limit = get(Role::ProcessCpuLimit);
        out.push(one_core);
    }
    let plain = [
        (Measure::HostCpu, Role::HostCpu, HOST_CPU_BUSY_PERCENT),
        (Measure::BusiestCore, Role::HostCore, CORE_PEGGED_PERCENT),
        (Measure::Iowait, Role::HostIowait, IOWAIT_PERCENT),
        (Measure::ListenQueue, Role::ListenOverflows, EVENTS_PER_SEC),
        (
            Measure::ConnectFailures,
            Role::ConnectFailures,
            EVENTS_PER_SEC,
        ),
        (Measure::Resets, Role::ResetsSent, EVENTS_PER_SEC),
        (Measure::Swap, Role::SwapOut, SWAP_OUT_BYTES_PER_SEC),
    ];
    for (measure, role, threshold) in plain {
        out.extend(get(role).map(|value| Reading::plain(measure, value, threshold)));
    }
    out
}

/// An interface's busier direction against its link speed.
fn network(get: &dyn Fn(Role) -> Option<f64>, id: u32) -> Option<Reading> {
    let busier = match (get(Role::NetRx(id)), get(Role::NetTx(id))) {
        (None, None) => return None,
        (rx, tx) => rx.unwrap_or(0.0).max(tx.unwrap_or(0.0)),
    };
    Reading::of_limit(Measure::Network(id), Some(busier), get(Role::NetSpeed(id)))
}

impl Reading {
    /// A value judged as itself (a percentage, an event rate).
    fn plain(measure: Measure, value: f64, threshold: f64) -> Reading {
        Reading {
            measure,
            value,
            limit: None,
            share: value,
            threshold,
            sustain: SUSTAINED_SAMPLES,
        }
    }

    /// Log lines: any at all count, from the first second they appear.
    fn event(measure: Measure, value: f64) -> Reading {
        Reading {
            sustain: 1,
            ..Reading::plain(measure, value, f64::MIN_POSITIVE)
        }
    }

    /// A value judged as its share of a limit, when both were read.
    fn of_limit(measure: Measure, value: Option<f64>, limit: Option<f64>) -> Option<Reading> {
        let (value, limit) = (value?, limit.filter(|l| *l > 0.0)?);
        Some(Reading {
            measure,
            value,
            limit: Some(limit),
            share: value / limit * 100.0,
            threshold: NEAR_LIMIT_PERCENT,
            sustain: SUSTAINED_SAMPLES,
        })
    }
}

/// The kind of limit, the evidence's series and the unit of a measure.
fn describe(measure: Measure) -> (Resource, &'static str, &'static str) {
    use ResourceSeries as S;
    match measure {
        Measure::CpuAllowance => (
            Resource::CpuAllowance,
            "process.cpu_percent / process.cpu_limit_percent",
            "%",
        ),
        Measure::OneCore => (Resource::OneCore, S::ProcessCpuPercent.name(), "%"),
        Measure::HostCpu => (Resource::HostCpu, "host.cpu_percent{cpu=all}", "%"),
        Measure::BusiestCore => (Resource::OneCoreOfHost, "host.cpu_percent{cpu=N}", "%"),
        Measure::Iowait => (Resource::Iowait, S::HostCpuIowaitPercent.name(), "%"),
        Measure::Steal => (Resource::Steal, S::HostCpuStealPercent.name(), "%"),
        Measure::ProcessFds => (
            Resource::Fds,
            "process.fd_use_percent / process.fd_limit",
            "fds",
        ),
        Measure::HostFds => (Resource::Fds, "host.fds_open / host.fds_max", "fds"),
        Measure::EphemeralPorts => (
            Resource::EphemeralPorts,
            "host.tcp_time_wait / host.ephemeral_ports",
            "ports",
        ),
        Measure::Memory => (
            Resource::Memory,
            "host.memory_used_bytes / host.memory_total_bytes",
            "bytes",
        ),
        Measure::ProcessMemory => (
            Resource::Memory,
            "process.rss_bytes / process.memory_limit_bytes",
            "bytes",
        ),
        Measure::Swap => (Resource::Swap, S::HostSwapOutBytesPerSec.name(), "bytes/s"),
        Measure::Network(_) => (Resource::Network, "", "bytes/s"),
        Measure::Retransmits => (
            Resource::Retransmits,
            "host.tcp_retransmits_per_sec / host.tcp_segments_sent_per_sec",
            "%",
        ),
        Measure::Resets => (Resource::TcpResets, S::HostTcpResetsSentPerSec.name(), "/s"),
        Measure::ListenQueue => (
            Resource::ListenQueue,
            S::HostTcpListenOverflowsPerSec.name(),
            "/s",
        ),
        Measure::ConnectFailures => (
            Resource::TcpErrors,
            S::HostTcpConnectFailuresPerSec.name(),
            "/s",
        ),
        Measure::DbConnections => (
            Resource::DbConnections,
            "postgres.connections / postgres.max_connections",
            "connections",
        ),
        Measure::DbBusy => (
            Resource::DbBusy,
            "postgres.busy_connections / postgres.connections",
            "connections busy",
        ),
        Measure::DbTransactions => (
            Resource::DbConnections,
            S::PostgresTransactionsPerSec.name(),
            "/s",
        ),
        Measure::Pool(_) => (Resource::Pool, "", ""),
        Measure::Log(_) => (Resource::Log, "", "/s"),
    }
}

/// The monitor's default log patterns that name a resource running out: a limit in the
/// system's own words. A user's patterns count as such too.
const LIMIT_PATTERNS: &[&str] = &["too_many_open_files", "out_of_memory"];
/// The default patterns that are symptoms: listed, never the first limit.
const DEFAULT_SYMPTOMS: &[&str] = &["connection_refused", "timeout", "5xx", "panic"];

/// Words that make a gauge a pool's use or its size.
const USE_WORDS: &[&str] = &["busy", "active", "inuse", "used", "running", "occupied"];
const SIZE_WORDS: &[&str] = &["workers", "size", "max", "limit", "capacity", "maximum"];

/// The name with its one use or size word blanked, and whether it is a use word;
/// `in_use` counts as one word.
fn pool_word(name: &str) -> Option<(String, bool)> {
    let joined = name.replace("in_use", "inuse");
    let words: Vec<&str> = joined.split('_').collect();
    let mut found = None;
    for (index, word) in words.iter().enumerate() {
        let role = if USE_WORDS.contains(word) {
            true
        } else if SIZE_WORDS.contains(word) {
            false
        } else {
            continue;
        };
        if found.is_some() {
            return None; // two role words: not a simple pair
        }
        found = Some((index, role));
    }
    let (index, is_use) = found?;
    let mut blanked = words;
    blanked[index] = "*";
    Some((blanked.join("_"), is_use))
}

/// The id of `key`, given on first sight: the next index of `items`, where `new()` is
/// pushed for it (pools, log patterns and interfaces are numbered so).
fn id_on_first_sight<K: Ord, T>(
    ids: &mut BTreeMap<K, u32>,
    items: &mut Vec<T>,
    key: K,
    new: impl FnOnce() -> T,
) -> Option<u32> {
    let next = u32::try_from(items.len()).ok()?;
    let id = *ids.entry(key).or_insert(next);
    if id == next {
        items.push(new());
    }
    Some(id)
}

/// `name{key=value,...}` as a reader writes a series.
fn display_series(name: &str, labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return name.to_owned();
    }
    let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{name}{{{}}}", labels.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{SamplerInfo, SeriesInfo};

    const S: u64 = 1_000_000_000;

    /// A series: its sampler, name, labels and kind.
    type Series<'a> = (u32, &'a str, &'a [(&'a str, &'a str)], SeriesKind);

    /// Tables of samplers (kind, name) and series.
    fn tables(samplers: &[(&str, &str)], series: &[Series<'_>]) -> SampleTables {
        SampleTables {
            samplers: samplers
                .iter()
                .map(|(kind, name)| SamplerInfo {
                    kind: (*kind).into(),
                    name: (*name).to_owned(),
                })
                .collect(),
            series: series
                .iter()
                .map(|(sampler, name, labels, kind)| SeriesInfo {
                    sampler: *sampler,
                    name: (*name).to_owned(),
                    labels: labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                    unit: String::new(),
                    kind: *kind,
                })
                .collect(),
        }
    }

    /// One batch per second; `rows[t]` holds each series' value at second `t`.
    fn watched(tables: &SampleTables, rows: &[&[f64]]) -> Vec<Watched> {
        let batches: Vec<SampleBatch> = (0..)
            .zip(rows)
            .map(|(t, values)| SampleBatch::dense((100 + t) * S, values))
            .collect();
        let mut pressures = Pressures::default();
        pressures.add(tables, &batches);
        pressures.close(100 * S)
    }

    fn find(watched: &[Watched], resource: Resource) -> Option<&Watched> {
        watched.iter().find(|w| w.resource == resource)
    }

    const G: SeriesKind = SeriesKind::Gauge;

    #[test]
    fn a_process_group_against_one_core_and_its_allowance() {
        let tables = tables(
            &[("process", "app")],
            &[
                (0, "process.cpu_percent", &[("group", "app")], G),
                (0, "process.cpu_limit_percent", &[("group", "app")], G),
            ],
        );
        // (case, cpu % of one core per second, allowance, one thread's ceiling?, allowance crossed at)
        type Case<'a> = (&'a str, &'a [f64], f64, bool, Option<u64>);
        let cases: &[Case<'_>] = &[
            (
                "held at one core of two",
                &[50.0, 98.0, 99.0, 100.0, 99.0],
                200.0,
                true,
                None,
            ),
            (
                "at its one-core allowance",
                &[50.0, 98.0, 99.0, 100.0, 99.0],
                100.0,
                false,
                Some(1),
            ),
            (
                "past one core: not one thread",
                &[98.0, 99.0, 100.0, 150.0, 190.0],
                200.0,
                false,
                None,
            ),
            (
                "two cores of two",
                &[100.0, 185.0, 190.0, 195.0, 190.0],
                200.0,
                false,
                Some(1),
            ),
            (
                "a blip is not a stretch",
                &[50.0, 99.0, 50.0, 99.0, 50.0],
                200.0,
                false,
                None,
            ),
        ];
        for (case, cpu, allowance, one_thread, crossed) in cases {
            let rows: Vec<Vec<f64>> = cpu.iter().map(|&c| vec![c, *allowance]).collect();
            let rows: Vec<&[f64]> = rows.iter().map(Vec::as_slice).collect();
            let got = watched(&tables, &rows);
            let one_core = find(&got, Resource::OneCore);
            assert_eq!(one_core.is_some(), *one_thread, "{case}: {got:?}");
            if let Some(one_core) = one_core {
                assert_eq!(one_core.crossed.unwrap().at_ns, S, "{case}");
            }
            let allowance_watch = find(&got, Resource::CpuAllowance).unwrap();
            assert_eq!(
                allowance_watch.crossed.map(|c| c.at_ns / S),
                *crossed,
                "{case}"
            );
            assert_eq!(allowance_watch.limit, Some(*allowance), "{case}");
        }
    }

    #[test]
    fn fds_memory_and_events_cross_where_they_near_their_limits() {
        let tables = tables(
            &[("process", "nginx"), ("host", "host")],
            &[
                (0, "process.fd_use_percent", &[("group", "nginx")], G),
                (0, "process.fd_limit", &[("group", "nginx")], G),
                (1, "host.memory_used_bytes", &[], G),
                (1, "host.memory_total_bytes", &[], G),
                (
                    1,
                    "host.tcp_listen_overflows_per_sec",
                    &[],
                    SeriesKind::Rate,
                ),
            ],
        );
        let rows: &[&[f64]] = &[
            &[10.0, 256.0, 10.0, 100.0, 0.0],
            &[60.0, 256.0, 50.0, 100.0, 0.0],
            &[92.0, 256.0, 50.0, 100.0, 0.0],
            &[99.0, 256.0, 91.0, 100.0, 40.0],
            &[100.0, 256.0, 92.0, 100.0, 80.0],
            &[100.0, 256.0, 93.0, 100.0, 90.0],
        ];
        let got = watched(&tables, rows);
        let fds = find(&got, Resource::Fds).unwrap();
        assert_eq!(
            (fds.crossed.unwrap().at_ns, fds.limit, fds.peak),
            (2 * S, Some(256.0), 256.0)
        );
        assert!(
            (fds.crossed.unwrap().value - 0.9775 * 256.0).abs() < 1e-6,
            "{fds:?}"
        );
        let memory = find(&got, Resource::Memory).unwrap();
        assert_eq!(memory.crossed.unwrap().at_ns, 3 * S);
        let overflows = find(&got, Resource::ListenQueue).unwrap();
        assert_eq!(
            (overflows.crossed.unwrap().at_ns, overflows.limit),
            (3 * S, None)
        );
    }

    #[test]
    fn swap_links_retransmits_resets_db_and_cgroup_memory_cross_at_their_own_limits() {
        const R: SeriesKind = SeriesKind::Rate;
        type Case<'a> = (
            &'a str,
            (&'a str, &'a str),
            Vec<Series<'a>>,
            Vec<Vec<f64>>,
            Resource,
            Option<u64>,
        );
        let eth0: &[(&str, &str)] = &[("interface", "eth0")];
        let db: &[(&str, &str)] = &[("database", "shop")];
        let ramp = |values: &[[f64; 2]]| values.iter().map(|v| v.to_vec()).collect::<Vec<_>>();
        let cases: Vec<Case<'_>> = vec![
            (
                "swapping out 2 MiB/s from the 2nd second",
                ("host", "host"),
                vec![(0, "host.swap_out_bytes_per_sec", &[], R)],
                vec![vec![0.0], vec![0.0], vec![2e6], vec![3e6], vec![2e6]],
                Resource::Swap,
                Some(2),
            ),
            (
                "a few pages a second is no limit",
                ("host", "host"),
                vec![(0, "host.swap_out_bytes_per_sec", &[], R)],
                vec![vec![8192.0]; 5],
                Resource::Swap,
                None,
            ),
            (
                "15% steal while the host is 95% busy",
                ("host", "host"),
                vec![
                    (0, "host.cpu_percent", &[("cpu", "all")], G),
                    (0, "host.cpu_steal_percent", &[("cpu", "all")], G),
                ],
                ramp(&[[30.0, 15.0], [95.0, 15.0], [96.0, 14.0], [97.0, 15.0]]),
                Resource::Steal,
                Some(1),
            ),
            (
                "15% steal on a host with CPU to spare is not its limit",
                ("host", "host"),
                vec![
                    (0, "host.cpu_percent", &[("cpu", "all")], G),
                    (0, "host.cpu_steal_percent", &[("cpu", "all")], G),
                ],
                ramp(&[[30.0, 15.0]; 4]),
                Resource::Steal,
                None,
            ),
            (
                "tx at 95% of a 1 Gb/s link",
                ("host", "host"),
                vec![
                    (0, "host.net_rx_bytes_per_sec", eth0, R),
                    (0, "host.net_tx_bytes_per_sec", eth0, R),
                    (0, "host.net_speed_bytes_per_sec", eth0, G),
                ],
                vec![
                    vec![1e6, 50e6, 125e6],
                    vec![1e6, 119e6, 125e6],
                    vec![1e6, 120e6, 125e6],
                    vec![1e6, 121e6, 125e6],
                ],
                Resource::Network,
                Some(1),
            ),
            (
                "retransmitting 5% of 1000 segments/s",
                ("host", "host"),
                vec![
                    (0, "host.tcp_retransmits_per_sec", &[], R),
                    (0, "host.tcp_segments_sent_per_sec", &[], R),
                ],
                ramp(&[[0.0, 1e3], [50.0, 1e3], [50.0, 1e3], [60.0, 1e3]]),
                Resource::Retransmits,
                Some(1),
            ),
            (
                "3 retransmits of 100 segments is under the floor",
                ("host", "host"),
                vec![
                    (0, "host.tcp_retransmits_per_sec", &[], R),
                    (0, "host.tcp_segments_sent_per_sec", &[], R),
                ],
                ramp(&[[3.0, 100.0]; 4]),
                Resource::Retransmits,
                None,
            ),
            (
                "resets sent, 20/s",
                ("host", "host"),
                vec![(0, "host.tcp_resets_sent_per_sec", &[], R)],
                vec![vec![0.0], vec![20.0], vec![20.0], vec![20.0]],
                Resource::TcpResets,
                Some(1),
            ),
            (
                "one connection busy 97% of the time",
                ("postgres", "db"),
                vec![
                    (0, "postgres.busy_connections", db, R),
                    (0, "postgres.connections", db, G),
                    (0, "postgres.transactions_per_sec", db, R),
                ],
                vec![
                    vec![0.3, 1.0, 60.0],
                    vec![0.95, 1.0, 200.0],
                    vec![0.97, 1.0, 212.0],
                    vec![0.98, 1.0, 210.0],
                ],
                Resource::DbBusy,
                Some(1),
            ),
            (
                "ten connections a third busy",
                ("postgres", "db"),
                vec![
                    (0, "postgres.busy_connections", db, R),
                    (0, "postgres.connections", db, G),
                ],
                ramp(&[[3.3, 10.0]; 4]),
                Resource::DbBusy,
                None,
            ),
            (
                "rss at 95% of its cgroup's 256 MiB",
                ("process", "app"),
                vec![
                    (0, "process.rss_bytes", &[("group", "app")], G),
                    (0, "process.memory_limit_bytes", &[("group", "app")], G),
                ],
                ramp(&[
                    [100e6, 268e6],
                    [255e6, 268e6],
                    [256e6, 268e6],
                    [257e6, 268e6],
                ]),
                Resource::Memory,
                Some(1),
            ),
        ];
        for (case, sampler, series, rows, resource, crossed_s) in cases {
            let tables = tables(&[sampler], &series);
            let rows: Vec<&[f64]> = rows.iter().map(Vec::as_slice).collect();
            let got = watched(&tables, &rows);
            let found = find(&got, resource).unwrap_or_else(|| panic!("{case}: {got:?}"));
            let at = found.crossed.map(|c| c.at_ns / S);
            assert_eq!(at, crossed_s, "{case}: {found:?}");
        }
    }

    #[test]
    fn a_core_the_hypervisor_steals_from_gives_less_than_a_core() {
        let tables = tables(
            &[("host", "host"), ("process", "nginx")],
            &[
                (0, "host.cpu_steal_percent", &[("cpu", "all")], G),
                (1, "process.cpu_percent", &[("group", "nginx")], G),
                (1, "process.cpu_limit_percent", &[("group", "nginx")], G),
            ],
        );
        // (case, steal, nginx's CPU): a core gives 75% under 25% steal.
        let cases: &[(&str, f64, f64, bool)] = &[
            ("80% of a core under 25% steal", 25.0, 80.0, true),
            ("80% of a core without steal", 0.0, 80.0, false),
            ("60% of a core under 25% steal", 25.0, 60.0, false),
        ];
        for &(case, steal, cpu, crossed) in cases {
            let row: &[f64] = &[steal, cpu, 200.0];
            let got = watched(&tables, &[row; 4]);
            let one_core = find(&got, Resource::OneCore);
            assert_eq!(one_core.is_some(), crossed, "{case}: {got:?}");
            if let Some(one_core) = one_core {
                assert_eq!(
                    one_core.note,
                    Some(Note::Steal { peak_percent: 25.0 }),
                    "{case}"
                );
            }
        }
    }

    #[test]
    fn busy_db_connections_say_the_transactions_and_links_name_their_interface() {
        let db: &[(&str, &str)] = &[("database", "shop")];
        let tables = tables(
            &[("postgres", "db"), ("host", "host")],
            &[
                (0, "postgres.busy_connections", db, SeriesKind::Rate),
                (0, "postgres.connections", db, G),
                (0, "postgres.transactions_per_sec", db, SeriesKind::Rate),
                (
                    1,
                    "host.net_rx_bytes_per_sec",
                    &[("interface", "eth1")],
                    SeriesKind::Rate,
                ),
                (
                    1,
                    "host.net_speed_bytes_per_sec",
                    &[("interface", "eth1")],
                    G,
                ),
            ],
        );
        let row: &[f64] = &[1.0, 1.0, 212.0, 5e6, 125e6];
        let got = watched(&tables, &[row; 4]);
        let busy = find(&got, Resource::DbBusy).unwrap();
        let transactions = Note::Transactions {
            peak_per_sec: 212.0,
        };
        assert_eq!(busy.note, Some(transactions));
        assert!(find(&got, Resource::DbConnections).is_none(), "{got:?}");
        let link = find(&got, Resource::Network).unwrap();
        assert_eq!((link.name.as_str(), link.limit), ("host eth1", Some(125e6)));
    }

    #[test]
    fn a_run_cut_short_at_its_limit_crosses_with_two_samples() {
        let tables = tables(
            &[("prom", "app")],
            &[
                (0, "app_pool_busy", &[], G),
                (0, "app_pool_workers", &[], G),
            ],
        );
        // (case, busy per second of a pool of 16, crossed at)
        let cases: &[(&str, &[f64], Option<u64>)] = &[
            ("two at the end", &[8.0, 16.0, 16.0], Some(1)),
            ("one at the end", &[8.0, 8.0, 16.0], None),
            ("two, then below", &[16.0, 16.0, 8.0], None),
        ];
        for (case, busy, want) in cases {
            let rows: Vec<Vec<f64>> = busy.iter().map(|&b| vec![b, 16.0]).collect();
            let rows: Vec<&[f64]> = rows.iter().map(Vec::as_slice).collect();
            let got = watched(&tables, &rows);
            let pool = find(&got, Resource::Pool).unwrap();
            assert_eq!(pool.crossed.map(|c| c.at_ns / S), *want, "{case}");
        }
    }

    #[test]
    fn a_busy_host_explains_its_busiest_core() {
        let tables = tables(
            &[("host", "host")],
            &[
                (0, "host.cpu_percent", &[("cpu", "all")], G),
                (0, "host.cpu_percent", &[("cpu", "0")], G),
                (0, "host.cpu_percent", &[("cpu", "1")], G),
            ],
        );
        // (case, [all, core 0, core 1] per second, busiest core listed?)
        let cases: &[(&str, [f64; 3], bool)] = &[
            ("one core pegged, host half idle", [50.0, 99.0, 2.0], true),
            ("the whole host busy", [98.0, 99.0, 97.0], false),
        ];
        for (case, row, listed) in cases {
            let rows = vec![row.as_slice(); 4];
            let got = watched(&tables, &rows);
            assert_eq!(
                find(&got, Resource::OneCoreOfHost).is_some(),
                *listed,
                "{case}: {got:?}"
            );
            let host = find(&got, Resource::HostCpu).unwrap();
            assert_eq!(host.crossed.is_some(), !listed, "{case}");
        }
    }

    #[test]
    fn pool_gauges_pair_by_name_and_labels() {
        let route = |r: &'static str| -> &'static [(&'static str, &'static str)] {
            if r == "a" {
                &[("route", "/a")]
            } else {
                &[("route", "/b")]
            }
        };
        let tables = tables(
            &[("prom", "http://127.0.0.1:9/metrics")],
            &[
                (0, "app_pool_busy", route("a"), G),
                (0, "app_pool_workers", route("a"), G),
                (0, "app_pool_busy", route("b"), G),
                (0, "app_pool_workers", route("b"), G),
                (0, "app_requests_busy", &[], SeriesKind::Rate),
                (0, "process_max_fds", &[], G),
            ],
        );
        let rows = vec![[50.0, 50.0, 3.0, 50.0, 9.0, 1024.0].as_slice(); 4];
        let got = watched(&tables, &rows);
        let pools: Vec<(&str, Option<u64>)> = got
            .iter()
            .filter(|w| w.resource == Resource::Pool)
            .map(|w| (w.name.as_str(), w.crossed.map(|c| c.at_ns)))
            .collect();
        assert_eq!(
            pools,
            [
                ("app_pool_busy{route=/a}", Some(0)),
                ("app_pool_busy{route=/b}", None)
            ]
        );
    }

    #[test]
    fn a_hinted_maximum_makes_any_gauge_a_pool() {
        let tables = tables(
            &[("prom", "app")],
            &[
                (0, "app_queue_length", &[], G),
                (0, "app_queue_length:max", &[], G),
                (0, "app_pool_busy", &[], G),
                (0, "app_pool_size", &[], G),
                (0, "app_pool_busy:max", &[], G),
                (0, "orphan:max", &[], G),
            ],
        );
        let row: &[f64] = &[480.0, 500.0, 3.0, 3.0, 10.0, 1.0];
        let got = watched(&tables, &[row; 4]);
        let pools: Vec<(&str, &str, Option<f64>, bool)> = got
            .iter()
            .filter(|w| w.resource == Resource::Pool)
            .map(|w| {
                (
                    w.name.as_str(),
                    w.series.as_str(),
                    w.limit,
                    w.crossed.is_some(),
                )
            })
            .collect();
        // The hint outranks the names: the busy gauge's maximum is 10, not its `size`.
        assert_eq!(
            pools,
            [
                (
                    "app app_queue_length",
                    "app_queue_length / app_queue_length:max",
                    Some(500.0),
                    true
                ),
                (
                    "app app_pool_busy",
                    "app_pool_busy / app_pool_busy:max",
                    Some(10.0),
                    false
                ),
            ]
        );
    }

    #[test]
    fn pool_words_are_one_use_or_size_word() {
        let cases: &[(&str, Option<(&str, bool)>)] = &[
            ("loadlab_sim_pool_busy", Some(("loadlab_sim_pool_*", true))),
            (
                "loadlab_sim_pool_workers",
                Some(("loadlab_sim_pool_*", false)),
            ),
            (
                "hikaricp_connections_active",
                Some(("hikaricp_connections_*", true)),
            ),
            (
                "hikaricp_connections_max",
                Some(("hikaricp_connections_*", false)),
            ),
            (
                "go_sql_in_use_connections",
                Some(("go_sql_*_connections", true)),
            ),
            ("puma_busy_threads", Some(("puma_*_threads", true))),
            ("puma_max_threads", Some(("puma_*_threads", false))),
            ("http_requests_total", None),
            ("pool_busy_max", None),
        ];
        for (name, want) in cases {
            let got = pool_word(name);
            assert_eq!(got.as_ref().map(|(n, u)| (n.as_str(), *u)), *want, "{name}");
        }
    }
}
