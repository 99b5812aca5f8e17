//! The verdict of one step: its own window's figures against the plan's SLO, always
//! with the generator's own health first, so that a generator that fell behind is never
//! taken for a saturated server (DESIGN.md section 9).
//!
//! A flow's checks are judged by name (`login: status 200`, the step's name and the
//! check's): each measured check against its own bound or the one for every check, and
//! a bound naming a check that was not measured fails, so a typo in a name never passes.

pub mod held;

use crate::AnalysisError;
use held::{ConnectionsAsked, MessageWay, StreamBounds, StreamWindow, stream_misses};

/// A latency statistic an SLO can bound: the one set of names stop rules use too.
pub use units::LatencyStat as Percentile;

/// Reads a statistic's name (`p50`, `p90`, `p95`, `p99`, `p99.9`, `max`, `mean`; any case).
pub fn parse_percentile(text: &str) -> Result<Percentile, AnalysisError> {
    Percentile::from_name(text).ok_or_else(|| AnalysisError::UnknownPercentile(text.to_owned()))
}

/// What the generator itself must achieve for a step to say anything about the server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeneratorHealth {
    /// Requests sent over requests asked, at least (0.99).
    pub min_achieved_ratio: f64,
    /// Send lag p99 at most, in nanoseconds (1 ms, the report's own warning threshold).
    pub max_lag_p99_ns: u64,
}

impl Default for GeneratorHealth {
    fn default() -> Self {
        GeneratorHealth {
            min_achieved_ratio: 0.99,
            max_lag_p99_ns: 1_000_000,
        }
    }
}

/// How much the generator's send lag weighs against the answers (docs/DIAGNOSIS.md):
/// the one rule behind a step's verdict, the diagnosis, the report's warning and the
/// plot page's banner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LagWeight {
    /// At or under the bound: the generator kept its schedule.
    Within,
    /// Over the bound but small beside the answers' median latency (the latencies are
    /// still the server's) or, with the asked rate delivered, under half the gap between
    /// two sends (each send still lands nearer its own slot than the next one's: the
    /// arrivals are the ones asked for; timer jitter at a low rate).
    Light,
    /// Over the bound and the median latency: the generator's own delay is the slow
    /// part of the latencies; they say little about the server.
    Heavy,
}

/// A send lag weighed: the figures and the bound it was weighed with, for renderers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lag {
    /// The send lag's 99th percentile, nanoseconds.
    pub p99_ns: u64,
    /// The bound it was held to ([`GeneratorHealth::max_lag_p99_ns`]).
    pub limit_ns: u64,
    /// The answers' median latency it was weighed against.
    pub latency_p50_ns: u64,
    /// The gap between two sends it was weighed against too (half of it): at the asked
    /// rate when that rate was delivered, or between one user's two sends in a closed
    /// model; none for a short rate.
    pub send_gap: Option<SendGap>,
    /// The judgement.
    pub weight: LagWeight,
}

/// The gap between two sends a lag was weighed against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendGap {
    /// Between two of the run's sends at its asked rate (an open model), nanoseconds.
    Run(u64),
    /// Between two sends of one user (a closed model: users over the rate they sent),
    /// nanoseconds.
    User(u64),
}

impl SendGap {
    /// The gap, nanoseconds.
    pub fn ns(self) -> u64 {
        match self {
            SendGap::Run(ns) | SendGap::User(ns) => ns,
        }
    }
}

/// The pace a lag is weighed against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    /// An open model: requests (a flow's: starts) per second asked and sent.
    Open {
        /// Requests per second asked (0: no rate, no gap between sends).
        asked_per_sec: f64,
        /// Requests per second sent.
        sent_per_sec: f64,
    },
    /// A closed model: each user sends its next request once its last is answered and
    /// its think time is over, so one user's sends are `users / requests_per_sec` apart
    /// and a late one still lands nearer its own turn than the next under half that.
    Closed {
        /// Users at once (at most).
        users: u64,
        /// Requests per second all users sent.
        requests_per_sec: f64,
    },
}

