//! `report -trace-store`: which traces to read back (the slowest traced requests and
//! typical ones, bounded), handed to a [`TraceStore`] the caller provides (the I/O is
//! not the report's), judged once by [`analysis::judge_spans`] into
//! [`TracedRequests::spans`](crate::TracedRequests), and worded here for text and JSON
//! through [`crate::words::spans`].

use std::fmt::Write as _;
use std::sync::Arc;

use analysis::{Fetched, SpanJudgement, SpansUnjudged, TracedCall};
use record::{Exemplar, ExemplarKind};

use crate::json_write::{push_float, push_string};
use crate::words::spans as words;

/// The slowest traced requests whose traces are read back.
pub const SLOW_FETCHED: usize = 20;
/// The typical traced requests (those nearest the median of the typical ones) whose
/// traces are read back.
pub const TYPICAL_FETCHED: usize = 20;
/// The operations a text report lists under the headline.
const OPERATIONS_LISTED: usize = 5;

/// Where traces are read back from: the caller's I/O (the CLI's Jaeger client).
pub trait TraceStore: Send + Sync {
    /// The store, as the user named it (`http://127.0.0.1:16686/`).
    fn name(&self) -> &str;
    /// Each trace's spans, in the order asked, `None` for a trace the store lacks; an
    /// error naming why the store could not be read.
    fn fetch(&self, trace_ids: &[String]) -> Result<Fetched, String>;
}

/// A [`TraceStore`] in a [`crate::ReportConfig`]: equal only to itself.
#[derive(Clone)]
pub struct TraceStoreHandle(pub Arc<dyn TraceStore>);

impl std::fmt::Debug for TraceStoreHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TraceStore({})", self.0.name())
    }
}

