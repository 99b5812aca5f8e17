//! [`StopRule`]: when a capacity run should stop by itself.
//!
//! ```text
//! rule      := metric op threshold ['for' DURATION]
//! metric    := errors | p50 | p90 | p95 | p99 | p999 | max | mean | throughput | lag
//!            | connections_open | messages_in_per_sec | messages_out_per_sec
//!            | message_p50 | message_p90 | message_p95 | message_p99 | message_p999 | message_max
//! op        := > | >= | < | <=
//! threshold := 50%            (errors: share of the second's completed requests)
//!            | 2s | 250ms     (latency percentiles; lag = the second's p99 send lag;
//!                              message latency of stream connections)
//!            | 500            (throughput: successful responses per second;
//!                              connections open; messages a second)
//!            | 90% of rate    (throughput against the asked rate in that second)
//! ```
//! Rules are checked once per second of completions. `for D` needs the condition to
//! hold in every second for D; without it the first second that holds fires. The
//! stream metrics (`connections_open`, `messages_*`, `message_*`: `ws`/`sse` steps'
//! connections and streamed gRPC calls) read the engine's latest stats sample at
//! that second; before any connection opened they say nothing.

use std::fmt;

pub use units::LatencyStat;

/// What a rule watches; also decides the exit code of a run it stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    /// The share of failed requests (exit code 3).
    Errors,
    /// A latency figure (exit code 4).
    Latency,
    /// Throughput against the asked rate (exit code 5).
    Throughput,
    /// Send lag (exit code 6).
    Lag,
    /// Stream connections held, messages a second or message latency (exit code 7).
    Streams,
}

