//! The JSON report: vegeta's metrics object as Go's `encoding/json` prints it (keys in
//! struct order, floats in shortest form, HTML-safe strings, one line), then a `checks`
//! array when some target has flow checks (absent otherwise, so vegeta's object is
//! unchanged), with our extras under one `loadlab` key at the end.

use std::fmt::Write as _;

use analysis::{Finding, Turn};
use record::format_timestamp;

use crate::checks::CheckFigures;
use crate::connections::{ConnectionFigures, StreamedCalls};
use crate::hist::BucketCounts;
use crate::json_write::{push_float, push_list, push_nullable, push_string, push_strings};
use crate::metrics::Report;
use crate::replay_render::write_replay_json;
use crate::resources::{ResourceSummary, SamplerFigures};
use crate::words;
use crate::words::diagnosis::turn_name;

/// Names the group a report covers, for `-by`.
#[derive(Debug, Clone, Copy)]
pub struct GroupLabel<'a> {
    pub by: &'a str,
    pub name: &'a str,
}

/// Appends one line: the report as JSON.
/// `connections`: the `ws` and `sse` connections of the group (or the run), when any.
pub fn write_json(
    out: &mut String,
    report: &Report,
    group: Option<GroupLabel<'_>>,
    connections: Option<&ConnectionFigures>,
    calls: Option<&StreamedCalls>,
) {
    let l = &report.latencies;
    let _ = write!(
        out,
        "{{\"latencies\":{{\"total\":{},\"mean\":{},\"50th\":{},\"90th\":{},\"95th\":{},\
         \"99th\":{},\"max\":{},\"min\":{}}},",
        l.total_ns, l.mean_ns, l.p50_ns, l.p90_ns, l.p95_ns, l.p99_ns, l.max_ns, l.min_ns
    );
    if let Some(buckets) = &report.buckets {
        write_buckets(out, buckets);
    }
    let _ = write!(
        out,
        "\"bytes_in\":{{\"total\":{},\"mean\":",
        report.bytes_in.total
    );
    push_float(out, report.bytes_in.mean);
    let _ = write!(
        out,
        "}},\"bytes_out\":{{\"total\":{},\"mean\":",
        report.bytes_out.total
    );
    push_float(out, report.bytes_out.mean);
    let _ = write!(
        out,
        "}},\"earliest\":\"{}\",\"latest\":\"{}\",\"end\":\"{}\",\"duration\":{},\"wait\":{},\
         \"requests\":{},\"rate\":",
        format_timestamp(report.earliest_unix_ns),
        format_timestamp(report.latest_unix_ns),
        format_timestamp(report.end_unix_ns),
        report.duration_ns,
        report.wait_ns,
        report.requests
    );
    push_float(out, report.rate_per_sec);
    out.push_str(",\"throughput\":");
    push_float(out, report.throughput_per_sec);
    out.push_str(",\"success\":");
    push_float(out, report.success_ratio);
    out.push_str(",\"status_codes\":{");
    for (index, (code, count)) in report.status_codes.iter().enumerate() {
        let comma = if index > 0 { "," } else { "" };
        let _ = write!(out, "{comma}\"{code}\":{count}");
    }
    out.push_str("},\"errors\":[");
    push_strings(out, report.errors.iter());
    out.push(']');
    if !report.checks.is_empty() {
        write_checks(out, &report.checks);
    }
    out.push_str(",\"loadlab\":");
    write_extras(out, report, group, connections, calls);
    out.push_str("}\n");
}

/// `,"checks":[{"name","scenario","step","check","passes","fails","pass_rate"}...]`
/// in report order; `pass_rate` is passes over passes and fails, unrounded.
fn write_checks(out: &mut String, checks: &[CheckFigures]) {
    out.push_str(",\"checks\":");
    push_list(out, checks, |out, check| {
        out.push_str("{\"name\":");
        push_string(out, &check.name);
        out.push_str(",\"scenario\":");
        push_string(out, &check.scenario);
        out.push_str(",\"step\":");
        push_string(out, &check.step);
        out.push_str(",\"check\":");
        push_string(out, &check.check);
        let _ = write!(
            out,
            ",\"passes\":{},\"fails\":{},\"pass_rate\":",
            check.passes, check.fails
        );
        push_float(out, check.pass_rate());
        out.push('}');
    });
}

/// vegeta's `buckets` object: bound in ns -> count.
fn write_buckets(out: &mut String, buckets: &BucketCounts) {
    out.push_str("\"buckets\":{");
    for (index, (bound, count)) in buckets.bounds_ns().iter().zip(buckets.counts()).enumerate() {
        let comma = if index > 0 { "," } else { "" };
        let _ = write!(out, "{comma}\"{bound}\":{count}");
    }
    out.push_str("},");
}

