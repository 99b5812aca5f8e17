//! [`run_report`]: inputs in, report out. Streams records once through the aggregators
//! (and the interval binner for `-every`), then prints each group's report.

use std::io::Write;

use record::{LoadModel, ReadOrder, Record, RecordError, RecordStream, RunTables, SourceSummary};

use crate::ReportError;
use crate::config::{ReportConfig, ReportType};
use crate::connections::StreamedCalls;
use crate::distribution::{EXACT_LIMIT, GROUP_EXACT_LIMIT};
use crate::every::{IntervalRow, Intervals, json_row, text_header, text_row};
use crate::grouping::{GroupBy, GroupKey, Grouper};
use crate::hdrplot::write_hdrplot;
use crate::hist::write_hist;
use crate::json::write_resources_json;
use crate::json::{GroupLabel, write_json};
use crate::measure::{Bounds, Measure, Summary};
use crate::metrics::{Metrics, Report};
use crate::resources::ResourceSummary;
use crate::text::write_resources_text;
use crate::text::write_text;
use crate::warnings::{shard_warnings, torn_warnings};

/// What a finished report read.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOutcome {
    /// Records read.
    pub requests: u64,
    /// Inputs that stopped at a cut or damaged block (warned about on `diagnostics`).
    pub torn_inputs: usize,
    /// What ran out first, when the report is of the whole run and it had samples or
    /// a knee (a plan's step keeps it for its summary).
    pub diagnosis: Option<analysis::Diagnosis>,
    /// Where the slow traced requests' time went (`-trace-store`), as the report
    /// judged it once (a plan's step words it in its write-up).
    pub spans: Option<analysis::SpanJudgement>,
}

/// Reads `paths` (none or `-` is stdin), prints the report to `out` and warnings about
/// torn inputs to `diagnostics`. Fails when an input cannot be read at all or holds no
/// records; a torn input is reported up to its cut.
pub fn run_report(
    paths: &[String],
    config: &ReportConfig,
    out: &mut dyn Write,
    diagnostics: &mut dyn Write,
) -> Result<ReportOutcome, ReportError> {
    let order = if config.every_ns.is_some() {
        ReadOrder::SendTime
    } else {
        ReadOrder::Input
    };
    // Only `-every` rows read the summaries (closed-model users) during the run.
    let mut stream = RecordStream::open(paths, order, config.every_ns.is_some())?;
    let buckets = match &config.report_type {
        ReportType::Json { buckets } => buckets.clone(),
        ReportType::Hist(buckets) => Some(buckets.clone()),
        ReportType::Text | ReportType::HdrPlot => None,
    };
    let exact_limit = if config.by.is_some() {
        GROUP_EXACT_LIMIT
    } else {
        EXACT_LIMIT
    };
    let mut measure = Measure::new(config.by, Metrics::with_exact_limit(buckets, exact_limit));
    let mut rows = RowPrinter::new(config);
    let (mut batch, mut samples, mut logged) = (Vec::new(), Vec::new(), Vec::new());
    while stream.next_batch(&mut batch)? {
        if let Some(window_ns) = config.window_ns {
            keep_window(&mut batch, stream.summaries(), window_ns);
        }
        measure.add_records(&batch, stream.tables());
        rows.add(&batch, stream.tables(), stream.summaries(), out)?;
        take_the_rest(&mut stream, &mut measure, &mut logged, &mut samples);
    }
    take_the_rest(&mut stream, &mut measure, &mut logged, &mut samples);
    rows.finish(stream.tables(), stream.summaries(), out)?;
    let torn = torn_warnings(stream.summaries());
    for line in &torn {
        writeln!(diagnostics, "{line}").map_err(ReportError::Write)?;
    }
    let requests = measure.requests();
    let traces = measure.earliest_unix_ns().and_then(|earliest_unix_ns| {
        crate::traces::judge_traces(
            stream.exemplars(),
            stream.summaries(),
            stream.tables(),
            (config.trace_link.as_ref(), config.trace_store.as_ref()),
            earliest_unix_ns,
        )
    });
    let bounds = Bounds {
        health: config.health,
        min_success_ratio: config.min_success_ratio,
        traces,
    };
    let summary = measure.close(stream.summaries(), stream.tables(), bounds);
    if requests == 0 {
        // A monitor file alone: its resource summary (and what reached its limit) is
        // the report.
        let Some(resources) = &summary.facts.resources else {
            return Err(RecordError::Empty {
                source_name: input_names(paths),
            }
            .into());
        };
        let text = render_resources_only(resources, summary.diagnosis(), &config.report_type);
        out.write_all(text.as_bytes()).map_err(ReportError::Write)?;
        out.flush().map_err(ReportError::Write)?;
        return Ok(ReportOutcome {
            requests,
            torn_inputs: torn.len(),
            diagnosis: None,
            spans: None,
        });
    }
    let (text, p50_ns) = render_groups(&summary, stream.tables(), &config.report_type);
    out.write_all(text.as_bytes()).map_err(ReportError::Write)?;
    out.flush().map_err(ReportError::Write)?;
    for line in shard_warnings(stream.summaries(), p50_ns) {
        writeln!(diagnostics, "{line}").map_err(ReportError::Write)?;
    }
    Ok(ReportOutcome {
        requests,
        torn_inputs: torn.len(),
        diagnosis: summary.diagnosis().cloned(),
        spans: (summary.facts.traces.as_ref()).and_then(|t| t.spans.clone()),
    })
}

