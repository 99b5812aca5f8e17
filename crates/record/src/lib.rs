//! The record file: the one contract between `attack` and every reader
//! (`report`, `plot`, `encode` and `compare`). Only this crate knows the bytes on disk;
//! `docs/RECORD_FORMAT.md` specifies them.
//!
//! - [`Record`]: one request's outcome, plain data (times in unix nanoseconds), with the
//!   [`Protocol`] it went over.
//! - [`RunHeader`] (with [`ShardInfo`] for one shard of a run), [`AttackInfo`], [`TargetInfo`], [`ErrorEntry`], [`GeneratorStats`],
//!   [`RunEnd`]: what a run says about itself besides its records.
//! - [`RecordWriter`]: streams records to any `Write` in checksummed, compressed blocks,
//!   so a crash loses at most the block being built.
//! - [`open_input`] / [`RecordSource`]: read a record file, or a vegeta or loadlab JSON/CSV
//!   export, from a file or stdin; [`Inputs`] merges many of them on one set of tables,
//!   optionally in send-time order ([`Sorted`]).
//! - [`RecordStream`]: what commands read through: [`Inputs`] on a reader thread, in
//!   input or send-time order ([`ReadOrder`]), records and resource samples in recycled
//!   batches.
//! - [`JsonEncoder`] / [`CsvEncoder`]: the `encode` command's outputs.
//! - [`SampleFrame`], [`SampleBatch`], [`SampleTables`]: resource samples of the system
//!   under test (`loadlab monitor`), stored in optional blocks beside the records and
//!   streamed to readers through [`RecordSource::drain_samples`] / [`Inputs::drain_samples`];
//!   [`ResourceSeries`] names the series loadlab's own samplers write.
//! - [`check_shards`]: the shards of one run (`attack -shard`) merge; others are refused.
//! - [`Logged`], [`ReplayInfo`], [`ReplayEnd`]: a replay's originals (what its access
//!   log said about each request), stored in optional blocks beside the records
//!   ([`RecordWriter::write_logged`]) and streamed through
//!   [`RecordSource::drain_logged`] / [`Inputs::drain_logged`] /
//!   [`RecordStream::take_logged`].
//! - [`Connection`]: one WebSocket or event-stream connection's figures (messages,
//!   bytes, [`MessageLatency`], its [`Close`]), in optional blocks beside the records
//!   ([`RecordWriter::write_connections`]), streamed like a replay's originals
//!   ([`RecordSource::drain_connections`], [`RecordStream::take_connections`]).
//! - [`Exemplar`]: a traced request worth looking at (`attack -trace`), with its trace
//!   ids, in the end block ([`RunEnd::exemplars`]); [`Inputs::exemplars`] and
//!   [`RecordStream::exemplars`] give them with merged ids.
//! - [`format_timestamp`]: unix nanoseconds as RFC 3339, as vegeta prints times.
//!
//! Errors are [`RecordError`]; each names the input (file, byte offset or line, field).

#![warn(missing_docs)]

mod codec_csv;
mod codec_json;
mod columns;
mod connections;
mod exemplar;
mod format;
mod import;
mod input;
mod logged;
mod logged_block;
mod merge;
mod meta;
mod reader;
mod record;
mod resource_samples;
mod series_names;
mod shards;
mod source;
mod stream;
mod time_format;
mod writer;

#[cfg(test)]
mod proptests;

pub use codec_csv::CsvEncoder;
pub use codec_json::JsonEncoder;
pub use connections::{
    Close, ClosedBy, Connection, EVENT_TYPE_BYTES, EVENT_TYPES, EntryKind, MessageLatency,
    OTHER_EVENTS, StreamStats, merge_event_types,
};
pub use exemplar::{Exemplar, ExemplarKind, TraceInfo};
pub use format::{FORMAT_VERSION, MAGIC};
pub use input::{open_input, open_reader};
pub use logged::{Logged, ReplayEnd, ReplayInfo};
pub use merge::{Inputs, Sorted};
pub use meta::{
    AttackEnd, AttackInfo, AttackStats, ErrorEntry, ErrorKind, GeneratorStats, LoadModel, RunEnd,
    RunHeader, RunTables, ShardInfo, StopReason, TargetInfo,
};
pub use reader::BinaryReader;
pub use record::{GrpcStatus, Protocol, Record};
pub use resource_samples::{
    MAX_PENDING_SAMPLE_BATCHES, MAX_REASON_BYTES, SampleBatch, SampleFrame, SampleGap,
    SampleSummary, SampleTables, SampleValue, SamplerInfo, SamplerKind, SeriesInfo, SeriesKind,
};
pub use series_names::{PROM_LIMIT_SUFFIX, ResourceSeries};
pub use shards::check_shards;
pub use source::{InputFormat, RecordSource, SourceSummary, TornTail};
pub use stream::{ReadOrder, RecordStream, SAMPLE_BATCHES_PER_MESSAGE};
pub use time_format::format_timestamp;
pub use writer::{Compression, RecordWriter};

/// Why a record input could not be read or written. Messages name the input.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The input holds nothing at all.
    #[error("{source_name}: input is empty: no records (did the attack fail before it started?)")]
    Empty {
        /// The input's name (path, or `stdin`).
        source_name: String,
    },
    /// The input is none of the formats we read.
    #[error("{source_name}: not a record file, vegeta/loadlab JSON or CSV: {reason}")]
    UnknownFormat {
        /// The input's name (path, or `stdin`).
        source_name: String,
        /// What it looks like instead.
        reason: String,
    },
    /// A record file written by a newer loadlab.
    #[error(
        "{source_name}: record format version {found} is newer than this loadlab reads \
         (up to {supported}); upgrade loadlab"
    )]
    UnsupportedVersion {
        /// The input's name (path, or `stdin`).
        source_name: String,
        /// The file's format version.
        found: u16,
        /// The newest version this build reads ([`FORMAT_VERSION`]).
        supported: u16,
    },
    /// A record file damaged where it cannot be read past.
    #[error("{source_name}: byte {offset}: {reason}")]
    Corrupt {
        /// The input's name (path, or `stdin`).
        source_name: String,
        /// Byte offset of the damage.
        offset: u64,
        /// What is wrong there.
        reason: String,
    },
    /// A JSON or CSV line that does not parse.
    #[error("{source_name}:{line}: field {field:?}: {reason}")]
    Parse {
        /// The input's name (path, or `stdin`).
        source_name: String,
        /// The line number, from 1.
        line: u64,
        /// The field at fault.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Reading the input failed.
    #[error("{source_name}")]
    Io {
        /// The input's name (path, or `stdin`).
        source_name: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Writing records to the output failed.
    #[error("writing records")]
    Write(#[source] std::io::Error),
    /// Inputs that are shards of different runs, or one shard twice (see
    /// [`check_shards`]).
    #[error("{0}")]
    Shards(String),
    /// The background reader of a [`RecordStream`] could not start or died.
    #[error("the input reader thread {0}")]
    ReaderThread(String),
}

impl RecordError {
    pub(crate) fn io(source_name: &str, source: std::io::Error) -> RecordError {
        RecordError::Io {
            source_name: source_name.to_owned(),
            source,
        }
    }

    /// The underlying I/O error, if any (a closed pipe is not a failure for our callers).
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            RecordError::Io { source, .. } | RecordError::Write(source) => Some(source),
            _ => None,
        }
    }
}
