//! The traced requests worth looking at (`attack -trace`, docs/TRACES.md): judged once
//! from the inputs' exemplars into [`TracedRequests`] (the slowest, the first
//! failures, each with its trace id and `-trace-link`), which the text and JSON
//! reports only word. Hooked into the report at three places: the pipeline sets
//! `RunFacts::traces`, `Extras::build` hands it to the whole-run report, and
//! `write_text` / `write_json` call [`write_traces_text`] / [`write_traces_json`].

use std::fmt::Write as _;

use record::{Exemplar, ExemplarKind, RunTables, SourceSummary};
use units::GoDuration;

use crate::ReportError;
use crate::json_write::{push_float, push_string};
use crate::span_breakdown::{
    TraceStoreHandle, where_time_went, write_spans_json, write_spans_text,
};
use crate::words::spans as words;

/// The slowest traced requests a report lists.
pub const SLOWEST_LISTED: usize = 10;
/// The failed traced requests a report lists (the first of each error, by send time).
pub const FAILURES_LISTED: usize = 10;
/// What `-trace-link` must hold.
const TRACE_ID: &str = "{trace_id}";

/// `-trace-link`: a URL with `{trace_id}` where each request's trace id goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceLink(String);

impl TraceLink {
    /// Checks that `text` has a `{trace_id}` to fill.
    pub fn parse(text: &str) -> Result<TraceLink, ReportError> {
        if !text.contains(TRACE_ID) {
            return Err(ReportError::Flag {
                flag: "-trace-link",
                reason: format!(
                    "{text:?} has no {TRACE_ID} to put each trace id in, like 'http://127.0.0.1:16686/trace/{TRACE_ID}'"
                ),
            });
        }
        Ok(TraceLink(text.to_owned()))
    }

    /// The link of trace `trace_id`.
    pub fn to(&self, trace_id: &str) -> String {
        self.0.replace(TRACE_ID, trace_id)
    }
}

/// What the report says about traced requests.
#[derive(Debug, Clone, PartialEq)]
pub struct TracedRequests {
    /// The share of requests that carried a trace context, over the traced inputs
    /// (the smallest); `None` when no input was traced (then only `-trace-link` asked).
    pub sample: Option<f64>,
    /// The slowest traced successful requests kept, slowest first.
    pub slowest: Vec<TracedRequest>,
    /// The first traced request of each error, by send time.
    pub failures: Vec<TracedRequest>,
    /// Where the slow requests' time went, read back from `-trace-store`; `None`
    /// when no store was given.
    pub spans: Option<analysis::SpanJudgement>,
}

/// One traced request, resolved for the reader.
#[derive(Debug, Clone, PartialEq)]
pub struct TracedRequest {
    /// Its send time after the run's first, nanoseconds.
    pub at_ns: u64,
    /// `METHOD URL` of its target.
    pub target: String,
    /// Its latency, nanoseconds.
    pub latency_ns: u64,
    /// Its status (0: none).
    pub status: u16,
    /// Its error's text, when it failed with one.
    pub error: Option<String>,
    /// The trace id it sent (32 hex digits).
    pub trace_id: String,
    /// The trace's page, from `-trace-link`.
    pub link: Option<String>,
}

/// Judges the exemplars of the inputs (merged ids, `tables`'), once: `None` when no
/// input was traced and neither a link nor a store was asked for. With a `store`, reads
/// the chosen traces back from it (see `span_breakdown.rs`).
pub fn judge_traces(
    exemplars: &[Exemplar],
    summaries: &[SourceSummary],
    tables: &RunTables,
    (link, store): (Option<&TraceLink>, Option<&TraceStoreHandle>),
    start_unix_ns: u64,
) -> Option<TracedRequests> {
    let sample = (summaries.iter())
        .filter_map(|s| s.header.trace.map(|t| t.sample))
        .reduce(f64::min);
    if sample.is_none() && link.is_none() && store.is_none() {
        return None;
    }
    let resolve = |exemplar: &Exemplar| TracedRequest {
        at_ns: exemplar.intended_unix_ns.saturating_sub(start_unix_ns),
        target: tables
            .targets
            .get(exemplar.target as usize)
            .map_or_else(String::new, |t| format!("{} {}", t.method, t.url)),
        latency_ns: exemplar.latency_ns,
        status: exemplar.status,
        error: tables.error(exemplar.error).map(|e| e.text.clone()),
        trace_id: exemplar.trace_id.clone(),
        link: link.map(|link| link.to(&exemplar.trace_id)),
    };
    let mut slow: Vec<&Exemplar> = of_kind(exemplars, ExemplarKind::Slow).collect();
    slow.sort_by_key(|e| (std::cmp::Reverse(e.latency_ns), e.intended_unix_ns));
    let mut failed: Vec<&Exemplar> = of_kind(exemplars, ExemplarKind::Failed).collect();
    failed.sort_by_key(|e| (e.intended_unix_ns, e.error));
    let mut errors_seen = Vec::new();
    failed.retain(|e| {
        !errors_seen.contains(&e.error) && {
            errors_seen.push(e.error);
            true
        }
    });
    Some(TracedRequests {
        sample,
        slowest: slow.into_iter().take(SLOWEST_LISTED).map(resolve).collect(),
        failures: failed
            .into_iter()
            .take(FAILURES_LISTED)
            .map(resolve)
            .collect(),
        spans: store
            .filter(|_| sample.is_some())
            .map(|store| where_time_went(exemplars, &*store.0)),
    })
}

