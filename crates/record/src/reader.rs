//! [`BinaryReader`]: reads a record file block by block, stopping cleanly at a torn tail.

use std::collections::VecDeque;
use std::io::{self, Read};

use serde::Deserialize;

use crate::RecordError;
use crate::columns;
use crate::connections::{CONNECTIONS_BLOCK, Connection, ConnectionsBlock};
use crate::format::{
    BLOCK_HEAD_LEN, BlockKind, CODEC_RAW, CODEC_ZSTD, FORMAT_VERSION, MAGIC, MAX_PAYLOAD_LEN,
    MAX_RECORDS_PER_BLOCK, NO_WATERMARK, PREAMBLE_LEN, RECORDS_HEAD_LEN,
};
use crate::logged::Logged;
use crate::logged_block::{self, LOGGED_BLOCK, LOGGED_HEAD_LEN};
use crate::meta::{ErrorEntry, GeneratorStats, RunEnd, RunHeader, RunTables, TargetInfo};
use crate::record::Record;
use crate::resource_samples::{
    self, MAX_PENDING_SAMPLE_BATCHES, SAMPLES_BLOCK, SERIES_BLOCK, SampleBatch, SeriesBlock,
};
use crate::source::{InputFormat, RecordSource, SourceSummary, TornTail};

/// Reads loadlab's binary record format from any `Read` (a file or a pipe).
pub struct BinaryReader<R: Read> {
    input: R,
    summary: SourceSummary,
    tables: RunTables,
    /// The file's format version: which columns its records blocks hold.
    version: u16,
    /// Start of the next block to read.
    offset: u64,
    /// Bytes taken from the input so far.
    consumed: u64,
    watermark: Option<u64>,
    done: bool,
    payload: Vec<u8>,
    raw: Vec<u8>,
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
    /// Sample batches read but not yet drained.
    pending_samples: VecDeque<SampleBatch>,
    /// Logged originals read by the last `next_batch`; the next one drops them.
    pending_logged: Vec<Logged>,
    /// Connection figures read by the last `next_batch`; the next one drops them.
    pending_connections: Vec<Connection>,
    logged_scratch: Vec<Logged>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DictionaryBlock {
    first_target: usize,
    targets: Vec<TargetInfo>,
    first_error: usize,
    errors: Vec<ErrorEntry>,
}

/// Why a block could not be used; ends the stream as a torn tail.
struct Tear(String);

impl<R: Read> BinaryReader<R> {
    /// Reads the preamble and header block. Fails when the input is not a record file,
    /// is from a newer format, or is cut before its header is complete.
    pub fn open(mut input: R, source_name: &str) -> Result<Self, RecordError> {
        let corrupt = |offset: u64, reason: &str| RecordError::Corrupt {
            source_name: source_name.to_owned(),
            offset,
            reason: reason.to_owned(),
        };
        let mut preamble = [0u8; PREAMBLE_LEN];
        let got =
            read_full(&mut input, &mut preamble).map_err(|e| RecordError::io(source_name, e))?;
        if got == 0 {
            return Err(RecordError::Empty {
                source_name: source_name.to_owned(),
            });
        }
        if got >= MAGIC.len() && preamble[..MAGIC.len()] == MAGIC && got < PREAMBLE_LEN {
            return Err(corrupt(
                got as u64,
                "truncated in the header: the file ends inside its preamble",
            ));
        }
        if got < PREAMBLE_LEN || preamble[..8] != MAGIC {
            return Err(RecordError::UnknownFormat {
                source_name: source_name.to_owned(),
                reason: "does not start with the LLRECORD magic".to_owned(),
            });
        }
        let version = u16::from_le_bytes([preamble[8], preamble[9]]);
        if version == 0 || version > FORMAT_VERSION {
            return Err(RecordError::UnsupportedVersion {
                source_name: source_name.to_owned(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let mut reader = BinaryReader {
            input,
            summary: SourceSummary::new(source_name, InputFormat::Binary),
            tables: RunTables::default(),
            version,
            offset: PREAMBLE_LEN as u64,
            consumed: PREAMBLE_LEN as u64,
            watermark: None,
            done: false,
            payload: Vec::new(),
            raw: Vec::new(),
            decompressor: None,
            pending_samples: VecDeque::new(),
            pending_logged: Vec::new(),
            pending_connections: Vec::new(),
            logged_scratch: Vec::new(),
        };
        let kind = match reader.read_block() {
            Ok(Some(kind)) => kind,
            Ok(None) => return Err(corrupt(reader.offset, "file ends before its header block")),
            Err(Tear(reason)) => {
                return Err(corrupt(reader.offset, &format!("header block: {reason}")));
            }
        };
        if kind != BlockKind::Header {
            return Err(corrupt(reader.offset, "the first block is not a header"));
        }
        let header: RunHeader = serde_json::from_slice(&reader.payload)
            .map_err(|err| corrupt(reader.offset, &format!("header block: {err}")))?;
        reader.tables.attacks.clone_from(&header.attacks);
        reader.tables.targets.clone_from(&header.targets);
        reader.summary.header = header;
        reader.offset = reader.consumed;
        Ok(reader)
    }

    /// Reads the next block's payload into `self.payload`. `Ok(None)` is a clean end.
    fn read_block(&mut self) -> Result<Option<BlockKind>, Tear> {
        let mut head = [0u8; BLOCK_HEAD_LEN];
        let got = read_full(&mut self.input, &mut head).map_err(|e| Tear(e.to_string()))?;
        self.consumed += got as u64;
        if got == 0 {
            return Ok(None);
        }
        if got < BLOCK_HEAD_LEN {
            return Err(Tear("block header cut short".to_owned()));
        }
        let kind = BlockKind::from_code(head[0])
            .ok_or_else(|| Tear(format!("unknown block kind {}", head[0])))?;
        let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
        if len > MAX_PAYLOAD_LEN {
            return Err(Tear(format!("block length {len} is implausible")));
        }
        let crc = u32::from_le_bytes([head[5], head[6], head[7], head[8]]);
        self.payload.resize(len as usize, 0);
        let got = read_full(&mut self.input, &mut self.payload).map_err(|e| Tear(e.to_string()))?;
        self.consumed += got as u64;
        if got < len as usize {
            return Err(Tear(format!("block cut short: {got} of {len} bytes")));
        }
        if crc32fast::hash(&self.payload) != crc {
            return Err(Tear("checksum mismatch".to_owned()));
        }
        Ok(Some(kind))
    }

    /// Applies one non-record block; records are decoded by the caller.
    fn apply_meta(&mut self, kind: BlockKind) -> Result<(), Tear> {
        let json_err = |err: serde_json::Error| Tear(err.to_string());
        match kind {
            BlockKind::Dictionary => {
                let dict: DictionaryBlock =
                    serde_json::from_slice(&self.payload).map_err(json_err)?;
                if dict.first_target != self.tables.targets.len()
                    || dict.first_error != self.tables.errors.len()
                {
                    return Err(Tear("dictionary entries out of order".to_owned()));
                }
                self.tables.targets.extend(dict.targets);
                self.tables.errors.extend(dict.errors);
            }
            BlockKind::Stats => {
                let stats: GeneratorStats =
                    serde_json::from_slice(&self.payload).map_err(json_err)?;
                if let Some(streams) = &stats.streams {
                    streams
                        .latency
                        .check()
                        .map_err(|why| Tear(format!("stats block: streams: {why}")))?;
                }
                self.summary.stats.push(stats);
            }
            BlockKind::End => {
                let end: RunEnd = serde_json::from_slice(&self.payload).map_err(json_err)?;
                self.summary.end = Some(end);
            }
            BlockKind::Header => return Err(Tear("a second header block".to_owned())),
            BlockKind::Optional(SERIES_BLOCK) => {
                let block: SeriesBlock = serde_json::from_slice(&self.payload).map_err(json_err)?;
                self.summary
                    .samples
                    .tables
                    .extend_from(&block.into_frame())
                    .map_err(Tear)?;
            }
            BlockKind::Optional(SAMPLES_BLOCK) => self.apply_samples()?,
            BlockKind::Optional(LOGGED_BLOCK) => self.apply_logged()?,
            BlockKind::Optional(CONNECTIONS_BLOCK) => self.apply_connections()?,
            BlockKind::Records | BlockKind::Optional(_) => {}
        }
        Ok(())
    }

    fn apply_samples(&mut self) -> Result<(), Tear> {
        let batch = resource_samples::decode_batch(&self.payload).map_err(Tear)?;
        let summary = &mut self.summary.samples;
        summary.tables.check(&batch).map_err(Tear)?;
        summary.batches += 1;
        summary.values += batch.values.len() as u64;
        summary.gaps += batch.gaps.len() as u64;
        // A file of samples only (no attacks) holds no records, so any time is a true
        // watermark; the latest sample's lets a time-sorted merge read it in step with
        // the record files instead of whole, up front.
        if self.summary.header.attacks.is_empty() {
            self.watermark = Some(self.watermark.unwrap_or(0).max(batch.at_unix_ns));
        }
        if self.pending_samples.len() >= MAX_PENDING_SAMPLE_BATCHES {
            summary.dropped_batches += 1;
        } else {
            self.pending_samples.push_back(batch);
        }
        Ok(())
    }

    fn decode_records(&mut self, out: &mut Vec<Record>) -> Result<(), Tear> {
        let head = self
            .payload
            .get(..RECORDS_HEAD_LEN)
            .ok_or_else(|| Tear("records block too short".to_owned()))?;
        let codec = head[0];
        let count = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
        let raw_len = u32::from_le_bytes([head[5], head[6], head[7], head[8]]) as usize;
        let mut watermark_bytes = [0u8; 8];
        watermark_bytes.copy_from_slice(&head[9..17]);
        let watermark = u64::from_le_bytes(watermark_bytes);
        if count > MAX_RECORDS_PER_BLOCK || raw_len > MAX_PAYLOAD_LEN as usize {
            return Err(Tear(format!(
                "records block claims {count} records in {raw_len} bytes"
            )));
        }
        let raw = unpack(
            &self.payload[RECORDS_HEAD_LEN..],
            codec,
            raw_len,
            &mut self.decompressor,
            &mut self.raw,
        )
        .map_err(|reason| Tear(format!("records block: {reason}")))?;
        columns::decode(raw, count as usize, self.version, out)
            .map_err(|reason| Tear(format!("records block: {reason}")))?;
        self.check_ids(out)?;
        if watermark != NO_WATERMARK {
            self.watermark = Some(watermark);
        }
        Ok(())
    }

    /// Decodes a logged block onto the pending ones, checking its ids like records'.
    fn apply_logged(&mut self) -> Result<(), Tear> {
        let bad = |reason: String| Tear(format!("logged block: {reason}"));
        let head = self
            .payload
            .get(..LOGGED_HEAD_LEN)
            .ok_or_else(|| bad("too short".to_owned()))?;
        let codec = head[0];
        let count = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
        let raw_len = u32::from_le_bytes([head[5], head[6], head[7], head[8]]) as usize;
        if count > MAX_RECORDS_PER_BLOCK || raw_len > MAX_PAYLOAD_LEN as usize {
            return Err(bad(format!("claims {count} requests in {raw_len} bytes")));
        }
        let raw = unpack(
            &self.payload[LOGGED_HEAD_LEN..],
            codec,
            raw_len,
            &mut self.decompressor,
            &mut self.raw,
        )
        .map_err(bad)?;
        let logged = &mut self.logged_scratch;
        logged_block::decode(raw, count as usize, logged).map_err(bad)?;
        let (attacks, targets) = (self.tables.attacks.len(), self.tables.targets.len());
        if let Some(l) = logged
            .iter()
            .find(|l| usize::from(l.attack) >= attacks || l.target as usize >= targets)
        {
            return Err(bad(format!(
                "request seq {} names attack {} or target {} not in the dictionary",
                l.seq, l.attack, l.target
            )));
        }
        self.summary.logged += logged.len() as u64;
        self.pending_logged.append(logged);
        Ok(())
    }

    /// Reads a connections block onto the pending ones, checking its ids like records'.
    fn apply_connections(&mut self) -> Result<(), Tear> {
        let bad = |reason: String| Tear(format!("connections block: {reason}"));
        let block: ConnectionsBlock<Vec<Connection>> =
            serde_json::from_slice(&self.payload).map_err(|e| bad(e.to_string()))?;
        let (attacks, targets) = (self.tables.attacks.len(), self.tables.targets.len());
        for c in &block.connections {
            if usize::from(c.attack) >= attacks || c.target as usize >= targets {
                return Err(bad(format!(
                    "seq {} names attack {} or target {} not in the dictionary",
                    c.seq, c.attack, c.target
                )));
            }
            c.latency
                .check()
                .and_then(|()| c.round_trips.check())
                .map_err(|reason| bad(format!("seq {}: {reason}", c.seq)))?;
        }
        self.pending_connections.extend(block.connections);
        Ok(())
    }

    /// Every id must point into the dictionaries read so far. A file declaring no
    /// attack or no target (a monitor's) has no id for a record to name: unlike an
    /// import, it gets no placeholder in the merge.
    fn check_ids(&self, records: &[Record]) -> Result<(), Tear> {
        let (attacks, targets, errors) = (
            self.tables.attacks.len(),
            self.tables.targets.len(),
            self.tables.errors.len(),
        );
        match records.iter().find(|r| {
            usize::from(r.attack) >= attacks
                || r.target as usize >= targets
                || r.error as usize > errors
        }) {
            Some(r) => Err(Tear(format!(
                "record seq {} names attack {}, target {} or error {} not in the dictionary",
                r.seq, r.attack, r.target, r.error
            ))),
            None => Ok(()),
        }
    }

    fn tear(&mut self, reason: String) {
        // Count what follows so the user learns how much was lost, then stop.
        let rest = io::copy(&mut self.input, &mut io::sink()).unwrap_or(0);
        let skipped_bytes = self.consumed + rest - self.offset;
        self.summary.torn = Some(TornTail {
            offset: self.offset,
            skipped_bytes,
            reason,
        });
        self.done = true;
    }
}

impl<R: Read> RecordSource for BinaryReader<R> {
    fn tables(&self) -> &RunTables {
        &self.tables
    }

    fn summary(&self) -> &SourceSummary {
        &self.summary
    }

    fn watermark(&self) -> Option<u64> {
        self.watermark
    }

    fn next_batch(&mut self, out: &mut Vec<Record>) -> Result<bool, RecordError> {
        out.clear();
        // Undrained originals go: a reader that does not want them keeps no more
        // than a batch's worth.
        self.pending_logged.clear();
        self.pending_connections.clear();
        while !self.done {
            let kind = match self.read_block() {
                Ok(Some(kind)) => kind,
                Ok(None) => {
                    self.done = true;
                    break;
                }
                Err(Tear(reason)) => {
                    self.tear(reason);
                    break;
                }
            };
            let applied = match kind {
                BlockKind::Records => self.decode_records(out),
                other => self.apply_meta(other),
            };
            if let Err(Tear(reason)) = applied {
                out.clear();
                self.tear(reason);
                break;
            }
            self.offset = self.consumed;
            if kind == BlockKind::Records {
                self.summary.records += out.len() as u64;
                return Ok(true);
            }
            if kind == BlockKind::Optional(SAMPLES_BLOCK) {
                // An empty batch: the consumer drains samples as they come (a live
                // agent stream, a samples-only file) before reading on.
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn drain_samples(&mut self, out: &mut Vec<SampleBatch>) {
        out.extend(self.pending_samples.drain(..));
    }

    fn drain_logged(&mut self, out: &mut Vec<Logged>) {
        out.append(&mut self.pending_logged);
    }

    fn drain_connections(&mut self, out: &mut Vec<Connection>) {
        out.append(&mut self.pending_connections);
    }
}

/// A block's column bytes: `body` as stored, or decompressed into `raw`; checked
/// against the length its head claims.
fn unpack<'a>(
    body: &'a [u8],
    codec: u8,
    raw_len: usize,
    decompressor: &mut Option<zstd::bulk::Decompressor<'static>>,
    raw: &'a mut Vec<u8>,
) -> Result<&'a [u8], String> {
    let data: &[u8] = match codec {
        CODEC_RAW => body,
        CODEC_ZSTD => {
            let decompressor = match decompressor {
                Some(d) => d,
                None => {
                    decompressor.insert(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?)
                }
            };
            raw.clear();
            raw.reserve(raw_len);
            decompressor
                .decompress_to_buffer(body, raw)
                .map_err(|e| format!("zstd: {e}"))?;
            raw
        }
        other => return Err(format!("unknown codec {other}")),
    };
    if data.len() != raw_len {
        return Err(format!(
            "data decompresses to {} bytes, its head says {raw_len}",
            data.len()
        ));
    }
    Ok(data)
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
pub(crate) fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(filled)
}
