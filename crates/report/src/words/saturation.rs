//! The saturation point in words: a [`Finding`] (the report's `Saturation` rows, the
//! diagnosis's "no saturation" headline), each [`Turn`], and why a load has no knee
//! ([`NoRamp`]).

use analysis::{Finding, NoRamp, Seen, Turn};

/// One or a few lines for a report.
pub fn finding(finding: &Finding) -> String {
    match finding {
        Finding::NotARamp { reason } => format!("no saturation point: {}", no_ramp(reason)),
        Finding::NoSaturation {
            up_to_per_sec,
            peak_ok_per_sec,
        } => format!(
            "no saturation: throughput, latency and errors held up to {up_to_per_sec:.0}/s \
             offered (peak {peak_ok_per_sec:.0}/s successful)"
        ),
        Finding::Saturated {
            point,
            turns,
            peak_ok_per_sec,
        } => {
            let mut text = format!(
                "saturated at {:.0}/s offered (peak {peak_ok_per_sec:.0}/s successful): {}",
                point.offered_per_sec,
                turn(point)
            );
            for other in turns.iter().filter(|t| t.kind() != point.kind()) {
                text.push_str("; ");
                text.push_str(&turn(other));
            }
            text
        }
    }
}

/// What was seen, against which threshold, from when.
pub fn turn(turn: &Turn) -> String {
    let (windows, from) = (turn.windows, seconds(turn.start_ns));
    match turn.seen {
        Seen::Throughput {
            ok_per_sec,
            shortfall_ratio,
        } => format!(
            "successful throughput {ok_per_sec:.0}/s fell more than {:.0}% below the offered \
             {:.0}/s for {windows} windows from {from}",
            shortfall_ratio * 100.0,
            turn.offered_per_sec
        ),
        Seen::Errors {
            failed_share,
            max_share,
        } => format!(
            "errors reached {:.1}% of completions (threshold {:.1}%) for {windows} windows \
             from {from}",
            failed_share * 100.0,
            max_share * 100.0
        ),
        Seen::Latency {
            latency_ns,
            factor,
            early_ns,
        } => format!(
            "latency {} passed {factor:.0}x the early ramp's {} for {windows} windows from \
             {from}",
            millis(latency_ns),
            millis(early_ns)
        ),
    }
}

/// Why a load has no saturation point.
pub fn no_ramp(reason: &NoRamp) -> String {
    match reason {
        NoRamp::TooFewWindows { loaded, needed } => {
            format!("{loaded} loaded windows, {needed} needed")
        }
        NoRamp::Flat {
            first_per_sec,
            last_per_sec,
        } => format!(
            "the offered rate did not rise (from {first_per_sec:.0}/s to {last_per_sec:.0}/s)"
        ),
        NoRamp::ClosedModel => "a closed-model load: its rate follows the responses".to_owned(),
        NoRamp::ModelUnknown => "the load model is not recorded (an imported file)".to_owned(),
        NoRamp::HeldOnly => "every request held its connection open (ws, sse, a stream's \
                             body, a streamed call): no request's latency or throughput to \
                             read; the connections are judged on their own"
            .to_owned(),
        NoRamp::TooLong { max_seconds } => {
            format!("the run spans more than {max_seconds} seconds")
        }
    }
}

fn seconds(ns: u64) -> String {
    format!("{:.0}s", ns as f64 / 1e9)
}

fn millis(ns: u64) -> String {
    format!("{:.1}ms", ns as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::{SaturationConfig, Window, find_saturation};

    /// A ramp from 100/s to 6000/s over 60 s against a server that serves 3000/s and
    /// fails the excess, its latency growing by 50 ms a second past it.
    fn saturated() -> Finding {
        let windows: Vec<Window> = (0..60u64)
            .map(|s| {
                let offered = 100.0 + 5900.0 * s as f64 / 59.0;
                let ok = offered.min(3000.0);
                let over_s = (0..=s)
                    .filter(|&t| 100.0 + 5900.0 * t as f64 / 59.0 > 3000.0)
                    .count();
                Window {
                    start_ns: s * 1_000_000_000,
                    offered_per_sec: offered,
                    ok_per_sec: ok,
                    failed_per_sec: offered - ok,
                    latency_ns: ((2.0 + 50.0 * over_s as f64) * 1e6) as u64,
                }
            })
            .collect();
        find_saturation(&windows, &SaturationConfig::default())
    }

    #[test]
    fn each_finding_and_turn_in_words() {
        let text = finding(&saturated());
        assert!(
            text.starts_with(
                "saturated at 3100/s offered (peak 3000/s successful): errors reached 3.2% of \
                 completions (threshold 1.0%) for 3 windows from 30s"
            ),
            "{text}"
        );
        assert!(
            text.contains("fell more than 5% below the offered 3200/s"),
            "{text}"
        );
        assert!(text.contains("; latency "), "{text}");
        let rows = [
            (
                Finding::NoSaturation {
                    up_to_per_sec: 1000.0,
                    peak_ok_per_sec: 999.0,
                },
                "no saturation: throughput, latency and errors held up to 1000/s offered \
                 (peak 999/s successful)",
            ),
            (
                Finding::NotARamp {
                    reason: NoRamp::TooFewWindows {
                        loaded: 5,
                        needed: 9,
                    },
                },
                "no saturation point: 5 loaded windows, 9 needed",
            ),
            (
                Finding::NotARamp {
                    reason: NoRamp::Flat {
                        first_per_sec: 1000.0,
                        last_per_sec: 1000.0,
                    },
                },
                "no saturation point: the offered rate did not rise (from 1000/s to 1000/s)",
            ),
            (
                Finding::NotARamp {
                    reason: NoRamp::TooLong { max_seconds: 86400 },
                },
                "no saturation point: the run spans more than 86400 seconds",
            ),
        ];
        for (given, want) in rows {
            assert_eq!(finding(&given), want);
        }
    }
}
