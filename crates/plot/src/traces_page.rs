//! The traced requests (`attack -trace`, docs/TRACES.md) on the run page, as the
//! summary holds them (`report::judge_traces`, judged once): the slowest and the
//! first failed traced requests as dots on the latency chart, each a link to its trace
//! with `-trace-link`, and a panel listing them and, with `-trace-store`, where the slow
//! requests' time went, in `report::words::spans`' words.

use std::fmt::Write as _;

use analysis::SpanJudgement;
use report::words::spans as words;
use report::{TracedRequest, TracedRequests};

use crate::format;
use crate::gather::RunData;
use crate::model::{Chart, Series, Style, x_seconds};
use crate::svg::escape;

const TRACES_STYLE: &str = include_str!("traces.css");
/// The traced requests' dots: dark, apart from the blue and red of the scatter.
const TRACED: &str = "#111827";

/// Adds the traced requests to the latency chart, on top, at their intended send time
/// and latency, named by trace id on hover.
pub fn mark_traced(charts: &mut [Chart], data: &RunData) {
    let Some(traces) = &data.report.extras.traces else {
        return;
    };
    let Some(chart) = charts.iter_mut().find(|c| c.id == "latency") else {
        return;
    };
    let requests: Vec<&TracedRequest> = traces.slowest.iter().chain(&traces.failures).collect();
    if requests.is_empty() {
        return;
    }
    let mut series = Series::new("traced", TRACED, Style::Points);
    series.emphasis = true;
    for request in &requests {
        // `at_ns` counts from the earliest send, as `report` lists it.
        let at_unix_ns = data.report.earliest_unix_ns.saturating_add(request.at_ns);
        series.x.push(x_seconds(data.origin_unix_ns, at_unix_ns));
        series.y.push(request.latency_ns as f64);
        series.labels.push(chart.labels.len() as u32);
        chart.labels.push(format!("trace {}", request.trace_id));
    }
    series.links = (requests.iter())
        .map_while(|request| request.link.clone())
        .collect();
    let linked = !series.links.is_empty();
    chart.series.push(series);
    chart.caption.push_str(
        " Dark dots: the slowest traced requests and each error's first (attack -trace), at \
         their intended send time",
    );
    chart.caption.push_str(if linked {
        "; each ring links to its trace (-trace-link)."
    } else {
        "; named by trace id on hover."
    });
}

/// The panel: where the slow requests' time went (with `-trace-store`), then the
/// traced requests with their links.
pub fn panel(out: &mut String, traces: Option<&TracedRequests>) {
    let Some(traces) = traces else {
        return;
    };
    let sampled = traces.sample.map_or_else(
        || "not judged: no input was recorded with attack -trace".to_owned(),
        |sample| format!("-trace, {} sampled", words::sample_share(sample)),
    );
    let _ = write!(
        out,
        "<style>\n{TRACES_STYLE}</style>\n<section class=\"traces\" aria-labelledby=\"traces-title\">\n\
         <h2 id=\"traces-title\">Traced requests <span class=\"muted\">({})</span></h2>\n",
        escape(&sampled)
    );
    if let Some(spans) = &traces.spans {
        spans_html(out, spans);
    }
    requests_table(out, traces);
    out.push_str("</section>\n");
}

fn spans_html(out: &mut String, judgement: &SpanJudgement) {
    let _ = writeln!(
        out,
        "<p class=\"headline\">Where the time went (-trace-store): {}</p>",
        escape(&words::headline(judgement))
    );
    if let Some(counts) = judgement.arrived() {
        let _ = writeln!(out, "<p>{}</p>", escape(&words::arrived(counts)));
    }
    let SpanJudgement::Judged(breakdown) = judgement else {
        return;
    };
    out.push_str(
        "<table class=\"spans\">\n<thead><tr><th>operation</th><th>slow share</th>\
         <th>typical median</th><th>slow median</th></tr></thead>\n<tbody>\n",
    );
    for time in &breakdown.operations {
        out.push_str("<tr>");
        for cell in words::row(time) {
            let _ = write!(out, "<td>{}</td>", escape(&cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

fn requests_table(out: &mut String, traces: &TracedRequests) {
    let rows = (traces.slowest.iter().map(|r| ("slowest", r)))
        .chain(traces.failures.iter().map(|r| ("failed", r)));
    let mut any = false;
    for (kind, request) in rows {
        if !any {
            out.push_str(
                "<table class=\"requests\">\n<thead><tr><th></th><th>sent</th><th>latency</th>\
                 <th>status</th><th>target</th><th>trace</th><th>error</th></tr></thead>\n<tbody>\n",
            );
            any = true;
        }
        let trace = match &request.link {
            Some(link) => format!(
                "<a href=\"{}\" target=\"_blank\" rel=\"noopener noreferrer\">{}</a>",
                escape(link),
                escape(&request.trace_id)
            ),
            None => escape(&request.trace_id),
        };
        let _ = writeln!(
            out,
            "<tr class=\"{kind}\"><td>{kind}</td><td>+{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"trace\">{trace}</td><td>{}</td></tr>",
            format::duration_ns(request.at_ns as f64),
            format::duration_ns(request.latency_ns as f64),
            request.status,
            escape(&request.target),
            escape(request.error.as_deref().unwrap_or("")),
        );
    }
    if any {
        out.push_str("</tbody>\n</table>\n");
    } else if traces.sample.is_some() {
        out.push_str("<p>none kept: no traced request completed</p>\n");
    }
}