impl GeneratorHealth {
    /// Weighs a send lag p99 against this bound, the answers' median latency and the
    /// gap between two sends: at the asked rate when it was delivered, or one user's in
    /// a closed model (docs/DIAGNOSIS.md).
    pub fn weigh_lag(&self, lag_p99_ns: u64, latency_p50_ns: u64, pace: Option<Pace>) -> Lag {
        let send_gap = pace.and_then(|pace| self.send_gap(pace));
        let weight = if lag_p99_ns <= self.max_lag_p99_ns {
            LagWeight::Within
        } else if lag_p99_ns < latency_p50_ns
            || send_gap.is_some_and(|gap| lag_p99_ns < gap.ns() / 2)
        {
            LagWeight::Light
        } else {
            LagWeight::Heavy
        };
        Lag {
            p99_ns: lag_p99_ns,
            limit_ns: self.max_lag_p99_ns,
            latency_p50_ns,
            send_gap,
            weight,
        }
    }

    /// The gap between two sends of `pace`: none at a rate not delivered.
    fn send_gap(&self, pace: Pace) -> Option<SendGap> {
        match pace {
            Pace::Open {
                asked_per_sec,
                sent_per_sec,
            } => (asked_per_sec > 0.0 && !self.sent_short(asked_per_sec, sent_per_sec))
                .then(|| SendGap::Run((1e9 / asked_per_sec) as u64)),
            Pace::Closed {
                users,
                requests_per_sec,
            } => (users > 0 && requests_per_sec > 0.0)
                .then(|| SendGap::User((users as f64 * 1e9 / requests_per_sec) as u64)),
        }
    }

    /// Whether `sent_per_sec` is short of `asked_per_sec` (0 asked: never).
    pub fn sent_short(&self, asked_per_sec: f64, sent_per_sec: f64) -> bool {
        asked_per_sec > 0.0 && sent_per_sec < asked_per_sec * self.min_achieved_ratio
    }
}

/// A step's service-level objective. Empty bounds are not checked; the generator's
/// health always is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Slo {
    /// Share of requests that succeeded, at least (0..1).
    pub min_success_ratio: Option<f64>,
    /// Latency bounds, in nanoseconds: each statistic at most its value.
    pub max_latency_ns: Vec<(Percentile, u64)>,
    /// Errors of a kind (as the report names them, e.g. `timeout`, `503`) as a share of
    /// requests, at most.
    pub max_error_ratio_by_kind: Vec<(String, f64)>,
    /// Every check's pass rate, at least (0..1).
    pub min_check_pass_ratio: Option<f64>,
    /// Named checks' pass rates, at least: (`STEP: CHECK`, bound). A named bound
    /// replaces [`Slo::min_check_pass_ratio`] for its check.
    pub min_pass_ratio_by_check: Vec<(String, f64)>,
    /// Bounds on held connections and messages (stream steps).
    pub streams: StreamBounds,
    /// The generator's own health.
    pub generator: GeneratorHealth,
}

/// How often one check of a flow step passed and failed in a window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckCount {
    /// The check's full name: `STEP: CHECK` (`login: status 200`).
    pub name: String,
    /// Answers that passed it.
    pub passes: u64,
    /// Answers that failed it (a request without an answer fails every check).
    pub fails: u64,
}

impl CheckCount {
    /// Passes over passes and fails (0 when neither).
    pub fn pass_ratio(&self) -> f64 {
        self.passes as f64 / (self.passes + self.fails).max(1) as f64
    }
}

/// The figures of one step's measured window (warm-up excluded).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepSummary {
    /// Requests per second the step asked for (0 in a closed model: no rate to fall short of).
    pub asked_per_sec: f64,
    /// Requests per second actually sent (a flow's: its runs started).
    pub sent_per_sec: f64,
    /// Users in a closed model, at most at once (0 in an open model).
    pub users: u64,
    /// Requests per second sent, every step of a flow counted.
    pub requests_per_sec: f64,
    /// Requests in the window.
    pub requests: u64,
    /// Share that succeeded (0..1).
    pub success_ratio: f64,
    /// Latency statistics, in nanoseconds.
    pub latency_ns: Vec<(Percentile, u64)>,
    /// Failed requests by kind, as counts.
    pub errors_by_kind: Vec<(String, u64)>,
    /// The generator's send lag p99, in nanoseconds.
    pub lag_p99_ns: u64,
    /// Each flow check measured in the window, in step order then check order.
    pub checks: Vec<CheckCount>,
    /// Connections held and messages, when the step had stream steps (or streamed
    /// gRPC calls).
    pub streams: Option<StreamWindow>,
}

