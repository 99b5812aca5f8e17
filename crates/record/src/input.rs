//! Opening inputs: [`open_input`] sniffs the format (record file, JSON lines, CSV) and
//! returns a [`RecordSource`], the one interface every reader consumes.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::RecordError;
use crate::codec_csv::CsvSource;
use crate::codec_json::JsonSource;
use crate::format::MAGIC;
use crate::meta::{GeneratorStats, RunEnd, RunHeader, RunTables};
use crate::reader::BinaryReader;
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

/// Opens a path (`-` for stdin) and sniffs its format.
pub fn open_input(path: &str) -> Result<Box<dyn RecordSource>, RecordError> {
    if path == "-" {
        return open_reader(Box::new(std::io::stdin().lock()), "stdin");
    }
    let file = File::open(Path::new(path)).map_err(|err| RecordError::io(path, err))?;
    open_reader(Box::new(file), path)
}

/// Sniffs the format of `input` and returns a source over it.
pub fn open_reader(input: Box<dyn Read>, name: &str) -> Result<Box<dyn RecordSource>, RecordError> {
    let mut input = BufReader::with_capacity(1 << 20, input);
    let format = sniff(&mut input, name)?;
    Ok(match format {
        InputFormat::Binary => Box::new(BinaryReader::open(input, name)?),
        InputFormat::Json => Box::new(JsonSource::new(input, name)),
        InputFormat::VegetaCsv | InputFormat::LoadlabCsv => {
            Box::new(CsvSource::new(input, name, format)?)
        }
    })
}

fn sniff(input: &mut BufReader<Box<dyn Read>>, name: &str) -> Result<InputFormat, RecordError> {
    let peek = loop {
        match input.fill_buf() {
            Ok(bytes) => break bytes,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(RecordError::io(name, err)),
        }
    };
    if peek.is_empty() {
        return Err(RecordError::Empty {
            source_name: name.to_owned(),
        });
    }
    if peek.starts_with(&MAGIC[..peek.len().min(MAGIC.len())]) {
        return Ok(InputFormat::Binary);
    }
    let text_start = peek
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(peek.len());
    let text = &peek[text_start..];
    match text.first() {
        Some(b'{') => Ok(InputFormat::Json),
        Some(b'0'..=b'9') => Ok(InputFormat::VegetaCsv),
        _ if text.starts_with(b"timestamp,") => Ok(InputFormat::LoadlabCsv),
        _ => Err(RecordError::UnknownFormat {
            source_name: name.to_owned(),
            reason: if peek
                .iter()
                .take(64)
                .any(|b| !b.is_ascii() || (b.is_ascii_control() && !b.is_ascii_whitespace()))
            {
                "binary data without the LLRECORD magic (vegeta's gob results can be \
                 converted with `vegeta encode -to json`)"
                    .to_owned()
            } else {
                format!(
                    "first line starts with {:?}",
                    String::from_utf8_lossy(&text[..text.len().min(24)])
                )
            },
        }),
    }
}
