//! `compare`: runs side by side. Every report row of A and of each other input, the
//! absolute and relative difference against A, the improvement factor (direction-aware:
//! lower latency is better) and whether the difference is beyond the noise.
//!
//! The noise test is [`analysis::compare_samples`], a seeded block bootstrap over the
//! per-second windows of each run ([`Seconds`]): it assumes no distribution (latencies
//! are skewed, and a normal approximation is a poor bet), it works with the few samples
//! a short run or a handful of repeats gives, and because a slow second follows a slow
//! second the windows are resampled in blocks ([`analysis::compare::block_len_for`]).
//! Rows with no per-second sample (request totals, max latency, bytes, send lag p99)
//! say `n/a`.
//!
//! Inputs are [`CompareInput`]s, one record file per side. Run folders of `loadlab run`
//! are compared by `lab::compare` (the lab depends on this crate), which builds a
//! [`RunFigures`] per step window and calls [`compare_runs`] for the noise.

use std::fmt::Write as _;

use analysis::compare::block_len_for;
use analysis::{CompareConfig, Difference, Direction, compare_samples};
use record::{ErrorKind, InputFormat, ReadOrder, RecordStream};

use units::GoDuration;

use crate::json_write::{push_float, push_list, push_nullable, push_string, push_strings};
use crate::measure::{Bounds, Measure};
use crate::metrics::{Metrics, Report};
use crate::seconds::Seconds;
use crate::tabwriter::align;
use crate::{ReportError, TraceStoreHandle};

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompareInput {
    /// A record file from `loadlab attack`.
    RecordFile(String),
}

impl CompareInput {
    /// The name the output uses for this side.
    pub fn name(&self) -> &str {
        match self {
            CompareInput::RecordFile(path) => path,
        }
    }
}

/// How the comparison is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareFormat {
    /// Aligned columns.
    Text,
    /// A Markdown table, ready to paste.
    Markdown,
    /// One JSON object.
    Json,
}

impl CompareFormat {
    /// `text`, `markdown` (or `md`) or `json`.
    pub fn parse(name: &str) -> Result<CompareFormat, ReportError> {
        match name {
            "text" => Ok(CompareFormat::Text),
            "markdown" | "md" => Ok(CompareFormat::Markdown),
            "json" => Ok(CompareFormat::Json),
            other => Err(ReportError::Flag {
                flag: "-format",
                reason: format!("unknown format {other:?}: want text, markdown or json"),
            }),
        }
    }
}

/// One side's figures: its whole-run report and its per-second windows.
#[derive(Debug, Clone)]
pub struct RunFigures {
    /// The input's name.
    pub name: String,
    /// The whole-run report: the summary [`Measure`] closes, judged as `report` judges
    /// it (its diagnosis is the "What ran out first" line).
    pub report: Report,
    /// Per-second windows, the bootstrap's samples.
    pub seconds: Seconds,
}

/// Reads one side; with `store` (`-trace-store`), its traced requests' traces too.
pub fn read_input(
    input: &CompareInput,
    store: Option<&TraceStoreHandle>,
) -> Result<RunFigures, ReportError> {
    match input {
        CompareInput::RecordFile(path) => read_window(path, 0, store),
    }
}

/// A record file's figures and per-second windows, leaving out the requests due in its
/// first `skip_ns` (a plan step's warm-up): what `compare` bootstraps. One pass: the
/// summary (and its diagnosis) is folded beside the windows.
pub fn read_record_window(path: &str, skip_ns: u64) -> Result<RunFigures, ReportError> {
    read_window(path, skip_ns, None)
}

