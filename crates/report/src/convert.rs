//! [`run_encode`]: the `encode` command. Reads any mix of inputs (record files, vegeta
//! or loadlab JSON/CSV), merges them in send-time order and writes JSON lines, CSV or a
//! record file, so `encode -to record vegeta.json > run.llr` imports old vegeta runs.
//! A record file keeps what the inputs hold beside their records: resource samples, and
//! a replay's logged originals and log counts; JSON and CSV carry records only.

use std::fmt;
use std::io::Write;
use std::str::FromStr;

use record::{
    AttackEnd, AttackInfo, Compression, CsvEncoder, InputFormat, JsonEncoder, Logged, ReadOrder,
    Record, RecordError, RecordStream, RecordWriter, ReplayEnd, RunEnd, RunHeader, RunTables,
    SampleBatch, SampleFrame, SampleTables, SourceSummary, StopReason,
};

use crate::ReportError;
use crate::warnings::{shard_warnings, torn_warnings};

/// What `encode -to` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeFormat {
    /// JSON lines: vegeta's keys plus ours (`send_lag`, `ttfb`, `error_kind`).
    Json,
    /// CSV with a header row: vegeta's 12 columns, then ours.
    Csv,
    /// loadlab's record file (zstd-compressed blocks).
    Record,
}

impl FromStr for EncodeFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<EncodeFormat, String> {
        match text {
            "json" => Ok(EncodeFormat::Json),
            "csv" => Ok(EncodeFormat::Csv),
            "record" => Ok(EncodeFormat::Record),
            "gob" => Err(
                "gob is vegeta's own binary format, which loadlab does not write: \
                          use -to json and `vegeta encode -to gob` on that"
                    .to_owned(),
            ),
            other => Err(format!(
                "unknown format {other:?}: want json, csv or record"
            )),
        }
    }
}

impl fmt::Display for EncodeFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EncodeFormat::Json => "json",
            EncodeFormat::Csv => "csv",
            EncodeFormat::Record => "record",
        })
    }
}

/// What a conversion wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodeOutcome {
    /// Records written.
    pub records: u64,
    /// Inputs that stopped at a cut or damaged block (warned about on `diagnostics`).
    pub torn_inputs: usize,
}

/// Records flushed per block when writing a record file.
const RECORDS_PER_BLOCK: usize = 1 << 16;

/// Converts `paths` (none or `-` is stdin) to `to` on `out`, in send-time order.
pub fn run_encode(
    paths: &[String],
    to: EncodeFormat,
    out: &mut dyn Write,
    diagnostics: &mut dyn Write,
) -> Result<EncodeOutcome, ReportError> {
    // Summaries are read with the first records (the header) and at the end.
    let mut stream = RecordStream::open(paths, ReadOrder::SendTime, false)?;
    let records = match to {
        EncodeFormat::Json => write_json(&mut stream, out)?,
        EncodeFormat::Csv => write_csv(&mut stream, out)?,
        EncodeFormat::Record => write_records(&mut stream, out)?,
    };
    let torn = torn_warnings(stream.summaries());
    for line in &torn {
        writeln!(diagnostics, "{line}").map_err(ReportError::Write)?;
    }
    // No latencies are summarized here, so the start skew has nothing to be judged by.
    for line in shard_warnings(stream.summaries(), None) {
        writeln!(diagnostics, "{line}").map_err(ReportError::Write)?;
    }
    if records == 0 {
        let source_name = if paths.is_empty() {
            "stdin".to_owned()
        } else {
            paths.join(", ")
        };
        return Err(RecordError::Empty { source_name }.into());
    }
    Ok(EncodeOutcome {
        records,
        torn_inputs: torn.len(),
    })
}

fn write_json(stream: &mut RecordStream, out: &mut dyn Write) -> Result<u64, ReportError> {
    let mut encoder = JsonEncoder::new(&mut *out);
    let records = write_each(stream, |record, tables| encoder.write(record, tables))?;
    encoder.finish().map_err(ReportError::Write)?;
    Ok(records)
}

fn write_csv(stream: &mut RecordStream, out: &mut dyn Write) -> Result<u64, ReportError> {
    let mut encoder = CsvEncoder::new(&mut *out).map_err(ReportError::Write)?;
    let records = write_each(stream, |record, tables| encoder.write(record, tables))?;
    encoder
        .finish()
        .map_err(ReportError::Write)?
        .flush()
        .map_err(ReportError::Write)?;
    Ok(records)
}

/// Hands every record of `stream` to `write`; returns how many there were.
fn write_each(
    stream: &mut RecordStream,
    mut write: impl FnMut(&Record, &RunTables) -> std::io::Result<()>,
) -> Result<u64, ReportError> {
    let mut batch = Vec::new();
    let mut records = 0;
    while stream.next_batch(&mut batch)? {
        for record in &batch {
            write(record, stream.tables()).map_err(ReportError::Write)?;
        }
        records += batch.len() as u64;
    }
    Ok(records)
}

