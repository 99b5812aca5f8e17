//! The run folder's `index.html`, from `summary.json`'s rows alone (no record file is
//! read, so rewriting it after every step costs next to nothing): a header (plan, mode,
//! complete or INCOMPLETE, when it started), the maximum rate each variant held, three
//! charts against the offered rate with one series per variant (achieved successful
//! throughput beside the y = x line, where the knee shows; latency p50 and p99; success),
//! then every step's row with its verdict and links to its files. The page is
//! [`plot::ChartPage`]: the plot page's own style, script and SVG, nothing fetched.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use plot::{Chart, ChartPage, Scale, Series, Style, Unit, escape_html as escape};

use crate::cells::format_rate;
use crate::folder::held_rows::CONNECTION_HEADERS;
use crate::folder::{RunSummary, StepRow, StepVerdict};
use crate::plan::Mode;

/// One colour per variant, in plan order (then by first appearance).
const VARIANT_COLORS: [&str; 8] = [
    "#2563eb", "#ea580c", "#16a34a", "#7c3aed", "#db2777", "#0891b2", "#a16207", "#4b5563",
];
/// The y = x line: what a variant that keeps up achieves.
const OFFERED_COLOR: &str = "#9ca3af";
/// Latency charts start on a log scale when p99 reaches this many times the lowest p50.
const LOG_SPREAD: f64 = 50.0;

