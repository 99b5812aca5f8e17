//! `compare -trace-store`: where each run's slow requests' time went (its summary's span
//! breakdown, judged once as `report -trace-store` judges it) and, for each run after
//! A, the span whose slow median moved most from A ([`analysis::span_shift`]), worded
//! by [`crate::words::spans`].

use std::fmt::Write as _;

use analysis::{SpanJudgement, SpanShift};

use crate::json_write::push_string;
use crate::span_breakdown::write_spans_object;
use crate::words::spans as words;

/// For each run after A whose breakdown and A's were both judged: its index and the
/// span that moved most from A (`None`: none moved). Read from the judgements, once.
fn shifts(runs: &[(&str, Option<&SpanJudgement>)]) -> Vec<(usize, Option<SpanShift>)> {
    let Some((_, Some(SpanJudgement::Judged(from)))) = runs.first() else {
        return Vec::new();
    };
    (runs.iter().enumerate().skip(1))
        .filter_map(|(index, (_, spans))| match spans {
            Some(SpanJudgement::Judged(to)) => Some((index, analysis::span_shift(from, to))),
            _ => None,
        })
        .collect()
}

/// `,"traces":[{"input":…,"spans":{…}|null},…],"span_shift":[{"input":…,"against":…,
/// "moved":{"service","operation","from","to","grew"}|null},…]` for compare's JSON, from
/// the same judgements the text words (durations in nanoseconds); nothing when no run
/// has a breakdown (no `-trace-store`), so JSON without one stays as it was.
pub fn write_json(out: &mut String, runs: &[(&str, Option<&SpanJudgement>)]) {
    if runs.iter().all(|(_, spans)| spans.is_none()) {
        return;
    }
    out.push_str(",\"traces\":[");
    for (index, (name, spans)) in runs.iter().enumerate() {
        out.push_str(if index > 0 {
            ",{\"input\":"
        } else {
            "{\"input\":"
        });
        push_string(out, name);
        out.push_str(",\"spans\":");
        match spans {
            Some(judgement) => write_spans_object(out, judgement),
            None => out.push_str("null"),
        }
        out.push('}');
    }
    out.push_str("],\"span_shift\":[");
    for (index, (b, shift)) in shifts(runs).into_iter().enumerate() {
        out.push_str(if index > 0 {
            ",{\"input\":"
        } else {
            "{\"input\":"
        });
        push_string(out, runs[b].0);
        out.push_str(",\"against\":");
        push_string(out, runs[0].0);
        out.push_str(",\"moved\":");
        match shift {
            Some(shift) => {
                out.push_str("{\"service\":");
                push_string(out, &shift.service);
                out.push_str(",\"operation\":");
                push_string(out, &shift.operation);
                let _ = write!(
                    out,
                    ",\"from\":{},\"to\":{},\"grew\":{}}}",
                    shift.from_us.saturating_mul(1000),
                    shift.to_us.saturating_mul(1000),
                    shift.grew()
                );
            }
            None => out.push_str("null"),
        }
        out.push('}');
    }
    out.push(']');
}

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
    let a = runs[0].0;
    for (index, shift) in shifts(runs) {
        let b = runs[index].0;
        let said = shift.map_or_else(
            || "no span's median moved".to_owned(),
            |shift| words::shift(a, b, &shift),
        );
        lines.push((format!("{b} against {a}"), said));
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

    #[test]
    fn json_carries_each_judgement_and_the_span_that_moved() {
        let (fast, slow) = (judged(15), judged(476));
        let down = SpanJudgement::NotJudged {
            why: SpansUnjudged::NoSlowRequest,
            counts: None,
        };
        let runs = [
            ("a.llr", Some(&fast)),
            ("b.llr", Some(&slow)),
            ("c.llr", Some(&down)),
            ("d.llr", None),
        ];
        let mut out = String::new();
        write_json(&mut out, &runs);
        let json: serde_json::Value =
            serde_json::from_str(&format!("{{\"x\":0{out}}}")).expect(&out);
        let traces = json["traces"].as_array().expect("traces");
        assert_eq!(traces.len(), 4);
        assert_eq!(traces[1]["input"], "b.llr");
        assert_eq!(traces[1]["spans"]["judged"], true);
        assert_eq!(
            traces[1]["spans"]["operations"][0]["slow_median"],
            476_000_000
        );
        assert_eq!(traces[2]["spans"]["reason_kind"], "no_slow_request");
        assert_eq!(traces[3]["spans"], serde_json::Value::Null);
        // Only B was judged beside A: one shift, the same the text words.
        assert_eq!(
            json["span_shift"],
            serde_json::json!([{"input": "b.llr", "against": "a.llr", "moved": {
                "service": "orders", "operation": "UPDATE",
                "from": 15_000_000, "to": 476_000_000, "grew": true}}])
        );
        let mut none = String::new();
        write_json(&mut none, &[("a.llr", None), ("b.llr", None)]);
        assert_eq!(none, "");
    }
}
