//! What ran out first: [`diagnose`] lines up the resources watched beside a run
//! ([`Watched`], each with its own limit and the first time it came close to it) with the
//! run's knee ([`Knee`], where the load stopped being served) and the generator's health
//! ([`GeneratorState`]), and says in a [`Diagnosis`] which limit was reached first, what
//! followed, what never got close, and when the answer lies elsewhere:
//!
//! - the generator fell behind its schedule: the verdict is about the generator, never
//!   about the server ([`Verdict::GeneratorRanOut`]);
//! - a watched resource reached its limit at or before the knee: it is the first limit
//!   ([`Verdict::FirstLimit`]), the others that reached theirs later follow it;
//! - none did: the limit lies in something not watched, a downstream or a lock
//!   ([`Verdict::NothingWatchedRanOut`]), and each watched resource's headroom is said;
//! - no knee and no limit reached: the system held ([`Verdict::Held`]).
//!
//! Each [`Finding`] carries its evidence (series, value, limit, when, and where that
//! falls against the knee). The rules and thresholds are in `docs/DIAGNOSIS.md`.
//! Judgements only: every value here is typed, with the figures and thresholds it
//! used; the sentences are the renderers' (`report::words`).

use crate::saturation::TurnKind;
use crate::slo::Lag;

/// The name the host's own resources go by ([`Watched::name`]).
pub const HOST: &str = "host";

/// A crossing this close to the knee (either side) is *at* the knee: the monitor samples
/// every second and the knee is read over whole seconds.
pub const AT_KNEE_TOLERANCE_NS: u64 = 2_000_000_000;

/// What kind of limit a watched resource has; it decides the wording.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    /// A process group's CPU against what it may use (its affinity, its quota).
    CpuAllowance,
    /// A process group held at one core while it may use more: one thread's ceiling.
    OneCore,
    /// The host's CPU, all cores.
    HostCpu,
    /// One core busy while the host as a whole is not.
    OneCoreOfHost,
    /// CPU time taken by the hypervisor.
    Steal,
    /// CPU waiting for disk.
    Iowait,
    /// File descriptors against their limit.
    Fds,
    /// Memory against the host's.
    Memory,
    /// Memory written out to swap.
    Swap,
    /// Network bytes against the interface's link speed.
    Network,
    /// TIME_WAIT sockets against the ephemeral port range.
    EphemeralPorts,
    /// Connections dropped at a full listen queue (an event: any sustained rate counts).
    ListenQueue,
    /// Failed TCP connects (events).
    TcpErrors,
    /// Retransmitted TCP segments, as a share of those sent: packets lost.
    Retransmits,
    /// TCP resets sent (events): a symptom, listed in time order, never the first limit.
    TcpResets,
    /// A pool or queue gauge against its size.
    Pool,
    /// Database connections against the server's maximum.
    DbConnections,
    /// The database connections an app opened, busy in a statement or a transaction
    /// against their number: its pool is full.
    DbBusy,
    /// Log lines that name a resource running out (`too many open files`, `out of
    /// memory`, a user's pattern): a limit in the system's own words.
    Log,
    /// Log lines that are symptoms (timeouts, 5xx, refused connections, panics): listed
    /// in time order, never the first limit.
    LogSymptom,
    /// The connections a held step (`ws`, `sse`) kept open at once, past which the server
    /// refused more ([`Note::Refused`]): a connection limit, read from the run's own
    /// records rather than a sampler.
    Connections,
}

