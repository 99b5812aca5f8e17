//! Line reading for target files with a size cap, so one runaway line (a 64 MB URL,
//! a file without newlines) is refused at its line number instead of filling memory.

use std::io::{BufRead, Read};

/// The longest line a target file may hold, and the most a target's request line and
/// headers may add up to (http format). Bodies belong in `@file` lines or `-body`.
pub const MAX_TARGET_BYTES: usize = 1024 * 1024;

/// Why a line could not be read.
#[derive(Debug)]
pub(crate) enum LineError {
    Io(std::io::Error),
    /// The line is longer than [`MAX_TARGET_BYTES`].
    TooLong,
}

impl LineError {
    /// The reason for a [`crate::WorkloadError::Target`].
    pub(crate) fn too_long_reason() -> String {
        format!(
            "line is longer than {} bytes (1 MiB), the most a target may take",
            MAX_TARGET_BYTES
        )
    }
}

/// Like [`BufRead::lines`], but never buffers more than [`MAX_TARGET_BYTES`] + 1 bytes
/// of one line.
pub(crate) struct BoundedLines<R> {
    input: R,
    buffer: Vec<u8>,
}

impl<R: BufRead> BoundedLines<R> {
    pub(crate) fn new(input: R) -> Self {
        BoundedLines {
            input,
            buffer: Vec::new(),
        }
    }
}

impl<R: BufRead> Iterator for BoundedLines<R> {
    type Item = Result<String, LineError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.buffer.clear();
        let limit = MAX_TARGET_BYTES as u64 + 2; // room for "\r\n"
        let read = (&mut self.input)
            .take(limit)
            .read_until(b'\n', &mut self.buffer);
        match read {
            Err(err) => return Some(Err(LineError::Io(err))),
            Ok(0) => return None,
            Ok(_) => {}
        }
        let ended = self.buffer.last() == Some(&b'\n');
        if ended {
            self.buffer.pop();
            if self.buffer.last() == Some(&b'\r') {
                self.buffer.pop();
            }
        }
        if self.buffer.len() > MAX_TARGET_BYTES {
            return Some(Err(LineError::TooLong));
        }
        let line = std::mem::take(&mut self.buffer);
        Some(String::from_utf8(line).map_err(|_| {
            LineError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            ))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Line = Result<String, String>;

    fn lines(input: &[u8]) -> Vec<Line> {
        BoundedLines::new(input)
            .map(|line| {
                line.map_err(|err| match err {
                    LineError::Io(err) => err.to_string(),
                    LineError::TooLong => "too long".to_owned(),
                })
            })
            .collect()
    }

    #[test]
    fn splits_like_lines_and_caps_the_length() {
        let longest = "x".repeat(MAX_TARGET_BYTES);
        let too_long = "x".repeat(MAX_TARGET_BYTES + 1);
        let ok = |s: &str| Ok(s.to_owned());
        let rows: Vec<(Vec<u8>, Vec<Line>)> = vec![
            (
                b"a\nb\r\n\nc".to_vec(),
                vec![ok("a"), ok("b"), ok(""), ok("c")],
            ),
            (b"".to_vec(), vec![]),
            (format!("{longest}\r\n").into_bytes(), vec![ok(&longest)]),
            (
                format!("{longest}\nz").into_bytes(),
                vec![ok(&longest), ok("z")],
            ),
            (
                format!("{too_long}\n").into_bytes(),
                vec![Err("too long".to_owned())],
            ),
            (too_long.into_bytes(), vec![Err("too long".to_owned())]),
            (
                vec![0xff, b'\n'],
                vec![Err("stream did not contain valid UTF-8".to_owned())],
            ),
        ];
        for (input, want) in rows {
            let mut got = lines(&input);
            // After a refused line, callers stop; only the first error matters here.
            if let Some(at) = got.iter().position(Result::is_err) {
                got.truncate(at + 1);
            }
            assert_eq!(got, want, "input of {} bytes", input.len());
        }
    }
}
