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

use std::fmt::Write as _;

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
    /// More evidence in words, said after the meaning ("transactions peaked at
    /// 212/s").
    pub note: Option<String>,
}

impl Watched {
    /// Who and what in a few words, for a chart's label: `nginx fds`, `host CPU`,
    /// `host listen overflows`; a log by its name alone (`nginx log (timeout)`).
    pub fn short_name(&self) -> String {
        match self.resource {
            Resource::Log | Resource::LogSymptom => self.name.clone(),
            resource => format!("{} {}", self.name, noun(resource)),
        }
    }

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
    /// Which signal turned first, in words ("p99 latency rose to 12 ms").
    pub signal: String,
}

/// Whether the generator kept its schedule; `fell_behind` says how it did not.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GeneratorState {
    /// Why the generator's figures cannot be trusted, and what to change ("send lag p99
    /// 8.2 ms ...; give it more CPU or less load"), if so.
    pub fell_behind: Option<String>,
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
    GeneratorRanOut {
        /// How it fell behind.
        reason: String,
    },
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
    NotJudged {
        /// Why.
        reason: String,
    },
}

/// What ran out first, with its evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnosis {
    /// When the run started (unix ns), for wall-clock times in the sentences; the
    /// caller sets it when it knows.
    pub start_unix_ns: Option<u64>,
    /// The run's knee, if it has one.
    pub knee: Option<Knee>,
    /// Without a knee: how a load that did not rise was not served ("16.8% of the
    /// requests failed"), if it was not.
    pub trouble: Option<String>,
    /// The answer.
    pub verdict: Verdict,
    /// Resources that reached their thresholds, in the order they did.
    pub findings: Vec<Finding>,
    /// Resources that never did, with their peaks (headroom), closest first.
    pub held: Vec<Watched>,
    /// Without a knee: why the load has none ("no saturation point: the rate is
    /// constant"), when the caller knows.
    pub no_knee: Option<String>,
    /// What could not be judged, and why ("db: 12 readings missing from 3.0 s: login
    /// refused"): said, never guessed around.
    pub unjudged: Vec<String>,
    /// What the failed requests said, when some failed (set by the caller).
    pub failures: Option<Failures>,
}

