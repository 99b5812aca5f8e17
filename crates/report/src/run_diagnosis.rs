//! The diagnosis of a whole run: its knee from the saturation point, the generator's
//! health from the warnings and its in-flight count, the watched resources from
//! [`crate::pressure::Pressures`], judged by [`analysis::diagnose`].

use analysis::diagnosis::{Behind, Diagnosis, GeneratorState, Knee, Trouble};
use analysis::{Finding, LagWeight, diagnose};

use crate::extras::RunFacts;
use crate::metrics::Report;
use crate::warnings::Warning;

/// A load without a knee whose success ratio is below this was not served, unless a
/// plan's `[slo] success` says otherwise ([`RunFacts::min_success_ratio`]).
const SUCCESS_RATIO: f64 = 0.99;

/// In-flight requests at this share of the cap mean the server held them back: the lag
/// that follows is the server's, not the generator's.
const CAP_SHARE: f64 = 0.9;

/// The run's diagnosis, when there is something to judge: resource samples, or a knee.
pub fn run_diagnosis(report: &Report, facts: &RunFacts) -> Option<Diagnosis> {
    let knee = match &facts.saturation {
        Some(Finding::Saturated {
            point,
            peak_ok_per_sec,
            ..
        }) => Some(Knee {
            at_ns: point.start_ns,
            offered_per_sec: point.offered_per_sec,
            peak_ok_per_sec: *peak_ok_per_sec,
            signal: point.kind(),
        }),
        _ => None,
    };
    if knee.is_none() && facts.watched.is_none() && facts.unreached.is_empty() {
        return None;
    }
    let min_success = facts.min_success_ratio.unwrap_or(SUCCESS_RATIO);
    let trouble = (knee.is_none() && report.success_ratio < min_success).then_some(Trouble {
        failed_ratio: 1.0 - report.success_ratio,
    });
    let served_badly = knee.is_some() || trouble.is_some();
    let generator = GeneratorState {
        fell_behind: fell_behind(report, facts, served_badly),
    };
    let watched = facts.watched.as_deref().unwrap_or_default();
    let no_knee = match &facts.saturation {
        Some(finding @ (Finding::NotARamp { .. } | Finding::NoSaturation { .. })) => {
            Some(finding.clone())
        }
        _ => None,
    };
    let mut diagnosis = diagnose(knee, trouble, &generator, watched);
    diagnosis.start_unix_ns = facts.start_unix_ns;
    diagnosis.no_knee = no_knee;
    diagnosis.unjudged.clone_from(&facts.unjudged);
    diagnosis.failures.clone_from(&facts.failures);
    Some(diagnosis.with_unreached(facts.unreached.clone()))
}