/// The verdict of a step, with every reason.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every bound held and the generator delivered the load.
    Pass,
    /// The generator delivered the load and a bound did not hold.
    Fail(Vec<Miss>),
    /// The generator did not deliver the load (or nothing was measured): the step says
    /// nothing about the server. The server's misses, if any, follow the generator's.
    Inconclusive(Vec<Miss>),
}

/// Why a step did not pass: one bound missed, with the figure and the bound it was held
/// to. Renderers word it (`report::words`); a new case makes the compiler name each.
#[derive(Clone, Debug, PartialEq)]
pub enum Miss {
    /// The window held no requests.
    NoRequests,
    /// Every request failed to connect: nothing listened.
    Unreachable {
        /// Requests whose connect failed (all of them).
        connects_failed: u64,
    },
    /// The generator sent less than it was asked.
    SentShort {
        /// Requests per second sent.
        sent_per_sec: f64,
        /// Requests per second asked.
        asked_per_sec: f64,
        /// The share it had to send ([`GeneratorHealth::min_achieved_ratio`]).
        min_ratio: f64,
    },
    /// The generator's send lag weighed [`LagWeight::Heavy`].
    Lag(Lag),
    /// Fewer requests succeeded than the bound.
    Success {
        /// The share that succeeded (0..1).
        ratio: f64,
        /// The bound (0..1).
        min: f64,
    },
    /// A latency statistic over its bound.
    Latency {
        /// Which statistic.
        stat: Percentile,
        /// Its value, nanoseconds.
        value_ns: u64,
        /// The bound, nanoseconds.
        max_ns: u64,
    },
    /// A bounded statistic that was not measured.
    NotMeasured(Percentile),
    /// Errors of a kind over their bound.
    Errors {
        /// The kind, as the report names it (`timeout`, `503`).
        kind: String,
        /// Their share of the requests (0..1).
        ratio: f64,
        /// The bound (0..1).
        max: f64,
    },
    /// A flow check under its pass-rate bound.
    Check {
        /// `STEP: CHECK`.
        name: String,
        /// Answers that passed it.
        passes: u64,
        /// Answers that failed it.
        fails: u64,
        /// The bound (0..1).
        min: f64,
    },
    /// A check named by a bound that was not measured.
    CheckNotMeasured {
        /// The name the bound gave.
        name: String,
        /// The checks that were measured.
        measured: Vec<String>,
    },
    /// A bound on every check, and no check was measured.
    NoChecks,
    /// Fewer connections held than the bound's share of those asked.
    ConnectionsHeld {
        /// Connections held (users: the peak at once; arrivals: those opened).
        held: u64,
        /// What the step asked for.
        asked: ConnectionsAsked,
        /// The bound (0..1).
        min: f64,
        /// Upgrades refused in the window (their status, a 503 past a limit).
        refused: u64,
        /// Connections cut by the server or broken in the window.
        cut: u64,
    },
    /// Messages a second one way under the bound.
    MessageRate {
        /// Which way.
        way: MessageWay,
        /// Messages per second in the window.
        per_sec: f64,
        /// The bound.
        min_per_sec: f64,
    },
    /// A message latency statistic over its bound.
    MessageLatency {
        /// Which statistic.
        stat: Percentile,
        /// Its value, nanoseconds.
        value_ns: u64,
        /// The bound, nanoseconds.
        max_ns: u64,
    },
    /// A message latency bound, and no message was timed.
    MessageNotTimed(Percentile),
    /// A bound on connections or messages, and the step opened none and tried none.
    NoConnections,
    /// A stop rule ended the step (the rule as written).
    StoppedEarly(String),
    /// A background scenario's own miss.
    Scenario {
        /// The scenario's name.
        name: String,
        /// What it missed.
        miss: Box<Miss>,
    },
}

impl Verdict {
    /// `pass`, `fail` or `inconclusive`.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail(_) => "fail",
            Verdict::Inconclusive(_) => "inconclusive",
        }
    }

    /// The reasons (none for a pass).
    pub fn misses(&self) -> &[Miss] {
        match self {
            Verdict::Pass => &[],
            Verdict::Fail(misses) | Verdict::Inconclusive(misses) => misses,
        }
    }
}

