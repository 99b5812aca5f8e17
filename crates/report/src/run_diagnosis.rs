//! The diagnosis of a whole run: its knee from the saturation point, the generator's
//! health from the warnings and its in-flight count, the watched resources from
//! [`crate::pressure::Pressures`], judged by [`analysis::diagnose`].

use analysis::diagnosis::{Diagnosis, GeneratorState, Knee};
use analysis::{Finding, diagnose};
use units::GoDuration;

use crate::extras::RunFacts;
use crate::metrics::Report;
use crate::text::turn_name;
use crate::warnings::Warning;

/// A load without a knee whose success ratio is below this was not served.
const SUCCESS_RATIO: f64 = 0.99;

/// In-flight requests at this share of the cap mean the server held them back: the lag
/// that follows is the server's, not the generator's.
const CAP_SHARE: f64 = 0.9;

/// The run's diagnosis, when there is something to judge: resource samples, or a knee.
pub fn run_diagnosis(report: &Report, facts: &RunFacts, warnings: &[Warning]) -> Option<Diagnosis> {
    let knee = match &facts.saturation {
        Some(Finding::Saturated {
            point,
            peak_ok_per_sec,
            ..
        }) => Some(Knee {
            at_ns: point.start_ns,
            offered_per_sec: point.offered_per_sec,
            peak_ok_per_sec: *peak_ok_per_sec,
            signal: format!("{} turned first", turn_name(point.kind)),
        }),
        _ => None,
    };
    if knee.is_none() && facts.watched.is_none() {
        return None;
    }
    let trouble = (knee.is_none() && report.success_ratio < SUCCESS_RATIO).then(|| {
        format!(
            "{:.1}% of the requests failed",
            (1.0 - report.success_ratio) * 100.0
        )
    });
    let served_badly = knee.is_some() || trouble.is_some();
    let generator = GeneratorState {
        fell_behind: fell_behind(report, facts, warnings, served_badly),
    };
    let watched = facts.watched.as_deref().unwrap_or_default();
    let no_knee = match &facts.saturation {
        Some(finding @ (Finding::NotARamp { .. } | Finding::NoSaturation { .. })) => {
            Some(finding.describe())
        }
        _ => None,
    };
    let mut diagnosis = diagnose(knee, trouble, &generator, watched);
    diagnosis.start_unix_ns = facts.start_unix_ns;
    diagnosis.no_knee = no_knee;
    diagnosis.unjudged.clone_from(&facts.unjudged);
    Some(diagnosis)
}

