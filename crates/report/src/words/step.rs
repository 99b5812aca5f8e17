//! A step's verdict in words: each [`Miss`] as the verdict table, `summary.md`, the
//! log and the write-up say it (`success 98.48% under 99.00%`).

use analysis::{Miss, Verdict};

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
        Miss::StoppedEarly(rule) => format!("stopped early: {rule}"),
        Miss::Scenario { name, miss: inner } => format!("{name}: {}", self::miss(inner)),
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