/// Judges one step against an SLO.
pub fn judge(step: &StepSummary, slo: &Slo) -> Verdict {
    if step.requests == 0 {
        return judge_held_only(step, slo);
    }
    // Nothing listened: no server was loaded, and the generator's lag beside failed
    // connects says nothing (docs/DIAGNOSIS.md: an unreachable target comes first).
    let connects_failed: u64 = (step.errors_by_kind.iter())
        .filter(|(kind, _)| kind == "connect")
        .map(|(_, n)| n)
        .sum();
    if connects_failed >= step.requests {
        return Verdict::Fail(vec![Miss::Unreachable { connects_failed }]);
    }
    let generator = generator_misses(step, &slo.generator);
    let server = server_misses(step, slo);
    match (generator.is_empty(), server.is_empty()) {
        (true, true) => Verdict::Pass,
        (true, false) => Verdict::Fail(server),
        (false, _) => Verdict::Inconclusive(generator.into_iter().chain(server).collect()),
    }
}

/// A window without requests: nothing to judge, unless it held connections opened
/// before it (users holding through the window what they opened in the warm-up), which
/// are judged by the bounds on connections and messages alone.
fn judge_held_only(step: &StepSummary, slo: &Slo) -> Verdict {
    let held = (step.streams.as_ref()).filter(|w| w.peak_held > 0 || w.opened > 0);
    if held.is_none() || slo.streams.is_empty() {
        return Verdict::Inconclusive(vec![Miss::NoRequests]);
    }
    match stream_misses(held, &slo.streams) {
        misses if misses.is_empty() => Verdict::Pass,
        misses => Verdict::Fail(misses),
    }
}

fn generator_misses(step: &StepSummary, health: &GeneratorHealth) -> Vec<Miss> {
    let mut misses = Vec::new();
    if health.sent_short(step.asked_per_sec, step.sent_per_sec) {
        misses.push(Miss::SentShort {
            sent_per_sec: step.sent_per_sec,
            asked_per_sec: step.asked_per_sec,
            min_ratio: health.min_achieved_ratio,
        });
    }
    let p50_ns = (step.latency_ns.iter())
        .find(|(p, _)| *p == Percentile::P50)
        .map_or(0, |&(_, ns)| ns);
    // A lag small beside the answers leaves them the server's (docs/DIAGNOSIS.md).
    let pace = match step.users {
        0 => Pace::Open {
            asked_per_sec: step.asked_per_sec,
            sent_per_sec: step.sent_per_sec,
        },
        users => Pace::Closed {
            users,
            requests_per_sec: step.requests_per_sec,
        },
    };
    let lag = health.weigh_lag(step.lag_p99_ns, p50_ns, Some(pace));
    if lag.weight == LagWeight::Heavy {
        misses.push(Miss::Lag(lag));
    }
    misses
}

fn server_misses(step: &StepSummary, slo: &Slo) -> Vec<Miss> {
    let mut misses = Vec::new();
    if let Some(min) = slo.min_success_ratio
        && step.success_ratio < min
    {
        misses.push(Miss::Success {
            ratio: step.success_ratio,
            min,
        });
    }
    misses.extend(latency_misses(
        &slo.max_latency_ns,
        &step.latency_ns,
        |stat, value_ns, max_ns| Miss::Latency {
            stat,
            value_ns,
            max_ns,
        },
        Miss::NotMeasured,
    ));
    for (kind, max_ratio) in &slo.max_error_ratio_by_kind {
        let count = step
            .errors_by_kind
            .iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, n)| n)
            .sum::<u64>();
        let ratio = count as f64 / step.requests.max(1) as f64;
        if ratio > *max_ratio {
            misses.push(Miss::Errors {
                kind: kind.clone(),
                ratio,
                max: *max_ratio,
            });
        }
    }
    misses.extend(check_misses(&step.checks, slo));
    misses.extend(stream_misses(step.streams.as_ref(), &slo.streams));
    misses
}

/// Each statistic of `bounds` over its bound in `measured` (`over`: the statistic, its
/// value and its bound, nanoseconds), or not in `measured` at all (`missing`): a bound
/// on a statistic nobody measured never passes.
pub(crate) fn latency_misses(
    bounds: &[(Percentile, u64)],
    measured: &[(Percentile, u64)],
    over: fn(Percentile, u64, u64) -> Miss,
    missing: fn(Percentile) -> Miss,
) -> Vec<Miss> {
    (bounds.iter())
        .filter_map(
            |&(stat, max_ns)| match measured.iter().find(|(p, _)| *p == stat) {
                Some(&(_, value_ns)) => (value_ns > max_ns).then(|| over(stat, value_ns, max_ns)),
                None => Some(missing(stat)),
            },
        )
        .collect()
}

