//! [`RecordWriter`]: streams a run to any `Write` in checksummed blocks.

use std::io::Write;

use serde::Serialize;

use crate::RecordError;
use crate::columns;
use crate::connections::{CONNECTIONS_BLOCK, Connection, ConnectionsBlock};
use crate::format::{
    self, BlockKind, CODEC_RAW, CODEC_ZSTD, MAX_RECORDS_PER_BLOCK, NO_WATERMARK, RECORDS_HEAD_LEN,
};
use crate::logged::Logged;
use crate::logged_block::{self, LOGGED_BLOCK, LOGGED_HEAD_LEN};
use crate::meta::{ErrorEntry, GeneratorStats, RunEnd, RunHeader, TargetInfo};
use crate::record::Record;
use crate::resource_samples::{self, SAMPLES_BLOCK, SERIES_BLOCK, SampleFrame, SeriesBlockRef};

/// How record blocks are compressed. `Raw` exists so the format contract test is
/// independent of the zstd library's exact output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Blocks stored as they are: fastest, largest.
    Raw,
    /// Blocks compressed with zstd at `level` (1 to 22; 3 is a good default).
    Zstd {
        /// The zstd level.
        level: i32,
    },
}

/// Writes a run: the header first, then dictionary, record and statistics blocks in
/// any order (a dictionary entry always before the records that use it), then the end.
///
/// Records are buffered in memory until [`RecordWriter::flush_records`]; the caller
/// decides the cadence (the engine flushes about four times a second), which bounds
/// what a crash can lose.
pub struct RecordWriter<W: Write> {
    out: W,
    compressor: Option<zstd::bulk::Compressor<'static>>,
    pending: Vec<Record>,
    raw: Vec<u8>,
    payload: Vec<u8>,
    block: Vec<u8>,
    /// Attacks in the header: the ids logged blocks may name.
    attacks: usize,
    targets_written: usize,
    errors_written: usize,
    /// Samplers and series written so far (series blocks are append-only).
    samplers_written: usize,
    series_written: usize,
}

#[derive(Serialize)]
struct DictionaryBlock<'a> {
    first_target: usize,
    targets: &'a [TargetInfo],
    first_error: usize,
    errors: &'a [ErrorEntry],
}

impl<W: Write> RecordWriter<W> {
    /// Writes the preamble and header. Targets in the header are the first dictionary
    /// entries; later ones are appended with [`RecordWriter::add_targets`].
    pub fn new(
        mut out: W,
        header: &RunHeader,
        compression: Compression,
    ) -> Result<Self, RecordError> {
        out.write_all(&format::preamble())
            .map_err(RecordError::Write)?;
        let compressor = match compression {
            Compression::Raw => None,
            Compression::Zstd { level } => {
                Some(zstd::bulk::Compressor::new(level).map_err(RecordError::Write)?)
            }
        };
        let mut writer = RecordWriter {
            out,
            compressor,
            pending: Vec::new(),
            raw: Vec::new(),
            payload: Vec::new(),
            block: Vec::new(),
            attacks: header.attacks.len(),
            targets_written: header.targets.len(),
            errors_written: 0,
            samplers_written: 0,
            series_written: 0,
        };
        writer.write_json(BlockKind::Header, header)?;
        Ok(writer)
    }

    /// Buffers one record.
    pub fn push(&mut self, record: &Record) {
        self.pending.push(*record);
    }

    /// Buffers many records.
    pub fn extend(&mut self, records: &[Record]) {
        self.pending.extend_from_slice(records);
    }

    /// Records buffered since the last flush.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Targets in the dictionary so far (the header's included).
    pub fn targets_written(&self) -> usize {
        self.targets_written
    }

    /// Error entries in the dictionary so far.
    pub fn errors_written(&self) -> usize {
        self.errors_written
    }

    /// Samplers written so far (in series blocks).
    pub fn samplers_written(&self) -> usize {
        self.samplers_written
    }

    /// Series written so far (in series blocks).
    pub fn series_written(&self) -> usize {
        self.series_written
    }

    /// Appends targets to the dictionary; `first_id` must be the number already written.
    pub fn add_targets(
        &mut self,
        first_id: usize,
        targets: &[TargetInfo],
    ) -> Result<(), RecordError> {
        self.add_dictionary(first_id, targets, self.errors_written, &[])
    }

    /// Appends error entries; ids are 1-based, so the first new id is `errors_written + 1`.
    pub fn add_errors(
        &mut self,
        first_index: usize,
        errors: &[ErrorEntry],
    ) -> Result<(), RecordError> {
        self.add_dictionary(self.targets_written, &[], first_index, errors)
    }