/// Folds the logged originals and resource samples read with the last batch.
fn take_the_rest(
    stream: &mut RecordStream,
    measure: &mut Measure,
    logged: &mut Vec<record::Logged>,
    samples: &mut Vec<record::SampleBatch>,
) {
    stream.take_logged(logged);
    measure.add_logged(logged, stream.tables());
    logged.clear();
    let mut connections = Vec::new();
    stream.take_connections(&mut connections);
    measure.add_connections(&connections);
    let tables = stream.take_samples(samples);
    measure.add_samples(tables, samples);
    samples.clear();
}

/// Keeps the records whose intended send is `[start, end)` from the run's time zero
/// (its first input's start, as a plan step's verdict reads it): a step's report and
/// page read the verdict's window through this one rule.
pub fn keep_window(batch: &mut Vec<Record>, summaries: &[SourceSummary], (start, end): (u64, u64)) {
    let zero_unix_ns = summaries.first().map_or(0, |s| s.header.start_unix_ns);
    batch.retain(|record| {
        (start..end).contains(&record.intended_unix_ns.saturating_sub(zero_unix_ns))
    });
}

fn input_names(paths: &[String]) -> String {
    if paths.is_empty() {
        "stdin".to_owned()
    } else {
        paths.join(", ")
    }
}

/// Prints `-every` rows as intervals close, flushing so a pipe sees them live.
struct RowPrinter {
    intervals: Option<Intervals>,
    by: Option<GroupBy>,
    json: bool,
    printed_header: bool,
    rows: Vec<IntervalRow>,
}

impl RowPrinter {
    fn new(config: &ReportConfig) -> RowPrinter {
        RowPrinter {
            intervals: config
                .every_ns
                .map(|every| Intervals::new(every, config.by)),
            by: config.by,
            json: matches!(config.report_type, ReportType::Json { .. }),
            printed_header: false,
            rows: Vec::new(),
        }
    }

    fn add(
        &mut self,
        batch: &[Record],
        tables: &RunTables,
        summaries: &[SourceSummary],
        out: &mut dyn Write,
    ) -> Result<(), ReportError> {
        if let Some(intervals) = &mut self.intervals {
            intervals.add_all(batch, tables, &mut self.rows);
            self.print(tables, summaries, out)?;
        }
        Ok(())
    }

    fn finish(
        &mut self,
        tables: &RunTables,
        summaries: &[SourceSummary],
        out: &mut dyn Write,
    ) -> Result<(), ReportError> {
        let Some(intervals) = &mut self.intervals else {
            return Ok(());
        };
        intervals.finish(&mut self.rows);
        self.print(tables, summaries, out)?;
        if self.printed_header && !self.json {
            out.write_all(b"\n").map_err(ReportError::Write)?;
        }
        Ok(())
    }

    fn print(
        &mut self,
        tables: &RunTables,
        summaries: &[SourceSummary],
        out: &mut dyn Write,
    ) -> Result<(), ReportError> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let closed = has_closed_model(summaries);
        let grouper = self.intervals.as_ref().and_then(Intervals::grouper);
        let mut text = String::new();
        if !self.printed_header && !self.json {
            text.push_str(&text_header(self.by, closed));
        }
        self.printed_header = true;
        for mut row in self.rows.drain(..) {
            if closed {
                let attack = match (self.by, row.group, summaries.len()) {
                    (Some(GroupBy::Attack), Some(key), 1) => Some(key.0 as usize),
                    _ => None,
                };
                row.users = Some(users_at(
                    summaries,
                    row.start_unix_ns + row.duration_ns,
                    attack,
                ));
            }
            text.push_str(&if self.json {
                json_row(&row, grouper, tables)
            } else {
                text_row(&row, grouper, tables)
            });
        }
        out.write_all(text.as_bytes()).map_err(ReportError::Write)?;
        out.flush().map_err(ReportError::Write)
    }
}

fn has_closed_model(summaries: &[SourceSummary]) -> bool {
    summaries.iter().any(|s| {
        s.header
            .attacks
            .iter()
            .any(|a| a.model == LoadModel::Closed)
    })
}