/// Each measured check under its bound (its own, else the one for every check), then
/// each named bound whose check was not measured, then a bound on every check when no
/// check was measured at all: a name with a typo, or a load that is not a flow, fails.
fn check_misses(checks: &[CheckCount], slo: &Slo) -> Vec<Miss> {
    let named = |name: &str| {
        slo.min_pass_ratio_by_check
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, min)| min)
    };
    let mut misses = Vec::new();
    for check in checks {
        let Some(min) = named(&check.name).or(slo.min_check_pass_ratio) else {
            continue;
        };
        if check.pass_ratio() < min {
            misses.push(Miss::Check {
                name: check.name.clone(),
                passes: check.passes,
                fails: check.fails,
                min,
            });
        }
    }
    for (name, _) in &slo.min_pass_ratio_by_check {
        if !checks.iter().any(|c| &c.name == name) {
            misses.push(Miss::CheckNotMeasured {
                name: name.clone(),
                measured: checks.iter().map(|c| c.name.clone()).collect(),
            });
        }
    }
    if slo.min_check_pass_ratio.is_some() && checks.is_empty() {
        misses.push(Miss::NoChecks);
    }
    misses
}

#[cfg(test)]
mod tests {
    use super::*;

    fn healthy_step() -> StepSummary {
        StepSummary {
            asked_per_sec: 1000.0,
            sent_per_sec: 999.5,
            users: 0,
            requests_per_sec: 999.5,
            requests: 10_000,
            success_ratio: 0.999,
            latency_ns: vec![(Percentile::P50, 2_000_000), (Percentile::P99, 40_000_000)],
            errors_by_kind: vec![("timeout".to_owned(), 5), ("503".to_owned(), 5)],
            lag_p99_ns: 50_000,
            checks: Vec::new(),
            streams: None,
        }
    }

    fn slo() -> Slo {
        Slo {
            min_success_ratio: Some(0.99),
            max_latency_ns: vec![(Percentile::P99, 50_000_000)],
            max_error_ratio_by_kind: vec![("timeout".to_owned(), 0.001)],
            generator: GeneratorHealth::default(),
            ..Slo::default()
        }
    }

    #[test]
    fn verdicts() {
        type Change = fn(&mut StepSummary);
        const MS: u64 = 1_000_000;
        let pace = Pace::Open {
            asked_per_sec: 1000.0,
            sent_per_sec: 999.5,
        };
        let lag = |p50_ns| GeneratorHealth::default().weigh_lag(5 * MS, p50_ns, Some(pace));
        let rows: [(&str, Change, Verdict); 12] = [
            ("healthy", |_| {}, Verdict::Pass),
            (
                "slow",
                |s| s.latency_ns[1].1 = 80 * MS,
                Verdict::Fail(vec![Miss::Latency {
                    stat: Percentile::P99,
                    value_ns: 80 * MS,
                    max_ns: 50 * MS,
                }]),
            ),
            (
                "failing",
                |s| s.success_ratio = 0.9,
                Verdict::Fail(vec![Miss::Success {
                    ratio: 0.9,
                    min: 0.99,
                }]),
            ),
            (
                "timeouts",
                |s| s.errors_by_kind[0].1 = 100,
                Verdict::Fail(vec![Miss::Errors {
                    kind: "timeout".to_owned(),
                    ratio: 0.01,
                    max: 0.001,
                }]),
            ),
            (
                "generator behind",
                |s| s.sent_per_sec = 900.0,
                Verdict::Inconclusive(vec![Miss::SentShort {
                    sent_per_sec: 900.0,
                    asked_per_sec: 1000.0,
                    min_ratio: 0.99,
                }]),
            ),
            (
                "generator behind and server slow",
                |s| {
                    s.lag_p99_ns = 5 * MS;
                    s.latency_ns[1].1 = 80 * MS;
                },
                Verdict::Inconclusive(vec![
                    Miss::Lag(lag(2 * MS)),
                    Miss::Latency {
                        stat: Percentile::P99,
                        value_ns: 80 * MS,
                        max_ns: 50 * MS,
                    },
                ]),
            ),
            (
                "lag over the bound, small beside the answers",
                |s| {
                    s.lag_p99_ns = 5 * MS;
                    s.latency_ns[0].1 = 20 * MS;
                },
                Verdict::Pass,
            ),
            (
                "timer jitter at 100/s: 2 ms of lag beside 1 ms answers, the rate delivered",
                |s| {
                    (s.asked_per_sec, s.sent_per_sec) = (100.0, 100.0);
                    s.lag_p99_ns = 2 * MS;
                    s.latency_ns[0].1 = MS;
                },
                Verdict::Pass,
            ),
            (
                "20k/s not delivered, 5 ms of lag beside 1 ms answers",
                |s| {
                    (s.asked_per_sec, s.sent_per_sec) = (20_000.0, 15_000.0);
                    s.lag_p99_ns = 5 * MS;
                    s.latency_ns[0].1 = MS;
                },
                Verdict::Inconclusive(vec![
                    Miss::SentShort {
                        sent_per_sec: 15_000.0,
                        asked_per_sec: 20_000.0,
                        min_ratio: 0.99,
                    },
                    Miss::Lag(Lag {
                        p99_ns: 5 * MS,
                        limit_ns: MS,
                        latency_p50_ns: MS,
                        send_gap: None,
                        weight: LagWeight::Heavy,
                    }),
                ]),
            ),
            (
                "every connect failed, the generator behind too",
                |s| {
                    s.errors_by_kind = vec![("connect".to_owned(), 10_000)];
                    s.success_ratio = 0.0;
                    s.lag_p99_ns = 5 * MS;
                },
                Verdict::Fail(vec![Miss::Unreachable {
                    connects_failed: 10_000,
                }]),
            ),
            (
                "nothing measured",
                |s| s.requests = 0,
                Verdict::Inconclusive(vec![Miss::NoRequests]),
            ),
            (
                "closed model has no asked rate",
                |s| s.asked_per_sec = 0.0,
                Verdict::Pass,
            ),
        ];
        for (name, change, want) in rows {
            let mut step = healthy_step();
            change(&mut step);
            assert_eq!(judge(&step, &slo()), want, "{name}");
        }
    }