fn read_window(
    path: &str,
    skip_ns: u64,
    store: Option<&TraceStoreHandle>,
) -> Result<RunFigures, ReportError> {
    let not_a_record_file = || ReportError::NotARecordFile {
        path: path.to_owned(),
    };
    let paths = [path.to_owned()];
    let mut stream = RecordStream::open(&paths, ReadOrder::Input, false)?;
    let mut measure = Measure::new(None, Metrics::new(None));
    let mut seconds = Seconds::default();
    let (mut batch, mut samples) = (Vec::new(), Vec::new());
    let mut window = Vec::new();
    while stream.next_batch(&mut batch)? {
        if stream
            .summaries()
            .iter()
            .any(|s| s.format != InputFormat::Binary)
        {
            return Err(not_a_record_file());
        }
        let batch = if skip_ns == 0 {
            &batch
        } else {
            let start_ns = stream
                .summaries()
                .first()
                .map_or(0, |s| s.header.start_unix_ns);
            window.clear();
            window.extend(
                batch
                    .iter()
                    .filter(|r| r.intended_unix_ns.saturating_sub(start_ns) >= skip_ns),
            );
            &window
        };
        measure.add_records(batch, stream.tables());
        seconds.add_all(batch, stream.tables());
        let tables = stream.take_samples(&mut samples);
        measure.add_samples(tables, &samples);
        samples.clear();
    }
    let tables = stream.take_samples(&mut samples);
    measure.add_samples(tables, &samples);
    if stream
        .summaries()
        .iter()
        .any(|s| s.format != InputFormat::Binary)
    {
        return Err(not_a_record_file());
    }
    if measure.requests() == 0 {
        return Err(record::RecordError::Empty {
            source_name: path.to_owned(),
        }
        .into());
    }
    // Where the slow requests' time went, judged once as `report -trace-store` judges it.
    let traces = (store.zip(measure.earliest_unix_ns())).and_then(|(store, earliest_unix_ns)| {
        crate::judge_traces(
            stream.exemplars(),
            stream.summaries(),
            stream.tables(),
            (None, Some(store)),
            earliest_unix_ns,
        )
    });
    let bounds = Bounds {
        traces,
        ..Bounds::default()
    };
    Ok(RunFigures {
        name: path.to_owned(),
        report: (measure
            .close(stream.summaries(), stream.tables(), bounds)
            .groups)
            .swap_remove(0)
            .1,
        seconds,
    })
}

/// How a row's values print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count.
    Count,
    /// Per second.
    PerSec,
    /// A share, printed as a percentage.
    Ratio,
    /// Nanoseconds, printed as a duration.
    Nanos,
    /// Milliseconds (a run folder's step rows).
    Millis,
    /// Bytes.
    Bytes,
}

impl Unit {
    /// The unit's name in JSON output.
    pub fn json_name(self) -> &'static str {
        match self {
            Unit::Count => "count",
            Unit::PerSec => "1/s",
            Unit::Ratio => "ratio",
            Unit::Nanos => "ns",
            Unit::Millis => "ms",
            Unit::Bytes => "bytes",
        }
    }
}

/// One side against A on one row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Versus {
    /// This side's value minus A's; None when either has no value (a run folder's side
    /// without the step).
    pub diff: Option<f64>,
    /// `diff` over A's value (None when A's is 0).
    pub relative: Option<f64>,
    /// How many times better than A (>1: better); None for rows with no better side or a 0.
    pub improvement: Option<f64>,
    /// The bootstrap over per-second windows; None for whole-run rows (`n/a`).
    pub noise: Option<Difference>,
}

impl Versus {
    /// B against A, which way is better given by `direction`; `noise` is the
    /// bootstrap's verdict when there was one.
    pub fn of(
        a: Option<f64>,
        b: Option<f64>,
        direction: Option<Direction>,
        noise: Option<Difference>,
    ) -> Versus {
        let ratio = |top: f64, bottom: f64| (bottom != 0.0 && top != 0.0).then(|| top / bottom);
        let (diff, relative, improvement) = match (a, b) {
            (Some(a), Some(b)) => (
                Some(b - a),
                (a != 0.0).then(|| (b - a) / a),
                match direction {
                    Some(Direction::HigherIsBetter) => ratio(b, a),
                    Some(Direction::LowerIsBetter) => ratio(a, b),
                    None => None,
                },
            ),
            _ => (None, None, None),
        };
        Versus {
            diff,
            relative,
            improvement,
            noise,
        }
    }

    /// `beyond`, `within` or `n/a`.
    pub fn noise_word(&self) -> &'static str {
        match self.noise {
            Some(d) if d.beyond_noise => "beyond",
            Some(_) => "within",
            None => "n/a",
        }
    }
}

/// One row across every input: the model of every comparison, of record files here and
/// of run folders' steps in `lab::compare`.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// e.g. `throughput`, `latency p99`, `errors timeout`.
    pub name: String,
    /// How values print.
    pub unit: Unit,
    /// Which way is better; None for rows that are neither (requests, bytes).
    pub direction: Option<Direction>,
    /// The value of each input, A first (None: the input has none).
    pub values: Vec<Option<f64>>,
    /// Each other input against A.
    pub versus: Vec<Versus>,
}