/// Why the generator, not the server, shaped the run. Below its in-flight cap: it sent
/// less than asked, or its send lag p99 passed 1 ms ([`crate::LAG_P99_LIMIT_NS`]) and the
/// answers' median latency (the slow part of the latencies is mostly its own delay); a
/// lag of a few milliseconds beside answers of fifty is a warning, not a verdict. At the
/// cap it waited on the answers: the server's doing when they slowed or failed
/// (`served_badly`), the cap's when they kept their pace (rate x latency needs more).
fn fell_behind(
    report: &Report,
    facts: &RunFacts,
    warnings: &[Warning],
    served_badly: bool,
) -> Option<String> {
    let cap = facts.in_flight_cap.filter(|&cap| cap > 0);
    let at_cap = cap.is_some_and(|cap| facts.in_flight_peak as f64 >= CAP_SHARE * cap as f64);
    let behind = warnings.iter().find(|warning| match **warning {
        Warning::FellBehind { lag_p99_ns } => at_cap || lag_p99_ns >= report.latencies.p50_ns,
        Warning::RateShort { .. } => true,
        Warning::Unsent { .. } => false,
    })?;
    if at_cap {
        return (!served_badly).then(|| {
            format!(
                "requests in flight reached its cap (-max-workers {}) while the answers kept \
                 their pace: the rate asked needs more in flight; raise -max-workers",
                cap.unwrap_or_default()
            )
        });
    }
    Some(match *behind {
        Warning::FellBehind { lag_p99_ns } => format!(
            "send lag p99 {} against a median latency of {}, with requests in flight under \
             the cap; give it more CPU or less load",
            GoDuration::report_ns(lag_p99_ns),
            GoDuration::report_ns(report.latencies.p50_ns)
        ),
        Warning::RateShort {
            asked_per_sec,
            achieved_per_sec,
            ..
        } => format!(
            "it sent {achieved_per_sec:.0} req/s of the {asked_per_sec:.0} asked; give it more \
             CPU or less load"
        ),
        Warning::Unsent { unsent } => format!("{unsent} requests were never sent"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use record::RunTables;

    #[test]
    fn the_generator_ran_out_only_when_its_own_delay_shaped_the_run() {
        let mut report = Metrics::new(None).close(&RunTables::default());
        let lag = |ms: u64| Warning::FellBehind {
            lag_p99_ns: ms * 1_000_000,
        };
        let short = Warning::RateShort {
            asked_per_sec: 4000.0,
            achieved_per_sec: 3000.0,
            unsent: 10,
        };
        // (case, median latency ms, in flight at peak of a cap of 100, warnings,
        //  served badly, the reason's start or None)
        type Case<'a> = (&'a str, u64, u64, Vec<Warning>, bool, Option<&'a str>);
        let cases: Vec<Case<'_>> = vec![
            (
                "3 ms of lag beside 50 ms answers",
                50,
                10,
                vec![lag(3)],
                false,
                None,
            ),
            (
                "7 ms of lag beside 0 ms answers",
                0,
                10,
                vec![lag(7)],
                false,
                Some("send lag p99 7ms"),
            ),
            (
                "sent less than asked",
                50,
                10,
                vec![short],
                false,
                Some("it sent 3000 req/s"),
            ),
            (
                "at the cap, answers on pace",
                100,
                100,
                vec![lag(30)],
                false,
                Some("requests in flight reached its cap"),
            ),
            (
                "at the cap, the server slowed",
                100,
                100,
                vec![lag(30)],
                true,
                None,
            ),
            ("no warning", 0, 10, vec![], false, None),
        ];
        for (case, p50_ms, in_flight, warnings, served_badly, want) in cases {
            report.latencies.p50_ns = p50_ms * 1_000_000;
            let facts = RunFacts {
                in_flight_peak: in_flight,
                in_flight_cap: Some(100),
                ..RunFacts::default()
            };
            let got = fell_behind(&report, &facts, &warnings, served_badly);
            match (got, want) {
                (None, None) => {}
                (Some(got), Some(want)) => assert!(got.starts_with(want), "{case}: {got}"),
                (got, want) => panic!("{case}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn a_load_without_a_knee_says_why_and_what_was_not_judged() {
        let mut report = Metrics::new(None).close(&RunTables::default());
        report.success_ratio = 1.0;
        let host = analysis::Watched {
            name: "host".to_owned(),
            resource: analysis::diagnosis::Resource::HostCpu,
            series: "host.cpu_percent{cpu=all}".to_owned(),
            limit: Some(100.0),
            unit: "%",
            peak: 20.0,
            peak_at_ns: 0,
            crossed: None,
            example: None,
            note: None,
        };
        // (why the load has no knee, the headline's start)
        let cases = [
            (
                Finding::NotARamp {
                    reason: "6 loaded windows, 9 needed".to_owned(),
                },
                "no saturation point: 6 loaded windows, 9 needed; nothing monitored",
            ),
            (
                Finding::NoSaturation {
                    up_to_per_sec: 800.0,
                    peak_ok_per_sec: 799.0,
                },
                "no saturation: throughput, latency and errors held up to 800/s",
            ),
        ];
        for (saturation, want) in cases {
            let facts = RunFacts {
                saturation: Some(saturation),
                watched: Some(vec![host.clone()]),
                unjudged: vec!["db: 3 readings missing from 1.0 s (login refused)".to_owned()],
                ..RunFacts::default()
            };
            let diagnosis = run_diagnosis(&report, &facts, &[]).unwrap();
            let lines = diagnosis.lines();
            assert!(lines[0].starts_with(want), "{lines:?}");
            assert_eq!(
                lines.last().map(String::as_str),
                Some("not judged: db: 3 readings missing from 1.0 s (login refused)")
            );
        }
    }
}
