//! Where the slow requests' time went ([`analysis::SpanJudgement`]) in words.

use analysis::{Arrived, OperationTime, SpanJudgement};
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
        SpanJudgement::NotJudged { reason, .. } => format!("not judged: {reason}"),
    }
}

/// `traced-orders UPDATE`; the time no span covers as what it may be.
pub fn operation(time: &OperationTime) -> String {
    if time.service.is_empty() && time.operation == analysis::OUTSIDE {
        return "no span (a queue before the server's first span, or the network)".to_owned();
    }
    format!("{} {}", time.service, time.operation)
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
                    reason: "http://127.0.0.1:1/api/traces/ab: connection refused".to_owned(),
                    counts: None,
                },
                "not judged: http://127.0.0.1:1/api/traces/ab: connection refused",
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