impl Row {
    /// A row of `values`, A first, each other against A; `noise(b)` is input b's
    /// (1-based) bootstrap on this row, if any.
    pub fn new(
        name: String,
        unit: Unit,
        direction: Option<Direction>,
        values: Vec<Option<f64>>,
        noise: impl Fn(usize) -> Option<Difference>,
    ) -> Row {
        let versus = (1..values.len())
            .map(|b| Versus::of(values[0], values[b], direction, noise(b)))
            .collect();
        Row {
            name,
            unit,
            direction,
            values,
            versus,
        }
    }

    /// `higher` or `lower` (is better), as JSON says it.
    pub fn better_word(&self) -> Option<&'static str> {
        self.direction.map(|d| match d {
            Direction::HigherIsBetter => "higher",
            Direction::LowerIsBetter => "lower",
        })
    }

    /// The inputs (1-based) worse than A by more than `threshold` (a share: 0.05 = 5%)
    /// of A's value *and* beyond the noise, with how much worse as a share of A's.
    pub fn regressions(&self, threshold: f64) -> Vec<(usize, f64)> {
        let (Some(direction), Some(a)) = (self.direction, self.values[0].filter(|a| *a != 0.0))
        else {
            return Vec::new();
        };
        self.versus
            .iter()
            .enumerate()
            .filter_map(|(index, versus)| {
                let diff = versus.diff?;
                let worse = match direction {
                    Direction::HigherIsBetter => -diff,
                    Direction::LowerIsBetter => diff,
                };
                let beyond = versus.noise.is_some_and(|d| d.beyond_noise);
                (beyond && worse > threshold * a.abs()).then_some((index + 1, worse / a.abs()))
            })
            .collect()
    }
}

impl serde::Serialize for Unit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.json_name())
    }
}

/// As `-format json` writes a row: `row`, `unit`, `better`, `values`, `versus`.
impl serde::Serialize for Row {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut row = serializer.serialize_struct("Row", 5)?;
        row.serialize_field("row", &self.name)?;
        row.serialize_field("unit", &self.unit)?;
        row.serialize_field("better", &self.better_word())?;
        row.serialize_field("values", &self.values)?;
        row.serialize_field("versus", &self.versus)?;
        row.end()
    }
}

/// `diff`, `relative`, `improvement`, `noise` (the word) and the bootstrap's
/// `interval` of the difference.
impl serde::Serialize for Versus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut versus = serializer.serialize_struct("Versus", 5)?;
        versus.serialize_field("diff", &self.diff)?;
        versus.serialize_field("relative", &self.relative)?;
        versus.serialize_field("improvement", &self.improvement)?;
        versus.serialize_field("noise", self.noise_word())?;
        let interval = self.noise.map(|d| [d.diff_low, d.diff_high]);
        versus.serialize_field("interval", &interval)?;
        versus.end()
    }
}

/// The rows a regression is judged on: throughput, success and p99 latency.
pub const GATED_ROWS: [&str; 3] = ["throughput", "success", "latency p99"];

/// A gated row on which an input is worse than A beyond the threshold and the noise.
#[derive(Debug, Clone, PartialEq)]
pub struct Regression {
    /// The row's name.
    pub row: String,
    /// The input that regressed.
    pub input: String,
    /// How much worse, as a share of A's value (0.1 = 10% worse).
    pub worse_by: f64,
}

/// Every input's rows against the first.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Input names, A first.
    pub inputs: Vec<String>,
    /// The rows, in report order.
    pub rows: Vec<Row>,
}

/// What the noise column means, below the text and Markdown tables.
const NOISE_NOTE: &str = "\nnoise: 95% block bootstrap of the difference of per-second means \
     (beyond: the interval excludes 0); n/a: a whole-run figure with no per-second samples.\n";

type Sampler = fn(&Seconds) -> Vec<f64>;
/// A whole-run figure of a report.
type Figure = fn(&Report) -> f64;

/// A row of every comparison: its name, unit, better direction, whole-run figure and,
/// for the noise test, its per-second samples (None: a whole-run figure only).
struct RowSpec {
    name: &'static str,
    unit: Unit,
    direction: Option<Direction>,
    value: Figure,
    samples: Option<Sampler>,
}