/// Judges one run; see the module documentation. `trouble` says how a load without a
/// knee was not served, if it was not.
pub fn diagnose(
    knee: Option<Knee>,
    trouble: Option<String>,
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
        (Some(reason), _, _) => Verdict::GeneratorRanOut {
            reason: reason.clone(),
        },
        (None, Some(finding), _) => Verdict::FirstLimit { finding },
        (None, None, true) => Verdict::NothingWatchedRanOut,
        (None, None, false) if watched.is_empty() => Verdict::NotJudged {
            reason: "nothing was monitored and the load has no knee".to_owned(),
        },
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
            Verdict::GeneratorRanOut { .. } => "generator",
            Verdict::FirstLimit { .. } => "first_limit",
            Verdict::NothingWatchedRanOut => "nothing_watched",
            Verdict::Held => "held",
            Verdict::NotJudged { .. } => "not_judged",
        }
    }

    /// The answer as sentences a reader can paste into a write-up, one per line: the
    /// verdict first, then each finding in time order, then the headroom of the rest.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![self.headline()];
        let first = self.first_limit();
        for index in 0..self.findings.len() {
            // The first limit is the headline's.
            if first != Some(index) {
                lines.push(self.finding_line(index));
            }
        }
        if !self.held.is_empty() {
            let held: Vec<String> = self.held.iter().map(headroom).collect();
            lines.push(format!("held (peak of each): {}", held.join("; ")));
        }
        for what in &self.unjudged {
            lines.push(format!("not judged: {what}"));
        }
        lines
    }

    /// Finding `index` in the words of [`Diagnosis::lines`]: `first limit ...` for the
    /// verdict's (the headline's tail), `before it: ...` for a symptom ahead of it,
    /// `then: ...` for the rest. A chart names a finding's moment with it.
    pub fn finding_line(&self, index: usize) -> String {
        let first = self.first_limit();
        let text = self.findings[index].describe(self.knee.as_ref(), self.start_unix_ns);
        // Symptoms (log lines of timeouts) may come before the first limit.
        match first {
            Some(first) if index == first => format!("first limit {text}"),
            Some(first) if index < first => format!("before it: {text}"),
            _ => format!("then: {text}"),
        }
    }

    /// The index of the first limit in [`Diagnosis::findings`], when the verdict names one.
    pub fn first_limit(&self) -> Option<usize> {
        match self.verdict {
            Verdict::FirstLimit { finding } => Some(finding),
            _ => None,
        }
    }

    /// The verdict in one sentence.
    pub fn headline(&self) -> String {
        let knee = self.knee.as_ref();
        match &self.verdict {
            Verdict::Unreachable(unreached) => {
                let each: Vec<String> = unreached.iter().map(Unreached::describe).collect();
                each.join("; ")
            }
            Verdict::GeneratorRanOut { reason } => {
                format!("the generator ran out ({reason}): this run says nothing about the server")
            }
            Verdict::FirstLimit { finding } => {
                let finding = &self.findings[*finding];
                match knee {
                    Some(knee) => format!(
                        "{}: first limit {}",
                        knee_words(knee),
                        finding.describe(Some(knee), self.start_unix_ns)
                    ),
                    None => {
                        let text = finding.describe(None, self.start_unix_ns);
                        match &self.trouble {
                            Some(trouble) => format!("{trouble}: first limit {text}"),
                            None => format!("first limit {text}"),
                        }
                    }
                }
            }
            Verdict::NothingWatchedRanOut => {
                let what = knee
                    .map(knee_words)
                    .or_else(|| self.trouble.clone())
                    .unwrap_or_default();
                let watched = if self.held.is_empty() && self.findings.is_empty() {
                    "with nothing watched"
                } else {
                    "while no watched resource was near its limit"
                };
                match self.failures.as_ref().filter(|f| !f.kinds.is_empty()) {
                    // The answers say what happened; the unwatched is not guessed at.
                    Some(failures) => format!(
                        "{what}: {} {watched}: {}",
                        failures.describe(),
                        failures.meaning()
                    ),
                    None => format!(
                        "{what}: nothing monitored reached its limit; the limit lies in \
                         something not watched (a downstream, a lock, a pool without a gauge)"
                    ),
                }
            }
            Verdict::Held => match &self.no_knee {
                Some(why) => format!("{why}; nothing monitored reached its limit"),
                None => "no knee, and nothing monitored reached its limit".to_owned(),
            },
            Verdict::NotJudged { reason } => format!("not judged: {reason}"),
        }
    }
}

impl Unreached {
    /// `nothing listened at 127.0.0.1:18199: connection refused, every request (100)`.
    pub fn describe(&self) -> String {
        format!(
            "nothing listened at {}: {}, every request ({})",
            self.address, self.error, self.requests
        )
    }
}

impl Failures {
    /// `127.0.0.1:8080 answered 503 (1234) from 714/s`, `requests to 127.0.0.1:8080
    /// failed with timeout (12) from 714/s`: the statuses first, then the errors.
    pub fn describe(&self) -> String {
        let list = |status: bool| -> Vec<String> {
            (self.kinds.iter())
                .filter_map(|(kind, count)| match (kind, status) {
                    (FailedAs::Status(code), true) => Some(format!("{code} ({count})")),
                    (FailedAs::Error(name), false) => Some(format!("{name} ({count})")),
                    _ => None,
                })
                .collect()
        };
        let (statuses, errors) = (list(true), list(false));
        let mut text = String::new();
        if !statuses.is_empty() {
            let _ = write!(text, "{} answered {}", self.server, statuses.join(", "));
        }
        if !errors.is_empty() {
            let lead = if text.is_empty() {
                format!("requests to {}", self.server)
            } else {
                ", and requests".to_owned()
            };
            let _ = write!(text, "{lead} failed with {}", errors.join(", "));
        }
        if let Some((_, per_sec)) = self.from {
            let _ = write!(text, " from {}", value(per_sec, "/s"));
        }
        text
    }

    /// What answers like these mean, without guessing at what was not watched.
    pub fn meaning(&self) -> &'static str {
        let answered =
            (self.kinds.first()).is_some_and(|(kind, _)| matches!(kind, FailedAs::Status(_)));
        if answered {
            "a limit the server is configured with (a rate limit, a queue, an upstream)"
        } else {
            "the server (or what is between) stopped answering in time; its logs or a \
             monitor of it say why"
        }
    }
}