    #[test]
    fn users_refused_with_a_lag_small_beside_their_gap_fail_on_the_server() {
        const MS: u64 = 1_000_000;
        // 80 users, 100 ms think time, quick 503s: 2.5 ms late at p99 is over the
        // bound and the 1 ms answers, but a user sends every 200 ms.
        let mut step = healthy_step();
        (step.asked_per_sec, step.sent_per_sec) = (0.0, 400.0);
        (step.users, step.requests_per_sec) = (80, 400.0);
        step.latency_ns = vec![(Percentile::P50, MS), (Percentile::P99, 3 * MS)];
        step.lag_p99_ns = 2_500_000;
        step.success_ratio = 0.12;
        step.errors_by_kind = vec![("503".to_owned(), 1128)];
        let want = Verdict::Fail(vec![Miss::Success {
            ratio: 0.12,
            min: 0.99,
        }]);
        assert_eq!(judge(&step, &slo()), want);
        // As many users sending 40 times as fast: 2.5 ms is past half their 5 ms gap.
        step.requests_per_sec = 16_000.0;
        assert!(
            matches!(judge(&step, &slo()), Verdict::Inconclusive(misses) if matches!(misses[0], Miss::Lag(_)))
        );
    }

    #[test]
    fn lag_weighs_against_its_bound_the_median_latency_and_the_send_gap() {
        const MS: u64 = 1_000_000;
        let health = GeneratorHealth {
            max_lag_p99_ns: MS,
            ..GeneratorHealth::default()
        };
        let pace = |asked_per_sec, sent_per_sec| {
            Some(Pace::Open {
                asked_per_sec,
                sent_per_sec,
            })
        };
        let users = |users, requests_per_sec| {
            Some(Pace::Closed {
                users,
                requests_per_sec,
            })
        };
        // (case, lag p99, latency p50, the rate asked and sent, weight)
        let rows = [
            ("under the bound", MS / 2, 0, None, LagWeight::Within),
            ("at the bound", MS, 0, None, LagWeight::Within),
            (
                "3 ms beside 1 s answers",
                3 * MS,
                1000 * MS,
                None,
                LagWeight::Light,
            ),
            (
                "3 ms beside 100 µs answers",
                3 * MS,
                MS / 10,
                None,
                LagWeight::Heavy,
            ),
            (
                "as slow as the answers",
                3 * MS,
                3 * MS,
                None,
                LagWeight::Heavy,
            ),
            (
                "2 ms at 100/s delivered: under half the 10 ms gap",
                2 * MS,
                MS,
                pace(100.0, 100.0),
                LagWeight::Light,
            ),
            (
                "6 ms at 100/s delivered: past half the gap",
                6 * MS,
                MS,
                pace(100.0, 100.0),
                LagWeight::Heavy,
            ),
            (
                "2 ms at 100/s, not delivered",
                2 * MS,
                MS,
                pace(100.0, 90.0),
                LagWeight::Heavy,
            ),
            (
                "5 ms at 20k/s, not delivered",
                5 * MS,
                MS,
                pace(20_000.0, 15_000.0),
                LagWeight::Heavy,
            ),
            (
                "2 ms with no rate asked: no gap",
                2 * MS,
                MS,
                pace(0.0, 100.0),
                LagWeight::Heavy,
            ),
            (
                "2.5 ms of 80 users at 400/s: under half a user's 200 ms gap",
                2_500_000,
                MS,
                users(80, 400.0),
                LagWeight::Light,
            ),
            (
                "120 ms of 80 users at 400/s: past half a user's gap",
                120 * MS,
                MS,
                users(80, 400.0),
                LagWeight::Heavy,
            ),
            (
                "2 ms of 10 users at 10k/s: past half a user's 1 ms gap",
                2 * MS,
                MS / 2,
                users(10, 10_000.0),
                LagWeight::Heavy,
            ),
            ("no users", 2 * MS, MS, users(0, 100.0), LagWeight::Heavy),
        ];
        for (case, lag_ns, p50_ns, pace, want) in rows {
            let lag = health.weigh_lag(lag_ns, p50_ns, pace);
            assert_eq!(lag.weight, want, "{case}");
            assert_eq!((lag.limit_ns, lag.latency_p50_ns), (MS, p50_ns), "{case}");
        }
        let loose = GeneratorHealth {
            max_lag_p99_ns: 25 * MS,
            ..GeneratorHealth::default()
        };
        assert_eq!(loose.weigh_lag(3 * MS, 0, None).weight, LagWeight::Within);
    }