/// The rows of a comparison, in report order (the error kinds seen follow).
const ROWS: [RowSpec; 14] = {
    use Direction::{HigherIsBetter as Higher, LowerIsBetter as Lower};
    const fn row(
        name: &'static str,
        unit: Unit,
        direction: Option<Direction>,
        value: Figure,
        samples: Option<Sampler>,
    ) -> RowSpec {
        RowSpec {
            name,
            unit,
            direction,
            value,
            samples,
        }
    }
    [
        row("requests", Unit::Count, None, |r| r.requests as f64, None),
        row(
            "rate",
            Unit::PerSec,
            Some(Higher),
            |r| r.rate_per_sec,
            Some(Seconds::offered),
        ),
        row(
            "throughput",
            Unit::PerSec,
            Some(Higher),
            |r| r.throughput_per_sec,
            Some(Seconds::ok),
        ),
        row(
            "success",
            Unit::Ratio,
            Some(Higher),
            |r| r.success_ratio,
            Some(Seconds::success_ratio),
        ),
        row(
            "latency mean",
            Unit::Nanos,
            Some(Lower),
            |r| r.latencies.mean_ns as f64,
            Some(Seconds::latency_mean_ns),
        ),
        row(
            "latency p50",
            Unit::Nanos,
            Some(Lower),
            |r| r.latencies.p50_ns as f64,
            Some(|s| s.latency_quantile_ns(0.50)),
        ),
        row(
            "latency p90",
            Unit::Nanos,
            Some(Lower),
            |r| r.latencies.p90_ns as f64,
            Some(|s| s.latency_quantile_ns(0.90)),
        ),
        row(
            "latency p95",
            Unit::Nanos,
            Some(Lower),
            |r| r.latencies.p95_ns as f64,
            Some(|s| s.latency_quantile_ns(0.95)),
        ),
        row(
            "latency p99",
            Unit::Nanos,
            Some(Lower),
            |r| r.latencies.p99_ns as f64,
            Some(|s| s.latency_quantile_ns(0.99)),
        ),
        row(
            "latency max",
            Unit::Nanos,
            Some(Lower),
            |r| r.latencies.max_ns as f64,
            None,
        ),
        row(
            "bytes in",
            Unit::Bytes,
            None,
            |r| r.bytes_in.total as f64,
            None,
        ),
        row(
            "bytes out",
            Unit::Bytes,
            None,
            |r| r.bytes_out.total as f64,
            None,
        ),
        row(
            "send lag mean",
            Unit::Nanos,
            Some(Lower),
            |r| r.send_lag.mean_ns as f64,
            Some(Seconds::lag_mean_ns),
        ),
        row(
            "send lag p99",
            Unit::Nanos,
            Some(Lower),
            |r| r.send_lag.p99_ns as f64,
            None,
        ),
    ]
};

/// Compares every input with the first.
pub fn compare_runs(runs: &[RunFigures]) -> Comparison {
    let mut rows: Vec<Row> = ROWS.iter().map(|spec| build_row(runs, spec)).collect();
    rows.extend(
        error_kinds(runs)
            .into_iter()
            .map(|kind| error_row(runs, kind)),
    );
    Comparison {
        inputs: runs.iter().map(|r| r.name.clone()).collect(),
        rows,
    }
}

/// The error kinds any input saw, in the kinds' order.
fn error_kinds(runs: &[RunFigures]) -> Vec<ErrorKind> {
    ErrorKind::ALL
        .into_iter()
        .filter(|kind| {
            runs.iter()
                .any(|r| r.seconds.failed_by_kind().iter().any(|(k, _)| k == kind))
        })
        .collect()
}

fn error_row(runs: &[RunFigures], kind: ErrorKind) -> Row {
    let count = |run: &RunFigures| {
        run.seconds
            .failed_by_kind()
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0.0, |(_, n)| *n as f64)
    };
    let values: Vec<Option<f64>> = runs.iter().map(|run| Some(count(run))).collect();
    let samples: Vec<Vec<f64>> = runs
        .iter()
        .map(|r| r.seconds.failed_per_sec(kind))
        .collect();
    finish_row(
        format!("errors {}", kind.name()),
        Unit::Count,
        Some(Direction::LowerIsBetter),
        values,
        Some(&samples),
    )
}

