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
    let generator = GeneratorState {
        fell_behind: fell_behind(report, facts, warnings),
    };
    let trouble = (knee.is_none() && report.success_ratio < SUCCESS_RATIO).then(|| {
        format!(
            "{:.1}% of the requests failed",
            (1.0 - report.success_ratio) * 100.0
        )
    });
    let watched = facts.watched.as_deref().unwrap_or_default();
    let mut diagnosis = diagnose(knee, trouble, &generator, watched);
    diagnosis.start_unix_ns = facts.start_unix_ns;
    Some(diagnosis)
}

/// Why the generator, not the server, shaped the run: it sent less than asked, or its
/// send lag p99 passed 1 ms ([`crate::LAG_P99_LIMIT_NS`]) and the answers' median
/// latency, so the slow part of the latencies is mostly its own delay; either while requests in flight stayed below
/// the cap (at the cap, the server held them back). A lag of a few milliseconds beside
/// answers of fifty is noted by the warnings, not a verdict.
fn fell_behind(report: &Report, facts: &RunFacts, warnings: &[Warning]) -> Option<String> {
    let at_cap = facts
        .in_flight_cap
        .is_some_and(|cap| cap > 0 && facts.in_flight_peak as f64 >= CAP_SHARE * cap as f64);
    if at_cap {
        return None;
    }
    warnings.iter().find_map(|warning| match *warning {
        Warning::FellBehind { lag_p99_ns }
            if lag_p99_ns >= report.latencies.p50_ns =>
        {
            Some(format!(
                "send lag p99 {} against a median latency of {}, with requests in flight under the cap",
                GoDuration::report_ns(lag_p99_ns),
                GoDuration::report_ns(report.latencies.p50_ns)
            ))
        }
        Warning::RateShort {
            asked_per_sec,
            achieved_per_sec,
            ..
        } => Some(format!(
            "it sent {achieved_per_sec:.0} req/s of the {asked_per_sec:.0} asked"
        )),
        _ => None,
    })
}
