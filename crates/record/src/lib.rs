//! The record file: the one contract between `attack` and every reader
//! (`report`, `plot`, `encode`, `compare`). Only this crate knows the bytes on disk;
//! `docs/RECORD_FORMAT.md` specifies them.
//!
//! - [`Record`]: one request's outcome, plain data (times in unix nanoseconds).
//! - [`RunHeader`], [`AttackInfo`], [`TargetInfo`], [`ErrorEntry`], [`GeneratorStats`],
//!   [`RunEnd`]: what a run says about itself besides its records.
//! - [`RecordWriter`]: streams records to any `Write` in checksummed, compressed blocks,
//!   so a crash loses at most the block being built.
//! - [`open_input`] / [`RecordSource`]: read a record file, or a vegeta or loadlab JSON/CSV
//!   export, from a file or stdin; [`Inputs`] merges many of them on one set of tables,
//!   optionally in send-time order.
//! - [`JsonEncoder`] / [`CsvEncoder`]: the `encode` command's outputs.
//! - [`SampleFrame`], [`SampleBatch`], [`SampleTables`]: resource samples of the system
//!   under test (`loadlab monitor`), stored in optional blocks beside the records and
//!   streamed to readers through [`RecordSource::drain_samples`] / [`Inputs::drain_samples`].
//!
//! Errors are [`RecordError`]; each names the input (file, byte offset or line, field).

mod codec_csv;
mod codec_json;
mod columns;
mod format;
mod import;
mod input;
mod merge;
mod meta;
mod reader;
mod record;
mod resource_samples;
mod series_names;
mod stream;
mod time_format;
mod writer;

pub use codec_csv::CsvEncoder;
pub use codec_json::JsonEncoder;
pub use format::{FORMAT_VERSION, MAGIC};
pub use input::{InputFormat, RecordSource, SourceSummary, TornTail, open_input, open_reader};
pub use merge::{Inputs, Sorted};
pub use meta::{
    AttackEnd, AttackInfo, AttackStats, ErrorEntry, ErrorKind, GeneratorStats, LoadModel, RunEnd,
    RunHeader, RunTables, StopReason, TargetInfo,
};
pub use reader::BinaryReader;
pub use record::Record;
pub use resource_samples::{
    MAX_PENDING_SAMPLE_BATCHES, MAX_REASON_BYTES, SampleBatch, SampleFrame, SampleGap,
    SampleSummary, SampleTables, SampleValue, SamplerInfo, SeriesInfo, SeriesKind,
};
pub use series_names::ResourceSeries;
pub use stream::{ReadOrder, RecordStream, SAMPLE_BATCHES_PER_MESSAGE};
pub use time_format::format_timestamp;
pub use writer::{Compression, RecordWriter};

/// Why a record input could not be read or written. Messages name the input.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{source_name}: input is empty: no records (did the attack fail before it started?)")]
    Empty { source_name: String },
    #[error("{source_name}: not a record file, vegeta/loadlab JSON or CSV: {reason}")]
    UnknownFormat { source_name: String, reason: String },
    #[error(
        "{source_name}: record format version {found} is newer than this loadlab reads \
         (up to {supported}); upgrade loadlab"
    )]
    UnsupportedVersion {
        source_name: String,
        found: u16,
        supported: u16,
    },
    #[error("{source_name}: byte {offset}: {reason}")]
    Corrupt {
        source_name: String,
        offset: u64,
        reason: String,
    },
    #[error("{source_name}:{line}: field {field:?}: {reason}")]
    Parse {
        source_name: String,
        line: u64,
        field: String,
        reason: String,
    },
    #[error("{source_name}")]
    Io {
        source_name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("writing records")]
    Write(#[source] std::io::Error),
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