impl Resource {
    /// The kind's name in JSON: `cpu_allowance`, `fds`, `pool`...
    pub fn name(self) -> &'static str {
        match self {
            Resource::CpuAllowance => "cpu_allowance",
            Resource::OneCore => "one_core",
            Resource::HostCpu => "host_cpu",
            Resource::OneCoreOfHost => "busiest_core",
            Resource::Steal => "steal",
            Resource::Iowait => "iowait",
            Resource::Fds => "fds",
            Resource::Memory => "memory",
            Resource::Swap => "swap",
            Resource::Network => "network",
            Resource::EphemeralPorts => "ephemeral_ports",
            Resource::ListenQueue => "listen_queue",
            Resource::TcpErrors => "tcp_errors",
            Resource::Retransmits => "retransmits",
            Resource::TcpResets => "tcp_resets",
            Resource::Pool => "pool",
            Resource::DbConnections => "db_connections",
            Resource::DbBusy => "db_busy",
            Resource::Log => "log",
            Resource::LogSymptom => "log_symptom",
            Resource::Connections => "connections",
        }
    }

    /// Whether it only follows trouble (timeouts, resets): listed in time order, never
    /// the first limit.
    pub fn is_symptom(self) -> bool {
        matches!(self, Resource::LogSymptom | Resource::TcpResets)
    }

    /// Whether it is the host's own (the order within one tick: who ran out before the
    /// host it runs on).
    fn is_the_hosts(self, name: &str) -> bool {
        name == HOST || self == Resource::Network
    }
}

/// The first sustained stretch at or above a resource's threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Crossing {
    /// When the stretch began, from the run's start.
    pub at_ns: u64,
    /// The mean over the stretch, in the resource's unit.
    pub value: f64,
}

/// A peak past the threshold that did not last: why a resource that passed its
/// threshold is among those that held.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Brief {
    /// The threshold, in percent of the limit when the resource has one, else in its
    /// unit.
    pub threshold: f64,
    /// Readings in a row at the threshold a crossing needs.
    pub sustain: u32,
}

/// One resource watched beside the run, as the samples showed it.
#[derive(Clone, Debug, PartialEq)]
pub struct Watched {
    /// Who, in words a reader knows: `app`, `host`, `pid 4242`, `pool_busy_workers`.
    pub name: String,
    /// What kind of limit.
    pub resource: Resource,
    /// The series the evidence comes from, as stored (`process.fd_use_percent`).
    pub series: String,
    /// The limit in `unit` (100 for one core in percent, the fd limit, the pool size);
    /// `None` for events, whose limit is "none at all".
    pub limit: Option<f64>,
    /// The unit of `peak`, `limit` and the crossing's value: `%`, `fds`, `/s`, `bytes`.
    pub unit: &'static str,
    /// The largest value seen.
    pub peak: f64,
    /// When, from the run's start.
    pub peak_at_ns: u64,
    /// The first sustained stretch at the threshold, if it came that close.
    pub crossed: Option<Crossing>,
    /// Without a crossing: the threshold its peak passed for fewer readings in a row
    /// than a crossing needs, and that number (`host iowait peak 32%` beside a 20%
    /// threshold says why it did not count).
    pub brief: Option<Brief>,
    /// The first line that made it a finding, for a log.
    pub example: Option<String>,
    /// More evidence, said after the meaning ("transactions peaked at 212/s").
    pub note: Option<Note>,
}

/// More evidence beside a watched resource; renderers word it (`report::words`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Note {
    /// Meanwhile the hypervisor took up to this share of the host's CPU (steal), in
    /// percent: a core gave less than a whole one.
    Steal {
        /// The steal's peak, percent.
        peak_percent: f64,
    },
    /// The database's transactions peaked at this rate.
    Transactions {
        /// Their peak, per second.
        peak_per_sec: f64,
    },
    /// A held step's connections refused past the most held at once.
    Refused {
        /// Upgrades (or event streams) the server refused with a status.
        refused: u64,
        /// The status of the first refusal.
        status: u16,
        /// Held connections cut (reset, or closed by the server mid-session).
        cut: u64,
    },
}

/// What could not be judged of one sampler, and why: said, never guessed around.
#[derive(Clone, Debug, PartialEq)]
pub struct Unjudged {
    /// The sampler, as the report names it (`db`, `postgres`).
    pub sampler: String,
    /// What is missing.
    pub hole: Hole,
}

