//! One log's bytes: [`Input`] opens a file or stdin (through gzip when it starts
//! with gzip's magic) and peeks at its first lines so the caller can choose a format;
//! [`LineReader`] then reads it line by line into one reused, bounded buffer, so a
//! 10-million-line log never sits in memory.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::WorkloadError;

/// Longer lines are bad lines: no format has a line this long, and the buffer that
/// holds one line must stay bounded.
pub(super) const MAX_LINE_BYTES: usize = 1 << 20;
/// What is read ahead for the caller's format sniffing.
const PEEK_BYTES: usize = 64 * 1024;
/// How many of the first lines the caller is shown.
const PEEK_LINES: usize = 16;
const READ_BUFFER_BYTES: usize = 64 * 1024;
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

type Bytes = Box<dyn Read + Send>;

/// An opened log: its name for messages, the bytes peeked, and the rest unread.
pub(super) struct Input {
    /// The path as given, or `stdin` for `-`.
    pub name: String,
    pub gzip: bool,
    /// The first bytes (up to [`PEEK_LINES`] lines or [`PEEK_BYTES`]).
    pub peeked: Vec<u8>,
    rest: Bytes,
    /// The peek reached the end of the input.
    peeked_all: bool,
}

impl Input {
    /// Opens `path` (`-` for stdin) and peeks at its first lines.
    pub fn open(path: &Path) -> Result<Input, WorkloadError> {
        let (name, mut raw): (String, Bytes) = if path.as_os_str() == "-" {
            ("stdin".to_owned(), Box::new(io::stdin()))
        } else {
            let name = path.display().to_string();
            let file = File::open(path).map_err(|source| WorkloadError::Read {
                source_name: name.clone(),
                source,
            })?;
            (name, Box::new(file))
        };
        let mut magic = [0_u8; 2];
        let magic_len = read_up_to(&mut raw, &mut magic).map_err(|source| WorkloadError::Read {
            source_name: name.clone(),
            source,
        })?;
        let gzip = magic_len == 2 && magic == GZIP_MAGIC;
        // The magic bytes read go back in front of the rest.
        let raw: Bytes = Box::new(Cursor::new(magic[..magic_len].to_vec()).chain(raw));
        let rest: Bytes = if gzip {
            Box::new(MultiGzDecoder::new(BufReader::with_capacity(
                READ_BUFFER_BYTES,
                raw,
            )))
        } else {
            raw
        };
        let mut input = Input {
            name,
            gzip,
            peeked: Vec::new(),
            rest,
            peeked_all: false,
        };
        input.peek()?;
        Ok(input)
    }

    /// Reads ahead up to [`PEEK_LINES`] lines or [`PEEK_BYTES`].
    fn peek(&mut self) -> Result<(), WorkloadError> {
        let mut chunk = [0_u8; 8192];
        while self.peeked.len() < PEEK_BYTES && newlines(&self.peeked) < PEEK_LINES {
            let read = match self.rest.read(&mut chunk) {
                Ok(0) => {
                    self.peeked_all = true;
                    return Ok(());
                }
                Ok(read) => read,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => {
                    let line = newlines(&self.peeked) as u64 + 1;
                    return Err(read_error(&self.name, line, self.gzip, &err));
                }
            };
            self.peeked.extend_from_slice(&chunk[..read]);
        }
        Ok(())
    }

    /// The first lines, as text for sniffing (invalid UTF-8 replaced), without line
    /// ends; a line cut by the peek is left out unless it is the only one.
    pub fn first_lines(&self) -> Vec<String> {
        if self.peeked.is_empty() {
            return Vec::new();
        }
        let mut pieces: Vec<&[u8]> = self.peeked.split(|&b| b == b'\n').collect();
        // The piece after the last newline is empty (the text ends with one) or a line
        // the peek cut short: left out, unless it is all there is.
        let last_is_whole = self.peeked_all && pieces.last().is_some_and(|p| !p.is_empty());
        if !last_is_whole && pieces.len() > 1 {
            pieces.pop();
        }
        pieces
            .into_iter()
            .take(PEEK_LINES)
            .map(|piece| {
                let text = String::from_utf8_lossy(piece);
                text.strip_suffix('\r').unwrap_or(&text).to_owned()
            })
            .collect()
    }

    /// The whole input, peeked bytes and all (for formats read whole, like HAR).
    pub fn read_all(mut self) -> Result<Vec<u8>, WorkloadError> {
        let mut bytes = std::mem::take(&mut self.peeked);
        if let Err(err) = self.rest.read_to_end(&mut bytes) {
            let line = newlines(&bytes) as u64 + 1;
            return Err(read_error(&self.name, line, self.gzip, &err));
        }
        Ok(bytes)
    }

    /// A line reader over the whole input, peeked bytes first.
    pub fn into_lines(self) -> LineReader {
        let bytes: Bytes = Box::new(Cursor::new(self.peeked).chain(self.rest));
        LineReader {
            reader: BufReader::with_capacity(READ_BUFFER_BYTES, bytes),
            buffer: Vec::new(),
            line: 0,
        }
    }
}

/// One line as read.
pub(super) enum Line<'a> {
    /// The line's bytes, without its `\n`.
    Text(&'a [u8]),
    /// A line longer than [`MAX_LINE_BYTES`] (skipped to its end, not kept).
    TooLong,
    End,
}

/// Lines of one input, read into one reused buffer of at most [`MAX_LINE_BYTES`].
pub(super) struct LineReader {
    reader: BufReader<Bytes>,
    buffer: Vec<u8>,
    /// The 1-based number of the line last read.
    pub line: u64,
}

impl LineReader {
    /// The next line; an I/O error (a truncated gzip) is returned as is.
    pub fn next_line(&mut self) -> io::Result<Line<'_>> {
        self.buffer.clear();
        let mut any = false;
        let mut too_long = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(available) => available,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            if available.is_empty() {
                break;
            }
            any = true;
            let newline = available.iter().position(|&b| b == b'\n');
            let piece = &available[..newline.unwrap_or(available.len())];
            if !too_long && self.buffer.len() + piece.len() > MAX_LINE_BYTES {
                too_long = true;
                self.buffer.clear();
            }
            if !too_long {
                self.buffer.extend_from_slice(piece);
            }
            let used = newline.map_or(piece.len(), |at| at + 1);
            self.reader.consume(used);
            if newline.is_some() {
                break;
            }
        }
        if !any {
            return Ok(Line::End);
        }
        self.line += 1;
        Ok(if too_long {
            Line::TooLong
        } else {
            Line::Text(&self.buffer)
        })
    }

    /// The line buffer's capacity, bytes (for the test that memory stays flat).
    #[cfg(test)]
    pub fn buffer_capacity(&self) -> usize {
        self.buffer.capacity()
    }
}

/// An error reading a log at `line`; a gzip that ends early is named as truncated.
pub(super) fn read_error(name: &str, line: u64, gzip: bool, err: &io::Error) -> WorkloadError {
    let reason = match (gzip, err.kind()) {
        (true, io::ErrorKind::UnexpectedEof) => {
            "the gzip data ends early (a truncated file?)".to_owned()
        }
        (true, _) => format!("reading the gzip data: {err}"),
        (false, _) => format!("reading: {err}"),
    };
    WorkloadError::Target {
        source_name: name.to_owned(),
        line,
        reason,
    }
}

fn newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

/// Reads until `buffer` is full or the input ends; how many bytes were read.
fn read_up_to(reader: &mut Bytes, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(filled)
}
