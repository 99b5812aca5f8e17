//! [`RecordSource`]: the one interface every reader consumes, whatever an input is
//! (a record file, JSON lines, CSV), and what it says besides records
//! ([`SourceSummary`], [`TornTail`]). `input.rs` opens an input and picks its reader.

use crate::RecordError;
use crate::connections::Connection;
use crate::logged::Logged;
use crate::meta::{GeneratorStats, RunEnd, RunHeader, RunTables};
use crate::record::Record;
use crate::resource_samples::{SampleBatch, SampleSummary};

/// The formats an input can be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// loadlab's record file.
    Binary,
    /// One JSON object per line: vegeta's `encode -to json` or ours (a superset).
    Json,
    /// vegeta's headerless CSV (6, 11 or 12 columns).
    VegetaCsv,
    /// loadlab's CSV: a header row, vegeta's 12 columns, then ours.
    LoadlabCsv,
}

/// A stream of records with the dictionaries they index into.
pub trait RecordSource {
    /// The dictionaries as read so far (they only grow).
    fn tables(&self) -> &RunTables;
    /// What the input said about itself so far.
    fn summary(&self) -> &SourceSummary;
    /// Every request sent before this time has been returned already; `None` if the
    /// input cannot promise anything until it ends.
    fn watermark(&self) -> Option<u64>;
    /// Replaces `out` with the next records; `Ok(false)` once the input is exhausted.
    fn next_batch(&mut self, out: &mut Vec<Record>) -> Result<bool, RecordError>;
    /// Appends the resource sample batches read since the last call (ids index
    /// `summary().samples.tables`). Only record files hold samples; a consumer that
    /// wants them calls this after every `next_batch`.
    fn drain_samples(&mut self, out: &mut Vec<SampleBatch>) {
        let _ = out;
    }
    /// Appends the logged originals of a replay (`attack -replay`) read by the last
    /// `next_batch` (they follow their records, so often a batch later). Only record
    /// files hold them; the next `next_batch` drops those not drained, so a consumer
    /// that wants them calls this after every `next_batch`, and one that does not
    /// holds no more than a batch's worth.
    fn drain_logged(&mut self, out: &mut Vec<Logged>) {
        let _ = out;
    }
    /// Appends the connection figures (`ws` and `sse` steps) read by the last
    /// `next_batch`, on the same terms as [`RecordSource::drain_logged`].
    fn drain_connections(&mut self, out: &mut Vec<Connection>) {
        let _ = out;
    }
}

/// Everything an input says besides records.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceSummary {
    /// The path as given (`stdin` for `-`), for messages.
    pub name: String,
    /// How the input was written.
    pub format: InputFormat,
    /// The run's header (empty for imports, which have none).
    pub header: RunHeader,
    /// The generator's statistics read so far, about one a second.
    pub stats: Vec<GeneratorStats>,
    /// The end block, when the run ended in an orderly way and it was read.
    pub end: Option<RunEnd>,
    /// Set when the input stopped at a cut or damaged block.
    pub torn: Option<TornTail>,
    /// Records read so far.
    pub records: u64,
    /// Resource samples: tables and counts (the batches stream through
    /// [`RecordSource::drain_samples`]).
    pub samples: SampleSummary,
    /// A replay's logged originals read so far (they stream through
    /// [`RecordSource::drain_logged`]).
    pub logged: u64,
}

impl SourceSummary {
    pub(crate) fn new(name: &str, format: InputFormat) -> SourceSummary {
        SourceSummary {
            name: name.to_owned(),
            format,
            header: RunHeader::default(),
            stats: Vec::new(),
            end: None,
            torn: None,
            records: 0,
            samples: SampleSummary::default(),
            logged: 0,
        }
    }
}

/// Where and why a record file stopped early. Everything before `offset` was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Byte offset where the damage starts.
    pub offset: u64,
    /// Bytes from there to the end of the input, not read.
    pub skipped_bytes: u64,
    /// What was wrong there (a bad checksum, a cut block...).
    pub reason: String,
}
