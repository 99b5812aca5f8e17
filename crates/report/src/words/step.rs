//! A step's verdict in words: each [`Miss`] as the verdict table, `summary.md`, the
//! log and the write-up say it (`success 98.48% under 99.00%`).

use analysis::{ConnectionsAsked, MessageWay, Miss, Verdict};

use super::floor_percent;

/// The reasons, joined for a log line and a table's `why` cell; a pass says `every
/// bound held`.
pub fn verdict_why(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Pass => "every bound held".to_owned(),
        Verdict::Fail(misses) | Verdict::Inconclusive(misses) => {
            let words: Vec<String> = misses.iter().map(miss).collect();
            words.join("; ")
        }
    }
}

/// One reason: the figure against the bound it missed.
pub fn miss(miss: &Miss) -> String {
    match miss {
        Miss::NoRequests => "no requests were measured".to_owned(),
        Miss::Unreachable { connects_failed } => {
            format!("nothing listened: every request failed to connect ({connects_failed})")
        }
        Miss::SentShort {
            sent_per_sec,
            asked_per_sec,
            min_ratio,
        } => format!(
            "generator sent {sent_per_sec:.1}/s of {asked_per_sec:.1}/s asked ({:.2}%, needs {:.0}%)",
            sent_per_sec / asked_per_sec * 100.0,
            min_ratio * 100.0
        ),
        Miss::Lag(lag) => format!(
            "generator send lag p99 {} over {}",
            millis(lag.p99_ns),
            millis(lag.limit_ns)
        ),
        Miss::Success { ratio, min } => {
            format!("success {:.2}% under {:.2}%", ratio * 100.0, min * 100.0)
        }
        Miss::Latency {
            stat,
            value_ns,
            max_ns,
        } => format!("{stat} {} over {}", millis(*value_ns), millis(*max_ns)),
        Miss::NotMeasured(stat) => format!("{stat} was not measured"),
        Miss::Errors { kind, ratio, max } => format!(
            "{kind} errors {:.2}% over {:.2}%",
            ratio * 100.0,
            max * 100.0
        ),
        Miss::Check {
            name,
            passes,
            fails,
            min,
        } => {
            let total = passes + fails;
            format!(
                "check {name:?} {} under {} ({fails} of {total} failed)",
                floor_percent(*passes, total),
                bound_percent(*min),
            )
        }
        Miss::CheckNotMeasured { name, measured } => {
            format!(
                "check {name:?} was not measured ({})",
                measured_names(measured)
            )
        }
        Miss::NoChecks => "no check was measured (the load is not a flow with checks)".to_owned(),
        Miss::ConnectionsHeld {
            held,
            asked,
            min,
            refused,
            cut,
        } => held_words(*held, *asked, *min, *refused, *cut),
        Miss::MessageRate {
            way,
            per_sec,
            min_per_sec,
        } => format!(
            "messages {} {per_sec:.1}/s under {}/s",
            way_word(*way),
            short_number(*min_per_sec)
        ),
        Miss::MessageLatency {
            stat,
            value_ns,
            max_ns,
        } => format!(
            "message {stat} {} over {}",
            millis(*value_ns),
            millis(*max_ns)
        ),
        Miss::MessageNotTimed(stat) => {
            format!("message {stat} was not measured (no message was timed)")
        }
        Miss::NoConnections => {
            "no connection was opened (the load has no ws, sse or stream step)".to_owned()
        }
        Miss::StoppedEarly(rule) => format!("stopped early: {rule}"),
        Miss::Scenario { name, miss: inner } => format!("{name}: {}", self::miss(inner)),
    }
}

/// `connections held 500 at most of 600 users (83.33%, under 99.00%): 100 upgrades
/// refused`, or `connections opened 450 of 500 arrivals ...`.
fn held_words(held: u64, asked: ConnectionsAsked, min: f64, refused: u64, cut: u64) -> String {
    let (what, asked, whom) = match asked {
        ConnectionsAsked::Users(n) => ("held", n, format!("at most of {n} users")),
        ConnectionsAsked::Arrivals(n) => ("opened", n, format!("of {n} arrivals")),
    };
    let mut why = Vec::new();
    if refused > 0 {
        why.push(format!("{refused} upgrades refused"));
    }
    if cut > 0 {
        why.push(format!("{cut} cut by the server"));
    }
    let why = if why.is_empty() {
        String::new()
    } else {
        format!(": {}", why.join(", "))
    };
    format!(
        "connections {what} {held} {whom} ({}, under {}){why}",
        floor_percent(held, asked),
        bound_percent(min)
    )
}

/// `1000`, `12.5`: a bound as it was written, near enough.
fn short_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value:.1}")
    }
}

/// `in` or `out`.
pub(crate) fn way_word(way: MessageWay) -> &'static str {
    match way {
        MessageWay::In => "in",
        MessageWay::Out => "out",
    }
}

/// The measured checks' names, for a bound that named none of them.
fn measured_names(checks: &[String]) -> String {
    if checks.is_empty() {
        return "no check was".to_owned();
    }
    let names: Vec<String> = checks.iter().map(|name| format!("{name:?}")).collect();
    format!("measured: {}", names.join(", "))
}

/// A bound as a percentage: two decimals, more when it has them (`99.995%`).
fn bound_percent(ratio: f64) -> String {
    let percent = ratio * 100.0;
    let decimals = (2..6)
        .find(|&d| {
            let scale = 10f64.powi(d);
            ((percent * scale).round() / scale - percent).abs() < 1e-9
        })
        .unwrap_or(6) as usize;
    format!("{percent:.decimals$}%")
}