impl PartialEq for TraceStoreHandle {
    fn eq(&self, other: &TraceStoreHandle) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Reads the chosen traces back from `store` and judges where the slow ones' time went.
pub fn where_time_went(exemplars: &[Exemplar], store: &dyn TraceStore) -> SpanJudgement {
    let mut typical: Vec<&Exemplar> = of_kind(exemplars, ExemplarKind::Typical).collect();
    typical.sort_by_key(|e| (e.latency_ns, e.intended_unix_ns));
    let typical_median_ns = typical.get(typical.len() / 2).map_or(0, |e| e.latency_ns);
    let from = (typical.len() / 2).saturating_sub(TYPICAL_FETCHED / 2);
    let typical: Vec<&Exemplar> = typical
        .into_iter()
        .skip(from)
        .take(TYPICAL_FETCHED)
        .collect();
    let mut slow: Vec<&Exemplar> = of_kind(exemplars, ExemplarKind::Slow)
        .filter(|e| e.latency_ns >= analysis::SLOW_FACTOR.saturating_mul(typical_median_ns))
        .collect();
    slow.sort_by_key(|e| (std::cmp::Reverse(e.latency_ns), e.intended_unix_ns));
    slow.truncate(SLOW_FETCHED);
    let ids: Vec<String> = (slow.iter().chain(&typical))
        .map(|e| e.trace_id.clone())
        .collect();
    let not_judged = |why: SpansUnjudged| SpanJudgement::NotJudged { why, counts: None };
    match store.fetch(&ids) {
        Err(reason) => not_judged(SpansUnjudged::StoreUnreadable {
            store: store.name().to_owned(),
            reason,
        }),
        Ok(fetched) if fetched.len() != ids.len() => not_judged(SpansUnjudged::StoreMiscounted {
            store: store.name().to_owned(),
            answered: fetched.len(),
            asked: ids.len(),
        }),
        Ok(fetched) => {
            let mut calls: Vec<TracedCall> = (slow.iter().chain(&typical))
                .zip(fetched)
                .map(|(exemplar, spans)| TracedCall {
                    latency_us: exemplar.latency_ns / 1000,
                    spans: spans.map(|spans| without_loadlabs(spans, &exemplar.span_id)),
                })
                .collect();
            let typical = calls.split_off(slow.len());
            analysis::judge_spans(&calls, &typical)
        }
    }
}

/// A trace's spans less loadlab's own client span (`attack -trace-spans`: the span id
/// the request sent): the request's latency is already loadlab's measure, and the time
/// no server span covers stays its own row rather than the client span's self time.
fn without_loadlabs(mut spans: Vec<analysis::Span>, sent_span_id: &str) -> Vec<analysis::Span> {
    spans.retain(|span| !span.span_id.eq_ignore_ascii_case(sent_span_id));
    spans
}

fn of_kind(exemplars: &[Exemplar], kind: ExemplarKind) -> impl Iterator<Item = &Exemplar> {
    exemplars.iter().filter(move |e| e.kind == kind)
}

/// The text lines under the traced requests, after a blank line:
///
/// ```text
/// Where the time went (-trace-store): the slowest traced requests spent 81% of ...
///   traces found: 20 of 20 slow, 20 of 20 typical
///   operation             slow share  typical median  slow median
///   traced-orders UPDATE  81%         0.4ms           610ms
/// ```
pub fn write_spans_text(out: &mut String, judgement: &SpanJudgement) {
    let _ = writeln!(
        out,
        "\nWhere the time went (-trace-store): {}",
        words::headline(judgement)
    );
    if let Some(counts) = judgement.arrived() {
        let _ = writeln!(out, "  {}", words::arrived(counts));
    }
    let SpanJudgement::Judged(breakdown) = judgement else {
        return;
    };
    let mut table = "  operation\tslow share\ttypical median\tslow median\n".to_owned();
    for time in breakdown.operations.iter().take(OPERATIONS_LISTED) {
        let _ = writeln!(table, "  {}", words::row(time).join("\t"));
    }
    out.push_str(&crate::tabwriter::align(&table, &[]));
}

/// `,"spans":{"judged":…,"headline":…,"reason":…,"reason_kind":…,"found":…,"operations":[…]}`
/// inside the report's `traces` object; medians in nanoseconds, the operation that grew
/// most first; `reason` and `reason_kind` (`store_unreadable`, ...) null when judged.
pub fn write_spans_json(out: &mut String, judgement: &SpanJudgement) {
    out.push_str(",\"spans\":");
    write_spans_object(out, judgement);
}

/// The judgement as a JSON object (`{"judged":…,…}`), as [`write_spans_json`] nests it.
pub fn write_spans_object(out: &mut String, judgement: &SpanJudgement) {
    let judged = matches!(judgement, SpanJudgement::Judged(_));
    let _ = write!(out, "{{\"judged\":{judged},\"headline\":");
    push_string(out, &words::headline(judgement));
    out.push_str(",\"reason\":");
    let operations = match judgement {
        SpanJudgement::Judged(breakdown) => {
            out.push_str("null,\"reason_kind\":null");
            breakdown.operations.as_slice()
        }
        SpanJudgement::NotJudged { why, .. } => {
            push_string(out, &words::reason(why));
            out.push_str(",\"reason_kind\":");
            push_string(out, why.kind());
            [].as_slice()
        }
    };
    out.push_str(",\"found\":");
    match judgement.arrived() {
        Some(c) => {
            let _ = write!(
                out,
                "{{\"slow\":{},\"slow_asked\":{},\"typical\":{},\"typical_asked\":{}}}",
                c.slow_found, c.slow_asked, c.typical_found, c.typical_asked
            );
        }
        None => out.push_str("null"),
    }
    out.push_str(",\"operations\":[");
    for (index, time) in operations.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        out.push_str("{\"service\":");
        push_string(out, &time.service);
        out.push_str(",\"operation\":");
        push_string(out, &time.operation);
        out.push_str(",\"slow_share\":");
        push_float(out, time.slow_share);
        let _ = write!(
            out,
            ",\"typical_median\":{},\"slow_median\":{}}}",
            time.typical_median_us.saturating_mul(1000),
            time.slow_median_us.saturating_mul(1000)
        );
    }
    out.push_str("]}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::Span;
    use std::sync::Mutex;

    /// A store that answers from a table: a trace id whose number is above 1000 is
    /// slow (its `UPDATE` takes that many ms), else typical (1 ms); ids in `missing`
    /// are not found; `down` fails every call.
    struct FakeStore {
        missing: Vec<u64>,
        down: bool,
        asked: Mutex<Vec<String>>,
    }

    impl TraceStore for FakeStore {
        fn name(&self) -> &str {
            "http://fake/"
        }

        fn fetch(&self, trace_ids: &[String]) -> Result<Fetched, String> {
            self.asked.lock().unwrap().extend(trace_ids.iter().cloned());
            if self.down {
                return Err("connection refused".to_owned());
            }
            Ok(trace_ids
                .iter()
                .map(|id| {
                    let n = u64::from_str_radix(id, 16).unwrap();
                    (!self.missing.contains(&n)).then(|| spans(n))
                })
                .collect())
        }
    }

    fn spans(n: u64) -> Vec<Span> {
        let update_ms = if n > 1000 { n } else { 1 };
        let span = |id: &str, parent: &str, op: &str, ms: u64| Span {
            span_id: id.to_owned(),
            parent_id: Some(parent.to_owned()),
            service: "orders".to_owned(),
            operation: op.to_owned(),
            start_us: 0,
            duration_us: ms * 1000,
        };
        // loadlab's own client span (`-trace-spans`): the exemplar's span id, the
        // server span's parent, covering the whole latency; the judgement leaves it out.
        let client = Span {
            parent_id: None,
            service: "loadlab".to_owned(),
            ..span(&format!("{n:016x}"), "", "GET", update_ms + 10)
        };
        vec![
            client,
            span("root", &format!("{n:016x}"), "GET /orders", update_ms + 3),
            span("u", "root", "UPDATE", update_ms),
        ]
    }

    fn exemplar(kind: ExemplarKind, n: u64, latency_ms: u64) -> Exemplar {
        Exemplar {
            kind,
            attack: 0,
            target: 0,
            seq: n,
            trace_id: format!("{n:032x}"),
            span_id: format!("{n:016x}"),
            intended_unix_ns: n,
            latency_ns: latency_ms * 1_000_000,
            status: 200,
            error: 0,
        }
    }

    fn run() -> Vec<Exemplar> {
        let mut exemplars: Vec<Exemplar> = (1001..1041)
            .map(|n| exemplar(ExemplarKind::Slow, n, n))
            .collect();
        exemplars.extend((1..=60).map(|n| exemplar(ExemplarKind::Typical, n, n)));
        exemplars.push(exemplar(ExemplarKind::Failed, 5000, 1));
        exemplars
    }

    #[test]
    fn reads_back_a_bounded_choice_and_names_the_span_that_grew() {
        let store = FakeStore {
            missing: vec![1040, 30],
            down: false,
            asked: Mutex::new(Vec::new()),
        };
        let judgement = where_time_went(&run(), &store);
        let asked: Vec<u64> = (store.asked.lock().unwrap().iter())
            .map(|id| u64::from_str_radix(id, 16).unwrap())
            .collect();
        // The 20 slowest, slowest first, then the 20 typical ones around their median.
        let mut want: Vec<u64> = (1021..1041).rev().collect();
        want.extend(21..41);
        assert_eq!(asked, want);
        let SpanJudgement::Judged(breakdown) = &judgement else {
            panic!("{judgement:?}");
        };
        assert_eq!(
            (
                breakdown.arrived.slow_found,
                breakdown.arrived.typical_found
            ),
            (19, 19)
        );
        assert_eq!(breakdown.operations[0].operation, "UPDATE");
        assert!(
            (breakdown.operations.iter()).all(|op| op.service != "loadlab"),
            "{breakdown:?}"
        );
        let mut text = String::new();
        write_spans_text(&mut text, &judgement);
        assert!(
            text.contains("of their time in orders UPDATE (median 1ms in typical requests, 1.03s in slow ones)"),
            "{text}"
        );
        assert!(
            text.contains("19 of 20 slow, 19 of 20 typical (2 not in the store"),
            "{text}"
        );
        let mut json = String::new();
        write_spans_json(&mut json, &judgement);
        let json: serde_json::Value = serde_json::from_str(&json[",\"spans\":".len()..]).unwrap();
        assert_eq!(json["judged"], true);
        assert_eq!(json["reason_kind"], serde_json::Value::Null);
        assert_eq!(json["operations"][0]["operation"], "UPDATE");
        assert_eq!(json["operations"][0]["slow_median"], 1_030_000_000_u64);
        assert_eq!(json["found"]["slow"], 19);
    }

    #[test]
    fn a_calm_second_s_slowest_are_not_compared() {
        // Typical requests take 1..=60 ms (median 31 ms, so 93 ms is 3x). Slow exemplars
        // 1001..=1040 take (n - 1000) * `step_ms`: (step, the slow ones asked for).
        let rows: [(u64, Vec<u64>); 3] = [
            (3, (1031..=1040).rev().collect()),
            (5, (1021..=1040).rev().collect()),
            (2, Vec::new()),
        ];
        for (step_ms, want_slow) in rows {
            let mut exemplars: Vec<Exemplar> = (1001..=1040)
                .map(|n| exemplar(ExemplarKind::Slow, n, (n - 1000) * step_ms))
                .collect();
            exemplars.extend((1..=60).map(|n| exemplar(ExemplarKind::Typical, n, n)));
            let store = FakeStore {
                missing: Vec::new(),
                down: false,
                asked: Mutex::new(Vec::new()),
            };
            let judgement = where_time_went(&exemplars, &store);
            let asked: Vec<u64> = (store.asked.lock().unwrap().iter())
                .map(|id| u64::from_str_radix(id, 16).unwrap())
                .collect();
            let mut want = want_slow.clone();
            want.extend(21..41);
            assert_eq!(asked, want, "step {step_ms} ms");
            match judgement {
                SpanJudgement::NotJudged { why, .. } => {
                    assert!(want_slow.is_empty(), "{why:?}");
                    assert_eq!(why, SpansUnjudged::NoSlowRequest);
                }
                SpanJudgement::Judged(_) => assert!(!want_slow.is_empty()),
            }
        }
    }

    #[test]
    fn a_store_that_fails_is_not_judged_naming_it() {
        // (store down, exemplars, what the text says, the JSON's kind)
        let rows = [
            (
                true,
                run(),
                "not judged: the trace store http://fake/ could not be read: connection refused",
                "store_unreadable",
            ),
            (
                false,
                Vec::new(),
                "not judged: no traced request took 3x the typical ones' median latency or more",
                "no_slow_request",
            ),
        ];
        for (down, exemplars, want, kind) in rows {
            let store = FakeStore {
                missing: Vec::new(),
                down,
                asked: Mutex::new(Vec::new()),
            };
            let judgement = where_time_went(&exemplars, &store);
            let mut text = String::new();
            write_spans_text(&mut text, &judgement);
            assert!(text.contains(want), "{text}");
            let mut json = String::new();
            write_spans_json(&mut json, &judgement);
            let json: serde_json::Value =
                serde_json::from_str(&json[",\"spans\":".len()..]).unwrap();
            assert_eq!(json["judged"], false);
            assert_eq!(json["reason_kind"], kind);
            assert!(
                json["reason"]
                    .as_str()
                    .unwrap()
                    .starts_with(&want["not judged: ".len()..])
            );
            assert_eq!(json["operations"], serde_json::json!([]));
        }
    }
}
