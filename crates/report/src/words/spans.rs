//! Where the slow requests' time went ([`analysis::SpanJudgement`]) in words.

use analysis::{Arrived, OperationTime, SLOW_FACTOR, SpanJudgement, SpanShift, SpansUnjudged};
use units::GoDuration;

/// The headline: `the slowest traced requests spent 81% of their time in
/// traced-orders UPDATE (median 0.4ms in typical requests, 610ms in slow ones)`, or
/// `not judged: WHY`.
pub fn headline(judgement: &SpanJudgement) -> String {
    match judgement {
        SpanJudgement::Judged(breakdown) => match breakdown.operations.first() {
            Some(grew) => format!(
                "the slowest traced requests spent {} of their time in {} (median {} in typical requests, {} in slow ones)",
                share(grew.slow_share),
                operation(grew),
                micros(grew.typical_median_us),
                micros(grew.slow_median_us),
            ),
            None => "not judged: the traces found hold no spans".to_owned(),
        },
        SpanJudgement::NotJudged { why, .. } => format!("not judged: {}", reason(why)),
    }
}

/// The judgement as a plan's write-up lists it under its step: the headline, then
/// what arrived (when anything was asked).
pub fn lines(judgement: &SpanJudgement) -> Vec<String> {
    let mut lines = vec![headline(judgement)];
    lines.extend(judgement.arrived().map(arrived));
    lines
}

/// Why the traces were not compared, in lowercase words naming the store or the traces.
pub fn reason(why: &SpansUnjudged) -> String {
    match why {
        SpansUnjudged::StoreUnreadable { store, reason } => {
            format!("the trace store {store} could not be read: {reason}")
        }
        SpansUnjudged::StoreMiscounted {
            store,
            answered,
            asked,
        } => format!("the trace store {store} answered {answered} traces of {asked} asked"),
        SpansUnjudged::NoSlowRequest => format!(
            "no traced request took {SLOW_FACTOR}x the typical ones' median latency or more"
        ),
        SpansUnjudged::SlowNotFound { asked } => format!(
            "none of the {} slowest traced requests' traces is in the store (not sent, not yet flushed, or sampled out by the server)",
            asked
        ),
        SpansUnjudged::NoTypicalKept => "no typical traced request was kept to compare the slow ones with (a record written before format version 6)".to_owned(),
        SpansUnjudged::TypicalNotFound { asked } => format!(
            "none of the {} typical traced requests' traces is in the store, so there is nothing to compare the slow ones with",
            asked
        ),
    }
}

/// `traced-orders UPDATE`; the time no span covers as what it may be.
pub fn operation(time: &OperationTime) -> String {
    named(&time.service, &time.operation)
}

fn named(service: &str, operation: &str) -> String {
    if service.is_empty() && operation == analysis::OUTSIDE {
        return "no span (a queue before the server's first span, or the network)".to_owned();
    }
    format!("{service} {operation}")
}

/// Which span moved most from run `a` to run `b`: `traced-orders UPDATE grew most:
/// median 15ms in a.llr's slowest traced requests, 476ms in b.llr's`.
pub fn shift(a: &str, b: &str, shift: &SpanShift) -> String {
    format!(
        "{} {} most: median {} in {a}'s slowest traced requests, {} in {b}'s",
        named(&shift.service, &shift.operation),
        if shift.grew() { "grew" } else { "shrank" },
        micros(shift.from_us),
        micros(shift.to_us),
    )
}

/// What arrived: `traces found: 18 of 20 slow, 20 of 20 typical (2 never arrived)`.
pub fn arrived(counts: &Arrived) -> String {
    let missing = (counts.slow_asked.saturating_sub(counts.slow_found))
        + (counts.typical_asked.saturating_sub(counts.typical_found));
    let tail = if missing == 0 {
        String::new()
    } else {
        format!(" ({missing} not in the store: never sent, not flushed yet, or dropped)")
    };
    format!(
        "traces found: {} of {} slow, {} of {} typical{tail}",
        counts.slow_found, counts.slow_asked, counts.typical_found, counts.typical_asked
    )
}

/// One operation's row: `traced-orders UPDATE  81%  0.4ms  610ms`.
pub fn row(time: &OperationTime) -> [String; 4] {
    [
        operation(time),
        share(time.slow_share),
        micros(time.typical_median_us),
        micros(time.slow_median_us),
    ]
}

/// The share of requests traced, without trailing zeros: `1%`, `0.5%`, `100%`.
pub fn sample_share(share: f64) -> String {
    let text = format!("{:.4}", share * 100.0);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

fn share(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

fn micros(us: u64) -> String {
    GoDuration::report_ns(us.saturating_mul(1000)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::SpanBreakdown;

    #[test]
    fn words_the_span_that_grew_and_what_never_arrived() {
        let update = OperationTime {
            service: "traced-orders".to_owned(),
            operation: "UPDATE".to_owned(),
            slow_share: 0.812,
            slow_median_us: 610_000,
            typical_median_us: 4_000,
        };
        let counts = Arrived {
            slow_asked: 20,
            slow_found: 18,
            typical_asked: 20,
            typical_found: 20,
        };
        // (judgement, what the headline says)
        let rows = [
            (
                SpanJudgement::Judged(SpanBreakdown {
                    arrived: counts,
                    operations: vec![update.clone()],
                }),
                "the slowest traced requests spent 81% of their time in traced-orders UPDATE (median 4ms in typical requests, 610ms in slow ones)",
            ),
            (
                SpanJudgement::Judged(SpanBreakdown {
                    arrived: counts,
                    operations: Vec::new(),
                }),
                "not judged: the traces found hold no spans",
            ),
            (
                SpanJudgement::NotJudged {
                    why: SpansUnjudged::StoreUnreadable {
                        store: "http://127.0.0.1:1/".to_owned(),
                        reason: "connection refused".to_owned(),
                    },
                    counts: None,
                },
                "not judged: the trace store http://127.0.0.1:1/ could not be read: connection refused",
            ),
            (
                SpanJudgement::NotJudged {
                    why: SpansUnjudged::StoreMiscounted {
                        store: "http://j/".to_owned(),
                        answered: 3,
                        asked: 40,
                    },
                    counts: None,
                },
                "not judged: the trace store http://j/ answered 3 traces of 40 asked",
            ),
            (
                SpanJudgement::NotJudged {
                    why: SpansUnjudged::NoSlowRequest,
                    counts: Some(counts),
                },
                "not judged: no traced request took 3x the typical ones' median latency or more",
            ),
            (
                SpanJudgement::NotJudged {
                    why: SpansUnjudged::SlowNotFound { asked: 20 },
                    counts: Some(counts),
                },
                "not judged: none of the 20 slowest traced requests' traces is in the store (not sent, not yet flushed, or sampled out by the server)",
            ),
            (
                SpanJudgement::NotJudged {
                    why: SpansUnjudged::NoTypicalKept,
                    counts: Some(counts),
                },
                "not judged: no typical traced request was kept to compare the slow ones with (a record written before format version 6)",
            ),
            (
                SpanJudgement::NotJudged {
                    why: SpansUnjudged::TypicalNotFound { asked: 7 },
                    counts: Some(counts),
                },
                "not judged: none of the 7 typical traced requests' traces is in the store, so there is nothing to compare the slow ones with",
            ),
        ];
        for (judgement, want) in rows {
            assert_eq!(headline(&judgement), want);
        }
        assert_eq!(
            arrived(&counts),
            "traces found: 18 of 20 slow, 20 of 20 typical (2 not in the store: never sent, not flushed yet, or dropped)"
        );
        assert_eq!(row(&update)[1], "81%");
    }
}