/// Why the generator, not the server, shaped the run. Below its in-flight cap: it sent
/// less than its health asks ([`analysis::GeneratorHealth`], the report's defaults or a
/// plan's `[slo]`), or its send lag weighed against the answers
/// ([`analysis::LagWeight::Heavy`]: over its bound and the median latency); a lag small
/// beside the answers is neither a warning nor a verdict. At the cap it waited on the
/// answers: the server's doing when they slowed or failed (`served_badly`), the cap's
/// when they kept their pace (rate x latency needs more).
fn fell_behind(report: &Report, facts: &RunFacts, served_badly: bool) -> Option<Behind> {
    let cap = facts.in_flight_cap.filter(|&cap| cap > 0);
    let at_cap = cap.is_some_and(|cap| facts.in_flight_peak as f64 >= CAP_SHARE * cap as f64);
    let extras = &report.extras;
    let lag = extras.lag.filter(|lag| match lag.weight {
        LagWeight::Within => false,
        LagWeight::Light => at_cap,
        LagWeight::Heavy => true,
    });
    let short = extras.warnings.iter().find_map(|warning| match *warning {
        Warning::RateShort {
            asked_per_sec,
            achieved_per_sec,
            ..
        } => Some((asked_per_sec, achieved_per_sec)),
        _ => None,
    });
    if lag.is_none() && short.is_none() {
        return None;
    }
    if at_cap {
        return (!served_badly).then(|| Behind::AtCap {
            cap: cap.unwrap_or_default(),
        });
    }
    Some(match (lag, short) {
        (Some(lag), _) => Behind::Lag(lag),
        (None, Some((asked_per_sec, achieved_per_sec))) => Behind::SentShort {
            asked_per_sec,
            achieved_per_sec,
        },
        (None, None) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use crate::words::diagnosis as words;
    use record::RunTables;

    #[test]
    fn the_generator_ran_out_only_when_its_own_delay_shaped_the_run() {
        const MS: u64 = 1_000_000;
        let mut report = Metrics::new(None).close(&RunTables::default());
        let short = Warning::RateShort {
            min_ratio: 0.99,
            asked_per_sec: 4000.0,
            achieved_per_sec: 3000.0,
            unsent: 10,
        };
        let loose = analysis::GeneratorHealth {
            max_lag_p99_ns: 25 * MS,
            ..analysis::GeneratorHealth::default()
        };
        // (case, the lag's bound, lag p99 ms, median latency ms, in flight at peak of a
        //  cap of 100, warnings, served badly, the reason's start or None)
        type Case<'a> = (
            &'a str,
            analysis::GeneratorHealth,
            u64,
            u64,
            u64,
            Vec<Warning>,
            bool,
            Option<&'a str>,
        );
        let default = analysis::GeneratorHealth::default();
        let cases: Vec<Case<'_>> = vec![
            (
                "3 ms of lag beside 50 ms answers",
                default,
                3,
                50,
                10,
                vec![],
                false,
                None,
            ),
            (
                "7 ms of lag beside 0 ms answers",
                default,
                7,
                0,
                10,
                vec![],
                false,
                Some("send lag p99 7ms over 1ms"),
            ),
            (
                "a plan's max_lag of 25 ms",
                loose,
                7,
                0,
                10,
                vec![],
                true,
                None,
            ),
            (
                "sent less than asked",
                default,
                0,
                50,
                10,
                vec![short],
                false,
                Some("it sent 3000 req/s"),
            ),
            (
                "at the cap, answers on pace",
                default,
                30,
                100,
                100,
                vec![],
                false,
                Some("requests in flight reached its cap"),
            ),
            (
                "at the cap, the server slowed",
                default,
                30,
                100,
                100,
                vec![],
                true,
                None,
            ),
            ("no lag", default, 0, 0, 10, vec![], false, None),
        ];
        for (case, health, lag_ms, p50_ms, in_flight, warnings, served_badly, want) in cases {
            report.latencies.p50_ns = p50_ms * MS;
            report.extras.lag = Some(health.weigh_lag(lag_ms * MS, p50_ms * MS, None));
            report.extras.warnings = warnings;
            let facts = RunFacts {
                in_flight_peak: in_flight,
                in_flight_cap: Some(100),
                health,
                ..RunFacts::default()
            };
            let got = fell_behind(&report, &facts, served_badly).map(|b| words::behind(&b));
            match (got, want) {
                (None, None) => {}
                (Some(got), Some(want)) => assert!(got.starts_with(want), "{case}: {got}"),
                (got, want) => panic!("{case}: got {got:?}, want {want:?}"),
            }
        }
    }

    /// A plan's success bound is the diagnosis's: 97% served is trouble by the report's
    /// 99%, not under a plan's `success = 0.95`.
    #[test]
    fn a_plans_success_bound_decides_whether_the_load_was_served() {
        let mut report = Metrics::new(None).close(&RunTables::default());
        report.success_ratio = 0.97;
        // (case, the plan's bound, the trouble said)
        let rows = [
            (
                "the report's 99%",
                None,
                Some("3.0% of the requests failed"),
            ),
            ("a plan's 95%", Some(0.95), None),
        ];
        for (case, bound, want) in rows {
            let facts = RunFacts {
                watched: Some(Vec::new()),
                min_success_ratio: bound,
                ..RunFacts::default()
            };
            let diagnosis = run_diagnosis(&report, &facts).unwrap();
            let said = diagnosis.trouble.map(|_| words::headline(&diagnosis));
            let said = said.as_deref().and_then(|s| s.split(':').next());
            assert_eq!(said, want, "{case}");
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
            brief: None,
            example: None,
            note: None,
        };
        // (why the load has no knee, the headline's start)
        let cases = [
            (
                Finding::NotARamp {
                    reason: analysis::NoRamp::TooFewWindows {
                        loaded: 6,
                        needed: 9,
                    },
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
                unjudged: vec![analysis::Unjudged {
                    sampler: "db".to_owned(),
                    hole: analysis::Hole::Missed {
                        readings: 3,
                        from_ns: 1_000_000_000,
                        reason: "login refused".to_owned(),
                    },
                }],
                ..RunFacts::default()
            };
            let diagnosis = run_diagnosis(&report, &facts).unwrap();
            let lines = words::lines(&diagnosis);
            assert!(lines[0].starts_with(want), "{lines:?}");
            assert_eq!(
                lines.last().map(String::as_str),
                Some(
                    "not judged: db: 3 readings missing from 1.0 s (login refused); its \
                     resources are judged on the readings it has"
                )
            );
        }
    }
}