    fn check(name: &str, passes: u64, fails: u64) -> CheckCount {
        CheckCount {
            name: name.to_owned(),
            passes,
            fails,
        }
    }

    #[test]
    fn checks_are_judged_by_name() {
        let measured = || {
            vec![
                check("login: status 200", 998, 2),
                check("list: status 200", 1000, 0),
            ]
        };
        let named = |pairs: &[(&str, f64)]| -> Vec<(String, f64)> {
            pairs.iter().map(|&(n, b)| (n.to_owned(), b)).collect()
        };
        let missed = |name: &str, passes, fails, min| Miss::Check {
            name: name.to_owned(),
            passes,
            fails,
            min,
        };
        let unmeasured = |name: &str, measured: &[&str]| Miss::CheckNotMeasured {
            name: name.to_owned(),
            measured: measured.iter().map(|m| (*m).to_owned()).collect(),
        };
        /// (case, checks measured, bound on every check, named bounds, misses)
        type Row<'a> = (
            &'a str,
            Vec<CheckCount>,
            Option<f64>,
            Vec<(String, f64)>,
            Vec<Miss>,
        );
        let rows: Vec<Row<'_>> = vec![
            ("no bounds", measured(), None, vec![], vec![]),
            ("every check held", measured(), Some(0.998), vec![], vec![]),
            (
                "every check missed",
                measured(),
                Some(0.999),
                vec![],
                vec![missed("login: status 200", 998, 2, 0.999)],
            ),
            (
                "a named bound replaces the one for every check",
                measured(),
                Some(0.999),
                named(&[("login: status 200", 0.99)]),
                vec![],
            ),
            (
                "a named bound stricter than every check's",
                measured(),
                Some(0.9),
                named(&[("login: status 200", 0.99995)]),
                vec![missed("login: status 200", 998, 2, 0.99995)],
            ),
            (
                "one failure in a million fails a bound of 100%",
                vec![check("item: latency < 200ms", 999_999, 1)],
                Some(1.0),
                vec![],
                vec![missed("item: latency < 200ms", 999_999, 1, 1.0)],
            ),
            (
                "a typo in a name fails",
                measured(),
                None,
                named(&[("login: status 20", 0.9)]),
                vec![unmeasured(
                    "login: status 20",
                    &["login: status 200", "list: status 200"],
                )],
            ),
            (
                "a named check when the load has none",
                vec![],
                None,
                named(&[("login: status 200", 0.9)]),
                vec![unmeasured("login: status 200", &[])],
            ),
            (
                "every check when the load has none",
                vec![],
                Some(0.99),
                vec![],
                vec![Miss::NoChecks],
            ),
        ];
        for (case, checks, every, by_name, misses) in rows {
            let step = StepSummary {
                checks,
                ..healthy_step()
            };
            let slo = Slo {
                min_check_pass_ratio: every,
                min_pass_ratio_by_check: by_name,
                ..slo()
            };
            let verdict = judge(&step, &slo);
            assert_eq!(verdict.misses(), misses.as_slice(), "{case}");
            let word = if misses.is_empty() { "pass" } else { "fail" };
            assert_eq!(verdict.word(), word, "{case}");
        }
    }

    #[test]
    fn held_connections_judge_beside_the_requests() {
        let window = |peak_held| StreamWindow {
            asked: ConnectionsAsked::Users(600),
            peak_held,
            held_at_end: peak_held,
            opened: peak_held,
            refused: 600 - peak_held,
            cut: 0,
            messages_out_per_sec: 0.0,
            messages_in_per_sec: 0.0,
            latency_ns: Vec::new(),
        };
        let slo = Slo {
            streams: StreamBounds {
                min_held_ratio: Some(0.99),
                ..StreamBounds::default()
            },
            ..slo()
        };
        let held = StepSummary {
            streams: Some(window(600)),
            ..healthy_step()
        };
        assert_eq!(judge(&held, &slo), Verdict::Pass);
        let limited = StepSummary {
            streams: Some(window(500)),
            ..healthy_step()
        };
        let miss = Miss::ConnectionsHeld {
            held: 500,
            asked: ConnectionsAsked::Users(600),
            min: 0.99,
            refused: 100,
            cut: 0,
        };
        assert_eq!(judge(&limited, &slo), Verdict::Fail(vec![miss]));
        // Connections opened in the warm-up and held through the window leave no
        // request in it: they are judged on their own.
        let quiet = |peak_held| StepSummary {
            requests: 0,
            streams: Some(window(peak_held)),
            ..StepSummary::default()
        };
        assert_eq!(judge(&quiet(600), &slo), Verdict::Pass);
        let short = judge(&quiet(500), &slo);
        assert!(matches!(
            short.misses(),
            [Miss::ConnectionsHeld { held: 500, .. }]
        ));
        let none = Verdict::Inconclusive(vec![Miss::NoRequests]);
        assert_eq!(judge(&quiet(0), &slo), none, "nothing held, nothing asked");
        assert_eq!(
            judge(&quiet(600), &Slo::default()),
            none,
            "no bound on them"
        );
        // A plain HTTP step under a bound on connections fails, saying why.
        assert_eq!(
            judge(&healthy_step(), &slo),
            Verdict::Fail(vec![Miss::NoConnections])
        );
    }

    #[test]
    fn pass_ratios() {
        assert_eq!(check("x: y", 0, 0).pass_ratio(), 0.0);
        assert_eq!(check("x: y", 3, 1).pass_ratio(), 0.75);
    }

    #[test]
    fn a_bound_on_a_statistic_that_was_not_measured_fails_loudly() {
        let mut slo = slo();
        slo.max_latency_ns.push((Percentile::P999, 1));
        assert_eq!(
            judge(&healthy_step(), &slo),
            Verdict::Fail(vec![Miss::NotMeasured(Percentile::P999)])
        );
    }

    #[test]
    fn percentile_names() {
        for (text, want) in [
            ("p50", Ok(Percentile::P50)),
            ("P99", Ok(Percentile::P99)),
            ("p99.9", Ok(Percentile::P999)),
            (" max ", Ok(Percentile::Max)),
            ("mean", Ok(Percentile::Mean)),
            (
                "p98",
                Err(AnalysisError::UnknownPercentile("p98".to_owned())),
            ),
            ("", Err(AnalysisError::UnknownPercentile(String::new()))),
        ] {
            assert_eq!(parse_percentile(text), want, "{text:?}");
        }
        for p in [Percentile::P50, Percentile::P999, Percentile::Max] {
            assert_eq!(parse_percentile(&p.to_string()), Ok(p));
        }
    }
}