fn of_kind(exemplars: &[Exemplar], kind: ExemplarKind) -> impl Iterator<Item = &Exemplar> {
    exemplars.iter().filter(move |e| e.kind == kind)
}

/// The text block, after a blank line:
///
/// ```text
/// Traced requests (-trace, 1% sampled)
///   slowest  +12.3s  812.3ms  200  GET http://h/a  trace 0af7…  http://…/trace/0af7…
///   failed   +1.2s   30s      0    GET http://h/a  trace 9c1e…  timeout
/// ```
pub fn write_traces_text(out: &mut String, traces: Option<&TracedRequests>) {
    let Some(traces) = traces else {
        return;
    };
    let Some(sample) = traces.sample else {
        out.push_str(
            "\nTraced requests: not judged: no input was recorded with attack -trace, so there are no trace ids to link (-trace-link) or read back (-trace-store)\n",
        );
        return;
    };
    let _ = writeln!(
        out,
        "\nTraced requests (-trace, {} sampled)",
        words::sample_share(sample)
    );
    if traces.slowest.is_empty() && traces.failures.is_empty() {
        out.push_str("  none kept: no traced request completed\n");
    }
    let rows = (traces.slowest.iter().map(|r| ("slowest", r)))
        .chain(traces.failures.iter().map(|r| ("failed", r)));
    let mut table = String::new();
    for (kind, request) in rows {
        let _ = write!(
            table,
            "  {kind}\t+{}\t{}\t{}\t{}\ttrace {}",
            GoDuration::report_ns(request.at_ns),
            GoDuration::report_ns(request.latency_ns),
            request.status,
            request.target,
            request.trace_id,
        );
        if let Some(error) = &request.error {
            let _ = write!(table, "\t{error}");
        }
        if let Some(link) = &request.link {
            let _ = write!(table, "\t{link}");
        }
        table.push('\n');
    }
    out.push_str(&crate::tabwriter::align(&table, &[]));
    if let Some(spans) = &traces.spans {
        write_spans_text(out, spans);
    }
}

/// `,"traces":{"sample":…,"slowest":[…],"failures":[…]}` inside the report's
/// `loadlab` object; `sample` is null when no input was traced.
pub fn write_traces_json(out: &mut String, traces: Option<&TracedRequests>) {
    let Some(traces) = traces else {
        return;
    };
    out.push_str(",\"traces\":{\"sample\":");
    match traces.sample {
        Some(sample) => push_float(out, sample),
        None => out.push_str("null"),
    }
    for (name, requests) in [("slowest", &traces.slowest), ("failures", &traces.failures)] {
        let _ = write!(out, ",\"{name}\":[");
        for (index, request) in requests.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            write_request_json(out, request);
        }
        out.push(']');
    }
    if let Some(spans) = &traces.spans {
        write_spans_json(out, spans);
    }
    out.push('}');
}

