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

/// The run's diagnosis, when there is something to judge: resource samples, a knee, an
/// address nothing listened at, or a load that was not served and the answers that say
/// how.
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
    let min_success = facts.min_success_ratio.unwrap_or(SUCCESS_RATIO);
    let trouble = (knee.is_none() && report.success_ratio < min_success).then_some(Trouble {
        failed_ratio: 1.0 - report.success_ratio,
    });
    // A load that failed says what its answers said, even with nothing watched.
    let answered = trouble.is_some() && facts.failures.is_some();
    let limited = !facts.connection_limits.is_empty();
    if knee.is_none()
        && facts.watched.is_none()
        && facts.unreached.is_empty()
        && !answered
        && !limited
    {
        return None;
    }
    let served_badly = knee.is_some() || trouble.is_some();
    let generator = GeneratorState {
        fell_behind: fell_behind(report, facts, served_badly),
    };
    // A held step's connection limit is judged as a watched resource is, beside them.
    let mut watched = facts.watched.clone().unwrap_or_default();
    watched.extend_from_slice(&facts.connection_limits);
    let no_knee = match &facts.saturation {
        Some(finding @ (Finding::NotARamp { .. } | Finding::NoSaturation { .. })) => {
            Some(finding.clone())
        }
        _ => None,
    };
    let mut diagnosis = diagnose(knee, trouble, &generator, &watched);
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

    /// A failing load with no knee, no monitor and every address reached still says
    /// what its answers say: a status is a limit the server is configured with, a
    /// failed check is the answers' content, neither a guess about the unwatched.
    #[test]
    fn failures_without_a_knee_or_a_monitor_say_what_the_answers_say() {
        use analysis::diagnosis::{FailedAs, Failures};
        let mut report = Metrics::new(None).close(&RunTables::default());
        report.success_ratio = 0.9;
        let failures = |kinds: Vec<(FailedAs, u64)>| Failures {
            server: "127.0.0.1:8080".to_owned(),
            kinds,
            from: Some((2_000_000_000, 714.0)),
        };
        let check = FailedAs::Unmet("step \"login\": check \"status 200\" failed".to_owned());
        /// (case, what the answers said, the success bound, the headline's words)
        type Row = (
            &'static str,
            Option<Failures>,
            Option<f64>,
            Option<&'static str>,
        );
        let rows: [Row; 6] = [
            (
                "nginx's 503s",
                Some(failures(vec![(FailedAs::Status(503), 300)])),
                None,
                Some(
                    "10.0% of the requests failed: 127.0.0.1:8080 answered 503 (300) from \
                     714/s with nothing watched: a limit the server is configured with (a \
                     rate limit, a queue, an upstream)",
                ),
            ),
            (
                "a server's own errors",
                Some(failures(vec![(FailedAs::Status(500), 300)])),
                None,
                Some(
                    "10.0% of the requests failed: 127.0.0.1:8080 answered 500 (300) from \
                     714/s with nothing watched: the server's own errors; its logs say why",
                ),
            ),
            (
                "a failed check",
                Some(failures(vec![(check, 300)])),
                None,
                Some(
                    "10.0% of the requests failed: answers from 127.0.0.1:8080 did not hold \
                     what the flow asks: step \"login\": check \"status 200\" failed (300) \
                     from 714/s with nothing watched: the server answered, but not as the \
                     flow asks (the checks table says which)",
                ),
            ),
            (
                "timeouts",
                Some(failures(vec![(FailedAs::Error("timeout".to_owned()), 300)])),
                None,
                Some(
                    "10.0% of the requests failed: requests to 127.0.0.1:8080 failed with \
                     timeout (300) from 714/s with nothing watched: the server (or what is \
                     between) stopped answering in time; its logs or a monitor of it say why",
                ),
            ),
            (
                "within the plan's bound",
                Some(failures(vec![(FailedAs::Status(503), 300)])),
                Some(0.8),
                None,
            ),
            ("nothing failed", None, None, None),
        ];
        for (case, failures, bound, want) in rows {
            let facts = RunFacts {
                failures,
                min_success_ratio: bound,
                ..RunFacts::default()
            };
            let said = run_diagnosis(&report, &facts).map(|d| words::headline(&d));
            assert_eq!(said.as_deref(), want, "{case}");
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