/// What of a sampler's readings is missing; times from the run's start.
#[derive(Clone, Debug, PartialEq)]
pub enum Hole {
    /// Every reading missing (a `process=` pattern that matched nothing, a scrape
    /// refused throughout): nothing of it was watched.
    NeverRead {
        /// The monitor's reason for the first.
        reason: String,
    },
    /// Some readings missing; its resources are judged on the readings it has.
    Missed {
        /// How many.
        readings: u64,
        /// The first, from the run's start.
        from_ns: u64,
        /// The monitor's reason for the first.
        reason: String,
    },
    /// Its clock went back: no stretch across it counts as sustained.
    ClockBack {
        /// By how much.
        by_ns: u64,
        /// When, from the run's start.
        at_ns: u64,
    },
    /// Its longest stretch without readings: what happened then is not known.
    Silent {
        /// How long.
        for_ns: u64,
        /// From when, from the run's start.
        from_ns: u64,
    },
}

impl Watched {
    /// The peak as a share of the limit, in percent (`None` for events).
    pub fn peak_percent(&self) -> Option<f64> {
        self.limit
            .filter(|limit| *limit > 0.0)
            .map(|limit| self.peak / limit * 100.0)
    }
}

/// Where the load stopped being served: the saturation point of a ramp.
#[derive(Clone, Debug, PartialEq)]
pub struct Knee {
    /// From the run's start.
    pub at_ns: u64,
    /// The offered rate there, per second.
    pub offered_per_sec: f64,
    /// The highest successful throughput held, per second.
    pub peak_ok_per_sec: f64,
    /// Which signal turned first.
    pub signal: TurnKind,
}

/// How a load without a knee was not served.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trouble {
    /// The share of requests that failed (0..1).
    pub failed_ratio: f64,
}

/// How the generator, not the server, shaped the run.
#[derive(Clone, Debug, PartialEq)]
pub enum Behind {
    /// Requests in flight reached the cap while the answers kept their pace: the rate
    /// asked needs more in flight.
    AtCap {
        /// The cap (`-max-workers`).
        cap: u64,
    },
    /// The send lag weighed against the answers ([`crate::LagWeight::Heavy`]), with
    /// requests in flight under the cap.
    Lag(Lag),
    /// It sent less than it was asked.
    SentShort {
        /// Requests per second asked.
        asked_per_sec: f64,
        /// Requests per second sent.
        achieved_per_sec: f64,
    },
}

/// Whether the generator kept its schedule; `fell_behind` says how it did not.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GeneratorState {
    /// Why the generator's figures cannot be trusted, if so.
    pub fell_behind: Option<Behind>,
}

/// How a finding's crossing falls against the knee.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// More than [`AT_KNEE_TOLERANCE_NS`] before.
    Before,
    /// Within it.
    AtKnee,
    /// More than it after: a consequence more likely than a cause.
    After,
    /// The run has no knee to compare with.
    NoKnee,
}

impl Timing {
    /// The timing's name in JSON: `before`, `at_knee`, `after`, `no_knee`.
    pub fn name(self) -> &'static str {
        match self {
            Timing::Before => "before",
            Timing::AtKnee => "at_knee",
            Timing::After => "after",
            Timing::NoKnee => "no_knee",
        }
    }
}

/// One resource that reached its threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// The resource.
    pub watched: Watched,
    /// Its crossing (copied out of `watched` for the reader's convenience).
    pub crossing: Crossing,
    /// Against the knee.
    pub timing: Timing,
}

/// An address every request to which failed to connect: nothing listened there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreached {
    /// `host:port`, as the targets name it.
    pub address: String,
    /// What the connects said, without the `connect: ` prefix (`connection refused`).
    pub error: String,
    /// Requests sent to it, every one failed.
    pub requests: u64,
}

/// How failed requests failed, in the answers' own terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailedAs {
    /// The server answered this status (outside 200..400).
    Status(u16),
    /// The server answered in time, but not as a flow's step asks: the error's text
    /// (`step "login": check "status 200" failed`, an extraction that found nothing, a
    /// cookie refused).
    Unmet(String),
    /// No answer: the error kind (`timeout`, `reset`, `connect`).
    Error(String),
}