/// The index page's own style, after the plot page's.
const STYLE: &str = "h2 { font-size: 17px; margin: 20px 0 8px; }
.table-wrap { overflow-x: auto; margin: 0 0 14px; }
table.rows { border-collapse: collapse; background: #fff; font-size: 13px; }
table.rows th, table.rows td { border: 1px solid #e5e7eb; padding: 3px 5px; text-align: left;
  vertical-align: top; }
table.rows th { background: #f9fafb; color: #374151; font-weight: 600; white-space: nowrap; }
table.rows td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.rows td.why { min-width: 10em; color: #374151; }
table.rows td.files a { display: block; white-space: nowrap; }
.verdict { font-weight: 600; white-space: nowrap; }
.v-pass { background: #dcfce7; color: #166534; }
.v-fail { background: #fee2e2; color: #991b1b; }
.v-inconclusive { background: #fef3c7; color: #92400e; }
.v-failed { background: #fecaca; color: #7f1d1d; }
.v-interrupted, .v-other { background: #e5e7eb; color: #374151; }
.key { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
";

impl RunSummary {
    /// `index.html`: the run folder at a glance, self-contained (see the module docs).
    pub fn index_html(&self) -> String {
        let variants = variant_names(self);
        let color = |name: &str| {
            let at = variants.iter().position(|v| v == name).unwrap_or(0);
            VARIANT_COLORS[at % VARIANT_COLORS.len()]
        };
        let mut page = ChartPage::new(format!("{}: loadlab run", self.plan));
        page.style(STYLE);
        page.html(header(self));
        page.html(variants_table(self, &color));
        page.html(ran_out_list(self));
        page.html(spans_list(self));
        if !self.cells.is_empty() {
            page.html(cells_table(self));
        }
        page.html(
            "<h2>Against the offered rate</h2>\n<p class=\"help\">Hover a dot for its step. \
             Latency switches between log and linear.</p>\n",
        );
        let points = Points::of(self, &variants);
        let left_out = points.left_out();
        page.chart(throughput_chart(self, &points, &color, &left_out));
        page.chart(latency_chart(&points, &left_out));
        page.chart(success_chart(&points, &left_out));
        page.html(steps_table(self));
        page.html(connections_table(self));
        page.footer(format!(
            "loadlab run &middot; {} steps &middot; one self-contained file: no network \
             access, no external script or font",
            self.steps.len()
        ));
        page.render()
    }
}

/// Variant names: the summary's results in plan order, then any only the steps name.
fn variant_names(summary: &RunSummary) -> Vec<String> {
    let mut names: Vec<String> = summary.variants.iter().map(|v| v.variant.clone()).collect();
    for step in &summary.steps {
        if !names.contains(&step.variant) {
            names.push(step.variant.clone());
        }
    }
    names
}

fn header(summary: &RunSummary) -> String {
    let status = if summary.complete {
        "complete"
    } else {
        "INCOMPLETE: interrupted or still running"
    };
    let mut out = format!(
        "<header>\n<h1>{}</h1>\n<dl class=\"facts\">\n",
        escape(&summary.plan)
    );
    let mut fact = |name: &str, value: &str| {
        let _ = writeln!(out, "<dt>{name}</dt><dd>{}</dd>", escape(value));
    };
    fact("plan file", &summary.plan_file);
    fact("mode", summary.mode.word());
    fact("status", status);
    fact(
        "started",
        summary.started.as_deref().unwrap_or("not recorded"),
    );
    fact("steps", &summary.steps.len().to_string());
    out.push_str("</dl>\n</header>\n");
    if !summary.complete {
        out.push_str(
            "<section class=\"warnings\" role=\"alert\"><p><strong>INCOMPLETE:</strong> the \
             plan was interrupted or is still running; what follows holds the steps finished \
             so far (<code>loadlab run -resume</code> continues it).</p></section>\n",
        );
    }
    out
}

/// Per variant: its answer (the maximum rate held, or the connections held), the
/// improvement against the first variant and how it was found (as `summary.md`). A
/// matrix has no such answer: its cells say it.
fn variants_table(summary: &RunSummary, color: &dyn Fn(&str) -> &'static str) -> String {
    if summary.mode == Mode::Matrix || summary.variants.is_empty() {
        return String::new();
    }
    let (headers, rows) = summary.answers();
    let title = if headers[0] == "connections held" {
        "Connections held"
    } else {
        "Maximum rate held"
    };
    let mut out = format!(
        "<h2>{title}</h2>\n<div class=\"table-wrap\"><table class=\"rows\">\n<tr><th>variant</th>"
    );
    for header in headers {
        let _ = write!(out, "<th>{header}</th>");
    }
    out.push_str("<th>how</th><th>probes</th><th>time</th></tr>\n");
    for (v, cells) in summary.variants.iter().zip(rows) {
        let probes = v.probes.map_or("-".to_owned(), |n| n.to_string());
        let time = v.seconds.map_or("-".to_owned(), |s| format!("{s:.1}s"));
        let _ = write!(
            out,
            "<tr><td><span class=\"key\" style=\"background:{}\"></span>{}</td>",
            color(&v.variant),
            escape(&v.variant),
        );
        for cell in cells {
            let _ = write!(out, "<td class=\"num\">{}</td>", escape(&cell));
        }
        let _ = writeln!(
            out,
            "<td>{}</td><td class=\"num\">{probes}</td><td class=\"num\">{time}</td></tr>",
            escape(&v.how),
        );
    }
    out.push_str("</table></div>\n");
    out
}

/// Per variant, what ran out first (as `summary.md`): the sentences of its step's report.
fn ran_out_list(summary: &RunSummary) -> String {
    let ran_out = summary.ran_out_first();
    if ran_out.is_empty() {
        return String::new();
    }
    let mut out = "<h2>What ran out first</h2>\n<ul class=\"diagnosis\">\n".to_owned();
    for (variant, step) in ran_out {
        let _ = write!(
            out,
            "<li><b>{}</b>, {}{}",
            escape(variant),
            escape(&RunSummary::ran_out_lead(step)),
            if step.diagnosis.is_empty() { "" } else { ":" }
        );
        for line in &step.diagnosis {
            let _ = write!(out, "<br>{}", escape(line));
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n");
    out
}

/// Per traced step, where its slow requests' time went (as `summary.md`).
fn spans_list(summary: &RunSummary) -> String {
    let mut out = String::new();
    for step in summary.traced_steps() {
        if out.is_empty() {
            out.push_str("<h2>Where the time went (trace_store)</h2>\n<ul class=\"diagnosis\">\n");
        }
        let _ = write!(
            out,
            "<li><b>{}</b>, step {}:",
            escape(&step.variant),
            escape(&step.step)
        );
        for line in &step.spans {
            let _ = write!(out, "<br>{}", escape(line));
        }
        out.push_str("</li>\n");
    }
    if !out.is_empty() {
        out.push_str("</ul>\n");
    }
    out
}

/// A matrix's cells: the median of the repeats and the spread `[min..max]`.
fn cells_table(summary: &RunSummary) -> String {
    let axes = axes(summary.cells.iter().map(|c| &c.params));
    let mut out = "<h2>Cells</h2>\n<p class=\"help\">The median of each cell's repeats \
                   [min..max].</p>\n<div class=\"table-wrap\"><table class=\"rows\">\n<tr>\
                   <th>variant</th>"
        .to_owned();
    for axis in &axes {
        let _ = write!(out, "<th>{}</th>", escape(axis));
    }
    out.push_str(
        "<th>offered</th><th>runs</th><th>passed</th><th>achieved/s</th><th>success</th>\
         <th>p50</th><th>p99</th></tr>\n",
    );
    for c in &summary.cells {
        let _ = write!(out, "<tr><td>{}</td>", escape(&c.variant));
        for axis in &axes {
            let value = c.params.get(axis).map_or("", String::as_str);
            let _ = write!(out, "<td>{}</td>", escape(value));
        }
        let offered = c
            .rate_asked
            .map_or("-".to_owned(), |r| format!("{}/s", format_rate(r)));
        let [a, a_lo, a_hi] = c.achieved_per_sec;
        let [s, s_lo, s_hi] = c.success.map(|s| s * 100.0);
        let [p50, p50_lo, p50_hi] = c.p50_ms;
        let [p99, p99_lo, p99_hi] = c.p99_ms;
        let _ = writeln!(
            out,
            "<td class=\"num\">{offered}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{a:.1} [{a_lo:.1}..{a_hi:.1}]</td>\
             <td class=\"num\">{s:.2}% [{s_lo:.2}..{s_hi:.2}]</td>\
             <td class=\"num\">{p50:.1}ms [{p50_lo:.1}..{p50_hi:.1}]</td>\
             <td class=\"num\">{p99:.1}ms [{p99_lo:.1}..{p99_hi:.1}]</td></tr>",
            c.runs, c.passed
        );
    }
    out.push_str("</table></div>\n");
    out
}

/// The axis names of a matrix, sorted.
fn axes<'a>(params: impl Iterator<Item = &'a BTreeMap<String, String>>) -> Vec<String> {
    params
        .flat_map(|p| p.keys().cloned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The judged steps with an offered rate, one group per variant (per variant and axis
/// values in a matrix: a line through other pool sizes would draw a knee that is not
/// there), sorted by rate (repeats each their own point), and what was left out of the
/// charts and why.
struct Points<'a> {
    groups: Vec<Group<'a>>,
    /// Every plotted row's hover label, `step: verdict`; a point's label index is its
    /// place in this list.
    labels: Vec<String>,
    /// Judged steps of the closed model (users) or a schedule: no offered rate.
    no_rate: usize,
    /// Steps that did not run or were interrupted: no figures.
    not_judged: usize,
}

/// One series' steps: a variant's, or a matrix cell's (variant and axis values).
struct Group<'a> {
    name: String,
    color: &'static str,
    rows: Vec<&'a StepRow>,
    /// Each row's index into [`Points::labels`].
    label_ids: Vec<u32>,
}

/// The axis values of a step outside a matrix.
static NO_PARAMS: BTreeMap<String, String> = BTreeMap::new();

impl<'a> Points<'a> {
    /// Groups in variant order, so outside a matrix group `i` is variant `i` and has its
    /// colour (a variant without points keeps its place).
    fn of(summary: &'a RunSummary, variants: &[String]) -> Points<'a> {
        let judged = |s: &StepRow| s.verdict.is_judged();
        let mut points = Points {
            groups: Vec::new(),
            labels: Vec::new(),
            no_rate: summary
                .steps
                .iter()
                .filter(|s| judged(s) && s.rate_asked.is_none())
                .count(),
            not_judged: summary.steps.iter().filter(|s| !judged(s)).count(),
        };
        for name in variants {
            let rows: Vec<&StepRow> = summary
                .steps
                .iter()
                .filter(|s| &s.variant == name && judged(s) && s.rate_asked.is_some())
                .collect();
            let mut keys: Vec<&BTreeMap<String, String>> = rows.iter().map(|r| &r.params).collect();
            keys.sort();
            keys.dedup();
            if keys.is_empty() {
                keys.push(&NO_PARAMS);
            }
            for params in keys {
                let mut group: Vec<&StepRow> = rows
                    .iter()
                    .copied()
                    .filter(|r| &r.params == params)
                    .collect();
                // Stable: repeats at one rate keep their run order.
                group.sort_by(|a, b| {
                    a.rate_asked
                        .unwrap_or(0.0)
                        .total_cmp(&b.rate_asked.unwrap_or(0.0))
                });
                points.push(name, params, group);
            }
        }
        points
    }

    fn push(&mut self, variant: &str, params: &BTreeMap<String, String>, rows: Vec<&'a StepRow>) {
        let label_ids = rows
            .iter()
            .map(|row| {
                self.labels.push(format!("{}: {}", row.step, row.verdict));
                (self.labels.len() - 1) as u32
            })
            .collect();
        let name = if params.is_empty() {
            variant.to_owned()
        } else {
            let values: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{variant} ({})", values.join(", "))
        };
        self.groups.push(Group {
            name,
            color: VARIANT_COLORS[self.groups.len() % VARIANT_COLORS.len()],
            rows,
            label_ids,
        });
    }

    /// One series per group of `y` against the offered rate, named `name(group)`.
    fn series(
        &self,
        style: Style,
        name: &dyn Fn(&str) -> String,
        y: &dyn Fn(&StepRow) -> f64,
    ) -> Vec<Series> {
        self.groups
            .iter()
            .filter(|group| !group.rows.is_empty())
            .map(|group| {
                let rows = &group.rows;
                let mut series = Series::new(name(&group.name), group.color, style).with_points(
                    rows.iter()
                        .map(|r| r.rate_asked.unwrap_or(f64::NAN))
                        .collect(),
                    rows.iter().map(|r| y(r)).collect(),
                );
                series.labels = group.label_ids.clone();
                series
            })
            .collect()
    }

    fn max_rate(&self) -> f64 {
        self.groups
            .iter()
            .flat_map(|group| group.rows.iter().filter_map(|r| r.rate_asked))
            .fold(0.0, f64::max)
    }

    /// Under every chart: what is not on it, so an empty or thin chart is explained.
    fn left_out(&self) -> String {
        let mut parts = Vec::new();
        if self.no_rate > 0 {
            parts.push(format!(
                "{} judged {} without an offered rate (closed model: users; or a schedule)",
                self.no_rate,
                plural(self.no_rate, "step", "steps")
            ));
        }
        if self.not_judged > 0 {
            parts.push(format!(
                "{} {} not judged (could not run, or interrupted: no figures)",
                self.not_judged,
                plural(self.not_judged, "step", "steps")
            ));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" Not drawn: {}; see the steps table.", parts.join("; "))
        }
    }
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// Achieved successful throughput against the offered rate, with y = x dashed and each
/// variant's maximum rate held marked: the knee is where a variant leaves the line.
fn throughput_chart(
    summary: &RunSummary,
    points: &Points<'_>,
    color: &dyn Fn(&str) -> &'static str,
    left_out: &str,
) -> Chart {
    let mut series = Vec::new();
    let top = points.max_rate();
    if top > 0.0 {
        series.push(
            Series::new("offered (y = x)", OFFERED_COLOR, Style::Dashed)
                .with_points(vec![0.0, top], vec![0.0, top]),
        );
    }
    series.extend(points.series(Style::LinePoints, &|v| v.to_owned(), &|r| {
        r.achieved_per_sec * r.success
    }));
    // A matrix's held rates mix its axis values: its cells table says what held where.
    let held_rates = if summary.mode == Mode::Matrix {
        &[][..]
    } else {
        &summary.variants[..]
    };
    for v in held_rates {
        if let Some(held) = v.max_rate_held.filter(|h| h.is_finite() && *h > 0.0) {
            series.push(
                Series::new(
                    format!("{} held {}/s", v.variant, format_rate(held)),
                    color(&v.variant),
                    Style::Dashed,
                )
                .with_points(vec![held, held], vec![0.0, held]),
            );
        }
    }
    let mut chart = Chart::time_series(
        "throughput",
        "Successful requests per second against the offered rate",
        Unit::PerSecond,
        series,
    )
    .over_rate()
    .with_caption(format!(
        "A dot per judged step (repeats each drawn): requests sent per second in the \
         step's window times its success ratio. A variant that keeps up stays on the dashed \
         y = x line; the knee is where it leaves it. A dashed upright line marks each \
         variant's maximum rate held.{left_out}"
    ));
    chart.labels = points.labels.clone();
    chart
}

/// Latency p50 (dashed) and p99 (a dot per step) against the offered rate.
fn latency_chart(points: &Points<'_>, left_out: &str) -> Chart {
    let ns = |ms: Option<f64>| ms.map_or(f64::NAN, |ms| ms * 1e6);
    let mut series = Vec::new();
    let p50 = points.series(Style::Dashed, &|v| format!("{v} p50"), &|r| ns(r.p50_ms));
    let p99 = points.series(
        Style::LinePoints,
        &|v| format!("{v} p99"),
        &|r| ns(r.p99_ms),
    );
    for (p50, p99) in p50.into_iter().zip(p99) {
        series.extend([p50, p99]);
    }
    let low = series
        .iter()
        .flat_map(|s| s.y.iter().copied())
        .filter(|y| y.is_finite() && *y > 0.0)
        .fold(f64::INFINITY, f64::min);
    let high = series
        .iter()
        .flat_map(|s| s.y.iter().copied())
        .filter(|y| y.is_finite())
        .fold(0.0, f64::max);
    let scale = if high > LOG_SPREAD * low {
        Scale::Log
    } else {
        Scale::Linear
    };
    let mut chart = Chart::time_series(
        "latency",
        "Latency p50 and p99 against the offered rate",
        Unit::Duration,
        series,
    )
    .over_rate()
    .with_scale(scale, true)
    .with_caption(format!(
        "Per variant: p99 solid with a dot per judged step, p50 dashed; each step's window \
         only (the warm-up excluded).{left_out}"
    ));
    chart.labels = points.labels.clone();
    chart
}

/// Share of the window's requests that succeeded, against the offered rate.
fn success_chart(points: &Points<'_>, left_out: &str) -> Chart {
    let series = points.series(Style::LinePoints, &|v| v.to_owned(), &|r| r.success * 100.0);
    let mut chart = Chart::time_series(
        "success",
        "Success against the offered rate",
        Unit::Share,
        series,
    )
    .over_rate()
    .with_caption(format!(
        "Share of each judged step's requests that succeeded.{left_out}"
    ));
    chart.labels = points.labels.clone();
    chart
}

/// Every step in run order: figures, verdict (coloured), why, and its files.
fn steps_table(summary: &RunSummary) -> String {
    let axes = axes(summary.steps.iter().map(|s| &s.params));
    let mut out =
        "<h2>Steps</h2>\n<div class=\"table-wrap\"><table class=\"rows\" id=\"steps\">\n<tr>\
         <th>step</th><th>variant</th>"
            .to_owned();
    for axis in &axes {
        let _ = write!(out, "<th>{}</th>", escape(axis));
    }
    out.push_str(
        "<th>kind</th><th>offered</th><th>achieved/s</th><th>success</th><th>p50</th>\
         <th>p90</th><th>p99</th><th>max</th><th>errors</th><th>verdict</th><th>why</th>\
         <th>files</th></tr>\n",
    );
    for s in &summary.steps {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td>",
            escape(&s.step),
            escape(&s.variant)
        );
        for axis in &axes {
            let value = s.params.get(axis).map_or("", String::as_str);
            let _ = write!(out, "<td>{}</td>", escape(value));
        }
        let _ = write!(
            out,
            "<td>{}</td><td class=\"num\">{}</td>",
            s.kind,
            escape(&s.offer())
        );
        figures(&mut out, s);
        let _ = writeln!(
            out,
            "<td class=\"verdict {}\">{}</td><td class=\"why\">{}</td>\
             <td class=\"files\">{}</td></tr>",
            verdict_class(s.verdict),
            s.verdict,
            escape(&s.why),
            files(s)
        );
    }
    out.push_str("</table></div>\n");
    out
}

/// Each step that had connections: what it asked and held, refused and cut, messages a
/// second and their latency (as `summary.md`'s `## Connections`).
fn connections_table(summary: &RunSummary) -> String {
    let rows: Vec<_> = (summary.steps.iter())
        .filter_map(|s| Some((s, s.connections.as_ref()?)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = "<h2>Connections</h2>\n<p class=\"help\">Each step's window: connections \
                   asked (users, or arrivals) and held (users: the most open at once; \
                   arrivals: those opened), upgrades refused, connections cut by the server, \
                   messages a second each way and message latency.</p>\n<div \
                   class=\"table-wrap\"><table class=\"rows\" id=\"connections\">\n<tr><th>step</th>"
        .to_owned();
    for header in CONNECTION_HEADERS {
        let _ = write!(out, "<th>{header}</th>");
    }
    out.push_str("</tr>\n");
    for (step, row) in rows {
        let _ = write!(out, "<tr><td>{}</td>", escape(&step.step));
        for text in row.texts() {
            let _ = write!(out, "<td class=\"num\">{}</td>", escape(&text));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
    out
}

/// A judged step's figures; a step that was not judged has none to show (its zeros
/// would read as a server that answered nothing).
fn figures(out: &mut String, s: &StepRow) {
    if !s.verdict.is_judged() {
        out.push_str(&"<td class=\"num\">-</td>".repeat(6));
        out.push_str("<td>-</td>");
        return;
    }
    for text in s.figure_texts() {
        let _ = write!(out, "<td class=\"num\">{text}</td>");
    }
    let _ = write!(out, "<td>{}</td>", escape(&errors(s)));
}

fn errors(step: &StepRow) -> String {
    if step.errors.is_empty() {
        return "-".to_owned();
    }
    step.errors
        .iter()
        .map(|(kind, n)| format!("{kind}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The CSS class of a verdict; a step not run is plain grey.
fn verdict_class(verdict: StepVerdict) -> &'static str {
    match verdict {
        StepVerdict::Pass => "v-pass",
        StepVerdict::Fail => "v-fail",
        StepVerdict::Inconclusive => "v-inconclusive",
        StepVerdict::Failed => "v-failed",
        StepVerdict::Interrupted => "v-interrupted",
        StepVerdict::Skipped => "v-other",
    }
}

/// Links to the files the row names (only those: a file the step never made gets no
/// link).
fn files(step: &StepRow) -> String {
    let shards = step
        .shards
        .iter()
        .enumerate()
        .map(|(i, path)| (format!("shard {i}"), Some(path)));
    [
        ("plot", step.plot.as_ref()),
        ("report", step.report.as_ref()),
        ("records", step.records.as_ref()),
    ]
    .into_iter()
    .map(|(name, path)| (name.to_owned(), path))
    .chain(shards)
    .chain([("hooks".to_owned(), step.hooks.as_ref())])
    .filter_map(|(name, path)| {
        let path = path?;
        Some(format!("<a href=\"{}\">{name}</a>", escape(&href(path))))
    })
    .collect::<Vec<_>>()
    .join("")
}

/// A relative path as a URL path: bytes outside the unreserved set (and `/`) are
/// percent-encoded, so a variant named `a #1?` still links to its folder.
fn href(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_percent_encoded_paths() {
        let rows = [
            ("steps/000-a-50/plot.html", "steps/000-a-50/plot.html"),
            ("steps/001-a #1?-50/x", "steps/001-a%20%231%3F-50/x"),
            ("steps/<&\">/r.txt", "steps/%3C%26%22%3E/r.txt"),
            ("steps/é", "steps/%C3%A9"),
        ];
        for (path, want) in rows {
            assert_eq!(href(path), want, "{path}");
        }
    }

    #[test]
    fn verdicts_have_their_colour() {
        let rows = [
            (StepVerdict::Pass, "v-pass"),
            (StepVerdict::Fail, "v-fail"),
            (StepVerdict::Inconclusive, "v-inconclusive"),
            (StepVerdict::Failed, "v-failed"),
            (StepVerdict::Interrupted, "v-interrupted"),
            (StepVerdict::Skipped, "v-other"),
        ];
        for (verdict, class) in rows {
            assert_eq!(verdict_class(verdict), class, "{verdict}");
        }
    }

    fn row(step: &str, variant: &str, rate: Option<f64>, verdict: StepVerdict) -> StepRow {
        StepRow {
            step: step.to_owned(),
            variant: variant.to_owned(),
            rate_asked: rate,
            users: rate.is_none().then_some(10),
            achieved_per_sec: rate.unwrap_or(5.0),
            success: 1.0,
            p50_ms: Some(1.0),
            p99_ms: Some(2.0),
            verdict,
            ..StepRow::default()
        }
    }

    #[test]
    fn every_table_row_has_a_cell_per_column() {
        let mut matrix_row = row("000-a-50-pool-big", "a", Some(50.0), StepVerdict::Pass);
        matrix_row.params = [("pool".to_owned(), "big".to_owned())].into();
        let summary = RunSummary {
            mode: Mode::Matrix,
            steps: vec![
                matrix_row,
                row("001-a-50", "a", Some(50.0), StepVerdict::Failed),
                row("002-a-5users", "a", None, StepVerdict::Interrupted),
            ],
            cells: crate::folder::cell_stats(&[row(
                "000-a-50",
                "a",
                Some(50.0),
                StepVerdict::Pass,
            )]),
            ..RunSummary::default()
        };
        for table in [steps_table(&summary), cells_table(&summary)] {
            let cells: Vec<usize> = table
                .split("<tr>")
                .skip(1)
                .map(|row| row.matches("<td").count() + row.matches("<th>").count())
                .collect();
            assert!(
                cells.len() > 1 && cells.iter().all(|n| *n == cells[0]),
                "{cells:?}: {table}"
            );
        }
    }

    fn pool(row: StepRow, size: &str) -> StepRow {
        StepRow {
            params: [("pool".to_owned(), size.to_owned())].into(),
            ..row
        }
    }

    #[test]
    fn charts_hold_judged_rate_steps_sorted_by_rate_and_say_what_they_leave_out() {
        let summary = RunSummary {
            steps: vec![
                row("000-a-200", "a", Some(200.0), StepVerdict::Pass),
                row("001-a-50", "a", Some(50.0), StepVerdict::Fail),
                row("002-a-50-r2", "a", Some(50.0), StepVerdict::Pass),
                row("003-b-10users", "b", None, StepVerdict::Pass),
                row("004-b-100", "b", Some(100.0), StepVerdict::Failed),
                row("005-b-100", "b", Some(100.0), StepVerdict::Inconclusive),
                row("006-c-5users", "c", None, StepVerdict::Pass),
                pool(
                    row("007-d-50-pool-small", "d", Some(50.0), StepVerdict::Pass),
                    "small",
                ),
                pool(
                    row("008-d-50-pool-big", "d", Some(50.0), StepVerdict::Pass),
                    "big",
                ),
                pool(
                    row("009-d-20-pool-small", "d", Some(20.0), StepVerdict::Pass),
                    "small",
                ),
            ],
            ..RunSummary::default()
        };
        let names = variant_names(&summary);
        assert_eq!(names, ["a", "b", "c", "d"]);
        let points = Points::of(&summary, &names);
        // (series, colour, steps drawn in order): a variant without points keeps its
        // colour's place; a matrix's cells are series of their own.
        let want = [
            (
                "a",
                VARIANT_COLORS[0],
                vec!["001-a-50", "002-a-50-r2", "000-a-200"],
            ),
            ("b", VARIANT_COLORS[1], vec!["005-b-100"]),
            ("c", VARIANT_COLORS[2], vec![]),
            ("d (pool=big)", VARIANT_COLORS[3], vec!["008-d-50-pool-big"]),
            (
                "d (pool=small)",
                VARIANT_COLORS[4],
                vec!["009-d-20-pool-small", "007-d-50-pool-small"],
            ),
        ];
        assert_eq!(points.groups.len(), want.len());
        for (group, (name, color, steps)) in points.groups.iter().zip(want) {
            let got: Vec<&str> = group.rows.iter().map(|r| r.step.as_str()).collect();
            assert_eq!(
                (group.name.as_str(), group.color, got),
                (name, color, steps)
            );
        }
        assert_eq!(
            points
                .series(Style::Line, &|n| n.to_owned(), &|r| r.success)
                .len(),
            4
        );
        assert_eq!(points.labels[0], "001-a-50: fail");
        let left_out = points.left_out();
        assert!(
            left_out.contains("2 judged steps without an offered rate"),
            "{left_out}"
        );
        assert!(left_out.contains("1 step not judged"), "{left_out}");
        let empty = RunSummary::default();
        let none = Points::of(&empty, &[]);
        assert_eq!(none.left_out(), "");
    }
}
