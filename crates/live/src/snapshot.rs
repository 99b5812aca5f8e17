//! [`Snapshot`]: the numbers of a run so far, and how they read on a terminal or in a
//! log line.

use record::ErrorKind;

use crate::started::LoadUnit;

const SECOND_NS: f64 = 1e9;

/// The numbers of a run so far, as the live view shows them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Time since the run's time zero, as far as the collector has seen.
    pub elapsed_ns: u64,
    /// When the plan ends (the longest attack); `None` when open-ended.
    pub total_ns: Option<u64>,
    /// The schedule's asked rate now, all open-model attacks together.
    pub target_rate_per_sec: Option<f64>,
    /// What the asked load is counted in: a flow asks for runs started.
    pub unit: LoadUnit,
    /// The last second: asked and sent over the last stats interval (about a
    /// second), completions and latencies over the last settled second of
    /// completions.
    pub last_second: Window,
    /// The whole run so far.
    pub run: Window,
    /// Completions by status code (0: transport error), ascending.
    pub status_codes: Vec<(u16, u64)>,
    /// Failed requests by error kind, most frequent first.
    pub errors: Vec<(ErrorKind, u64)>,
    /// The flows' checks so far; `None` while no check has run (a run without flows).
    pub checks: Option<ChecksState>,
    /// Requests sent and not yet answered.
    pub in_flight: u64,
    /// Connections open.
    pub connections_open: u64,
    /// The stream steps' connections and streamed gRPC calls (`None` until one
    /// opened): open now, messages a second each way, message latency.
    pub streams: Option<report::StreamsSoFar>,
    /// Requests due that have not left (the generator is behind).
    pub behind: u64,
    /// Of `behind`, those waiting because every connection they may use is busy.
    pub behind_at_cap: u64,
    /// Each stop rule's streak, in the order given.
    pub rules: Vec<RuleState>,
    /// The monitor's headline samples, one line per sampler (`-monitor`).
    pub resources: Vec<String>,
    /// A steered run's shards (`loadlab steer`, `kube run`): a summary line, then one
    /// line per shard that is behind, lost or stopped early.
    pub shards: Vec<String>,
    /// Every request so far failed to connect: `nothing listened at ...`, said as the
    /// report's diagnosis says it.
    pub unreachable: Option<String>,
    /// The run is over.
    pub finished: bool,
}

/// Counts and figures over a span of the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Window {
    /// How long the rates are over.
    pub span_ns: u64,
    /// The load the schedule asked for (open model only), in [`Snapshot::unit`]s.
    pub asked: Option<u64>,
    /// The load started, in [`Snapshot::unit`]s, when it is not requests (a flow's
    /// runs); `None` in a run without flows, or when not known (a steered run's
    /// last second).
    pub started: Option<u64>,
    /// Requests sent.
    pub sent: u64,
    /// Requests completed (answered or failed).
    pub completed: u64,
    /// Completions with a 2xx or 3xx status.
    pub successes: u64,
    /// Latency (from the intended send time) of the completions.
    pub latency: Latency,
    /// 99th percentile of the send lag of the completions.
    pub lag_p99_ns: u64,
}

/// Latency percentiles, nanoseconds (0 without completions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Latency {
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

/// Every check of the run's flows so far, together, and the worst of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChecksState {
    /// Check runs that passed.
    pub passed: u64,
    /// Check runs, passed or failed (a request runs each check of its step once).
    pub runs: u64,
    /// The check with the lowest pass rate of those that failed; `None` while every
    /// check passed.
    pub worst: Option<WorstCheck>,
}

/// The worst failing check so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorstCheck {
    /// Its full name, `STEP: CHECK`.
    pub name: String,
    /// Its runs that passed.
    pub passed: u64,
    /// Its runs that failed.
    pub failed: u64,
}

impl ChecksState {
    /// `99.2% passed (12,300 of 12,400)   worst: login: status 200 97.1% (35 failed)`.
    fn text(&self) -> String {
        let mut text = format!(
            "{} passed ({} of {})",
            report::words::pass_rate(self.passed, self.runs),
            self.passed,
            self.runs
        );
        match &self.worst {
            Some(worst) => {
                text += &format!(
                    "   worst: {} {} ({} failed)",
                    worst.name,
                    report::words::pass_rate(worst.passed, worst.passed + worst.failed),
                    worst.failed
                );
            }
            None => text += "   every check passed",
        }
        text
    }
}