/// Writes a record file: the header once the first records (and so every input's
/// attacks) are known, dictionary entries before the records that use them, the
/// inputs' resource samples as they arrive, and the inputs' end blocks merged, when
/// they have any.
fn write_records(stream: &mut RecordStream, out: &mut dyn Write) -> Result<u64, ReportError> {
    let mut batch = Vec::new();
    let first = loop {
        if !stream.next_batch(&mut batch)? {
            return Ok(0);
        }
        if let Some(&first) = batch.first() {
            break first;
        }
    };
    let header = merged_header(stream.summaries(), stream.tables(), &first);
    let mut writer = DictionaryWriter::new(out, &header)?;
    let mut records = 0;
    loop {
        writer.write(&batch, stream.tables())?;
        writer.write_samples(stream)?;
        writer.write_logged(stream)?;
        records += batch.len() as u64;
        if !stream.next_batch(&mut batch)? {
            break;
        }
    }
    writer.write_samples(stream)?;
    writer.write_logged(stream)?;
    writer.finish(stream.summaries(), stream.tables())?;
    Ok(records)
}

/// A [`RecordWriter`] that keeps the file's dictionaries in step with the merged tables.
struct DictionaryWriter<'a> {
    writer: RecordWriter<&'a mut dyn Write>,
    attacks: usize,
    /// A replay's logged originals taken since the records last went out: written
    /// after them, as the generator does (a block, not a block per batch).
    logged: Vec<Logged>,
}

impl<'a> DictionaryWriter<'a> {
    fn new(out: &'a mut dyn Write, header: &RunHeader) -> Result<Self, ReportError> {
        let writer = RecordWriter::new(out, header, Compression::Zstd { level: 3 })?;
        Ok(DictionaryWriter {
            writer,
            attacks: header.attacks.len(),
            logged: Vec::new(),
        })
    }

    fn write(&mut self, batch: &[Record], tables: &RunTables) -> Result<(), ReportError> {
        if let Some(record) = batch.iter().find(|r| usize::from(r.attack) >= self.attacks) {
            return Err(RecordError::Corrupt {
                source_name: "merged inputs".to_owned(),
                offset: 0,
                reason: format!(
                    "attack {} appeared after the header was written",
                    record.attack
                ),
            }
            .into());
        }
        let written = self.writer.targets_written();
        if tables.targets.len() > written {
            self.writer
                .add_targets(written, &tables.targets[written..])?;
        }
        let written = self.writer.errors_written();
        if tables.errors.len() > written {
            self.writer.add_errors(written, &tables.errors[written..])?;
        }
        self.writer.extend(batch);
        if self.writer.pending() >= RECORDS_PER_BLOCK {
            // Sorted by send time: everything sent before the last record is written.
            let watermark = batch.last().map(Record::sent_unix_ns);
            self.writer.flush_records(watermark)?;
        }
        Ok(())
    }

    /// Takes the logged originals of the last batch; writes those held once the
    /// records have gone out (their ids are in the dictionary: `write` added them).
    fn write_logged(&mut self, stream: &mut RecordStream) -> Result<(), ReportError> {
        stream.take_logged(&mut self.logged);
        if self.writer.pending() == 0 && !self.logged.is_empty() {
            self.writer.write_logged(&self.logged)?;
            self.logged.clear();
        }
        Ok(())
    }

    /// Writes the sample batches read since the last call, each after the sampler and
    /// series entries that are new since the previous frame.
    fn write_samples(&mut self, stream: &mut RecordStream) -> Result<(), ReportError> {
        let mut batches = Vec::new();
        let tables = stream.take_samples(&mut batches);
        for batch in batches {
            let frame = self.next_frame(tables, batch);
            self.writer.write_samples(&frame)?;
        }
        Ok(())
    }

    fn next_frame(&self, tables: &SampleTables, batch: SampleBatch) -> SampleFrame {
        let (samplers, series) = (self.writer.samplers_written(), self.writer.series_written());
        SampleFrame {
            first_sampler: u32::try_from(samplers).unwrap_or(u32::MAX),
            samplers: tables.samplers[samplers..].to_vec(),
            first_series: u32::try_from(series).unwrap_or(u32::MAX),
            series: tables.series[series..].to_vec(),
            batch,
        }
    }