fn build_row(runs: &[RunFigures], spec: &RowSpec) -> Row {
    let values = runs.iter().map(|r| Some((spec.value)(&r.report))).collect();
    let samples: Option<Vec<Vec<f64>>> =
        (spec.samples).map(|sampler| runs.iter().map(|r| sampler(&r.seconds)).collect());
    let name = spec.name.to_owned();
    finish_row(name, spec.unit, spec.direction, values, samples.as_deref())
}

fn finish_row(
    name: String,
    unit: Unit,
    direction: Option<Direction>,
    values: Vec<Option<f64>>,
    samples: Option<&[Vec<f64>]>,
) -> Row {
    Row::new(name, unit, direction, values, |b| {
        samples.and_then(|s| bootstrap(&s[0], &s[b], direction))
    })
}

fn bootstrap(a: &[f64], b: &[f64], direction: Option<Direction>) -> Option<Difference> {
    let config = CompareConfig {
        block_len: block_len_for(a.len().min(b.len())),
        ..CompareConfig::default()
    };
    compare_samples(
        a,
        b,
        direction.unwrap_or(Direction::HigherIsBetter),
        &config,
    )
    .ok()
}

impl Comparison {
    /// The gated rows ([`GATED_ROWS`]) on which an input is worse than A by more than
    /// `threshold` (a share: 0.05 = 5%) of A's whole-run value *and* beyond the noise.
    pub fn regressions(&self, threshold: f64) -> Vec<Regression> {
        self.rows
            .iter()
            .filter(|r| GATED_ROWS.contains(&r.name.as_str()))
            .flat_map(|row| {
                row.regressions(threshold)
                    .into_iter()
                    .map(|(input, worse_by)| Regression {
                        row: row.name.clone(),
                        input: self.inputs[input].clone(),
                        worse_by,
                    })
            })
            .collect()
    }

    /// The comparison in `format`.
    pub fn render(&self, format: CompareFormat) -> String {
        match format {
            CompareFormat::Text => self.text(),
            CompareFormat::Markdown => self.markdown(),
            CompareFormat::Json => self.json(),
        }
    }

    /// Which input each letter is, one line each: names can be long paths, so they
    /// stay out of the table's columns.
    fn legend(&self, bullet: &str, quote: &str) -> String {
        let mut text = String::new();
        for (index, name) in self.inputs.iter().enumerate() {
            let _ = writeln!(text, "{bullet}{}: {quote}{name}{quote}", side_letter(index));
        }
        text.push('\n');
        text
    }

    /// Every line as cells joined by `sep`, each line between `open` and `close`.
    fn cells(&self, sep: &str, open: &str, close: &str) -> String {
        let mut text = String::new();
        let mut header = vec!["row".to_owned(), "A".to_owned()];
        for index in 1..self.inputs.len() {
            let side = side_letter(index);
            header.push(side.clone());
            header.extend(["diff", "rel", "x", "noise"].map(|h| format!("{h} {side}")));
        }
        let _ = write!(text, "{open}{}{close}", header.join(sep));
        for row in &self.rows {
            let mut cells = vec![row.name.clone(), value_text(row.unit, row.values[0])];
            for (versus, &value) in row.versus.iter().zip(&row.values[1..]) {
                cells.push(value_text(row.unit, value));
                cells.push(
                    versus
                        .diff
                        .map_or("n/a".to_owned(), |d| diff_text(row.unit, d)),
                );
                cells.push(
                    versus
                        .relative
                        .map_or("n/a".to_owned(), |r| format!("{:+.2}%", r * 100.0)),
                );
                cells.push(
                    versus
                        .improvement
                        .map_or("n/a".to_owned(), |x| format!("{x:.2}x")),
                );
                cells.push(versus.noise_word().to_owned());
            }
            let _ = write!(text, "{open}{}{close}", cells.join(sep));
        }
        text
    }

    fn text(&self) -> String {
        let mut text = self.legend("", "");
        text.push_str(&align(&self.cells("\t", "", "\n"), &[]));
        text.push_str(NOISE_NOTE);
        text
    }

    fn markdown(&self) -> String {
        let lines = self.cells(" | ", "| ", " |\n");
        let columns = 2 + 5 * (self.inputs.len() - 1);
        let mut text = self.legend("- ", "`");
        for (index, line) in lines.lines().enumerate() {
            text.push_str(line);
            text.push('\n');
            if index == 0 {
                text.push('|');
                text.push_str(&"---|".repeat(columns));
                text.push('\n');
            }
        }
        text.push_str(NOISE_NOTE);
        text
    }

