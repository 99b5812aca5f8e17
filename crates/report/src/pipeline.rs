//! [`run_report`]: inputs in, report out. Streams records once through the aggregators
//! (and the interval binner for `-every`), then prints each group's report.

use std::io::Write;

use record::{LoadModel, ReadOrder, Record, RecordError, RecordStream, RunTables, SourceSummary};

use crate::ReportError;
use crate::config::{ReportConfig, ReportType};
use crate::distribution::{EXACT_LIMIT, GROUP_EXACT_LIMIT};
use crate::every::{IntervalRow, Intervals, json_row, text_header, text_row};
use crate::evidence::{Evidence, close_run};
use crate::extras::{RunFacts, Scope};
use crate::grouping::{GroupBy, GroupKey, Grouper, Groups};
use crate::hdrplot::write_hdrplot;
use crate::hist::write_hist;
use crate::json::write_resources_json;
use crate::json::{GroupLabel, write_json};
use crate::metrics::{Metrics, Report};
use crate::replay::Replays;
use crate::resources::{ResourceSummary, Resources};
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
    let mut groups = Groups::new(config.by, Metrics::with_exact_limit(buckets, exact_limit));
    let mut rows = RowPrinter::new(config);
    let (mut batch, mut samples, mut logged) = (Vec::new(), Vec::new(), Vec::new());
    let mut resources = Resources::default();
    let mut replays = Replays::new();
    let mut evidence = Evidence::new();
    while stream.next_batch(&mut batch)? {
        if let Some(window_ns) = config.window_ns {
            keep_window(&mut batch, stream.summaries(), window_ns);
        }
        groups.add_all(&batch, stream.tables());
        evidence.add_records(&batch, stream.tables());
        rows.add(&batch, stream.tables(), stream.summaries(), out)?;
        replays.add_records(&batch, stream.tables());
        stream.take_logged(&mut logged);
        replays.add_logged(&logged, stream.tables());
        logged.clear();
        let tables = stream.take_samples(&mut samples);
        resources.add(tables, &samples);
        evidence.add_samples(tables, &samples);
        samples.clear();
    }
    stream.take_logged(&mut logged);
    replays.add_logged(&logged, stream.tables());
    let tables = stream.take_samples(&mut samples);
    resources.add(tables, &samples);
    evidence.add_samples(tables, &samples);
    rows.finish(stream.tables(), stream.summaries(), out)?;
    let torn = torn_warnings(stream.summaries());
    for line in &torn {
        writeln!(diagnostics, "{line}").map_err(ReportError::Write)?;
    }
    let requests = groups.requests();
    if requests == 0 {
        // A monitor file alone: its resource summary (and what reached its limit) is
        // the report.
        let Some(summary) = resources.close(None) else {
            return Err(RecordError::Empty {
                source_name: input_names(paths),
            }
            .into());
        };
        let diagnosis = evidence.close().diagnose_samples();
        let text = render_resources_only(&summary, &diagnosis, &config.report_type);
        out.write_all(text.as_bytes()).map_err(ReportError::Write)?;
        out.flush().map_err(ReportError::Write)?;
        return Ok(ReportOutcome {
            requests,
            torn_inputs: torn.len(),
            diagnosis: None,
        });
    }
    let mut facts = RunFacts::from_inputs(stream.summaries(), stream.tables());
    facts.health = config.health;
    facts.min_success_ratio = config.min_success_ratio;
    facts.resources = resources.close(Some(groups.earliest_unix_ns()));
    facts.replay = replays.close(stream.summaries(), stream.tables());
    facts.traces = crate::traces::judge_traces(
        stream.exemplars(),
        stream.summaries(),
        stream.tables(),
        (config.trace_link.as_ref(), config.trace_store.as_ref()),
        groups.earliest_unix_ns(),
    );
    evidence.close().fill(&mut facts, stream.tables());
    let (text, p50_ns, diagnosis) =
        render_groups(groups, &facts, stream.tables(), &config.report_type);
    out.write_all(text.as_bytes()).map_err(ReportError::Write)?;
    out.flush().map_err(ReportError::Write)?;
    for line in shard_warnings(stream.summaries(), p50_ns) {
        writeln!(diagnostics, "{line}").map_err(ReportError::Write)?;
    }
    Ok(ReportOutcome {
        requests,
        torn_inputs: torn.len(),
        diagnosis,
    })
}

/// Keeps the records whose intended send is `[start, end)` from the run's time zero
/// (its first input's start, as a plan step's verdict reads it).
fn keep_window(batch: &mut Vec<Record>, summaries: &[SourceSummary], (start, end): (u64, u64)) {
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
    diagnosis: &analysis::Diagnosis,
    report_type: &ReportType,
) -> String {
    let mut text = String::new();
    match report_type {
        ReportType::Json { .. } => write_resources_json(&mut text, summary, Some(diagnosis)),
        _ => write_resources_text(&mut text, summary, Some(diagnosis)),
    }
    text
}

/// Every group's report in the chosen layout, under a title line with `-by`.
fn render_groups(
    groups: Groups,
    facts: &RunFacts,
    tables: &RunTables,
    report_type: &ReportType,
) -> (String, Option<u64>, Option<analysis::Diagnosis>) {
    let (grouper, sorted) = groups.into_sorted();
    let by = grouper.as_ref().map(Grouper::by);
    let mut text = String::new();
    let mut diagnosis = None;
    // The smallest p50 of the groups: the latency a shard's start skew is judged by.
    let mut p50_ns: Option<u64> = None;
    for (index, (key, metrics)) in sorted.into_iter().enumerate() {
        let report = close_run(metrics, facts, tables, scope(by, key));
        let p50 = report.latencies.p50_ns;
        p50_ns = Some(p50_ns.map_or(p50, |min| min.min(p50)));
        diagnosis = diagnosis.or_else(|| report.extras.diagnosis.clone());
        let json = matches!(report_type, ReportType::Json { .. });
        if let (Some(grouper), false) = (&grouper, json) {
            if index > 0 {
                text.push('\n');
            }
            text.push_str(&grouper.title(key, tables));
            text.push('\n');
        }
        let name = grouper.as_ref().map(|g| g.group_name(key, tables));
        let label = by.zip(name.as_deref()).map(|(by, name)| GroupLabel {
            by: by.name(),
            name,
        });
        render_one(&mut text, &report, report_type, label);
    }
    (text, p50_ns, diagnosis)
}

fn scope(by: Option<GroupBy>, key: GroupKey) -> Scope {
    match by {
        None => Scope::Run,
        Some(GroupBy::Attack) => Scope::Attack(u16::try_from(key.0).unwrap_or(u16::MAX)),
        Some(GroupBy::Target | GroupBy::Step | GroupBy::Status | GroupBy::Protocol) => Scope::Part,
    }
}

fn render_one(
    text: &mut String,
    report: &Report,
    report_type: &ReportType,
    label: Option<GroupLabel<'_>>,
) {
    match report_type {
        ReportType::Text => write_text(text, report),
        ReportType::Json { .. } => write_json(text, report, label),
        ReportType::Hist(_) => {
            if let Some(buckets) = &report.buckets {
                write_hist(text, buckets);
            }
        }
        ReportType::HdrPlot => write_hdrplot(text, report),
    }
}