    /// Copies the statistics of a single input and the merged end block; without any
    /// end block in the inputs, the file ends without one too (as the inputs did).
    fn finish(
        mut self,
        summaries: &[SourceSummary],
        tables: &RunTables,
    ) -> Result<(), ReportError> {
        self.writer.flush_records(None)?;
        self.writer.write_logged(&self.logged)?;
        if let [only] = summaries {
            for stats in &only.stats {
                self.writer.write_stats(stats)?;
            }
        }
        match merged_end(summaries, tables) {
            Some(end) => {
                self.writer
                    .finish(&end)?
                    .flush()
                    .map_err(ReportError::Write)?;
            }
            None => {
                self.writer.close()?;
            }
        }
        Ok(())
    }
}

fn merged_header(summaries: &[SourceSummary], tables: &RunTables, first: &Record) -> RunHeader {
    let binary_start = summaries
        .iter()
        .filter(|s| s.format == InputFormat::Binary)
        .map(|s| s.header.start_unix_ns)
        .min();
    let sources: Vec<&str> = summaries.iter().map(|s| s.header.tool.as_str()).collect();
    RunHeader {
        tool: format!(
            "loadlab {} encode (from {})",
            env!("CARGO_PKG_VERSION"),
            sources
                .iter()
                .map(|tool| if tool.is_empty() { "an import" } else { tool })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        start_unix_ns: binary_start.unwrap_or(first.intended_unix_ns),
        attacks: tables
            .attacks
            .iter()
            .map(|merged| declared_attack(summaries, merged))
            .collect(),
        targets: tables.targets.clone(),
        // One run's seed survives re-encoding; merged runs had several.
        seed: match summaries {
            [one] => one.header.seed,
            _ => None,
        },
        shard: None,
        precision_ns: None,
        // Exemplars are not re-encoded yet, so the output does not claim a trace.
        trace: None,
    }
}

/// An attack as its input declared it. The merged tables can hold a placeholder (model
/// `open`) for an import whose attacks were not known when it was opened; the import's
/// own entry says `unknown`, which keeps imported runs from claiming measured facts.
fn declared_attack(summaries: &[SourceSummary], merged: &AttackInfo) -> AttackInfo {
    summaries
        .iter()
        .flat_map(|summary| &summary.header.attacks)
        .find(|declared| declared.name == merged.name)
        .unwrap_or(merged)
        .clone()
}

/// The inputs' end blocks as one: counts per attack summed by name, CPU summed, the
/// largest peak RSS, the latest end, the first reason that is not `completed`.
fn merged_end(summaries: &[SourceSummary], tables: &RunTables) -> Option<RunEnd> {
    let ends: Vec<(&SourceSummary, &RunEnd)> = summaries
        .iter()
        .filter_map(|s| s.end.as_ref().map(|end| (s, end)))
        .collect();
    if ends.is_empty() {
        return None;
    }
    let mut merged = RunEnd {
        attacks: vec![AttackEnd::default(); tables.attacks.len()],
        ..RunEnd::default()
    };
    let mut details = Vec::new();
    for (summary, end) in ends {
        merged.at_unix_ns = merged.at_unix_ns.max(end.at_unix_ns);
        merged.cpu_ns += end.cpu_ns;
        merged.peak_rss_bytes = merged.peak_rss_bytes.max(end.peak_rss_bytes);
        if merged.reason == StopReason::Completed {
            merged.reason = end.reason;
        }
        if !end.detail.is_empty() {
            details.push(end.detail.clone());
        }
        // Each replay's log counts, on the merged attack ids (a reader sums entries of
        // one attack: the shards of a replay each read part of its log).
        for replay in &end.replays {
            let name = summary.header.attacks.get(usize::from(replay.attack));
            let id = name.and_then(|info| tables.attacks.iter().position(|a| a.name == info.name));
            if let Some(id) = id.and_then(|id| u16::try_from(id).ok()) {
                merged.replays.push(ReplayEnd {
                    attack: id,
                    ..replay.clone()
                });
            }
        }
        for (info, attack_end) in summary.header.attacks.iter().zip(&end.attacks) {
            if let Some(id) = tables.attacks.iter().position(|a| a.name == info.name) {
                let slot = &mut merged.attacks[id];
                slot.asked += attack_end.asked;
                slot.sent += attack_end.sent;
                slot.unsent += attack_end.unsent;
                slot.asked_span_ns = slot.asked_span_ns.max(attack_end.asked_span_ns);
            }
        }
    }
    merged.detail = details.join("; ");
    Some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_formats() {
        let rows: &[(&str, Result<EncodeFormat, &str>)] = &[
            ("json", Ok(EncodeFormat::Json)),
            ("csv", Ok(EncodeFormat::Csv)),
            ("record", Ok(EncodeFormat::Record)),
            ("gob", Err("vegeta encode -to gob")),
            ("xml", Err("unknown format \"xml\"")),
        ];
        for (text, want) in rows {
            match (text.parse::<EncodeFormat>(), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want),
                (Err(err), Err(want)) => assert!(err.contains(want), "{err}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }
}