impl Knee {
    /// The knee in the headline's words: `max 4699 req/s held; the knee at 5084/s
    /// offered, 11.7 s (throughput turned first)`.
    pub fn describe(&self) -> String {
        knee_words(self)
    }
}

fn knee_words(knee: &Knee) -> String {
    format!(
        "max {:.0} req/s held; the knee at {:.0}/s offered, {} ({})",
        knee.peak_ok_per_sec,
        knee.offered_per_sec,
        seconds(knee.at_ns),
        knee.signal
    )
}

impl Finding {
    /// One sentence: who did what against which limit, when (from the run's start, and
    /// on the wall clock when `start_unix_ns` is known), against the knee, the evidence,
    /// and what it means.
    pub fn describe(&self, knee: Option<&Knee>, start_unix_ns: Option<u64>) -> String {
        let w = &self.watched;
        let (what, meaning) = what(w, self.crossing.value);
        let mut text = format!("{} {what} from {}", w.name, seconds(self.crossing.at_ns));
        if let Some(start) = start_unix_ns {
            let _ = write!(text, " ({})", wall_clock(start + self.crossing.at_ns));
        }
        match (self.timing, knee) {
            (Timing::Before, Some(knee)) => {
                let ahead = knee.at_ns - self.crossing.at_ns;
                let _ = write!(text, ", {} before the knee", seconds(ahead));
            }
            (Timing::AtKnee, _) => text.push_str(", at the knee"),
            (Timing::After, Some(knee)) => {
                let behind = self.crossing.at_ns - knee.at_ns;
                let _ = write!(text, ", {} after the knee", seconds(behind));
            }
            _ => {}
        }
        let _ = write!(
            text,
            " (peak {} at {}; {}){meaning}",
            value(w.peak, w.unit),
            seconds(w.peak_at_ns),
            w.series
        );
        if let Some(note) = &w.note {
            let _ = write!(text, "; {note}");
        }
        if let Some(line) = &w.example {
            let _ = write!(text, "; first line: {line:?}");
        }
        text
    }
}

/// What the resource did, in its own words, and what that means (after a `; `), if
/// it needs saying.
fn what(w: &Watched, at: f64) -> (String, &'static str) {
    let limit = w.limit.map(|l| value(l, w.unit)).unwrap_or_default();
    let percent = |at: f64| value(at, "%");
    match w.resource {
        Resource::CpuAllowance => (
            format!("CPU at {} of one core, its allowance {limit}", percent(at)),
            "; its affinity or quota, not the host, set the ceiling",
        ),
        Resource::OneCore => (
            match w.limit {
                Some(_) => format!(
                    "held at {} of one core while it may use {limit}",
                    percent(at)
                ),
                None => format!(
                    "held at {} of one core (its allowance was not sampled)",
                    percent(at)
                ),
            },
            "; one thread's ceiling (a single-threaded server, a global lock)",
        ),
        Resource::HostCpu => (format!("CPU at {} of the host", percent(at)), ""),
        Resource::OneCoreOfHost => (
            format!(
                "busiest core at {} while the host as a whole was not",
                percent(at)
            ),
            "; one busy thread or interrupt handling",
        ),
        Resource::Steal => (
            format!("CPU steal at {}", percent(at)),
            "; the hypervisor took it",
        ),
        Resource::Iowait => (
            format!("iowait at {}", percent(at)),
            "; CPU waited for disk",
        ),
        Resource::Fds => (
            format!(
                "fds at {} of their limit ({limit})",
                percent(share(at, w.limit))
            ),
            "; beyond it accept() fails with \"too many open files\"",
        ),
        Resource::Memory => (
            format!("memory at {} of {limit}", percent(share(at, w.limit))),
            "; past it the kernel reclaims and swaps, then kills (OOM)",
        ),
        Resource::Swap => (
            format!("swapping out {}", value(at, w.unit)),
            "; memory ran short and pages went to disk",
        ),
        Resource::Network => (
            format!(
                "network at {} of its link speed ({limit})",
                percent(share(at, w.limit))
            ),
            "; the link, not the server, set the ceiling",
        ),
        Resource::EphemeralPorts => (
            format!(
                "TIME_WAIT sockets at {} of the ephemeral port range ({limit})",
                percent(share(at, w.limit))
            ),
            "; new connections from this host fail (EADDRNOTAVAIL) once it is used up",
        ),
        Resource::ListenQueue => (
            format!(
                "listen queue overflowing, {} connections dropped",
                value(at, "/s")
            ),
            "; the server did not accept connections fast enough",
        ),
        Resource::TcpErrors => (format!("TCP connects failing at {}", value(at, "/s")), ""),
        Resource::Retransmits => (
            format!("TCP retransmitting {} of the segments it sent", percent(at)),
            "; packets were lost (a full queue or link, or a drop on the way)",
        ),
        Resource::TcpResets => (
            format!("sending TCP resets, {}", value(at, "/s")),
            "; connections were refused or cut",
        ),
        Resource::Pool => (
            format!("at {} of its size ({limit})", percent(share(at, w.limit))),
            "; beyond it requests wait, or are turned away",
        ),
        Resource::DbConnections => (
            format!(
                "connections at {} of max_connections ({limit})",
                percent(share(at, w.limit))
            ),
            "; more are refused",
        ),
        Resource::DbBusy => (
            format!(
                "connections busy {} of the time ({at:.2} of {:.0} open)",
                percent(share(at, w.limit)),
                w.limit.unwrap_or_default()
            ),
            "; every connection it was given was in use, so transactions could not go \
             faster: the app's pool (its number of connections), not the server, set the \
             ceiling",
        ),
        Resource::Log | Resource::LogSymptom => {
            (format!("wrote matching lines, {}", value(at, "/s")), "")
        }
    }
}