    fn add_dictionary(
        &mut self,
        first_target: usize,
        targets: &[TargetInfo],
        first_error: usize,
        errors: &[ErrorEntry],
    ) -> Result<(), RecordError> {
        if targets.is_empty() && errors.is_empty() {
            return Ok(());
        }
        if first_target != self.targets_written || first_error != self.errors_written {
            return Err(RecordError::Write(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "dictionary entries must be appended in order",
            )));
        }
        let block = DictionaryBlock {
            first_target,
            targets,
            first_error,
            errors,
        };
        self.write_json(BlockKind::Dictionary, &block)?;
        self.targets_written += targets.len();
        self.errors_written += errors.len();
        Ok(())
    }

    /// Writes the buffered records as blocks. `watermark_sent_ns` promises that every
    /// request sent before it is in this block or an earlier one; readers use it to
    /// sort by send time without holding the whole run.
    pub fn flush_records(&mut self, watermark_sent_ns: Option<u64>) -> Result<(), RecordError> {
        if self.pending.is_empty() {
            // An empty block still carries the watermark, so a live `report -every` can
            // close its intervals during a quiet stretch.
            return match watermark_sent_ns {
                Some(watermark) => self.write_records(&[], Some(watermark)),
                None => Ok(()),
            };
        }
        let pending = std::mem::take(&mut self.pending);
        let result = pending
            .chunks(MAX_RECORDS_PER_BLOCK as usize)
            .try_for_each(|chunk| self.write_records(chunk, watermark_sent_ns));
        self.pending = pending;
        self.pending.clear();
        result
    }

    fn write_records(
        &mut self,
        records: &[Record],
        watermark: Option<u64>,
    ) -> Result<(), RecordError> {
        columns::encode(records, &mut self.raw);
        self.payload.clear();
        self.payload.push(self.codec());
        self.payload
            .extend_from_slice(&(records.len() as u32).to_le_bytes());
        self.payload
            .extend_from_slice(&(self.raw.len() as u32).to_le_bytes());
        self.payload
            .extend_from_slice(&watermark.unwrap_or(NO_WATERMARK).to_le_bytes());
        debug_assert_eq!(self.payload.len(), RECORDS_HEAD_LEN);
        self.append_data()?;
        format::write_block(
            &mut self.out,
            BlockKind::Records,
            &self.payload,
            &mut self.block,
        )
        .map_err(RecordError::Write)
    }

    fn codec(&self) -> u8 {
        if self.compressor.is_some() {
            CODEC_ZSTD
        } else {
            CODEC_RAW
        }
    }

    /// Appends the column bytes in `self.raw` to the payload, compressed or not.
    fn append_data(&mut self) -> Result<(), RecordError> {
        match &mut self.compressor {
            None => self.payload.extend_from_slice(&self.raw),
            Some(compressor) => {
                let bound = zstd::zstd_safe::compress_bound(self.raw.len());
                self.payload.reserve(bound);
                let start = self.payload.len();
                self.payload.resize(start + bound, 0);
                let written = compressor
                    .compress_to_buffer(&self.raw, &mut self.payload[start..])
                    .map_err(RecordError::Write)?;
                self.payload.truncate(start + written);
            }
        }
        Ok(())
    }

    /// Writes what a replay's logs said about requests (`attack -replay`): one
    /// optional `logged` block (kind 0x42) per call, several above 1,048,576 entries,
    /// compressed like records. Every attack and target id must be written already
    /// (call it after [`RecordWriter::flush_records`] of their records).
    pub fn write_logged(&mut self, logged: &[Logged]) -> Result<(), RecordError> {
        if let Some(bad) = logged.iter().find(|l| {
            usize::from(l.attack) >= self.attacks || l.target as usize >= self.targets_written
        }) {
            return Err(RecordError::Write(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "logged: request seq {} names attack {} or target {}, but {} attacks \
                     and {} targets were written",
                    bad.seq, bad.attack, bad.target, self.attacks, self.targets_written
                ),
            )));
        }
        logged
            .chunks(MAX_RECORDS_PER_BLOCK as usize)
            .try_for_each(|chunk| self.write_logged_block(chunk))
    }

    fn write_logged_block(&mut self, logged: &[Logged]) -> Result<(), RecordError> {
        logged_block::encode(logged, &mut self.raw);
        self.payload.clear();
        self.payload.push(self.codec());
        self.payload
            .extend_from_slice(&(logged.len() as u32).to_le_bytes());
        self.payload
            .extend_from_slice(&(self.raw.len() as u32).to_le_bytes());
        debug_assert_eq!(self.payload.len(), LOGGED_HEAD_LEN);
        self.append_data()?;
        format::write_block(
            &mut self.out,
            BlockKind::Optional(LOGGED_BLOCK),
            &self.payload,
            &mut self.block,
        )
        .map_err(RecordError::Write)
    }

    /// Writes the figures of connections that closed (`ws` and `sse` steps): one
    /// optional `connections` block (kind 0x43) of JSON per call. Every attack and
    /// target id must be written already, as for [`RecordWriter::write_logged`].
    pub fn write_connections(&mut self, connections: &[Connection]) -> Result<(), RecordError> {
        if let Some(bad) = connections.iter().find(|c| {
            usize::from(c.attack) >= self.attacks || c.target as usize >= self.targets_written
        }) {
            return Err(RecordError::Write(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "connections: seq {} names attack {} or target {}, but {} attacks \
                     and {} targets were written",
                    bad.seq, bad.attack, bad.target, self.attacks, self.targets_written
                ),
            )));
        }
        // A JSON block stays well under the 64 MiB payload limit at this many.
        connections.chunks(100_000).try_for_each(|chunk| {
            let block = ConnectionsBlock { connections: chunk };
            self.write_json(BlockKind::Optional(CONNECTIONS_BLOCK), &block)
        })
    }

    /// Writes a generator statistics sample.
    pub fn write_stats(&mut self, stats: &GeneratorStats) -> Result<(), RecordError> {
        self.write_json(BlockKind::Stats, stats)
    }

    /// Writes a frame of resource samples: a series block when it brings new samplers
    /// or series (they must continue the ones written), then a samples block unless
    /// the batch is empty. Samples do not wait for [`RecordWriter::flush_records`].
    pub fn write_samples(&mut self, frame: &SampleFrame) -> Result<(), RecordError> {
        let invalid = |reason: String| {
            RecordError::Write(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                reason,
            ))
        };
        if frame.first_sampler as usize != self.samplers_written
            || frame.first_series as usize != self.series_written
        {
            return Err(invalid(format!(
                "samples: frame starts at sampler {} and series {}, but {} and {} were written",
                frame.first_sampler, frame.first_series, self.samplers_written, self.series_written
            )));
        }
        let (samplers, series) = (
            self.samplers_written + frame.samplers.len(),
            self.series_written + frame.series.len(),
        );
        let batch = &frame.batch;
        let bad_series = frame.series.iter().any(|s| s.sampler as usize >= samplers)
            || batch.values.iter().any(|v| v.series as usize >= series)
            || batch.gaps.iter().any(|g| {
                g.sampler as usize >= samplers || g.series.is_some_and(|s| s as usize >= series)
            });
        if bad_series {
            return Err(invalid(
                "samples: a series, value or gap names an undefined id".to_owned(),
            ));
        }
        if !frame.samplers.is_empty() || !frame.series.is_empty() {
            let block = SeriesBlockRef {
                first_sampler: frame.first_sampler,
                samplers: &frame.samplers,
                first_series: frame.first_series,
                series: &frame.series,
            };
            self.write_json(BlockKind::Optional(SERIES_BLOCK), &block)?;
            (self.samplers_written, self.series_written) = (samplers, series);
        }
        if batch.values.is_empty() && batch.gaps.is_empty() {
            return Ok(());
        }
        resource_samples::encode_batch(batch, &mut self.payload);
        format::write_block(
            &mut self.out,
            BlockKind::Optional(SAMPLES_BLOCK),
            &self.payload,
            &mut self.block,
        )
        .map_err(RecordError::Write)
    }

    /// Flushes what is buffered, writes the end block and returns the output.
    pub fn finish(mut self, end: &RunEnd) -> Result<W, RecordError> {
        self.flush_records(None)?;
        self.write_json(BlockKind::End, end)?;
        Ok(self.out)
    }

    /// Flushes what is buffered and returns the output without an end block (for
    /// conversions of inputs that had none).
    pub fn close(mut self) -> Result<W, RecordError> {
        self.flush_records(None)?;
        Ok(self.out)
    }

    fn write_json(&mut self, kind: BlockKind, value: &impl Serialize) -> Result<(), RecordError> {
        self.payload.clear();
        serde_json::to_writer(&mut self.payload, value)
            .map_err(|err| RecordError::Write(std::io::Error::other(err)))?;
        format::write_block(&mut self.out, kind, &self.payload, &mut self.block)
            .map_err(RecordError::Write)
    }
}
