//! Opening inputs: [`open_input`] sniffs the format (record file, JSON lines, CSV) and
//! returns a [`RecordSource`], the one interface every reader consumes.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::RecordError;
use crate::codec_csv::CsvSource;
use crate::codec_json::JsonSource;
use crate::format::MAGIC;
use crate::reader::BinaryReader;
use crate::source::{InputFormat, RecordSource};

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
        InputFormat::Json => Box::new(JsonSource::open(input, name)),
        InputFormat::VegetaCsv | InputFormat::LoadlabCsv => {
            Box::new(CsvSource::open(input, name, format)?)
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

/// Every record of `text` (read as `name`) and the tables they index: what the codecs'
/// tests compare.
#[cfg(test)]
pub(crate) fn read_text(
    text: &str,
    name: &str,
) -> Result<(Vec<crate::Record>, crate::RunTables), RecordError> {
    let mut source = open_reader(Box::new(std::io::Cursor::new(text.to_owned())), name)?;
    let mut all = Vec::new();
    let mut batch = Vec::new();
    while source.next_batch(&mut batch)? {
        all.extend_from_slice(&batch);
    }
    Ok((all, source.tables().clone()))
}