/// One stop rule's state: "p99 > 2s for 10s: held 3s of 10s".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleState {
    /// The rule as written.
    pub rule: String,
    /// How long it has held, up to the last judged second.
    pub held_ns: u64,
    /// How long it must hold to fire.
    pub for_ns: u64,
    /// Its measure in the last judged second, formatted as the rule's unit.
    pub value: String,
}

impl Window {
    /// Requests per second of `count` over the window (0 for an empty window).
    pub fn rate_per_sec(&self, count: u64) -> f64 {
        if self.span_ns == 0 {
            return 0.0;
        }
        count as f64 * SECOND_NS / self.span_ns as f64
    }

    /// Successes over completions; `None` without completions.
    pub fn success_ratio(&self) -> Option<f64> {
        (self.completed > 0).then(|| self.successes as f64 / self.completed as f64)
    }
}

impl Snapshot {
    /// One plain line for logs:
    /// `12s/60s  asked 1000/s  sent 1000/s  ok 99.8%  p99 12.3ms  lag p99 312µs  in flight 12`;
    /// a flow's: `12s/60s  runs started 10.0/s of 10.0/s asked  requests sent 30.0/s  ok ...`.
    pub fn progress_line(&self) -> String {
        let last = &self.last_second;
        let mut line = self.elapsed_text();
        line += &self.load_text(last);
        line += &format!(
            "  ok {}  p99 {}  lag p99 {}  in flight {}",
            percent_text(last.success_ratio()),
            latency_text(last, last.latency.p99_ns),
            latency_text(last, last.lag_p99_ns),
            self.in_flight,
        );
        if self.behind > 0 {
            line += &format!("  behind {}{}", self.behind, self.held_back_text());
        }
        if let Some(checks) = &self.checks {
            line += &format!(
                "  checks {}",
                report::words::pass_rate(checks.passed, checks.runs)
            );
        }
        if let Some(streams) = &self.streams {
            // Lines are all `loadlab steer` shows: its connections held go in them.
            let last = &streams.last;
            line += &format!(
                "  streams open {}  messages/s out {} in {}",
                last.open,
                rate_text(last.messages_out_per_sec),
                rate_text(last.messages_in_per_sec)
            );
        }
        line
    }

    /// The load against the asked load: `  asked 1000/s  sent 1000/s`; in a run with
    /// flows, whose schedule asks for runs, `  runs started 10.0/s of 10.0/s asked
    /// requests sent 30.0/s` (`runs asked 10.0/s` when the runs started are not known).
    fn load_text(&self, window: &Window) -> String {
        let sent = rate_text(window.rate_per_sec(window.sent));
        let asked = window
            .asked
            .map(|asked| rate_text(window.rate_per_sec(asked)));
        let unit = self.unit.word();
        match (self.unit, window.started, asked) {
            (LoadUnit::Requests, _, None) => format!("  sent {sent}/s"),
            (LoadUnit::Requests, _, Some(asked)) => format!("  asked {asked}/s  sent {sent}/s"),
            (_, Some(started), asked) => {
                let started = rate_text(window.rate_per_sec(started));
                let of = asked.map_or_else(String::new, |asked| format!(" of {asked}/s asked"));
                format!("  {unit} started {started}/s{of}  requests sent {sent}/s")
            }
            (_, None, Some(asked)) => format!("  {unit} asked {asked}/s  requests sent {sent}/s"),
            (_, None, None) => format!("  requests sent {sent}/s"),
        }
    }

    /// The view's rate lines: requests a second; in a run with flows a line of the
    /// runs started against the asked runs before it, and none asked beside requests.
    fn load_lines(&self) -> Vec<String> {
        let (last, run) = (&self.last_second, &self.run);
        let requests = |asked: &str, run_asked: &str| {
            format!(
                "rate/s    {asked}sent {}  done {}   run: {run_asked}sent {}  done {}",
                rate_text(last.rate_per_sec(last.sent)),
                rate_text(last.rate_per_sec(last.completed)),
                rate_text(run.rate_per_sec(run.sent)),
                rate_text(run.rate_per_sec(run.completed)),
            )
        };
        if self.unit == LoadUnit::Requests {
            let asked = |window| format!("asked {}  ", asked_rate_text(window));
            return vec![requests(&asked(last), &asked(run))];
        }
        let started = |window: &Window| {
            let started = window.started.map_or_else(
                || "-".to_owned(),
                |started| rate_text(window.rate_per_sec(started)),
            );
            format!("started {started} of {} asked", asked_rate_text(window))
        };
        vec![
            format!(
                "{:<9} {}   run: {}",
                format!("{}/s", self.unit.word()),
                started(last),
                started(run)
            ),
            requests("", ""),
        ]
    }