/// `14:03:07Z`: the time of day (UTC) of a unix instant.
fn wall_clock(unix_ns: u64) -> String {
    let of_day = unix_ns / 1_000_000_000 % 86_400;
    format!(
        "{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

fn share(value: f64, limit: Option<f64>) -> f64 {
    match limit {
        Some(limit) if limit > 0.0 => value / limit * 100.0,
        _ => 0.0,
    }
}

/// A watched resource that did not cross its threshold: `app fds peak 12% of 1024
/// fds`, `host CPU peak 54%`, `app CPU peak 27% of its allowance 200%`; a peak past
/// the threshold says why it did not count (`host iowait peak 32%, past its threshold
/// (20%) for fewer than 3 readings in a row`).
fn headroom(w: &Watched) -> String {
    let mut text = peak_words(w);
    if let Some(brief) = w.brief {
        let threshold = match w.limit {
            Some(_) => format!("{:.0}% of its limit", brief.threshold),
            None => value(brief.threshold, w.unit),
        };
        let _ = write!(
            text,
            ", past its threshold ({threshold}) for fewer than {} readings in a row",
            brief.sustain
        );
    }
    text
}

fn peak_words(w: &Watched) -> String {
    let noun = noun(w.resource);
    let name = &w.name;
    match (w.resource, w.peak_percent(), w.limit) {
        (Resource::CpuAllowance, Some(percent), Some(limit)) => format!(
            "{name} CPU peak {} of one core, {percent:.0}% of its allowance {}",
            value(w.peak, "%"),
            value(limit, "%")
        ),
        (Resource::HostCpu | Resource::OneCoreOfHost, Some(percent), _) => {
            format!("{name} {noun} peak {percent:.0}%")
        }
        (_, Some(percent), Some(limit)) => {
            format!(
                "{name} {noun} peak {percent:.0}% of {}",
                value(limit, w.unit)
            )
        }
        _ if w.peak > 0.0 => format!("{name} {noun} peak {}", value(w.peak, w.unit)),
        _ => format!("{name} {noun} none"),
    }
}

fn noun(resource: Resource) -> &'static str {
    match resource {
        Resource::CpuAllowance | Resource::OneCore | Resource::HostCpu => "CPU",
        Resource::OneCoreOfHost => "busiest core",
        Resource::Steal => "steal",
        Resource::Iowait => "iowait",
        Resource::Fds => "fds",
        Resource::Memory => "memory",
        Resource::Swap => "swap out",
        Resource::Network => "network",
        Resource::EphemeralPorts => "TIME_WAIT",
        Resource::ListenQueue => "listen overflows",
        Resource::TcpErrors => "TCP errors",
        Resource::Retransmits => "retransmits",
        Resource::TcpResets => "resets sent",
        Resource::Pool => "use",
        Resource::DbConnections => "connections",
        Resource::DbBusy => "busy connections",
        Resource::Log | Resource::LogSymptom => "lines",
    }
}

/// A value in its unit: `97%`, `256 fds`, `12.5/s`, `1.2 GiB`.
fn value(value: f64, unit: &str) -> String {
    match unit {
        "%" => format!("{value:.0}%"),
        "/s" if value < 10.0 => format!("{value:.1}/s"),
        "/s" => format!("{value:.0}/s"),
        "bytes" => format!("{:.1} MiB", value / (1024.0 * 1024.0)),
        "bytes/s" => format!("{:.1} MiB/s", value / (1024.0 * 1024.0)),
        "connections busy" => format!("{value:.2} {unit}"),
        "" => format!("{value:.0}"),
        unit => format!("{value:.0} {unit}"),
    }
}

/// An offset from the run's start, to a tenth of a second.
fn seconds(ns: u64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
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
            signal: "p99 latency rose".to_owned(),
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
        let behind = GeneratorState {
            fell_behind: Some("send lag p99 8.0 ms".to_owned()),
        };
        let fine = GeneratorState::default();
        let failed = || Some("16.8% of the requests failed".to_owned());
        let only_cpu = std::slice::from_ref(&cpu);
        type Case<'a> = (
            &'a str,
            Option<Knee>,
            Option<String>,
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
                "the generator ran out (send lag p99 8.0 ms)",
            ),
            (
                "nothing watched",
                Some(knee_at(20)),
                None,
                &fine,
                only_cpu,
                "nothing monitored reached its limit",
            ),
            (
                "a constant load that failed",
                None,
                failed(),
                &fine,
                only_cpu,
                "16.8% of the requests failed: nothing monitored reached",
            ),
            (
                "held",
                None,
                None,
                &fine,
                only_cpu,
                "no knee, and nothing monitored",
            ),
            (
                "not judged",
                None,
                None,
                &fine,
                &[],
                "not judged: nothing was monitored",
            ),
        ];
        for (case, knee, trouble, generator, resources, want) in cases {
            let diagnosis = diagnose(knee.clone(), trouble.clone(), generator, resources);
            assert!(
                diagnosis.headline().contains(want),
                "{case}: {}",
                diagnosis.headline()
            );
        }
    }

    #[test]
    fn log_lines_quote_their_first_line_and_symptoms_never_come_first() {
        let log = |resource, crossed_s, example: &str| Watched {
            name: "nginx log (too_many_open_files)".to_owned(),
            unit: "/s",
            limit: None,
            example: Some(example.to_owned()),
            ..watched("log", resource, 1.0, 40.0, Some(crossed_s))
        };
        let timeouts = log(Resource::LogSymptom, 5, "upstream timed out");
        let fds = log(
            Resource::Log,
            9,
            "accept4() failed (24: Too many open files)",
        );
        let diagnosis = diagnose(
            Some(knee_at(10)),
            None,
            &GeneratorState::default(),
            &[timeouts, fds],
        );
        let Verdict::FirstLimit { finding } = diagnosis.verdict else {
            panic!("{:?}", diagnosis.verdict);
        };
        assert_eq!(diagnosis.findings[finding].watched.resource, Resource::Log);
        assert!(
            diagnosis
                .headline()
                .ends_with("; first line: \"accept4() failed (24: Too many open files)\""),
            "{}",
            diagnosis.headline()
        );
        assert!(
            diagnosis.lines()[1].starts_with("before it: nginx log"),
            "{:?}",
            diagnosis.lines()
        );
    }

    #[test]
    fn resets_follow_and_a_busy_db_pool_leads_with_its_transactions() {
        let resets = Watched {
            unit: "/s",
            limit: None,
            ..watched(HOST, Resource::TcpResets, 1.0, 30.0, Some(4))
        };
        let busy = Watched {
            unit: "connections busy",
            note: Some("transactions peaked at 212/s".to_owned()),
            ..watched("db", Resource::DbBusy, 1.0, 0.98, Some(8))
        };
        let link = Watched {
            name: "host eth0".to_owned(),
            unit: "bytes/s",
            ..watched("host eth0", Resource::Network, 125e6, 40e6, None)
        };
        let diagnosis = diagnose(
            Some(knee_at(9)),
            None,
            &GeneratorState::default(),
            &[resets, busy, link],
        );
        let Verdict::FirstLimit { finding } = diagnosis.verdict else {
            panic!("{:?}", diagnosis.verdict);
        };
        assert_eq!(finding, 1, "{:?}", diagnosis.lines());
        let headline = diagnosis.headline();
        assert!(
            headline.contains("db connections busy 98% of the time (0.98 of 1 open)")
                && headline.ends_with("; transactions peaked at 212/s"),
            "{headline}"
        );
        let lines = diagnosis.lines();
        assert!(
            lines[1].starts_with("before it: host sending TCP resets, 30/s"),
            "{lines:?}"
        );
        assert!(
            lines[2].contains("host eth0 network peak 32% of 119.2 MiB/s"),
            "{lines:?}"
        );
    }

    #[test]
    fn a_generator_that_fell_behind_hides_the_server_findings_from_the_verdict() {
        let fds = watched("nginx", Resource::Fds, 256.0, 250.0, Some(5));
        let behind = GeneratorState {
            fell_behind: Some("send lag p99 8.0 ms".to_owned()),
        };
        let diagnosis = diagnose(Some(knee_at(10)), None, &behind, &[fds]);
        assert!(matches!(diagnosis.verdict, Verdict::GeneratorRanOut { .. }));
        assert!(
            !diagnosis.headline().contains("nginx"),
            "{}",
            diagnosis.headline()
        );
    }

    #[test]
    fn lines_say_the_limit_its_evidence_and_the_headroom_of_the_rest() {
        let resources = [
            watched("nginx", Resource::Fds, 256.0, 251.0, Some(9)),
            watched("nginx", Resource::CpuAllowance, 200.0, 150.0, None),
            watched("host", Resource::HostCpu, 100.0, 60.0, None),
            watched("app", Resource::OneCore, 200.0, 99.0, Some(25)),
        ];
        let mut diagnosis = diagnose(
            Some(knee_at(10)),
            None,
            &GeneratorState::default(),
            &resources,
        );
        assert_eq!(
            diagnosis.lines(),
            [
                "max 950 req/s held; the knee at 1000/s offered, 10.0 s (p99 latency rose): first limit \
                 nginx fds at 98% of their limit (256 fds) from 9.0 s, at the knee (peak 251 fds at 30.0 s; \
                 test.series); beyond it accept() fails with \"too many open files\"",
                "then: app held at 99% of one core while it may use 200% from 25.0 s, 15.0 s after the knee \
                 (peak 99% at 30.0 s; test.series); one thread's ceiling (a single-threaded server, a global lock)",
                "held (peak of each): nginx CPU peak 150% of one core, 75% of its allowance 200%; host CPU peak 60%",
            ]
        );
        // 2026-11-25T14:00:00Z: each time also on the wall clock.
        diagnosis.start_unix_ns = Some(1_795_615_200 * S);
        assert!(
            diagnosis.lines()[0].contains("from 9.0 s (14:00:09Z), at the knee"),
            "{:?}",
            diagnosis.lines()
        );
    }

    #[test]
    fn a_peak_past_its_threshold_that_did_not_last_says_why_it_held() {
        let iowait = Watched {
            limit: None,
            brief: Some(Brief {
                threshold: 20.0,
                sustain: 3,
            }),
            ..watched("host", Resource::Iowait, 0.0, 32.0, None)
        };
        let fds = Watched {
            brief: Some(Brief {
                threshold: 90.0,
                sustain: 3,
            }),
            ..watched("nginx", Resource::Fds, 1024.0, 1000.0, None)
        };
        let diagnosis = diagnose(None, None, &GeneratorState::default(), &[iowait, fds]);
        assert_eq!(
            diagnosis.lines().last().map(String::as_str),
            Some(
                "held (peak of each): nginx fds peak 98% of 1024 fds, past its threshold (90% of \
                 its limit) for fewer than 3 readings in a row; host iowait peak 32%, past its \
                 threshold (20%) for fewer than 3 readings in a row"
            )
        );
    }

    #[test]
    fn failed_requests_are_said_in_the_answers_words_and_an_unreached_target_first() {
        let host = watched("host", Resource::HostCpu, 100.0, 40.0, None);
        let behind = GeneratorState {
            fell_behind: Some("send lag p99 1.4ms".to_owned()),
        };
        let failures = |kinds: Vec<(FailedAs, u64)>| Failures {
            server: "127.0.0.1:8080".to_owned(),
            kinds,
            from: Some((2 * S, 714.0)),
        };
        let trouble = Some("2.3% of the requests failed".to_owned());
        // (case, generator, watched, failures, unreached, headline)
        type Row<'a> = (
            &'a str,
            GeneratorState,
            Vec<Watched>,
            Option<Failures>,
            Vec<Unreached>,
            &'a str,
        );
        let rows: Vec<Row<'_>> = vec![
            (
                "a rate limit's 503s",
                GeneratorState::default(),
                vec![host.clone()],
                Some(failures(vec![(FailedAs::Status(503), 1234)])),
                vec![],
                "2.3% of the requests failed: 127.0.0.1:8080 answered 503 (1234) from 714/s \
                 while no watched resource was near its limit: a limit the server is configured \
                 with (a rate limit, a queue, an upstream)",
            ),
            (
                "timeouts, nothing watched",
                GeneratorState::default(),
                vec![],
                Some(failures(vec![(FailedAs::Error("timeout".to_owned()), 9)])),
                vec![],
                "2.3% of the requests failed: requests to 127.0.0.1:8080 failed with timeout (9) \
                 from 714/s with nothing watched: the server (or what is between) stopped \
                 answering in time; its logs or a monitor of it say why",
            ),
            (
                "nothing listened, the generator behind too",
                behind,
                vec![host],
                Some(failures(vec![(FailedAs::Error("connect".to_owned()), 50)])),
                vec![Unreached {
                    address: "127.0.0.1:18199".to_owned(),
                    error: "connection refused".to_owned(),
                    requests: 50,
                }],
                "nothing listened at 127.0.0.1:18199: connection refused, every request (50)",
            ),
        ];
        for (case, generator, watched, failures, unreached, want) in rows {
            let mut diagnosis = diagnose(None, trouble.clone(), &generator, &watched);
            diagnosis.failures = failures;
            let diagnosis = diagnosis.with_unreached(unreached);
            assert_eq!(diagnosis.headline(), want, "{case}");
        }
    }

    #[test]
    fn each_finding_has_its_line_and_a_short_name_for_a_chart() {
        let resources = [
            watched("nginx", Resource::Fds, 256.0, 251.0, Some(9)),
            watched(HOST, Resource::ListenQueue, 1.0, 40.0, Some(25)),
            watched(
                "nginx log (timeout)",
                Resource::LogSymptom,
                1.0,
                3.0,
                Some(4),
            ),
        ];
        let diagnosis = diagnose(
            Some(knee_at(10)),
            None,
            &GeneratorState::default(),
            &resources,
        );
        // (finding's name, its line's start, its short name)
        let rows = [
            (
                "nginx log (timeout)",
                "before it: nginx log",
                "nginx log (timeout)",
            ),
            ("nginx", "first limit nginx fds at 98%", "nginx fds"),
            (HOST, "then: host listen queue", "host listen overflows"),
        ];
        assert_eq!(diagnosis.findings.len(), rows.len());
        for (index, (name, line, short)) in rows.into_iter().enumerate() {
            let finding = &diagnosis.findings[index];
            assert_eq!(finding.watched.name, name);
            let got = diagnosis.finding_line(index);
            assert!(got.starts_with(line), "{got}");
            assert_eq!(finding.watched.short_name(), short);
        }
        // The same words as the lines: the headline ends with the first limit's, the
        // others are lines of their own.
        let lines = diagnosis.lines();
        let first = diagnosis.finding_line(1);
        assert!(lines[0].ends_with(&first), "{lines:?}");
        assert_eq!(lines[1], diagnosis.finding_line(0));
        assert_eq!(lines[2], diagnosis.finding_line(2));
        let knee = diagnosis.knee.as_ref().map(Knee::describe);
        assert!(knee.is_some_and(|knee| lines[0].starts_with(&knee)));
        let held = diagnose(None, None, &GeneratorState::default(), &resources[..1]);
        assert_eq!(held.first_limit(), Some(0));
        assert!(held.finding_line(0).starts_with("first limit nginx fds"));
    }
}