/// What the failed requests say (the statuses, the errors) and from which offered rate
/// they began: said instead of a guess about what was not watched.
#[derive(Clone, Debug, PartialEq)]
pub struct Failures {
    /// Who answered: the targets' `host:port` when they share one, else `the servers`.
    pub server: String,
    /// Each way requests failed, with its count, most first.
    pub kinds: Vec<(FailedAs, u64)>,
    /// The first second in which failures passed 1% of the answers, from the run's
    /// start, and the rate offered in it.
    pub from: Option<(u64, f64)>,
}

/// The answer in one word, with its subject.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every request to these addresses failed to connect: nothing listened there.
    /// Before everything else, the generator too: the latencies are failed connects,
    /// there is no answer to weigh a lag against, and no server was loaded.
    Unreachable(Vec<Unreached>),
    /// The generator fell behind: nothing can be said about the server.
    GeneratorRanOut(Behind),
    /// The first watched resource to reach its limit, at or before the knee (or the
    /// first at all when there is no knee).
    FirstLimit {
        /// Index into [`Diagnosis::findings`].
        finding: usize,
    },
    /// The load stopped being served, but no watched resource reached its limit first.
    NothingWatchedRanOut,
    /// No knee, and nothing watched reached its limit.
    Held,
    /// Nothing was watched and there is no knee: nothing to say.
    NotJudged,
}

/// What ran out first, with its evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnosis {
    /// When the run started (unix ns), for wall-clock times in the sentences; the
    /// caller sets it when it knows.
    pub start_unix_ns: Option<u64>,
    /// The run's knee, if it has one.
    pub knee: Option<Knee>,
    /// Without a knee: how a load that did not rise was not served, if it was not.
    pub trouble: Option<Trouble>,
    /// The answer.
    pub verdict: Verdict,
    /// Resources that reached their thresholds, in the order they did.
    pub findings: Vec<Finding>,
    /// Resources that never did, with their peaks (headroom), closest first.
    pub held: Vec<Watched>,
    /// Without a knee: why the load has none (not a ramp, or no saturation up to its
    /// highest rate), when the caller knows.
    pub no_knee: Option<crate::saturation::Finding>,
    /// What could not be judged, and why ("db: 12 readings missing from 3.0 s: login
    /// refused"): said, never guessed around.
    pub unjudged: Vec<Unjudged>,
    /// What the failed requests said, when some failed (set by the caller).
    pub failures: Option<Failures>,
}

/// Judges one run; see the module documentation. `trouble` says how a load without a
/// knee was not served, if it was not.
pub fn diagnose(
    knee: Option<Knee>,
    trouble: Option<Trouble>,
    generator: &GeneratorState,
    watched: &[Watched],
) -> Diagnosis {
    let mut findings: Vec<Finding> = watched
        .iter()
        .filter_map(|w| {
            let crossing = w.crossed?;
            Some(Finding {
                watched: w.clone(),
                crossing,
                timing: timing(knee.as_ref(), crossing.at_ns),
            })
        })
        .collect();
    // In time order; within one second (the samplers' resolution) the one that names
    // who ran out first: a process's or a pool's resource, then the host's (its busiest
    // core is that process's core), then the log lines that say the same.
    let key = |f: &Finding| {
        let who = match f.watched.resource {
            Resource::Log | Resource::LogSymptom => 2,
            resource if resource.is_the_hosts(&f.watched.name) => 1,
            _ => 0,
        };
        // Samplers read on one grid of whole seconds, each a few ms apart: the
        // nearest second is their tick.
        let tick = (f.crossing.at_ns + 500_000_000) / 1_000_000_000;
        (tick, who, f.crossing.at_ns, f.watched.resource)
    };
    findings.sort_by_key(key);
    who_before_its_witness(&mut findings);
    let mut held: Vec<Watched> = watched
        .iter()
        .filter(|w| w.crossed.is_none())
        .cloned()
        .collect();
    held.sort_by(|a, b| {
        let share = |w: &Watched| w.peak_percent().unwrap_or(0.0);
        share(b).total_cmp(&share(a))
    });
    let first = findings.iter().position(|f| {
        !f.watched.resource.is_symptom()
            && matches!(f.timing, Timing::Before | Timing::AtKnee | Timing::NoKnee)
    });
    let struggled = knee.is_some() || trouble.is_some();
    let verdict = match (&generator.fell_behind, first, struggled) {
        (Some(behind), _, _) => Verdict::GeneratorRanOut(behind.clone()),
        (None, Some(finding), _) => Verdict::FirstLimit { finding },
        (None, None, true) => Verdict::NothingWatchedRanOut,
        (None, None, false) if watched.is_empty() => Verdict::NotJudged,
        (None, None, false) => Verdict::Held,
    };
    Diagnosis {
        start_unix_ns: None,
        knee,
        trouble,
        verdict,
        findings,
        held,
        no_knee: None,
        unjudged: Vec::new(),
        failures: None,
    }
}

