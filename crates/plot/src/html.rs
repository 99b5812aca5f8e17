//! The run page: one self-contained HTML file that works offline from `file://`. Its
//! content security policy allows no network fetch at all. At the top: the title, what
//! was read, any warning, the key figures, the diagnosis (what ran out first, in
//! `loadlab report`'s sentences, when the run has a knee or samples), for flows each
//! check's totals (the worst failing check first in words, then a table) and the report's
//! text summary (as `loadlab report` prints it, with the generator's send lag and CPU,
//! and the system under test's resource rows when the inputs hold samples); then every
//! chart as inline SVG, readable without script, the diagnosis marked on its time axis. Samples alone (a monitor file) make a page of resource
//! charts under their summary. Our script (`page.js`, with `page.css`) adds
//! hover values, zoom by drag on the shared time axis and log/linear switches, from
//! the chart data embedded as JSON (`json.rs`). The live dashboard's copy of the page
//! (`live_page.rs`) also may fetch from where it came (`connect-src 'self'`), and
//! carries a second script that polls for updates.

use std::fmt::Write as _;

use analysis::Diagnosis;
use analysis::diagnosis::Verdict;
use record::{AttackInfo, InputFormat, LoadModel, Protocol, SamplerKind, SourceSummary};
use report::words::diagnosis as words;
use report::{Report, ResourceSummary, write_resources_text, write_text};

use crate::charts::PageCharts;
use crate::config::PlotConfig;
use crate::flows::{self, CheckTotal};
use crate::format;
use crate::gather::RunData;
use crate::json;
use crate::live_script::{self, LiveState};
use crate::model::{Chart, TimeAxis, TimeZero};
use crate::replay_page;
use crate::svg::{self, escape};

const STYLE: &str = include_str!("page.css");
/// The checks panel's style, only on pages that have one (a page without checks is
/// byte for byte what it was before flows), and beside the panel in `<main>`, so the
/// live dashboard, which swaps in a newer `<main>` and keeps its first `<head>`, has
/// it once checks appear.
const CHECKS_STYLE: &str = include_str!("checks.css");
const SCRIPT: &str = include_str!("page.js");
/// Runs first, so errors anywhere on the page (our script included) are counted where
/// a test can read them: `data-plot-errors` on the root element.
const ERROR_TRAP: &str = "window.plotErrors=[];\
addEventListener('error',function(e){plotErrors.push(String(e.message||e.type))},true);\
addEventListener('securitypolicyviolation',function(e){plotErrors.push('blocked '+e.violatedDirective+' '+e.blockedURI)});\
(function(){var f=console.error;console.error=function(){plotErrors.push(Array.prototype.join.call(arguments,' '));f.apply(console,arguments)}})();";
/// Nothing may be fetched: no script, style, image, font or connection from anywhere.
pub(crate) const CONTENT_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

/// The page for a run; with `live`, as the dashboard serves it (see [`live_page`]).
pub fn page(
    config: &PlotConfig,
    data: &RunData,
    charts: &PageCharts,
    live: Option<&LiveState>,
) -> String {
    let mut out = String::with_capacity(1 << 20);
    open_page_with(&mut out, config.page_title(), "", live.is_some());
    let _ = writeln!(out, "<header>\n<h1>{}</h1>", escape(config.page_title()));
    run_facts(&mut out, data, &charts.axis);
    out.push_str("</header>\n");
    if let Some(live) = live.filter(|live| !live.notes.is_empty()) {
        out.push_str("<section class=\"notes\">\n");
        for note in &live.notes {
            let _ = writeln!(out, "<p>{}</p>", escape(note));
        }
        out.push_str("</section>\n");
    }
    warnings(&mut out, data);
    if data.report.requests > 0 {
        key_figures(&mut out, &data.report, &data.flows.checks);
    }
    let diagnosis = data.report.extras.diagnosis.as_ref();
    if let Some(diagnosis) = diagnosis {
        let marked = charts.charts.iter().any(|c| !c.markers.is_empty());
        diagnosis_panel(&mut out, diagnosis, marked);
    }
    checks_panel(&mut out, &data.flows.checks);
    crate::traces_page::panel(&mut out, data.report.extras.traces.as_ref());
    replay_page::panel(&mut out, &data.replay);
    if data.report.requests > 0 {
        summary(&mut out, &data.report);
    } else if let Some(resources) = &data.facts.resources {
        resources_summary(&mut out, resources, diagnosis);
    }
    out.push_str(
        "<p class=\"help\">Hover a chart for values. Drag across a time chart to zoom: every \
         time chart follows. Double-click or <button type=\"button\" id=\"zoom-out\" \
         disabled>zoom out</button> to see the whole run.</p>\n",
    );
    for chart in &charts.charts {
        figure(&mut out, chart, &charts.axis);
    }
    let counted = if data.report.requests == 0 {
        let values = data.facts.resources.as_ref().map_or(0, |s| s.values);
        format!("{} resource samples", format::grouped(values))
    } else {
        format!("{} requests", format::grouped(data.report.requests))
    };
    let footer = format!(
        "loadlab plot &middot; {counted} &middot; one self-contained file: no network \
         access, no external script or font"
    );
    close_page(&mut out, &footer, &charts.charts, &charts.axis);
    if let Some(state) = live {
        live_script::add_script(&mut out, state);
    }
    out
}