    fn json(&self) -> String {
        self.json_with("")
    }

    /// The JSON comparison with `tail` (`,"key":value` pairs) after its rows.
    fn json_with(&self, tail: &str) -> String {
        let mut out = String::from("{\"inputs\":[");
        push_strings(&mut out, &self.inputs);
        out.push_str("],\"noise\":\"block bootstrap, 95%, per-second windows\",\"rows\":[");
        for (index, row) in self.rows.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            json_row(&mut out, row);
        }
        out.push(']');
        out.push_str(tail);
        out.push_str("}\n");
        out
    }
}

fn json_row(out: &mut String, row: &Row) {
    out.push_str("{\"row\":");
    push_string(out, &row.name);
    let _ = write!(out, ",\"unit\":\"{}\",\"better\":", row.unit.json_name());
    push_nullable(out, row.better_word(), push_string);
    out.push_str(",\"values\":");
    push_list(out, &row.values, |out, value| push_value(out, *value));
    out.push_str(",\"versus\":");
    push_list(out, &row.versus, |out, versus| {
        out.push_str("{\"diff\":");
        push_value(out, versus.diff);
        out.push_str(",\"relative\":");
        push_optional(out, versus.relative);
        out.push_str(",\"improvement\":");
        push_optional(out, versus.improvement);
        let _ = write!(out, ",\"noise\":\"{}\",\"interval\":", versus.noise_word());
        push_nullable(out, versus.noise, |out, d| {
            out.push('[');
            push_float(out, d.diff_low);
            out.push(',');
            push_float(out, d.diff_high);
            out.push(']');
        });
        out.push('}');
    });
    out.push('}');
}

/// A value (non-finite ones as 0, as every figure of the JSON report), or null.
fn push_value(out: &mut String, value: Option<f64>) {
    match value {
        Some(value) => push_float(out, value),
        None => out.push_str("null"),
    }
}

fn push_optional(out: &mut String, value: Option<f64>) {
    match value {
        Some(value) if value.is_finite() => push_float(out, value),
        _ => out.push_str("null"),
    }
}

/// A side's letter by its index: `A`, `B`, ... then `#27` on.
pub fn side_letter(index: usize) -> String {
    match u8::try_from(index).ok().filter(|i| *i < 26) {
        Some(i) => char::from(b'A' + i).to_string(),
        None => format!("#{}", index + 1),
    }
}

fn value_text(unit: Unit, value: Option<f64>) -> String {
    let Some(value) = value else {
        return "n/a".to_owned();
    };
    match unit {
        Unit::Count | Unit::Bytes => format!("{value:.0}"),
        Unit::PerSec => format!("{value:.2}"),
        Unit::Ratio => format!("{:.2}%", value * 100.0),
        Unit::Nanos => GoDuration::report_ns(value.max(0.0) as u64).to_string(),
        Unit::Millis => GoDuration::report_ns((value.max(0.0) * 1e6) as u64).to_string(),
    }
}

fn diff_text(unit: Unit, diff: f64) -> String {
    let sign = if diff < 0.0 { "-" } else { "+" };
    match unit {
        Unit::Ratio => format!("{:+.2}pp", diff * 100.0),
        Unit::Nanos => format!("{sign}{}", GoDuration::report_ns(diff.abs() as u64)),
        _ => format!("{sign}{}", value_text(unit, Some(diff.abs()))),
    }
}

/// The threshold flag: `5%` or `5` (percent), to a share.
pub fn parse_threshold(text: &str) -> Result<f64, ReportError> {
    let number = text.trim().trim_end_matches('%');
    match number.parse::<f64>() {
        Ok(percent) if percent.is_finite() && percent >= 0.0 => Ok(percent / 100.0),
        _ => Err(ReportError::Flag {
            flag: "-threshold",
            reason: format!("{text:?} is not a percentage (e.g. 5%)"),
        }),
    }
}