    /// Why the generator is behind, when every connection it may use is busy.
    fn held_back_text(&self) -> &'static str {
        if self.behind_at_cap > 0 {
            " (connections held the rate back)"
        } else {
            ""
        }
    }

    /// The line left on stderr once the run is over: the whole run's figures,
    /// latencies written as `report` writes them (`3.224ms`), so they can be checked
    /// against it: `done: 12000 requests, ok 99.8%, latency p50 3.2ms p99 12.3ms
    /// max 40.1ms, lag p99 312µs`.
    pub fn final_line(&self) -> String {
        let run = &self.run;
        let report_style = |ns: u64| units::GoDuration::report_ns(ns).to_string();
        let mut line = format!("done: {} requests", run.completed);
        if run.completed > 0 {
            line += &format!(
                ", ok {}, latency p50 {} p99 {} max {}, lag p99 {}",
                percent_text(run.success_ratio()),
                report_style(run.latency.p50_ns),
                report_style(run.latency.p99_ns),
                report_style(run.latency.max_ns),
                report_style(run.lag_p99_ns),
            );
        }
        if let Some(summary) = self.shards.first() {
            line += &format!(", {summary}");
        }
        if let Some(unreachable) = &self.unreachable {
            line += &format!("; {unreachable}");
        }
        if let Some(checks) = &self.checks {
            line += &format!(
                ", checks {} passed",
                report::words::pass_rate(checks.passed, checks.runs)
            );
            if let Some(worst) = &checks.worst {
                line += &format!(" (worst: {}, {} failed)", worst.name, worst.failed);
            }
        }
        line
    }

    /// The terminal view's text lines (the progress bar is drawn apart): rates,
    /// latency, success and codes, the generator, one line per stop rule.
    pub fn view_lines(&self) -> Vec<String> {
        let (last, run) = (&self.last_second, &self.run);
        let mut lines = self.load_lines();
        lines.extend([
            format!(
                "latency   1s: p50 {}  p99 {}  max {}   run: p50 {}  p99 {}  max {}",
                latency_text(last, last.latency.p50_ns),
                latency_text(last, last.latency.p99_ns),
                latency_text(last, last.latency.max_ns),
                latency_text(run, run.latency.p50_ns),
                latency_text(run, run.latency.p99_ns),
                latency_text(run, run.latency.max_ns),
            ),
            format!(
                "success   1s: {}  run: {}   codes {}   errors {}",
                percent_text(last.success_ratio()),
                percent_text(run.success_ratio()),
                counts_text(self.status_codes.iter().map(|(c, n)| (c.to_string(), *n))),
                counts_text(self.errors.iter().map(|(k, n)| (k.name().to_owned(), *n))),
            ),
            format!(
                "generator lag p99 1s: {}  run: {}   in flight {}  connections {}  behind {}{}",
                latency_text(last, last.lag_p99_ns),
                latency_text(run, run.lag_p99_ns),
                self.in_flight,
                self.connections_open,
                self.behind,
                self.held_back_text(),
            ),
        ]);
        if let Some(unreachable) = &self.unreachable {
            lines.push(format!("target    {unreachable}"));
        }
        if let Some(streams) = &self.streams {
            lines.push(streams_line(streams));
        }
        if let Some(checks) = &self.checks {
            lines.push(format!("checks    {}", checks.text()));
        }
        lines.extend(
            self.resources
                .iter()
                .map(|line| format!("monitor   {line}")),
        );
        lines.extend(self.shards.iter().map(|line| format!("shards    {line}")));
        lines.extend(self.rules.iter().map(|rule| {
            format!(
                "stop rule '{}': held {} of {} (now {})",
                rule.rule,
                short_duration(rule.held_ns),
                short_duration(rule.for_ns),
                rule.value,
            )
        }));
        lines
    }

    /// `12s/60s`, or `12s` when the run is open-ended.
    pub fn elapsed_text(&self) -> String {
        // Rounded: the collector sees time in batches, a little behind the clock.
        let elapsed = (self.elapsed_ns + 500_000_000) / 1_000_000_000;
        match self.total_ns {
            Some(total) => format!("{elapsed}s/{}s", total.div_ceil(1_000_000_000)),
            None => format!("{elapsed}s"),
        }
    }

    /// The bar's text: elapsed, planned and the schedule's target now.
    pub fn bar_text(&self) -> String {
        match self.target_rate_per_sec {
            Some(rate) => format!("{}  target {}/s", self.elapsed_text(), rate_text(rate)),
            None => self.elapsed_text(),
        }
    }
}