/// The page's head (title, content policy, error trap, style and `extra_style`) up to
/// the opening of `<main>`.
pub(crate) fn open_page(out: &mut String, title: &str, extra_style: &str) {
    open_page_with(out, title, extra_style, false);
}

/// [`open_page`]; a `live` page may also fetch from where it came (its updates).
pub(crate) fn open_page_with(out: &mut String, title: &str, extra_style: &str, live: bool) {
    let policy = if live {
        live_script::CONTENT_POLICY
    } else {
        CONTENT_POLICY
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n\
         <title>{}</title>\n<script>{ERROR_TRAP}</script>\n<style>\n{STYLE}{extra_style}</style>\n\
         </head>\n<body>\n<main>\n",
        escape(title)
    );
}

/// The footer (`footer_html`, markup as given), the charts' data and the script.
pub(crate) fn close_page(out: &mut String, footer_html: &str, charts: &[Chart], axis: &TimeAxis) {
    let _ = write!(
        out,
        "<footer>{footer_html}</footer>\n</main>\n\
         <script type=\"application/json\" id=\"plot-data\">{}</script>\n\
         <script>\n{SCRIPT}</script>\n</body>\n</html>\n",
        json::page_data(charts, axis)
    );
}

/// What was read: inputs, time origin and span, attacks, targets.
fn run_facts(out: &mut String, data: &RunData, axis: &TimeAxis) {
    out.push_str("<dl class=\"facts\">\n");
    let inputs: Vec<String> = data.summaries.iter().map(input_text).collect();
    fact(out, "inputs", &inputs.join("; "));
    let span_ns = data.report.duration_ns.saturating_add(data.report.wait_ns);
    let time = match axis.zero {
        TimeZero::FirstRequest => format!(
            "t = 0 at {} (the first request due); {} of sending, {} in all",
            svg::origin_text(axis.origin_unix_ns),
            span_text(data.report.duration_ns),
            span_text(span_ns)
        ),
        TimeZero::FirstSample => format!(
            "t = 0 at {} (the first resource sample); no requests",
            svg::origin_text(axis.origin_unix_ns)
        ),
    };
    fact(out, "time", &time);
    if let Some((start_ns, end_ns)) = data.window_ns {
        let window = format!(
            "the plan step's measured window, {} to {} after its start: the warm-up \
             before it was sent but is left out of this page, as of the step's verdict",
            span_text(start_ns),
            span_text(end_ns)
        );
        fact(out, "window", &window);
    }
    if let Some(samples) = samples_text(data, axis) {
        fact(out, "samples", &samples);
    }
    let attacks: Vec<String> = data
        .tables
        .attacks
        .iter()
        .zip(&data.attacks)
        .filter(|(_, gathered)| gathered.requests > 0)
        .map(|(info, _)| attack_text(info))
        .collect();
    if !attacks.is_empty() {
        fact(out, "attacks", &attacks.join("; "));
    }
    // Only when some request did not go over HTTP/1.1, as in the report.
    if let Some(protocols) = &data.report.extras.protocols {
        fact(out, "protocols", &protocols_text(protocols));
    }
    let targets = &data.tables.targets;
    let mut shown: Vec<String> = targets
        .iter()
        .take(4)
        .map(|t| match &t.step {
            Some(step) => format!("{step}: {} {}", t.method, t.url),
            None => format!("{} {}", t.method, t.url),
        })
        .collect();
    if targets.len() > 4 {
        shown.push(format!("and {} more", targets.len() - 4));
    }
    if !shown.is_empty() {
        fact(out, "targets", &shown.join(", "));
    }
    out.push_str("</dl>\n");
}