/// Reads `inputs` (A first), prints the comparison to `out` in `format`, and returns
/// the regressions beyond `threshold` (none without one). With `store`
/// (`-trace-store`), text and Markdown also say where each run's slow requests' time
/// went and which span moved most from A.
pub fn run_compare(
    inputs: &[CompareInput],
    format: CompareFormat,
    (threshold, store): (Option<f64>, Option<&TraceStoreHandle>),
    out: &mut dyn std::io::Write,
) -> Result<Vec<Regression>, ReportError> {
    if inputs.len() < 2 {
        return Err(ReportError::Flag {
            flag: "inputs",
            reason: format!("compare needs at least two inputs, got {}", inputs.len()),
        });
    }
    let runs = inputs
        .iter()
        .map(|input| read_input(input, store))
        .collect::<Result<Vec<_>, _>>()?;
    let comparison = compare_runs(&runs);
    let spans: Vec<(&str, Option<&analysis::SpanJudgement>)> = (inputs.iter().zip(&runs))
        .map(|(input, run)| {
            let traces = run.report.extras.traces.as_ref();
            (input.name(), traces.and_then(|t| t.spans.as_ref()))
        })
        .collect();
    let rendered = match format {
        CompareFormat::Json => {
            let mut tail = String::new();
            crate::compare_spans::write_json(&mut tail, &spans);
            comparison.json_with(&tail)
        }
        _ => comparison.render(format),
    };
    out.write_all(rendered.as_bytes())
        .map_err(ReportError::Write)?;
    if format != CompareFormat::Json {
        let block = ran_out_first(inputs, &runs, format);
        out.write_all(block.as_bytes())
            .map_err(ReportError::Write)?;
        let markdown = format == CompareFormat::Markdown;
        let block = crate::compare_spans::where_time_went(&spans, markdown);
        out.write_all(block.as_bytes())
            .map_err(ReportError::Write)?;
    }
    out.flush().map_err(ReportError::Write)?;
    Ok(threshold.map_or_else(Vec::new, |t| comparison.regressions(t)))
}

/// Each input's diagnosis headline ("A ran out of one core, B of its pool"), from its
/// summary; empty when no input has one (no samples and no knee).
fn ran_out_first(inputs: &[CompareInput], runs: &[RunFigures], format: CompareFormat) -> String {
    let lines: Vec<(String, String)> = (inputs.iter().zip(runs))
        .filter_map(|(input, run)| {
            let diagnosis = run.report.extras.diagnosis.as_ref()?;
            let headline = crate::words::diagnosis::headline(diagnosis);
            Some((input.name().to_owned(), headline))
        })
        .collect();
    ran_out_block(format, &lines)
}