fn write_extras(
    out: &mut String,
    report: &Report,
    group: Option<GroupLabel<'_>>,
    connections: Option<&ConnectionFigures>,
    calls: Option<&StreamedCalls>,
) {
    let (extras, exact) = (&report.extras, report.latencies_exact);
    out.push_str("{\"latency_from\":\"intended\",\"percentiles\":");
    push_string(
        out,
        if exact {
            "exact"
        } else {
            "3 significant digits"
        },
    );
    if let Some(group) = group {
        out.push_str(",\"group\":{\"by\":");
        push_string(out, group.by);
        out.push_str(",\"name\":");
        push_string(out, group.name);
        out.push('}');
    }
    if let Some(lag) = &extras.send_lag {
        let _ = write!(
            out,
            ",\"send_lag\":{{\"mean\":{},\"50th\":{},\"99th\":{},\"max\":{}}}",
            lag.mean_ns, lag.p50_ns, lag.p99_ns, lag.max_ns
        );
    }
    if let Some(precision_ns) = extras.precision_ns {
        let _ = write!(out, ",\"precision_ns\":{precision_ns}");
    }
    if let Some(asked) = &extras.asked {
        let rates = [
            ("asked_rate", asked.asked_per_sec),
            ("achieved_rate", asked.achieved_per_sec),
            ("rate_ratio", asked.ratio),
        ];
        for (key, value) in rates {
            let _ = write!(out, ",\"{key}\":");
            push_float(out, value);
        }
        let _ = write!(out, ",\"unsent\":{}", asked.unsent);
    }
    if let Some(generator) = &extras.generator {
        let _ = write!(
            out,
            ",\"generator\":{{\"cpu\":{},\"cpu_per_request\":{},\"peak_rss_bytes\":{}}}",
            generator.cpu_ns, generator.cpu_per_request_ns, generator.peak_rss_bytes
        );
    }
    if let Some(run) = &extras.run {
        let _ = write!(
            out,
            ",\"run\":{{\"model\":\"{}\",\"attacks\":{},\"stop\":",
            run.model, run.attacks
        );
        push_string(out, &run.stop);
        out.push('}');
    }
    if let Some(protocols) = &extras.protocols {
        out.push_str(",\"protocols\":{");
        for (index, (protocol, count)) in protocols.iter().enumerate() {
            let comma = if index > 0 { "," } else { "" };
            let _ = write!(out, "{comma}\"{}\":{count}", protocol.name());
        }
        out.push('}');
    }
    if let Some(finding) = &extras.saturation {
        out.push_str(",\"saturation\":");
        write_saturation(out, finding);
    }
    if let Some(resources) = &extras.resources {
        out.push_str(",\"resources\":");
        write_resources(out, resources);
    }
    if let Some(diagnosis) = &extras.diagnosis {
        out.push_str(",\"diagnosis\":");
        write_diagnosis(out, diagnosis);
    }
    write_replay_json(out, &extras.replay);
    crate::traces::write_traces_json(out, extras.traces.as_ref());
    if let Some(calls) = calls {
        out.push_str(",\"grpc_streams\":");
        crate::connections::write_calls_json(out, calls);
    }
    if let Some(figures) = connections {
        out.push_str(",\"connections\":");
        crate::connections::write_connections_json(out, figures);
    }
    out.push_str(",\"warnings\":[");
    let resource_warnings = extras
        .resources
        .iter()
        .flat_map(|r| r.warnings.iter().cloned());
    let warnings = extras
        .warnings
        .iter()
        .map(ToString::to_string)
        .chain(resource_warnings);
    push_strings(out, warnings);
    out.push_str("]}");
}

/// `{"verdict":..., "lines":[...], "knee":{...}|null, "findings":[...], "held":[...]}`:
/// the sentences of the text report and their evidence as numbers (times in ns from
/// the run's start).
fn write_diagnosis(out: &mut String, diagnosis: &analysis::Diagnosis) {
    let first_limit = diagnosis
        .first_limit()
        .map_or("null".to_owned(), |index| index.to_string());
    let _ = write!(
        out,
        "{{\"verdict\":\"{}\",\"first_limit\":{first_limit},\"lines\":[",
        diagnosis.verdict_name()
    );
    push_strings(out, words::diagnosis::lines(diagnosis));
    out.push_str("],\"knee\":");
    push_nullable(out, diagnosis.knee.as_ref(), |out, knee| {
        let _ = write!(out, "{{\"at_ns\":{},\"offered_rate\":", knee.at_ns);
        push_float(out, knee.offered_per_sec);
        out.push_str(",\"peak_ok_rate\":");
        push_float(out, knee.peak_ok_per_sec);
        out.push('}');
    });
    out.push_str(",\"findings\":");
    push_list(out, &diagnosis.findings, |out, finding| {
        write_watched(out, &finding.watched);
        let _ = write!(
            out,
            ",\"at_ns\":{},\"timing\":\"{}\",\"value\":",
            finding.crossing.at_ns,
            finding.timing.name()
        );
        push_float(out, finding.crossing.value);
        out.push('}');
    });
    out.push_str(",\"held\":");
    push_list(out, &diagnosis.held, |out, watched| {
        write_watched(out, watched);
        out.push('}');
    });
    out.push_str(",\"unjudged\":[");
    let unjudged: Vec<String> = diagnosis
        .unjudged
        .iter()
        .map(words::diagnosis::unjudged)
        .collect();
    push_strings(out, &unjudged);
    out.push_str("]}");
}