/// The protocol mix: `h2 74% (37), http/1.1 26% (13)`, in the report's (name) order.
fn protocols_text(protocols: &[(Protocol, u64)]) -> String {
    let total: u64 = protocols.iter().map(|(_, count)| count).sum();
    protocols
        .iter()
        .map(|&(protocol, count)| {
            let percent = count as f64 * 100.0 / total.max(1) as f64;
            format!(
                "{} {}% ({})",
                protocol.name(),
                format::significant(percent, 3),
                format::grouped(count)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Who sampled, how much, and over what time: `host, nginx (13 series, 260 values, 20
/// gaps) from -2s to 1m5s`.
fn samples_text(data: &RunData, axis: &TimeAxis) -> Option<String> {
    let (samples, summary) = (&data.samples, data.facts.resources.as_ref()?);
    const SHOWN: usize = 6;
    let samplers = &samples.tables.samplers;
    let mut names: Vec<String> = samplers
        .iter()
        .take(SHOWN)
        .map(|s| match s.kind {
            SamplerKind::Host | SamplerKind::Process => s.name.clone(),
            ref kind => format!("{kind} {}", s.name),
        })
        .collect();
    if samplers.len() > SHOWN {
        names.push(format!("and {} more", samplers.len() - SHOWN));
    }
    let mut text = format!(
        "{} ({} series, {} values, {} gaps)",
        names.join(", "),
        format::grouped(summary.series),
        format::grouped(summary.values),
        format::grouped(summary.gaps)
    );
    if let (Some(first), Some(last)) = (samples.first_unix_ns, samples.last_unix_ns) {
        let at = |unix_ns: u64| {
            let seconds = crate::model::x_seconds(axis.origin_unix_ns, unix_ns);
            if seconds == 0.0 {
                "0s".to_owned()
            } else {
                format::time_s(seconds)
            }
        };
        let _ = write!(text, " from t = {} to {}", at(first), at(last));
    }
    Some(text)
}

/// A span of time, `0s` rather than a bare `0`.
fn span_text(ns: u64) -> String {
    if ns == 0 {
        "0s".to_owned()
    } else {
        format::duration_ns(ns as f64)
    }
}

fn fact(out: &mut String, name: &str, value: &str) {
    let _ = writeln!(out, "<dt>{name}</dt><dd>{}</dd>", escape(value));
}

fn input_text(summary: &SourceSummary) -> String {
    let format = match summary.format {
        InputFormat::Binary => "record file",
        InputFormat::Json => "JSON",
        InputFormat::VegetaCsv => "vegeta CSV",
        InputFormat::LoadlabCsv => "CSV",
    };
    let tool = if summary.header.tool.is_empty() {
        String::new()
    } else {
        format!(", {}", summary.header.tool)
    };
    let cut = if summary.torn.is_some() {
        ", cut short"
    } else {
        ""
    };
    format!(
        "{} ({format}{tool}, {} records{cut})",
        summary.name,
        format::grouped(summary.records)
    )
}

fn attack_text(info: &AttackInfo) -> String {
    let name = if info.name.is_empty() {
        "(unnamed)"
    } else {
        &info.name
    };
    let model = match info.model {
        LoadModel::Open => "open model",
        LoadModel::Closed => "closed model",
        LoadModel::Unknown => "imported",
    };
    let mut text = format!("{name}: {model}");
    if !info.schedule.is_empty() {
        let _ = write!(text, ", {}", info.schedule);
    }
    if let Some(users) = info.concurrency.filter(|_| info.model == LoadModel::Closed) {
        let _ = write!(text, ", {users} users");
    }
    if info.timeout_ns > 0 {
        let _ = write!(
            text,
            ", timeout {}",
            format::duration_ns(info.timeout_ns as f64)
        );
    }
    text
}

/// The report's warnings and the inputs that were cut short, where nobody misses them.
fn warnings(out: &mut String, data: &RunData) {
    let mut lines: Vec<String> = data
        .report
        .extras
        .warnings
        .iter()
        .map(ToString::to_string)
        .collect();
    // The system under test's warnings (a group at 100% of a core, fds near the
    // limit), unless the diagnosis panel says it with its evidence, as `report` does.
    if data.report.extras.diagnosis.is_none() {
        lines.extend(
            data.facts
                .resources
                .iter()
                .flat_map(|s| s.warnings.iter().cloned()),
        );
    }
    lines.extend(
        report::torn_warnings(&data.summaries)
            .into_iter()
            .map(|line| line.trim_start_matches("warning: ").to_owned()),
    );
    if lines.is_empty() {
        return;
    }
    out.push_str("<section class=\"warnings\" role=\"alert\">\n");
    for line in lines {
        let _ = writeln!(out, "<p><strong>Warning:</strong> {}</p>", escape(&line));
    }
    out.push_str("</section>\n");
}

/// One figure tile: label, value, note under it, and its CSS class (`bad` or empty).
type Tile = (&'static str, String, String, &'static str);

/// The figures a reader looks for first.
fn key_figures(out: &mut String, report: &Report, checks: &[CheckTotal]) {
    let mut tiles = load_tiles(report);
    tiles.extend(checks_tile(checks));
    tiles.extend(latency_tiles(report));
    tiles.extend(generator_tiles(report));
    out.push_str("<section class=\"figures\">\n");
    for (label, value, note, class) in tiles {
        let _ = writeln!(
            out,
            "<div class=\"figure {class}\"><span class=\"label\">{label}</span>\
             <span class=\"value\">{}</span><span class=\"note\">{}</span></div>",
            escape(&value),
            escape(&note)
        );
    }
    out.push_str("</section>\n");
}

/// Requests, achieved rate against the asked one, success and failures.
fn load_tiles(report: &Report) -> Vec<Tile> {
    let failed = report.requests - report.successes;
    let success = report.success_ratio * 100.0;
    vec![
        (
            "requests",
            format::grouped(report.requests),
            format!("{} sending", span_text(report.duration_ns)),
            "",
        ),
        (
            "achieved",
            // Against the asked rate, the report's own achieved figure: a flow's counts
            // its runs started, as its asked rate does, not every step's request.
            format!(
                "{}/s",
                format::count(
                    (report.extras.asked.as_ref())
                        .map_or(report.rate_per_sec, |a| a.achieved_per_sec)
                )
            ),
            report.extras.asked.map_or_else(String::new, |asked| {
                format!("of {}/s asked", format::count(asked.asked_per_sec))
            }),
            // The report's own judgement, against the run's health (a plan's `achieved`).
            if (report.extras.warnings.iter())
                .any(|w| matches!(w, report::Warning::RateShort { .. }))
            {
                "bad"
            } else {
                ""
            },
        ),
        (
            "success",
            format!("{}%", format::significant(success, 4)),
            format!("{} OK", format::grouped(report.successes)),
            if failed > 0 { "bad" } else { "" },
        ),
        (
            "failed",
            format::grouped(failed),
            format!("{} distinct errors", report.errors.len()),
            if failed > 0 { "bad" } else { "" },
        ),
    ]
}

/// All checks' pass rate, for flows.
fn checks_tile(checks: &[CheckTotal]) -> Option<Tile> {
    let (passed, runs, _) = flows::overall(checks)?;
    let failed = runs - passed;
    let note = if failed == 0 {
        format!("all {} passed", format::grouped(runs))
    } else {
        format!(
            "{} of {} failed",
            format::grouped(failed),
            format::grouped(runs)
        )
    };
    let class = if failed > 0 { "bad" } else { "" };
    Some((
        "checks",
        report::words::pass_rate(passed, runs),
        note,
        class,
    ))
}

/// Latency p50, p99 and max.
fn latency_tiles(report: &Report) -> Vec<Tile> {
    let latencies = &report.latencies;
    [
        ("p50", latencies.p50_ns),
        ("p99", latencies.p99_ns),
        ("max", latencies.max_ns),
    ]
    .into_iter()
    .map(|(label, value)| {
        (
            label,
            format::duration_ns(value as f64),
            "latency".to_owned(),
            "",
        )
    })
    .collect()
}

/// What the generator itself added: send lag and CPU per request, when recorded.
fn generator_tiles(report: &Report) -> Vec<Tile> {
    let mut tiles = Vec::new();
    if let Some(lag) = &report.extras.send_lag {
        // Red only when the lag weighs against the answers, as the warning and the
        // diagnosis judge it (one rule: `analysis::GeneratorHealth::weigh_lag`).
        let behind =
            (report.extras.lag).is_some_and(|lag| lag.weight == analysis::LagWeight::Heavy);
        tiles.push((
            "send lag p99",
            format::duration_ns(lag.p99_ns as f64),
            "generator".to_owned(),
            if behind { "bad" } else { "" },
        ));
    }
    if let Some(generator) = &report.extras.generator {
        tiles.push((
            "generator CPU",
            format::duration_ns(generator.cpu_per_request_ns as f64),
            "per request".to_owned(),
            "",
        ));
    }
    tiles
}

/// Each check's totals, for flows: the pass rate of them all, the worst failing check
/// in words (what a reader wants first), then every check in the flows' order.
fn checks_panel(out: &mut String, checks: &[CheckTotal]) {
    let Some((passed, runs, worst)) = flows::overall(checks) else {
        return;
    };
    let class = if worst.is_some() { "failed" } else { "passed" };
    let _ = write!(
        out,
        "<style>\n{CHECKS_STYLE}</style>\n<section class=\"checks {class}\" aria-labelledby=\"checks-title\">\n\
         <h2 id=\"checks-title\">Checks <span class=\"verdict\">{} passed</span></h2>\n\
         <p class=\"headline\">{}</p>\n",
        report::words::pass_rate(passed, runs),
        escape(&worst_text(passed, runs, worst))
    );
    out.push_str(
        "<table>\n<thead><tr><th>check</th><th>runs</th><th>passed</th><th>failed</th>\
         <th>pass rate</th></tr></thead>\n<tbody>\n",
    );
    for check in checks {
        let class = if check.failed > 0 {
            " class=\"bad\""
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&check.name),
            format::grouped(check.runs()),
            format::grouped(check.passed),
            format::grouped(check.failed),
            report::words::pass_rate(check.passed, check.runs()),
        );
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}

/// The checks' line: how many runs passed, and the worst failing check.
fn worst_text(passed: u64, runs: u64, worst: Option<&CheckTotal>) -> String {
    let all = format!(
        "{} of {} check runs passed",
        format::grouped(passed),
        format::grouped(runs)
    );
    match worst {
        Some(worst) => format!(
            "{all}; worst: {}, {} passed ({} of {} failed)",
            worst.name,
            report::words::pass_rate(worst.passed, worst.runs()),
            format::grouped(worst.failed),
            format::grouped(worst.runs())
        ),
        None => format!("{all}: every check passed every time"),
    }
}

/// The text report, exactly as `loadlab report` prints it.
fn summary(out: &mut String, report: &Report) {
    let mut text = String::new();
    write_text(&mut text, report);
    let _ = write!(
        out,
        "<details class=\"summary\" open>\n<summary>Report</summary>\n<pre>{}</pre>\n</details>\n",
        escape(&text)
    );
}

/// For samples alone: the resource rows, diagnosis and warnings as `loadlab report
/// run.mon` prints them.
fn resources_summary(out: &mut String, resources: &ResourceSummary, diagnosis: Option<&Diagnosis>) {
    let mut text = String::new();
    write_resources_text(&mut text, resources, diagnosis);
    let _ = write!(
        out,
        "<details class=\"summary\" open>\n<summary>Resources</summary>\n<pre>{}</pre>\n\
         </details>\n",
        escape(&text)
    );
}

/// What ran out first, in `loadlab report`'s own sentences (`words::lines`): the
/// verdict's line emphasised, then each other finding's, then the headroom of the rest;
/// its tag from the verdict itself (`verdict_words`). `marked` says the time charts
/// carry its markers.
fn diagnosis_panel(out: &mut String, diagnosis: &Diagnosis, marked: bool) {
    let lines = words::lines(diagnosis);
    let Some((headline, rest)) = lines.split_first() else {
        return;
    };
    let verdict = diagnosis.verdict_name();
    let _ = write!(
        out,
        "<section class=\"diagnosis {verdict}\" aria-labelledby=\"diagnosis-title\">\n\
         <h2 id=\"diagnosis-title\">Diagnosis <span class=\"verdict\">{}</span></h2>\n\
         <p class=\"headline\">{}</p>\n",
        verdict_words(&diagnosis.verdict),
        escape(headline)
    );
    if !rest.is_empty() {
        out.push_str("<ul>\n");
        for line in rest {
            let _ = writeln!(out, "<li>{}</li>", lead_in_bold(line));
        }
        out.push_str("</ul>\n");
    }
    if marked {
        out.push_str(
            "<p class=\"note\">Dashed lines on the time charts mark the knee and where each \
             resource reached its limit; hover one for its sentence.</p>\n",
        );
    }
    out.push_str("</section>\n");
}

/// The verdict in a few words, for the panel's tag.
fn verdict_words(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::FirstLimit { .. } => "limit reached",
        Verdict::GeneratorRanOut(_) => "the generator ran out",
        Verdict::NothingWatchedRanOut => "nothing watched ran out",
        Verdict::Unreachable(_) => "nothing listened",
        Verdict::Held => "held",
        Verdict::NotJudged => "not judged",
    }
}

/// A line escaped, its lead-in (`then:`, `before it:`, `held (peak of each):`) in bold.
fn lead_in_bold(line: &str) -> String {
    const LEAD_INS: [&str; 3] = ["then: ", "before it: ", "held (peak of each): "];
    match LEAD_INS.iter().find(|lead| line.starts_with(**lead)) {
        Some(lead) => format!(
            "<b>{}</b> {}",
            escape(lead.trim_end()),
            escape(&line[lead.len()..])
        ),
        None => escape(line),
    }
}

/// A chart in its box: log/linear switch, inline SVG, caption.
pub(crate) fn figure(out: &mut String, chart: &Chart, axis: &TimeAxis) {
    let _ = writeln!(
        out,
        "<figure class=\"chart-box\" id=\"figure-{}\">",
        chart.id
    );
    if chart.toggle {
        let pressed = |scale: &str| chart.scale.name() == scale;
        let _ = writeln!(
            out,
            "<div class=\"scale\" role=\"group\" aria-label=\"y scale\">\
             <button type=\"button\" data-chart=\"{id}\" data-scale=\"log\" \
             aria-pressed=\"{}\">log</button><button type=\"button\" data-chart=\"{id}\" \
             data-scale=\"linear\" aria-pressed=\"{}\">linear</button></div>",
            pressed("log"),
            pressed("linear"),
            id = chart.id
        );
    }
    out.push_str(&svg::render(chart, axis, None));
    let _ = write!(
        out,
        "<figcaption>{}</figcaption>\n</figure>\n",
        escape(&chart.caption)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::diagnosis::{Crossing, GeneratorState, Knee, Resource, Watched};

    const S: u64 = 1_000_000_000;

    fn fds(crossed_s: Option<u64>, example: Option<&str>) -> Watched {
        Watched {
            name: "nginx".to_owned(),
            resource: if example.is_some() {
                Resource::LogSymptom
            } else {
                Resource::Fds
            },
            series: "process.fd_use_percent / process.fd_limit".to_owned(),
            limit: Some(1024.0),
            unit: "fds",
            peak: 1000.0,
            peak_at_ns: 9 * S,
            brief: None,
            crossed: crossed_s.map(|at| Crossing {
                at_ns: at * S,
                value: 990.0,
            }),
            example: example.map(str::to_owned),
            note: None,
        }
    }

    fn knee() -> Knee {
        Knee {
            at_ns: 10 * S,
            offered_per_sec: 220.0,
            peak_ok_per_sec: 200.0,
            signal: analysis::TurnKind::Errors,
        }
    }

    #[test]
    fn the_panel_says_the_diagnosis_lines_escaped() {
        let script = "timed out <script>alert(1)</script>";
        // (case, knee?, watched, marked, the panel's class, its lines' starts, what it
        //  must hold, what it must not)
        type Case<'a> = (
            &'a str,
            bool,
            Vec<Watched>,
            bool,
            &'a str,
            Vec<&'a str>,
            &'a [&'a str],
            &'a [&'a str],
        );
        let cases: Vec<Case<'_>> = vec![
            (
                "the knee only",
                true,
                vec![],
                true,
                "nothing_watched",
                vec!["<p class=\"headline\">max 200 req/s held; the knee at 220/s offered, 10.0 s"],
                &["Dashed lines on the time charts"],
                &["<ul>"],
            ),
            (
                "a limit before the knee, a log after it quoting markup",
                true,
                vec![fds(Some(7), None), fds(Some(14), Some(script))],
                true,
                "first_limit",
                vec![
                    "<p class=\"headline\">max 200 req/s held; the knee at 220/s offered, 10.0 s (errors turned first): first limit nginx fds",
                    "<li><b>then:</b> nginx wrote matching lines, 990/s from 14.0 s",
                ],
                &[
                    "&lt;script&gt;alert(1)&lt;/script&gt;",
                    "<span class=\"verdict\">limit reached</span>",
                ],
                &["<script>alert"],
            ),
            (
                "held: the headroom line, no markers to speak of",
                false,
                vec![fds(None, None)],
                false,
                "held",
                vec![
                    "<p class=\"headline\">no knee, and nothing monitored reached its limit</p>",
                    "<li><b>held (peak of each):</b> nginx fds peak 98% of 1024 fds</li>",
                ],
                &[],
                &["Dashed lines"],
            ),
        ];
        for (case, with_knee, watched, marked, class, starts, holds, lacks) in cases {
            let knee = with_knee.then(knee);
            let mut diagnosis =
                analysis::diagnose(knee, None, &GeneratorState::default(), &watched);
            diagnosis.start_unix_ns = None;
            let mut out = String::new();
            diagnosis_panel(&mut out, &diagnosis, marked);
            let section = format!("<section class=\"diagnosis {class}\"");
            assert!(out.starts_with(&section), "{case}: {out}");
            let lines: Vec<&str> = out
                .lines()
                .filter(|l| l.starts_with("<p class=\"headline\">") || l.starts_with("<li>"))
                .collect();
            assert_eq!(lines.len(), words::lines(&diagnosis).len(), "{case}: {out}");
            for (line, start) in lines.iter().zip(&starts) {
                assert!(line.starts_with(start), "{case}: {line}");
            }
            for text in holds {
                assert!(out.contains(text), "{case}: no {text} in {out}");
            }
            for text in lacks {
                assert!(!out.contains(text), "{case}: {text} in {out}");
            }
        }
    }

    /// The send lag tile is red only when the lag weighs against the answers, by the
    /// rule the report's warning and the diagnosis use, with the run's bounds.
    #[test]
    fn the_lag_tile_is_red_only_for_a_lag_that_weighs() {
        const MS: u64 = 1_000_000;
        let loose = analysis::GeneratorHealth {
            max_lag_p99_ns: 25 * MS,
            ..analysis::GeneratorHealth::default()
        };
        // (case, bounds, lag p99, median latency, the tile's class)
        let rows = [
            (
                "3 ms beside 1 s answers",
                analysis::GeneratorHealth::default(),
                3,
                1000,
                "",
            ),
            (
                "3 ms beside 0.1 ms answers",
                analysis::GeneratorHealth::default(),
                3,
                0,
                "bad",
            ),
            ("a plan's max_lag of 25 ms", loose, 3, 0, ""),
        ];
        for (case, health, lag_ms, p50_ms, want) in rows {
            let mut report = report::Metrics::new(None).close(&record::RunTables::default());
            report.extras.send_lag = Some(report::LagStats {
                p99_ns: lag_ms * MS,
                ..report::LagStats::default()
            });
            report.extras.lag = Some(health.weigh_lag(lag_ms * MS, p50_ms * MS, None));
            let tiles = generator_tiles(&report);
            assert_eq!(tiles[0].3, want, "{case}");
        }
    }

    #[test]
    fn protocol_mix_reads_as_shares_and_counts() {
        /// The report's counts, and the page's text for them.
        type Row<'a> = (&'a [(Protocol, u64)], &'a str);
        let rows: &[Row<'_>] = &[
            (
                &[(Protocol::Http2, 9_900), (Protocol::Http1, 100)],
                "h2 99% (9,900), http/1.1 1% (100)",
            ),
            (
                &[(Protocol::Http2, 37), (Protocol::Http1, 13)],
                "h2 74% (37), http/1.1 26% (13)",
            ),
            (&[(Protocol::Http2, 5)], "h2 100% (5)"),
            (
                &[(Protocol::Http2, 2), (Protocol::Http1, 1)],
                "h2 66.7% (2), http/1.1 33.3% (1)",
            ),
            (&[], ""),
        ];
        for (protocols, want) in rows {
            assert_eq!(protocols_text(protocols), *want, "{protocols:?}");
        }
    }
}