impl Diagnosis {
    /// Addresses that never accepted a connection make the verdict
    /// [`Verdict::Unreachable`], whatever else was judged; none leaves it.
    pub fn with_unreached(mut self, unreached: Vec<Unreached>) -> Diagnosis {
        if !unreached.is_empty() {
            self.verdict = Verdict::Unreachable(unreached);
        }
        self
    }
}

/// Some findings are witnesses of another that names who ran out, the witness a tick
/// or two ahead of it:
/// - the host's busiest core is often the core a process fills (one thread, or a
///   process pinned to it); the kernel's work for it counts on the core, not on the
///   process;
/// - a group's own log lines ("too many open files") come the moment the limit is hit,
///   while the gauge that shows it (its fds at their limit) is read on the next tick.
///
/// A finding that names who, crossed within [`AT_KNEE_TOLERANCE_NS`] after its witness,
/// goes before it.
fn who_before_its_witness(findings: &mut Vec<Finding>) {
    let mut index = 0;
    while index < findings.len() {
        let witness = &findings[index];
        let in_time =
            |f: &Finding| f.crossing.at_ns <= witness.crossing.at_ns + AT_KNEE_TOLERANCE_NS;
        let names_it = |f: &Finding| match witness.watched.resource {
            Resource::OneCoreOfHost => matches!(
                f.watched.resource,
                Resource::OneCore | Resource::CpuAllowance
            ),
            Resource::Log => {
                !matches!(f.watched.resource, Resource::Log | Resource::LogSymptom)
                    && (witness.watched.name.strip_prefix(f.watched.name.as_str()))
                        .is_some_and(|rest| rest.starts_with(" log ("))
            }
            _ => false,
        };
        match (index + 1..findings.len()).find(|&i| in_time(&findings[i]) && names_it(&findings[i]))
        {
            Some(who) => {
                let witness = findings.remove(index);
                findings.insert(who, witness);
            }
            None => index += 1,
        }
    }
}

fn timing(knee: Option<&Knee>, at_ns: u64) -> Timing {
    let Some(knee) = knee else {
        return Timing::NoKnee;
    };
    if at_ns + AT_KNEE_TOLERANCE_NS < knee.at_ns {
        Timing::Before
    } else if at_ns > knee.at_ns + AT_KNEE_TOLERANCE_NS {
        Timing::After
    } else {
        Timing::AtKnee
    }
}