/// Closed-model users at `unix_ns`, from each input's generator sample nearest to it
/// (samples come once a second; the latest one up to half a second later counts), of
/// one attack when `attack` is given (which needs a single input, since sample attack
/// indices are the input's own).
fn users_at(summaries: &[SourceSummary], unix_ns: u64, attack: Option<usize>) -> u64 {
    summaries
        .iter()
        .filter_map(|summary| {
            let sample = summary
                .stats
                .iter()
                .take_while(|s| s.at_unix_ns <= unix_ns + 500_000_000)
                .last()?;
            let closed = |index: usize| {
                summary
                    .header
                    .attacks
                    .get(index)
                    .is_some_and(|a| a.model == LoadModel::Closed)
            };
            Some(
                sample
                    .attacks
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| closed(*i) && attack.is_none_or(|a| a == *i))
                    .map(|(_, a)| a.users)
                    .sum::<u64>(),
            )
        })
        .sum()
}

/// The resource summary of inputs without requests (`loadlab monitor` files).
fn render_resources_only(
    summary: &ResourceSummary,
    diagnosis: Option<&analysis::Diagnosis>,
    report_type: &ReportType,
) -> String {
    let mut text = String::new();
    match report_type {
        ReportType::Json { .. } => write_resources_json(&mut text, summary, diagnosis),
        _ => write_resources_text(&mut text, summary, diagnosis),
    }
    text
}

/// Every group's report in the chosen layout, under a title line with `-by`, and the
/// smallest p50 of the groups: the latency a shard's start skew is judged by.
fn render_groups(
    summary: &Summary,
    tables: &RunTables,
    report_type: &ReportType,
) -> (String, Option<u64>) {
    let grouper = summary.grouper.as_ref();
    let by = grouper.map(Grouper::by);
    let json = matches!(report_type, ReportType::Json { .. });
    let mut text = String::new();
    for (index, (key, report)) in summary.groups.iter().enumerate() {
        if let (Some(grouper), false) = (grouper, json) {
            if index > 0 {
                text.push('\n');
            }
            text.push_str(&grouper.title(*key, tables));
            text.push('\n');
        }
        let name = grouper.map(|g| g.group_name(*key, tables));
        let label = by.zip(name.as_deref()).map(|(by, name)| GroupLabel {
            by: by.name(),
            name,
        });
        // A step's connections under `-by=step`, else the whole run's, once.
        let connections = match (grouper, by) {
            (Some(grouper), Some(GroupBy::Step)) => summary.connections.merged(|attack, target| {
                grouper.key(&Record {
                    attack,
                    target,
                    ..Record::default()
                }) == *key
            }),
            _ if index + 1 == summary.groups.len() => summary.connections.merged(|_, _| true),
            _ => None,
        };
        let calls = streamed_calls(summary, *key, index);
        match (report_type, &connections) {
            (ReportType::Json { .. }, _) => {
                write_json(
                    &mut text,
                    report,
                    label,
                    connections.as_ref(),
                    calls.as_ref(),
                );
            }
            (ReportType::Text, Some(figures)) => {
                render(&mut text, report, report_type, label);
                crate::connections::write_connections_text(&mut text, figures);
            }
            _ => render(&mut text, report, report_type, label),
        }
        if let (ReportType::Text, Some(calls)) = (report_type, &calls) {
            crate::connections::write_calls_text(&mut text, calls);
        }
    }
    let p50_ns = (summary.groups.iter())
        .map(|(_, report)| report.latencies.p50_ns)
        .min();
    (text, p50_ns)
}

/// The streamed gRPC calls of group `key` under `-by` attack, target or step, else
/// the whole run's, once, after the last group.
fn streamed_calls(summary: &Summary, key: GroupKey, index: usize) -> Option<StreamedCalls> {
    let grouper = summary.grouper.as_ref();
    match grouper.map(Grouper::by) {
        Some(GroupBy::Attack | GroupBy::Target | GroupBy::Step) => {
            let grouper = grouper?;
            (summary.connections).calls(|attack, target| {
                grouper.key(&Record {
                    attack,
                    target,
                    ..Record::default()
                }) == key
            })
        }
        _ if index + 1 == summary.groups.len() => summary.connections.calls(|_, _| true),
        _ => None,
    }
}

/// One report in `report_type`'s layout, labelled with its group under `-by`.
pub fn render(
    text: &mut String,
    report: &Report,
    report_type: &ReportType,
    label: Option<GroupLabel<'_>>,
) {
    match report_type {
        ReportType::Text => write_text(text, report),
        ReportType::Json { .. } => write_json(text, report, label, None, None),
        ReportType::Hist(_) => {
            if let Some(buckets) = &report.buckets {
                write_hist(text, buckets);
            }
        }
        ReportType::HdrPlot => write_hdrplot(text, report),
    }
}