/// "What ran out first": one line per (name, sentence), as text or Markdown; empty
/// without lines. Run folders' comparisons (`lab`) print theirs with it too.
pub fn ran_out_block(format: CompareFormat, lines: &[(String, String)]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let mut block = match format {
        CompareFormat::Markdown => "\n**What ran out first**\n\n".to_owned(),
        _ => "\nWhat ran out first:\n".to_owned(),
    };
    for (name, headline) in lines {
        let _ = match format {
            CompareFormat::Markdown => writeln!(block, "- `{name}`: {headline}"),
            _ => writeln!(block, "{name}: {headline}"),
        };
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{Record, RunTables};

    const T0: u64 = 1_700_000_000_000_000_000;

    /// `seconds` seconds at `rate`/s, each answered in `latency_ms` (+-10%), every
    /// `fail_every`-th a 503.
    fn run(name: &str, seconds: u64, rate: u64, latency_ms: u64, fail_every: u64) -> RunFigures {
        let records: Vec<Record> = (0..seconds * rate)
            .map(|n| Record {
                intended_unix_ns: T0 + n * 1_000_000_000 / rate,
                latency_ns: latency_ms * 1_000_000 * (90 + n % 21) / 100,
                status: if fail_every > 0 && n % fail_every == 0 {
                    503
                } else {
                    200
                },
                bytes_in: 10,
                ..Record::default()
            })
            .collect();
        let tables = RunTables::default();
        let mut metrics = Metrics::new(None);
        let mut seconds = Seconds::default();
        metrics.add_all(&records);
        seconds.add_all(&records, &tables);
        RunFigures {
            name: name.to_owned(),
            report: metrics.close(&tables),
            seconds,
        }
    }

    fn row<'a>(comparison: &'a Comparison, name: &str) -> &'a Row {
        comparison.rows.iter().find(|r| r.name == name).unwrap()
    }

    #[test]
    fn rows_differences_and_noise() {
        let a = run("a.llr", 20, 100, 10, 0);
        let slower = run("b.llr", 20, 100, 20, 10);
        let comparison = compare_runs(&[a, slower]);
        // (row, improvement x, noise)
        let rows: &[(&str, Option<f64>, &str)] = &[
            ("requests", None, "n/a"),
            ("rate", Some(1.0), "within"),
            ("latency p50", Some(0.5), "beyond"),
            ("latency p99", Some(0.5), "beyond"),
            ("latency max", Some(0.5), "n/a"),
            ("success", Some(0.9), "beyond"),
            ("bytes in", None, "n/a"),
            ("errors status", None, "beyond"),
        ];
        for (name, x, noise) in rows {
            let versus = row(&comparison, name).versus[0];
            assert_eq!(versus.noise_word(), *noise, "{name}: {versus:?}");
            match (versus.improvement, x) {
                (Some(got), Some(want)) => assert!((got - want).abs() < 0.02, "{name}: {got}"),
                (got, want) => assert_eq!(got, *want, "{name}"),
            }
        }
        let p99 = row(&comparison, "latency p99");
        assert!(p99.versus[0].relative.unwrap() > 0.9, "{p99:?}");
    }

    #[test]
    fn regressions_need_the_threshold_and_the_noise() {
        let a = run("a.llr", 20, 100, 10, 0);
        let same = run("same.llr", 20, 100, 10, 0);
        let slower = run("slower.llr", 20, 100, 12, 0);
        let comparison = compare_runs(&[a, same, slower]);
        let found = comparison.regressions(0.05);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].row.as_str(), found[0].input.as_str()),
            ("latency p99", "slower.llr")
        );
        assert!(comparison.regressions(0.5).is_empty());
    }

    #[test]
    fn layouts_have_every_side() {
        let comparison = compare_runs(&[run("a.llr", 8, 50, 5, 0), run("b.llr", 8, 50, 5, 0)]);
        let text = comparison.render(CompareFormat::Text);
        assert!(text.starts_with("A: a.llr\nB: b.llr\n\nrow "), "{text}");
        assert!(
            text.contains("A: a.llr") && text.contains("B: b.llr"),
            "{text}"
        );
        let markdown = comparison.render(CompareFormat::Markdown);
        assert!(
            markdown.lines().nth(4).unwrap().starts_with("|---|"),
            "{markdown}"
        );
        let json = comparison.render(CompareFormat::Json);
        assert!(
            json.starts_with("{\"inputs\":[\"a.llr\",\"b.llr\"]"),
            "{json}"
        );
    }

    #[test]
    fn flags() {
        let rows: &[(&str, Option<f64>)] = &[
            ("5%", Some(0.05)),
            ("12.5", Some(0.125)),
            ("0%", Some(0.0)),
            ("-5%", None),
            ("five", None),
            ("", None),
        ];
        for (text, want) in rows {
            assert_eq!(parse_threshold(text).ok(), *want, "{text}");
        }
        assert_eq!(
            CompareFormat::parse("md").ok(),
            Some(CompareFormat::Markdown)
        );
        let err = CompareFormat::parse("html").unwrap_err().to_string();
        assert!(err.contains("-format") && err.contains("html"), "{err}");
    }

    #[test]
    fn bad_inputs_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("old.json");
        std::fs::write(
            &json,
            "{\"code\":200,\"timestamp\":\"2020-05-09T11:52:50.5+02:00\",\"latency\":1,\"bytes_out\":0,\"bytes_in\":0,\"error\":\"\"}\n",
        )
        .unwrap();
        let json = json.to_string_lossy().into_owned();
        let missing = dir
            .path()
            .join("missing.llr")
            .to_string_lossy()
            .into_owned();
        for (path, want) in [(&json, "not a record file"), (&missing, "missing.llr")] {
            let inputs = [
                CompareInput::RecordFile(path.clone()),
                CompareInput::RecordFile(path.clone()),
            ];
            let err = run_compare(&inputs, CompareFormat::Text, (None, None), &mut Vec::new())
                .unwrap_err();
            let chain = std::iter::successors(Some(&err as &dyn std::error::Error), |e| e.source())
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(": ");
            assert!(
                chain.contains(path.as_str()) && chain.contains(want),
                "{chain}"
            );
        }
        let one = [CompareInput::RecordFile(json)];
        let err =
            run_compare(&one, CompareFormat::Text, (None, None), &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("at least two"), "{err}");
    }
}