fn asked_rate_text(window: &Window) -> String {
    window.asked.map_or_else(
        || "-".to_owned(),
        |asked| rate_text(window.rate_per_sec(asked)),
    )
}

/// Whole requests per second below 100, else no decimals.
fn rate_text(rate: f64) -> String {
    if rate < 100.0 {
        format!("{rate:.1}")
    } else {
        format!("{rate:.0}")
    }
}

/// `streams   open 812 (+5 -1 /s)   messages/s out 200 in 400   latency 1s: p50 ... run: ...`
fn streams_line(streams: &report::StreamsSoFar) -> String {
    let last = &streams.last;
    let quantiles = |q: Option<report::MessageQuantiles>| match q {
        Some(q) => format!(
            "p50 {}  p99 {}  max {}",
            short_duration(q.p50_ns),
            short_duration(q.p99_ns),
            short_duration(q.max_ns)
        ),
        None => "-".to_owned(),
    };
    format!(
        "streams   open {} (+{} -{} /s)   messages/s out {} in {}   latency 1s: {}  run: {}",
        last.open,
        rate_text(last.opened_per_sec),
        rate_text(last.closed_per_sec),
        rate_text(last.messages_out_per_sec),
        rate_text(last.messages_in_per_sec),
        quantiles(last.latency),
        quantiles(report::MessageQuantiles::of(&streams.latency)),
    )
}

fn percent_text(ratio: Option<f64>) -> String {
    ratio.map_or_else(|| "-".to_owned(), |r| format!("{:.1}%", r * 100.0))
}

/// A latency, or `-` when the window had no completions (0 would read as fast).
fn latency_text(window: &Window, ns: u64) -> String {
    if window.completed == 0 {
        "-".to_owned()
    } else {
        short_duration(ns)
    }
}

/// `200:1234 503:5`, `-` when empty.
fn counts_text(counts: impl Iterator<Item = (String, u64)>) -> String {
    let text: Vec<String> = counts.map(|(name, n)| format!("{name}:{n}")).collect();
    if text.is_empty() {
        "-".to_owned()
    } else {
        text.join(" ")
    }
}