impl Diagnosis {
    /// The verdict's name in JSON: `first_limit`, `generator`, `nothing_watched`,
    /// `held`, `not_judged`.
    pub fn verdict_name(&self) -> &'static str {
        match self.verdict {
            Verdict::Unreachable(_) => "unreachable",
            Verdict::GeneratorRanOut(_) => "generator",
            Verdict::FirstLimit { .. } => "first_limit",
            Verdict::NothingWatchedRanOut => "nothing_watched",
            Verdict::Held => "held",
            Verdict::NotJudged => "not_judged",
        }
    }

    /// The index of the first limit in [`Diagnosis::findings`], when the verdict names one.
    pub fn first_limit(&self) -> Option<usize> {
        match self.verdict {
            Verdict::FirstLimit { finding } => Some(finding),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn watched(
        name: &str,
        resource: Resource,
        limit: f64,
        peak: f64,
        crossed_s: Option<u64>,
    ) -> Watched {
        Watched {
            name: name.to_owned(),
            resource,
            series: "test.series".to_owned(),
            limit: Some(limit),
            unit: if resource == Resource::Fds {
                "fds"
            } else {
                "%"
            },
            peak,
            peak_at_ns: 30 * S,
            brief: None,
            crossed: crossed_s.map(|at| Crossing {
                at_ns: at * S,
                value: peak,
            }),
            example: None,
            note: None,
        }
    }

    fn knee_at(seconds: u64) -> Knee {
        Knee {
            at_ns: seconds * S,
            offered_per_sec: 1000.0,
            peak_ok_per_sec: 950.0,
            signal: TurnKind::Latency,
        }
    }

    #[test]
    fn the_first_limit_is_the_earliest_crossing_at_or_before_the_knee() {
        // (case, knee at, crossings of [cpu, fds], verdict: which resource or none)
        type Case<'a> = (&'a str, Option<u64>, [Option<u64>; 2], Option<&'a str>);
        let cases: &[Case<'_>] = &[
            (
                "cpu before fds",
                Some(20),
                [Some(10), Some(19)],
                Some("cpu"),
            ),
            ("fds before cpu", Some(20), [Some(21), Some(9)], Some("fds")),
            (
                "cpu at the knee, fds after",
                Some(20),
                [Some(22), Some(40)],
                Some("cpu"),
            ),
            (
                "both long after: a consequence",
                Some(20),
                [Some(30), Some(35)],
                None,
            ),
            ("no crossing", Some(20), [None, None], None),
            (
                "no knee: the first crossing",
                None,
                [Some(12), Some(5)],
                Some("fds"),
            ),
        ];
        for (case, knee, [cpu, fds], want) in cases {
            let resources = [
                watched("cpu", Resource::CpuAllowance, 100.0, 99.0, *cpu),
                watched("fds", Resource::Fds, 256.0, 250.0, *fds),
            ];
            let diagnosis = diagnose(
                knee.map(knee_at),
                None,
                &GeneratorState::default(),
                &resources,
            );
            let got = match &diagnosis.verdict {
                Verdict::FirstLimit { finding } => {
                    Some(diagnosis.findings[*finding].watched.name.as_str())
                }
                _ => None,
            };
            assert_eq!(got, *want, "{case}: {:?}", diagnosis.verdict);
            let times: Vec<u64> = diagnosis
                .findings
                .iter()
                .map(|f| f.crossing.at_ns)
                .collect();
            assert!(times.is_sorted(), "{case}: findings in time order");
        }
    }

    #[test]
    fn a_process_at_its_cpu_limit_a_tick_after_its_core_goes_first() {
        let core = watched(HOST, Resource::OneCoreOfHost, 100.0, 100.0, Some(3));
        let nginx = watched("nginx", Resource::CpuAllowance, 100.0, 96.0, Some(4));
        let late = watched("app", Resource::OneCore, 200.0, 100.0, Some(9));
        let diagnosis = diagnose(
            Some(knee_at(4)),
            None,
            &GeneratorState::default(),
            &[core.clone(), nginx, late],
        );
        let order: Vec<&str> = diagnosis
            .findings
            .iter()
            .map(|f| f.watched.name.as_str())
            .collect();
        assert_eq!(order, ["nginx", HOST, "app"]);
        assert!(matches!(
            diagnosis.verdict,
            Verdict::FirstLimit { finding: 0 }
        ));
        // Alone, the core is the first limit.
        let alone = diagnose(Some(knee_at(4)), None, &GeneratorState::default(), &[core]);
        assert!(matches!(alone.verdict, Verdict::FirstLimit { finding: 0 }));
    }

    #[test]
    fn within_one_second_the_process_comes_before_the_host_core_it_fills() {
        let mut core = watched(HOST, Resource::OneCoreOfHost, 100.0, 100.0, Some(4));
        let nginx = watched("nginx", Resource::OneCore, 200.0, 100.0, Some(4));
        // The host sampler read a few milliseconds before the process sampler.
        core.crossed = Some(Crossing {
            at_ns: 4 * S - 3_000_000,
            value: 100.0,
        });
        let diagnosis = diagnose(
            Some(knee_at(4)),
            None,
            &GeneratorState::default(),
            &[core, nginx],
        );
        let Verdict::FirstLimit { finding } = diagnosis.verdict else {
            panic!("{:?}", diagnosis.verdict);
        };
        assert_eq!(diagnosis.findings[finding].watched.name, "nginx");
    }

    #[test]
    fn a_groups_own_log_line_a_tick_ahead_of_its_gauge_is_the_gauges_evidence() {
        let said = |group: &str| Watched {
            name: format!("{group} log (too_many_open_files)"),
            unit: "/s",
            limit: None,
            ..watched("log", Resource::Log, 1.0, 69.0, Some(4))
        };
        let fds = |crossed_s| watched("nginx", Resource::Fds, 128.0, 128.0, Some(crossed_s));
        // (case, log of, fds crossed at, who is first)
        let cases = [
            ("own log a tick ahead", "nginx", 5, "nginx"),
            ("own log two ticks ahead", "nginx", 6, "nginx"),
            (
                "own log long before",
                "nginx",
                7,
                "nginx log (too_many_open_files)",
            ),
            (
                "another group's log",
                "app",
                5,
                "app log (too_many_open_files)",
            ),
            (
                "a group whose name begins the same",
                "nginx2",
                5,
                "nginx2 log (too_many_open_files)",
            ),
        ];
        for (case, group, fds_s, want) in cases {
            let diagnosis = diagnose(
                Some(knee_at(5)),
                None,
                &GeneratorState::default(),
                &[said(group), fds(fds_s)],
            );
            let first = diagnosis.first_limit().expect(case);
            assert_eq!(diagnosis.findings[first].watched.name, want, "{case}");
        }
    }

    #[test]
    fn verdicts_without_a_first_limit() {
        let cpu = watched("app", Resource::CpuAllowance, 100.0, 40.0, None);
        let fds = watched("nginx", Resource::Fds, 256.0, 250.0, Some(5));
        let behind = GeneratorState {
            fell_behind: Some(Behind::AtCap { cap: 100 }),
        };
        let fine = GeneratorState::default();
        let failed = || {
            Some(Trouble {
                failed_ratio: 0.168,
            })
        };
        let only_cpu = std::slice::from_ref(&cpu);
        type Case<'a> = (
            &'a str,
            Option<Knee>,
            Option<Trouble>,
            &'a GeneratorState,
            &'a [Watched],
            &'a str,
        );
        let cases: &[Case<'_>] = &[
            (
                "generator",
                Some(knee_at(20)),
                None,
                &behind,
                only_cpu,
                "generator",
            ),
            (
                "the generator hides a server's finding",
                Some(knee_at(10)),
                None,
                &behind,
                std::slice::from_ref(&fds),
                "generator",
            ),
            (
                "nothing watched",
                Some(knee_at(20)),
                None,
                &fine,
                only_cpu,
                "nothing_watched",
            ),
            (
                "a constant load that failed",
                None,
                failed(),
                &fine,
                only_cpu,
                "nothing_watched",
            ),
            ("held", None, None, &fine, only_cpu, "held"),
            ("not judged", None, None, &fine, &[], "not_judged"),
        ];
        for (case, knee, trouble, generator, resources, want) in cases {
            let diagnosis = diagnose(knee.clone(), *trouble, generator, resources);
            assert_eq!(diagnosis.verdict_name(), *want, "{case}");
        }
    }
}