fn millis(ns: u64) -> String {
    format!("{:.3}ms", ns as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::{GeneratorHealth, Percentile};

    const MS: u64 = 1_000_000;

    #[test]
    fn each_miss_in_words() {
        let lag = GeneratorHealth::default().weigh_lag(5 * MS, 2 * MS, None);
        let check = |name: &str, passes, fails, min| Miss::Check {
            name: name.to_owned(),
            passes,
            fails,
            min,
        };
        let rows: Vec<(Miss, &str)> = vec![
            (Miss::NoRequests, "no requests were measured"),
            (
                Miss::Unreachable {
                    connects_failed: 10_000,
                },
                "nothing listened: every request failed to connect (10000)",
            ),
            (
                Miss::SentShort {
                    sent_per_sec: 900.0,
                    asked_per_sec: 1000.0,
                    min_ratio: 0.99,
                },
                "generator sent 900.0/s of 1000.0/s asked (90.00%, needs 99%)",
            ),
            (
                Miss::Lag(lag),
                "generator send lag p99 5.000ms over 1.000ms",
            ),
            (
                Miss::Success {
                    ratio: 0.9,
                    min: 0.99,
                },
                "success 90.00% under 99.00%",
            ),
            (
                Miss::Latency {
                    stat: Percentile::P99,
                    value_ns: 80 * MS,
                    max_ns: 50 * MS,
                },
                "p99 80.000ms over 50.000ms",
            ),
            (
                Miss::NotMeasured(Percentile::P999),
                "p99.9 was not measured",
            ),
            (
                Miss::Errors {
                    kind: "timeout".to_owned(),
                    ratio: 0.01,
                    max: 0.001,
                },
                "timeout errors 1.00% over 0.10%",
            ),
            (
                check("login: status 200", 998, 2, 0.999),
                "check \"login: status 200\" 99.80% under 99.90% (2 of 1000 failed)",
            ),
            (
                check("login: status 200", 998, 2, 0.99995),
                "check \"login: status 200\" 99.80% under 99.995% (2 of 1000 failed)",
            ),
            (
                check("item: latency < 200ms", 999_999, 1, 1.0),
                "check \"item: latency < 200ms\" 99.99% under 100.00% (1 of 1000000 failed)",
            ),
            (
                Miss::CheckNotMeasured {
                    name: "login: status 20".to_owned(),
                    measured: vec![
                        "login: status 200".to_owned(),
                        "list: status 200".to_owned(),
                    ],
                },
                "check \"login: status 20\" was not measured (measured: \"login: status 200\", \"list: status 200\")",
            ),
            (
                Miss::CheckNotMeasured {
                    name: "login: status 200".to_owned(),
                    measured: vec![],
                },
                "check \"login: status 200\" was not measured (no check was)",
            ),
            (
                Miss::NoChecks,
                "no check was measured (the load is not a flow with checks)",
            ),
            (
                Miss::ConnectionsHeld {
                    held: 500,
                    asked: ConnectionsAsked::Users(600),
                    min: 0.99,
                    refused: 1234,
                    cut: 2,
                },
                "connections held 500 at most of 600 users (83.33%, under 99.00%): 1234 upgrades refused, 2 cut by the server",
            ),
            (
                Miss::ConnectionsHeld {
                    held: 999,
                    asked: ConnectionsAsked::Arrivals(1000),
                    min: 1.0,
                    refused: 0,
                    cut: 0,
                },
                "connections opened 999 of 1000 arrivals (99.90%, under 100.00%)",
            ),
            (
                Miss::MessageRate {
                    way: MessageWay::In,
                    per_sec: 812.46,
                    min_per_sec: 1000.0,
                },
                "messages in 812.5/s under 1000/s",
            ),
            (
                Miss::MessageLatency {
                    stat: Percentile::P99,
                    value_ns: 80 * MS,
                    max_ns: 50 * MS,
                },
                "message p99 80.000ms over 50.000ms",
            ),
            (
                Miss::MessageNotTimed(Percentile::Max),
                "message max was not measured (no message was timed)",
            ),
            (
                Miss::NoConnections,
                "no connection was opened (the load has no ws, sse or stream step)",
            ),
            (
                Miss::StoppedEarly("errors > 50%".to_owned()),
                "stopped early: errors > 50%",
            ),
            (
                Miss::Scenario {
                    name: "bg".to_owned(),
                    miss: Box::new(Miss::NoRequests),
                },
                "bg: no requests were measured",
            ),
        ];
        for (reason, want) in rows {
            assert_eq!(miss(&reason), want, "{reason:?}");
        }
        let two = Verdict::Inconclusive(vec![
            Miss::Lag(lag),
            Miss::Success {
                ratio: 0.9,
                min: 0.99,
            },
        ]);
        assert_eq!(
            verdict_why(&two),
            "generator send lag p99 5.000ms over 1.000ms; success 90.00% under 99.00%"
        );
        assert_eq!(verdict_why(&Verdict::Pass), "every bound held");
    }

    #[test]
    fn bounds_read_with_their_decimals() {
        let bounds: &[(f64, &str)] = &[
            (0.99, "99.00%"),
            (0.9999, "99.99%"),
            (0.99995, "99.995%"),
            (1.0, "100.00%"),
            (0.0, "0.00%"),
        ];
        for &(ratio, want) in bounds {
            assert_eq!(bound_percent(ratio), want, "{ratio}");
        }
    }
}