/// A watched resource's fields, its object left open for the caller's.
fn write_watched(out: &mut String, watched: &analysis::Watched) {
    out.push_str("{\"name\":");
    push_string(out, &watched.name);
    let _ = write!(
        out,
        ",\"resource\":\"{}\",\"series\":",
        watched.resource.name()
    );
    push_string(out, &watched.series);
    let _ = write!(out, ",\"unit\":\"{}\",\"limit\":", watched.unit);
    match watched.limit {
        Some(limit) => push_float(out, limit),
        None => out.push_str("null"),
    }
    out.push_str(",\"peak\":");
    push_float(out, watched.peak);
    let _ = write!(out, ",\"peak_at_ns\":{}", watched.peak_at_ns);
    let note = watched.note.as_ref().map(words::diagnosis::note);
    for (key, text) in [("note", &note), ("example", &watched.example)] {
        if let Some(text) = text {
            let _ = write!(out, ",\"{key}\":");
            push_string(out, text);
        }
    }
}

/// `{"finding":"saturated"|"no_saturation"|"not_a_ramp","reason":...}`, with the
/// point's offered rate (req/s), time offset (ns from the first intended send) and
/// signal, and every turn, when saturated.
fn write_saturation(out: &mut String, finding: &Finding) {
    let kind = match finding {
        Finding::NotARamp { .. } => "not_a_ramp",
        Finding::NoSaturation { .. } => "no_saturation",
        Finding::Saturated { .. } => "saturated",
    };
    let _ = write!(out, "{{\"finding\":\"{kind}\",\"reason\":");
    push_string(out, &words::saturation::finding(finding));
    match finding {
        Finding::NotARamp { .. } => {}
        Finding::NoSaturation {
            up_to_per_sec,
            peak_ok_per_sec,
        } => {
            out.push_str(",\"up_to_rate\":");
            push_float(out, *up_to_per_sec);
            out.push_str(",\"peak_ok_rate\":");
            push_float(out, *peak_ok_per_sec);
        }
        Finding::Saturated {
            point,
            turns,
            peak_ok_per_sec,
        } => {
            out.push_str(",\"peak_ok_rate\":");
            push_float(out, *peak_ok_per_sec);
            out.push_str(",\"point\":");
            write_turn(out, point);
            out.push_str(",\"turns\":[");
            for (index, turn) in turns.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_turn(out, turn);
            }
            out.push(']');
        }
    }
    out.push('}');
}

fn write_turn(out: &mut String, turn: &Turn) {
    let _ = write!(
        out,
        "{{\"signal\":\"{}\",\"offered_rate\":",
        turn_name(turn.kind())
    );
    push_float(out, turn.offered_per_sec);
    let _ = write!(out, ",\"at\":{},\"reason\":", turn.start_ns);
    push_string(out, &words::saturation::turn(turn));
    out.push('}');
}

/// One line for inputs without requests: `{"loadlab":{"resources":{...},"warnings":[...]}}`.
pub(crate) fn write_resources_json(
    out: &mut String,
    resources: &ResourceSummary,
    diagnosis: Option<&analysis::Diagnosis>,
) {
    out.push_str("{\"loadlab\":{\"resources\":");
    write_resources(out, resources);
    if let Some(diagnosis) = diagnosis {
        out.push_str(",\"diagnosis\":");
        write_diagnosis(out, diagnosis);
    }
    out.push_str(",\"warnings\":[");
    push_strings(out, resources.warnings.iter());
    out.push_str("]}}\n");
}

/// `{"samplers":[{"kind","name","gaps","gap_reasons":[...], measure:{peak,mean,peak_at}...}],
/// "series","values","gaps"}`; measure names as in `resources.rs` (`cpu` in percent,
/// `rss` in bytes, `tx` per second, ...), times in unix ns.
fn write_resources(out: &mut String, resources: &ResourceSummary) {
    out.push_str("{\"samplers\":[");
    for (index, figures) in resources.samplers.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_sampler(out, figures);
    }
    let _ = write!(
        out,
        "],\"series\":{},\"values\":{},\"gaps\":{}}}",
        resources.series, resources.values, resources.gaps
    );
}

fn write_sampler(out: &mut String, figures: &SamplerFigures) {
    out.push_str("{\"kind\":");
    push_string(out, figures.kind.name());
    out.push_str(",\"name\":");
    push_string(out, &figures.name);
    let _ = write!(out, ",\"gaps\":{},\"gap_reasons\":[", figures.gaps);
    push_strings(out, figures.reasons.iter());
    out.push(']');
    for (name, stat) in figures.stats.iter().filter(|(_, s)| s.samples > 0) {
        let _ = write!(out, ",\"{name}\":{{\"peak\":");
        push_float(out, stat.peak);
        out.push_str(",\"mean\":");
        push_float(out, stat.mean());
        let _ = write!(
            out,
            ",\"peak_at\":{},\"samples\":{}}}",
            stat.peak_at_unix_ns, stat.samples
        );
    }
    out.push('}');
}