fn write_request_json(out: &mut String, request: &TracedRequest) {
    let _ = write!(
        out,
        "{{\"at\":{},\"latency\":{},\"status\":{},\"target\":",
        request.at_ns, request.latency_ns, request.status
    );
    push_string(out, &request.target);
    out.push_str(",\"trace_id\":");
    push_string(out, &request.trace_id);
    out.push_str(",\"error\":");
    match &request.error {
        Some(error) => push_string(out, error),
        None => out.push_str("null"),
    }
    out.push_str(",\"link\":");
    match &request.link {
        Some(link) => push_string(out, link),
        None => out.push_str("null"),
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{ErrorEntry, ErrorKind, RunHeader, TargetInfo, TraceInfo};

    const T0: u64 = 1_700_000_000_000_000_000;

    fn exemplar(kind: ExemplarKind, seq: u64, latency_ms: u64, error: u32) -> Exemplar {
        Exemplar {
            kind,
            attack: 0,
            target: 0,
            seq,
            trace_id: format!("{seq:032x}"),
            span_id: format!("{seq:016x}"),
            intended_unix_ns: T0 + seq * 1_000_000_000,
            latency_ns: latency_ms * 1_000_000,
            status: if error == 0 { 200 } else { 0 },
            error,
        }
    }

    fn traced_summary(sample: Option<f64>) -> SourceSummary {
        let mut summary = SourceSummary {
            name: "run.llr".to_owned(),
            format: record::InputFormat::Binary,
            header: RunHeader::default(),
            stats: Vec::new(),
            end: None,
            torn: None,
            records: 0,
            samples: record::SampleSummary::default(),
            logged: 0,
        };
        summary.header.trace = sample.map(|sample| TraceInfo { sample });
        summary
    }

    fn tables() -> RunTables {
        RunTables {
            attacks: Vec::new(),
            targets: vec![TargetInfo {
                method: "GET".to_owned(),
                url: "http://127.0.0.1:8080/a".to_owned(),
                ..TargetInfo::default()
            }],
            errors: vec![
                ErrorEntry {
                    kind: ErrorKind::Timeout,
                    text: "timeout".to_owned(),
                },
                ErrorEntry {
                    kind: ErrorKind::Connect,
                    text: "connection refused".to_owned(),
                },
            ],
        }
    }

    #[test]
    fn a_link_needs_its_trace_id_place() {
        let link = TraceLink::parse("http://127.0.0.1:16686/trace/{trace_id}").unwrap();
        assert_eq!(link.to("ab"), "http://127.0.0.1:16686/trace/ab");
        let err = TraceLink::parse("http://127.0.0.1:16686/trace/").unwrap_err();
        assert!(err.to_string().starts_with("-trace-link: "), "{err}");
        assert!(err.to_string().contains("{trace_id}"), "{err}");
    }

    #[test]
    fn lists_the_slowest_first_and_each_errors_first_failure() {
        let mut exemplars: Vec<Exemplar> = (0..15)
            .map(|n| exemplar(ExemplarKind::Slow, n, n * 10, 0))
            .collect();
        exemplars.extend([
            exemplar(ExemplarKind::Failed, 30, 5, 2),
            exemplar(ExemplarKind::Failed, 20, 30_000, 1),
            exemplar(ExemplarKind::Failed, 25, 30_000, 1),
        ]);
        let link = TraceLink::parse("http://j/trace/{trace_id}").unwrap();
        let summaries = [traced_summary(Some(0.01))];
        let traces =
            judge_traces(&exemplars, &summaries, &tables(), (Some(&link), None), T0).unwrap();
        assert_eq!(traces.sample, Some(0.01));
        let slow: Vec<u64> = traces
            .slowest
            .iter()
            .map(|r| r.latency_ns / 10_000_000)
            .collect();
        assert_eq!(slow, [14, 13, 12, 11, 10, 9, 8, 7, 6, 5]);
        let failed: Vec<(u64, Option<&str>)> = (traces.failures.iter())
            .map(|r| (r.at_ns / 1_000_000_000, r.error.as_deref()))
            .collect();
        assert_eq!(
            failed,
            [(20, Some("timeout")), (30, Some("connection refused"))]
        );
        let first = &traces.slowest[0];
        assert_eq!(
            first.link.as_deref(),
            Some(format!("http://j/trace/{:032x}", 14).as_str())
        );
        let mut text = String::new();
        write_traces_text(&mut text, Some(&traces));
        assert!(
            text.contains("Traced requests (-trace, 1% sampled)"),
            "{text}"
        );
        assert!(text.contains(&format!("trace {:032x}", 14)), "{text}");
        assert!(text.contains("connection refused"), "{text}");
        let mut json = String::new();
        write_traces_json(&mut json, Some(&traces));
        assert!(
            json.starts_with(",\"traces\":{\"sample\":0.01,\"slowest\":[{"),
            "{json}"
        );
        assert_eq!(
            json.matches("\"trace_id\"").count(),
            SLOWEST_LISTED + 2,
            "{json}"
        );
        assert!(json.contains("\"failures\":[{\"at\":20000000000,\"latency\":30000000000,\"status\":0,\"target\":\"GET http://127.0.0.1:8080/a\""), "{json}");
        assert_eq!(words::sample_share(0.005), "0.5%");
    }

    #[test]
    fn says_when_nothing_was_traced_or_kept() {
        let link = TraceLink::parse("http://j/{trace_id}").unwrap();
        // (inputs traced, link, what the text says)
        let rows = [
            (None, None, None),
            (
                None,
                Some(&link),
                Some("not judged: no input was recorded with attack -trace"),
            ),
            (Some(1.0), None, Some("none kept")),
        ];
        for (sample, link, want) in rows {
            let summaries = [traced_summary(sample)];
            let traces = judge_traces(&[], &summaries, &tables(), (link, None), T0);
            let mut text = String::new();
            write_traces_text(&mut text, traces.as_ref());
            match want {
                None => assert_eq!(traces, None),
                Some(want) => assert!(text.contains(want), "{text}"),
            }
        }
    }
}