/// A duration in three significant digits at most: `812ns`, `31.2µs`, `12.3ms`, `1.23s`.
pub fn short_duration(ns: u64) -> String {
    let (value, unit) = match ns {
        0..1_000 => return format!("{ns}ns"),
        1_000..1_000_000 => (ns as f64 / 1e3, "µs"),
        1_000_000..1_000_000_000 => (ns as f64 / 1e6, "ms"),
        _ => (ns as f64 / 1e9, "s"),
    };
    let decimals = match value {
        v if v < 10.0 => 2,
        v if v < 100.0 => 1,
        _ => 0,
    };
    let text = format!("{value:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_durations_keep_three_digits() {
        let rows = [
            (0, "0ns"),
            (812, "812ns"),
            (31_250, "31.2µs"),
            (300_000, "300µs"),
            (12_345_678, "12.3ms"),
            (1_000_000_000, "1s"),
            (1_234_000_000, "1.23s"),
            (125_000_000_000, "125s"),
        ];
        for (ns, text) in rows {
            assert_eq!(short_duration(ns), text, "{ns}");
        }
    }

    #[test]
    fn checks_read_as_a_pass_rate_and_the_worst() {
        let worst = |name: &str, passed, failed| WorstCheck {
            name: name.to_owned(),
            passed,
            failed,
        };
        // (checks, the view's line, the progress line's end, the final line's end)
        let rows = [
            (None, None, "in flight 0", "done: 0 requests"),
            (
                Some(ChecksState {
                    passed: 400,
                    runs: 400,
                    worst: None,
                }),
                Some("checks    100% passed (400 of 400)   every check passed"),
                "in flight 0  checks 100%",
                "done: 0 requests, checks 100% passed",
            ),
            (
                Some(ChecksState {
                    passed: 99_999,
                    runs: 100_000,
                    worst: Some(worst("login: status 200", 49_999, 1)),
                }),
                Some(
                    "checks    99.99% passed (99999 of 100000)   worst: login: status 200 \
                     99.99% (1 failed)",
                ),
                "in flight 0  checks 99.99%",
                "done: 0 requests, checks 99.99% passed (worst: login: status 200, 1 failed)",
            ),
            (
                Some(ChecksState {
                    passed: 3,
                    runs: 4,
                    worst: Some(worst("item: latency < 200ms", 1, 1)),
                }),
                Some("checks    75% passed (3 of 4)   worst: item: latency < 200ms 50% (1 failed)"),
                "in flight 0  checks 75%",
                "done: 0 requests, checks 75% passed (worst: item: latency < 200ms, 1 failed)",
            ),
        ];
        for (checks, view, progress, last) in rows {
            let snapshot = Snapshot {
                checks,
                ..Snapshot::default()
            };
            let lines = snapshot.view_lines();
            let line = lines.iter().find(|l| l.starts_with("checks"));
            assert_eq!(line.map(String::as_str), view);
            assert!(
                snapshot.progress_line().ends_with(progress),
                "{}",
                snapshot.progress_line()
            );
            assert_eq!(snapshot.final_line(), last);
        }
    }

    #[test]
    fn an_open_ended_closed_run_shows_no_asked_rate() {
        let snapshot = Snapshot {
            elapsed_ns: 7_500_000_000,
            last_second: Window {
                span_ns: 1_000_000_000,
                sent: 1234,
                ..Window::default()
            },
            behind: 3,
            ..Snapshot::default()
        };
        assert_eq!(
            snapshot.progress_line(),
            "8s  sent 1234/s  ok -  p99 -  lag p99 -  in flight 0  behind 3"
        );
        assert!(snapshot.view_lines()[0].starts_with("rate/s    asked -  sent 1234"));
    }

    #[test]
    fn a_generator_behind_says_when_connections_hold_it_back() {
        let held = "behind 30 (connections held the rate back)";
        // (behind, of them at a connection cap, the progress line's and the view's end)
        let rows = [
            (0, 0, "in flight 100", "behind 0"),
            (30, 0, "in flight 100  behind 30", "behind 30"),
            (30, 30, held, held),
        ];
        for (behind, behind_at_cap, progress_end, view_end) in rows {
            let snapshot = Snapshot {
                in_flight: 100,
                behind,
                behind_at_cap,
                ..Snapshot::default()
            };
            let progress = snapshot.progress_line();
            assert!(progress.ends_with(progress_end), "{progress}");
            let lines = snapshot.view_lines();
            let view = lines.iter().find(|l| l.starts_with("generator")).unwrap();
            assert!(view.ends_with(view_end), "{view}");
        }
    }

    #[test]
    fn a_flow_s_load_reads_in_runs_started() {
        // A flow of 3 steps: 10 runs started a second of 10 asked, 30 requests. (the
        // unit, runs started known, asked known, the progress line's rates, the
        // view's first line)
        let rows = [
            (
                LoadUnit::Runs,
                true,
                true,
                "  runs started 10.0/s of 10.0/s asked  requests sent 30.0/s  ok",
                "runs/s    started 10.0 of 10.0 asked   run: started 10.0 of 10.0 asked",
            ),
            (
                LoadUnit::Runs,
                false,
                true,
                "  runs asked 10.0/s  requests sent 30.0/s  ok",
                "runs/s    started - of 10.0 asked   run: started - of 10.0 asked",
            ),
            (
                LoadUnit::Runs,
                true,
                false,
                "  runs started 10.0/s  requests sent 30.0/s  ok",
                "runs/s    started 10.0 of - asked   run: started 10.0 of - asked",
            ),
            (
                LoadUnit::RunsAndRequests,
                true,
                true,
                "  runs and requests started 10.0/s of 10.0/s asked  requests sent 30.0/s  ok",
                "runs and requests/s started 10.0 of 10.0 asked   run: started 10.0 of 10.0 asked",
            ),
            (
                LoadUnit::Requests,
                true,
                true,
                "  asked 10.0/s  sent 30.0/s  ok",
                "rate/s    asked 10.0  sent 30.0  done 0.0   run: asked 10.0  sent 30.0  done 0.0",
            ),
        ];
        for (unit, started, asked, progress, view) in rows {
            let window = Window {
                span_ns: 1_000_000_000,
                asked: asked.then_some(10),
                started: started.then_some(10),
                sent: 30,
                ..Window::default()
            };
            let snapshot = Snapshot {
                unit,
                last_second: window.clone(),
                run: window,
                ..Snapshot::default()
            };
            let line = snapshot.progress_line();
            assert!(line.starts_with(&format!("0s{progress}")), "{line}");
            assert_eq!(snapshot.view_lines()[0], view, "{unit:?}");
            if unit != LoadUnit::Requests {
                let requests = &snapshot.view_lines()[1];
                assert_eq!(
                    requests,
                    "rate/s    sent 30.0  done 0.0   run: sent 30.0  done 0.0"
                );
            }
        }
    }
}