impl RuleKind {
    /// The process exit code when a rule of this kind stops the run.
    pub fn exit_code(self) -> u8 {
        match self {
            RuleKind::Errors => 3,
            RuleKind::Latency => 4,
            RuleKind::Throughput => 5,
            RuleKind::Lag => 6,
            RuleKind::Streams => 7,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Metric {
    Errors,
    Latency(LatencyStat),
    Throughput,
    Lag,
    ConnectionsOpen,
    MessagesInPerSec,
    MessagesOutPerSec,
    /// A stream connection's message latency (no mean: kept as buckets).
    MessageLatency(LatencyStat),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Threshold {
    /// A share of 1 (`50%` = 0.5).
    Ratio(f64),
    Nanos(f64),
    PerSec(f64),
    /// A share of the asked rate.
    OfRate(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Greater,
    GreaterOrEqual,
    Less,
    LessOrEqual,
}

/// A parsed rule.
#[derive(Debug, Clone, PartialEq)]
pub struct StopRule {
    text: String,
    metric: Metric,
    op: Op,
    threshold: Threshold,
    for_ns: u64,
}

/// One second of completed requests, as rules see it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SecondStats {
    /// Requests completed in the second.
    pub requests: u64,
    /// Of those, the failed ones.
    pub errors: u64,
    /// Of those, the successful ones.
    pub successes: u64,
    /// Latency figures of the second's requests, in ns.
    pub latency: LatencyFigures,
    /// p99 send lag of the second's requests, in ns.
    pub lag_p99_ns: u64,
    /// The asked rate in that second (open model), requests per second.
    pub asked_rate_per_sec: Option<f64>,
    /// The stream connections' latest figures; `None` before one opened.
    pub streams: Option<StreamFigures>,
}

/// The stream connections (`ws`, `sse` steps, streamed gRPC calls) as rules see
/// them: the engine's latest stats sample (about a second).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StreamFigures {
    /// Connections open.
    pub open: u64,
    /// Messages (events) received a second.
    pub messages_in_per_sec: f64,
    /// Messages sent a second.
    pub messages_out_per_sec: f64,
    /// The message latencies of the sample (`mean_ns` unused); `None` when none
    /// was timed.
    pub latency: Option<LatencyFigures>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
/// Latency figures of a set of requests, in nanoseconds.
pub struct LatencyFigures {
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 95th percentile.
    pub p95_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Slowest.
    pub max_ns: u64,
    /// Arithmetic mean.
    pub mean_ns: u64,
}

impl StopRule {
    /// Parses a rule; errors quote it and say what was expected.
    pub fn parse(text: &str) -> Result<StopRule, String> {
        let fail = |reason: &str| format!("invalid stop rule {text:?}: {reason}");
        let words: Vec<&str> = text.split_whitespace().collect();
        let (main, for_ns) = match words.iter().position(|w| *w == "for") {
            Some(at) => {
                let [duration] = &words[at + 1..] else {
                    return Err(fail("'for' takes one duration, like 'for 10s'"));
                };
                let duration = units::parse_duration(duration).map_err(|e| fail(&e.to_string()))?;
                (
                    &words[..at],
                    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX),
                )
            }
            None => (&words[..], 0),
        };
        let [metric, op, threshold @ ..] = main else {
            return Err(fail(
                "want METRIC OP THRESHOLD, like 'errors > 50% for 5s' or 'p99 > 2s'",
            ));
        };
        let metric = parse_metric(metric).map_err(|r| fail(&r))?;
        let op = parse_op(op).map_err(|r| fail(&r))?;
        let threshold = parse_threshold(metric, &threshold.join(" ")).map_err(|r| fail(&r))?;
        Ok(StopRule {
            text: text.trim().to_owned(),
            metric,
            op,
            threshold,
            for_ns,
        })
    }

    /// What the rule watches.
    pub fn kind(&self) -> RuleKind {
        match self.metric {
            Metric::Errors => RuleKind::Errors,
            Metric::Latency(_) => RuleKind::Latency,
            Metric::Throughput => RuleKind::Throughput,
            Metric::Lag => RuleKind::Lag,
            Metric::ConnectionsOpen
            | Metric::MessagesInPerSec
            | Metric::MessagesOutPerSec
            | Metric::MessageLatency(_) => RuleKind::Streams,
        }
    }

    /// True when the rule compares against the asked rate (needs an open model).
    pub fn needs_rate(&self) -> bool {
        matches!(self.threshold, Threshold::OfRate(_))
    }

    /// How long the condition must hold.
    pub fn for_ns(&self) -> u64 {
        self.for_ns
    }

    /// The rule's value in one second and whether it holds; `None` when the second
    /// says nothing about it (no requests completed, or no asked rate).
    pub fn check(&self, second: &SecondStats) -> Option<(f64, bool)> {
        let value = match self.metric {
            Metric::Errors if second.requests > 0 => second.errors as f64 / second.requests as f64,
            Metric::Latency(stat) if second.requests > 0 => latency(&second.latency, stat) as f64,
            Metric::Lag if second.requests > 0 => second.lag_p99_ns as f64,
            Metric::Throughput => second.successes as f64,
            Metric::ConnectionsOpen => second.streams?.open as f64,
            Metric::MessagesInPerSec => second.streams?.messages_in_per_sec,
            Metric::MessagesOutPerSec => second.streams?.messages_out_per_sec,
            Metric::MessageLatency(stat) => latency(&second.streams?.latency?, stat) as f64,
            _ => return None,
        };
        let threshold = match self.threshold {
            Threshold::Ratio(v) | Threshold::Nanos(v) | Threshold::PerSec(v) => v,
            Threshold::OfRate(share) => share * second.asked_rate_per_sec?,
        };
        let holds = match self.op {
            Op::Greater => value > threshold,
            Op::GreaterOrEqual => value >= threshold,
            Op::Less => value < threshold,
            Op::LessOrEqual => value <= threshold,
        };
        Some((value, holds))
    }

    /// The value as a person reads it (`62.5%`, `2.4s`, `812/s`).
    pub fn format_value(&self, value: f64) -> String {
        match self.metric {
            Metric::Errors => format!("{:.1}%", value * 100.0),
            Metric::Latency(_) | Metric::Lag | Metric::MessageLatency(_) => {
                units::GoDuration(std::time::Duration::from_nanos(value as u64)).to_string()
            }
            Metric::Throughput | Metric::MessagesInPerSec | Metric::MessagesOutPerSec => {
                format!("{value:.0}/s")
            }
            Metric::ConnectionsOpen => format!("{value:.0}"),
        }
    }
}

impl fmt::Display for StopRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn latency(figures: &LatencyFigures, stat: LatencyStat) -> u64 {
    match stat {
        LatencyStat::P50 => figures.p50_ns,
        LatencyStat::P90 => figures.p90_ns,
        LatencyStat::P95 => figures.p95_ns,
        LatencyStat::P99 => figures.p99_ns,
        LatencyStat::P999 => figures.p999_ns,
        LatencyStat::Max => figures.max_ns,
        LatencyStat::Mean => figures.mean_ns,
    }
}

fn parse_metric(word: &str) -> Result<Metric, String> {
    if let Some(stat) = LatencyStat::from_name(word) {
        return Ok(Metric::Latency(stat));
    }
    if let Some(stat) = word
        .strip_prefix("message_")
        .and_then(LatencyStat::from_name)
        .filter(|stat| *stat != LatencyStat::Mean)
    {
        return Ok(Metric::MessageLatency(stat));
    }
    Ok(match word {
        "errors" => Metric::Errors,
        "throughput" => Metric::Throughput,
        "lag" => Metric::Lag,
        "connections_open" => Metric::ConnectionsOpen,
        "messages_in_per_sec" => Metric::MessagesInPerSec,
        "messages_out_per_sec" => Metric::MessagesOutPerSec,
        other => {
            return Err(format!(
                "unknown metric {other:?} (want errors, p50, p90, p95, p99, p999, max, mean, throughput, lag, \
                 connections_open, messages_in_per_sec, messages_out_per_sec or message_p50 .. message_max)"
            ));
        }
    })
}

fn parse_op(word: &str) -> Result<Op, String> {
    Ok(match word {
        ">" => Op::Greater,
        ">=" => Op::GreaterOrEqual,
        "<" => Op::Less,
        "<=" => Op::LessOrEqual,
        other => {
            return Err(format!(
                "unknown comparison {other:?} (want >, >=, < or <=)"
            ));
        }
    })
}

fn parse_threshold(metric: Metric, text: &str) -> Result<Threshold, String> {
    let percent = |t: &str| -> Result<f64, String> {
        let number = t
            .strip_suffix('%')
            .ok_or_else(|| format!("{t:?} is not a percentage like 50%"))?;
        let value: f64 = number
            .trim()
            .parse()
            .map_err(|_| format!("{t:?} is not a percentage like 50%"))?;
        if !(0.0..=1000.0).contains(&value) {
            return Err(format!("{t:?} is out of range"));
        }
        Ok(value / 100.0)
    };
    match metric {
        Metric::Errors => Ok(Threshold::Ratio(percent(text)?)),
        Metric::Latency(_) | Metric::Lag | Metric::MessageLatency(_) => {
            let duration = units::parse_duration(text).map_err(|e| e.to_string())?;
            Ok(Threshold::Nanos(duration.as_nanos() as f64))
        }
        Metric::ConnectionsOpen | Metric::MessagesInPerSec | Metric::MessagesOutPerSec => {
            let number = text.trim_end_matches("/s");
            match number.parse::<f64>() {
                Ok(value) if value.is_finite() && value >= 0.0 => Ok(Threshold::PerSec(value)),
                _ => Err(format!("{text:?} is not a count (a number >= 0)")),
            }
        }
        Metric::Throughput => match text.strip_suffix("of rate") {
            Some(share) => Ok(Threshold::OfRate(percent(share.trim())?)),
            None => {
                let number = text.trim_end_matches("/s");
                let value: f64 = number
                    .parse()
                    .map_err(|_| format!("{text:?} is not requests per second or 'N% of rate'"))?;
                if !value.is_finite() || value < 0.0 {
                    return Err(format!("{text:?} must be a number >= 0"));
                }
                Ok(Threshold::PerSec(value))
            }
        },
    }
}

/// Tracks one rule over the run and says when it fires.
#[derive(Debug, Clone)]
pub struct RuleWatch {
    /// The rule watched.
    pub rule: StopRule,
    /// Start of the current streak of seconds in which the rule held.
    streak_start_ns: Option<u64>,
    /// The rule's measure in the last second judged (0 when it had none).
    last_value: f64,
}

/// A rule that fired: which, when (ns from the start), and the value that tripped it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fired {
    /// The rule that fired.
    pub rule: StopRule,
    /// When it fired, in ns from the run's start.
    pub at_ns: u64,
    /// The value that tripped it (a ratio, ns or requests per second).
    pub value: f64,
}

impl Fired {
    /// `'p99 > 2s for 10s' fired at 34s (value 2.412s)`.
    pub fn describe(&self) -> String {
        let at = units::GoDuration(units::round_for_report(std::time::Duration::from_nanos(
            self.at_ns,
        )));
        format!(
            "'{}' fired at {at} (value {})",
            self.rule,
            self.rule.format_value(self.value)
        )
    }
}

impl RuleWatch {
    /// Watches `rule` from the run's start.
    pub fn new(rule: StopRule) -> RuleWatch {
        RuleWatch {
            rule,
            streak_start_ns: None,
            last_value: 0.0,
        }
    }

    /// How long the rule has held, through the end of the last second judged at
    /// `judged_ns` (0 when the last second broke the streak): a live view's
    /// "3 of 10 s".
    pub fn held_ns(&self, judged_ns: u64) -> u64 {
        self.streak_start_ns
            .map_or(0, |start| judged_ns.saturating_sub(start))
    }

    /// The rule's measure in the last second judged (a ratio, ns or requests per
    /// second, as [`StopRule::format_value`] prints it).
    pub fn last_value(&self) -> f64 {
        self.last_value
    }

    /// Feeds the second starting at `second_start_ns`; returns the firing, if any.
    pub fn observe(&mut self, second_start_ns: u64, second: &SecondStats) -> Option<Fired> {
        let (value, holds) = self.rule.check(second).unwrap_or((0.0, false));
        self.last_value = value;
        if !holds {
            self.streak_start_ns = None;
            return None;
        }
        let start = *self.streak_start_ns.get_or_insert(second_start_ns);
        let held_ns = second_start_ns + 1_000_000_000 - start;
        (held_ns >= self.rule.for_ns.max(1)).then(|| Fired {
            rule: self.rule.clone(),
            at_ns: second_start_ns + 1_000_000_000,
            value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn second(requests: u64, errors: u64, p99_ms: u64) -> SecondStats {
        SecondStats {
            requests,
            errors,
            successes: requests - errors,
            latency: LatencyFigures {
                p99_ns: p99_ms * 1_000_000,
                ..LatencyFigures::default()
            },
            lag_p99_ns: 5_000_000,
            asked_rate_per_sec: Some(100.0),
            streams: None,
        }
    }

    #[test]
    fn stream_rules_read_the_latest_sample_and_say_nothing_before_one() {
        let streams = StreamFigures {
            open: 850,
            messages_in_per_sec: 1200.0,
            messages_out_per_sec: 40.0,
            latency: Some(LatencyFigures {
                p99_ns: 250_000_000,
                max_ns: 400_000_000,
                ..LatencyFigures::default()
            }),
        };
        let with = SecondStats {
            streams: Some(streams),
            ..SecondStats::default()
        };
        let untimed = SecondStats {
            streams: Some(StreamFigures {
                latency: None,
                ..streams
            }),
            ..SecondStats::default()
        };
        // The rule, the second it judges, and its value and verdict (`None`: no say).
        type Row<'a> = (&'a str, &'a SecondStats, Option<(f64, bool)>);
        let rows: &[Row<'_>] = &[
            ("connections_open < 900", &with, Some((850.0, true))),
            ("connections_open < 800", &with, Some((850.0, false))),
            ("messages_in_per_sec < 1000", &with, Some((1200.0, false))),
            ("messages_out_per_sec < 50", &with, Some((40.0, true))),
            ("message_p99 > 200ms", &with, Some((250e6, true))),
            ("message_max > 500ms", &with, Some((400e6, false))),
            ("message_p99 > 200ms", &untimed, None),
            ("connections_open < 900", &SecondStats::default(), None),
        ];
        for (text, second, want) in rows {
            let rule = StopRule::parse(text).unwrap();
            assert_eq!(rule.check(second), *want, "{text}");
        }
        let rule = StopRule::parse("connections_open < 900").unwrap();
        assert_eq!(rule.format_value(850.0), "850");
        let rule = StopRule::parse("messages_in_per_sec < 1000").unwrap();
        assert_eq!(rule.format_value(1200.0), "1200/s");
    }

    #[test]
    fn parses_the_rules_users_write() {
        let rows: &[(&str, RuleKind, u64)] = &[
            ("errors > 50% for 5s", RuleKind::Errors, 5 * S),
            ("p99 > 2s for 10s", RuleKind::Latency, 10 * S),
            (
                "throughput < 90% of rate for 10s",
                RuleKind::Throughput,
                10 * S,
            ),
            ("lag > 100ms", RuleKind::Lag, 0),
            ("throughput <= 500/s", RuleKind::Throughput, 0),
            ("mean >= 250ms for 1m", RuleKind::Latency, 60 * S),
            ("connections_open < 900 for 5s", RuleKind::Streams, 5 * S),
            ("messages_in_per_sec < 1000", RuleKind::Streams, 0),
            ("messages_out_per_sec <= 50/s", RuleKind::Streams, 0),
            ("message_p99 > 200ms", RuleKind::Streams, 0),
            ("message_max >= 1s for 2s", RuleKind::Streams, 2 * S),
        ];
        for &(text, kind, for_ns) in rows {
            let rule = StopRule::parse(text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((rule.kind(), rule.for_ns()), (kind, for_ns), "{text}");
        }
        assert!(
            StopRule::parse("throughput < 90% of rate")
                .unwrap()
                .needs_rate()
        );
    }

    #[test]
    fn names_bad_rules() {
        let rows: &[(&str, &str)] = &[
            ("errors > 50", "not a percentage"),
            ("p99 > 2", "missing unit"),
            ("p98 > 2s", "unknown metric \"p98\""),
            ("p99 = 2s", "unknown comparison \"=\""),
            ("p99 > 2s for", "'for' takes one duration"),
            ("p99 > 2s for ten", "invalid duration"),
            ("errors", "want METRIC OP THRESHOLD"),
            ("throughput < lots", "not requests per second"),
            ("errors > 5000%", "out of range"),
            ("connections_open < many", "not a count"),
            ("messages_in_per_sec < -5", "not a count"),
            ("message_p99 > 200", "missing unit"),
            ("message_mean > 2s", "unknown metric \"message_mean\""),
            ("connections > 5", "unknown metric \"connections\""),
        ];
        for (text, want) in rows {
            let err = StopRule::parse(text).unwrap_err();
            assert!(
                err.contains(want) && err.contains(&format!("{text:?}")),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn fires_after_holding_for_its_duration() {
        let mut watch = RuleWatch::new(StopRule::parse("errors > 50% for 3s").unwrap());
        let seconds = [
            second(100, 60, 1),
            second(100, 70, 1),
            second(100, 10, 1),
            second(100, 60, 1),
            second(100, 60, 1),
            second(100, 90, 1),
        ];
        let fired: Vec<Option<u64>> = seconds
            .iter()
            .enumerate()
            .map(|(i, s)| watch.observe(i as u64 * S, s).map(|f| f.at_ns))
            .collect();
        assert_eq!(
            fired,
            [None, None, None, None, None, Some(6 * S)],
            "the streak restarts after a good second"
        );
        let mut instant = RuleWatch::new(StopRule::parse("p99 > 2s").unwrap());
        assert_eq!(instant.observe(0, &second(10, 0, 1900)), None);
        let fired = instant.observe(S, &second(10, 0, 2100)).unwrap();
        assert_eq!(fired.at_ns, 2 * S);
        assert_eq!(fired.describe(), "'p99 > 2s' fired at 2s (value 2.1s)");
    }

    #[test]
    fn throughput_compares_with_the_asked_rate() {
        let rule = StopRule::parse("throughput < 90% of rate").unwrap();
        assert_eq!(rule.check(&second(100, 20, 1)), Some((80.0, true)));
        assert_eq!(rule.check(&second(100, 5, 1)), Some((95.0, false)));
        let closed = SecondStats {
            asked_rate_per_sec: None,
            ..second(100, 20, 1)
        };
        assert_eq!(rule.check(&closed), None, "no asked rate, no verdict");
        let idle = StopRule::parse("p99 > 1s").unwrap();
        assert_eq!(
            idle.check(&SecondStats::default()),
            None,
            "an empty second says nothing about latency"
        );
    }
}
