//! `compare -trace-store`: where each run's slow requests' time went (its summary's span
//! breakdown, judged once as `report -trace-store` judges it) and, for each run after
//! A, the span whose slow median moved most from A ([`analysis::span_shift`]), worded
//! by [`crate::words::spans`].

use std::fmt::Write as _;

use analysis::SpanJudgement;

use crate::words::spans as words;

/// The block after "What ran out first", as text or (`markdown`) Markdown: a line per
/// run (name, its breakdown), then one per run after A that both judged; empty when no
/// run has a breakdown (no `-trace-store`, or no input traced).
pub fn where_time_went(runs: &[(&str, Option<&SpanJudgement>)], markdown: bool) -> String {
    let mut lines: Vec<(String, String)> = (runs.iter())
        .filter_map(|(name, spans)| Some(((*name).to_owned(), words::headline((*spans)?))))
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    if let Some((a, Some(SpanJudgement::Judged(from)))) = runs.first() {
        for (b, spans) in &runs[1..] {
            let Some(SpanJudgement::Judged(to)) = spans else {
                continue;
            };
            let said = analysis::span_shift(from, to).map_or_else(
                || "no span's median moved".to_owned(),
                |shift| words::shift(a, b, &shift),
            );
            lines.push((format!("{b} against {a}"), said));
        }
    }
    let mut block = if markdown {
        "\n**Where the time went (-trace-store)**\n\n".to_owned()
    } else {
        "\nWhere the time went (-trace-store):\n".to_owned()
    };
    for (name, said) in lines {
        let _ = if markdown {
            writeln!(block, "- `{name}`: {said}")
        } else {
            writeln!(block, "{name}: {said}")
        };
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::{Arrived, OperationTime, SpanBreakdown, SpansUnjudged};

    fn judged(update_ms: u64) -> SpanJudgement {
        SpanJudgement::Judged(SpanBreakdown {
            arrived: Arrived::default(),
            operations: vec![OperationTime {
                service: "orders".to_owned(),
                operation: "UPDATE".to_owned(),
                slow_share: 0.9,
                slow_median_us: update_ms * 1000,
                typical_median_us: 1000,
            }],
        })
    }

    #[test]
    fn each_run_s_breakdown_then_the_span_that_moved_from_a() {
        let (fast, slow, same) = (judged(15), judged(476), judged(15));
        let down = SpanJudgement::NotJudged {
            why: SpansUnjudged::NoSlowRequest,
            counts: None,
        };
        let runs = [
            ("a.llr", Some(&fast)),
            ("b.llr", Some(&slow)),
            ("c.llr", Some(&same)),
            ("d.llr", Some(&down)),
            ("e.llr", None),
        ];
        let text = where_time_went(&runs, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "Where the time went (-trace-store):");
        assert!(lines[2].starts_with(
            "a.llr: the slowest traced requests spent 90% of their time in orders UPDATE"
        ));
        assert!(lines[5].starts_with("d.llr: not judged: no traced request took 3x"));
        assert_eq!(
            &lines[6..],
            [
                "b.llr against a.llr: orders UPDATE grew most: median 15ms in a.llr's slowest traced requests, 476ms in b.llr's",
                "c.llr against a.llr: no span's median moved",
            ]
        );
        let markdown = where_time_went(&runs[..2], true);
        assert!(markdown.starts_with("\n**Where the time went (-trace-store)**\n\n- `a.llr`: "));
        assert_eq!(
            where_time_went(&[("a.llr", None), ("b.llr", None)], false),
            ""
        );
    }
}
