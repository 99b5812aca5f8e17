//! [`ChunkedDecoder`]: chunked transfer coding (RFC 9112 §7.1), one byte of framing at
//! a time and chunk data a whole slice at a time, so input may be split anywhere.

use crate::WireError;

/// How far a [`ChunkedDecoder::feed`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Every byte was used; the body goes on.
    More,
    /// The body (with its trailers) ended after `used` bytes of this input; the rest
    /// belongs to whatever follows it.
    Done {
        /// Bytes of this input that belonged to the body.
        used: usize,
    },
}

/// Where the decoder is in the framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Size {
        value: u64,
        digits: u8,
    },
    /// A size line already known to be bad: read to its end, then refused.
    BadSize(&'static str),
    Extension {
        value: u64,
    },
    SizeLf {
        value: u64,
    },
    Data(u64),
    DataCr,
    DataLf,
    TrailerStart,
    Trailer,
    TrailerLf,
    FinalLf,
    Done,
}

/// Hex digits of a chunk size at most: 16 fill a `u64`, so the size cannot overflow.
const MAX_SIZE_DIGITS: u8 = 16;

/// An incremental chunked-body decoder. Feed it the body's bytes as they arrive; it
/// hands over the chunk data and says where the body ends.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    /// Bytes fed so far (by earlier calls).
    fed: u64,
    /// Where the current (or last) chunk-size line starts, counted from the first
    /// byte ever fed.
    size_line_start: u64,
}

impl Default for ChunkedDecoder {
    fn default() -> ChunkedDecoder {
        ChunkedDecoder::new()
    }
}

impl ChunkedDecoder {
    /// A decoder at the start of a body.
    pub fn new() -> ChunkedDecoder {
        ChunkedDecoder {
            state: State::Size {
                value: 0,
                digits: 0,
            },
            fed: 0,
            size_line_start: 0,
        }
    }

    /// Where the current chunk-size line starts, counted from the first byte fed: a
    /// caller that keeps the raw bytes can quote a line refused as
    /// [`WireError::ChunkSize`].
    pub fn size_line_start(&self) -> u64 {
        self.size_line_start
    }

    /// Decodes `input`, the bytes that follow those of earlier calls, handing each
    /// piece of chunk data to `on_data` in order.
    pub fn feed(
        &mut self,
        input: &[u8],
        mut on_data: impl FnMut(&[u8]),
    ) -> Result<Progress, WireError> {
        let mut at = 0;
        while at < input.len() {
            if let State::Data(remaining) = self.state {
                let take = remaining.min((input.len() - at) as u64) as usize;
                on_data(&input[at..at + take]);
                at += take;
                self.state = if take as u64 == remaining {
                    State::DataCr
                } else {
                    State::Data(remaining - take as u64)
                };
                continue;
            }
            let byte = input[at];
            at += 1;
            self.state = next_state(self.state, byte)?;
            match self.state {
                State::Done => {
                    self.fed += at as u64;
                    return Ok(Progress::Done { used: at });
                }
                State::Size { digits: 0, .. } => self.size_line_start = self.fed + at as u64,
                _ => {}
            }
        }
        self.fed += at as u64;
        Ok(Progress::More)
    }
}

/// One byte of framing (never called in `Data`). Inline: the engine calls it from
/// another crate for every framing byte.
#[inline]
fn next_state(state: State, byte: u8) -> Result<State, WireError> {
    let framing = |what| Err(WireError::ChunkFraming(what));
    let line_end = |value: u64| {
        if value == 0 {
            State::TrailerStart
        } else {
            State::Data(value)
        }
    };
    let line_ended = matches!(byte, b'\r' | b'\n');
    Ok(match (state, byte) {
        (State::Size { digits: 0, .. }, _) if line_ended => {
            return Err(WireError::ChunkSize("chunk size is not hexadecimal"));
        }
        (State::BadSize(why), _) if line_ended => return Err(WireError::ChunkSize(why)),
        (State::BadSize(_), _) => state,
        (State::Size { value, digits }, _) if byte.is_ascii_hexdigit() => {
            if digits >= MAX_SIZE_DIGITS {
                State::BadSize("chunk size too large")
            } else {
                let digit = (byte as char).to_digit(16).unwrap_or(0) as u64;
                State::Size {
                    value: value * 16 + digit,
                    digits: digits + 1,
                }
            }
        }
        (State::Size { digits: 0, .. }, _) => State::BadSize("chunk size is not hexadecimal"),
        (State::Size { value, .. } | State::Extension { value }, b'\r') => State::SizeLf { value },
        (
            State::Size { value, .. } | State::Extension { value } | State::SizeLf { value },
            b'\n',
        ) => line_end(value),
        (State::Size { value, .. }, b';' | b' ' | b'\t') => State::Extension { value },
        (State::Size { .. }, _) => State::BadSize("bad byte in chunk size"),
        (State::Extension { .. }, _) => state,
        (State::SizeLf { .. }, _) => return framing("chunk line not ended by CRLF"),
        (State::DataCr, b'\r') => State::DataLf,
        (State::DataCr | State::DataLf, b'\n') => State::Size {
            value: 0,
            digits: 0,
        },
        (State::DataCr, _) => return framing("chunk data longer than its size"),
        (State::DataLf, _) => return framing("chunk data not ended by CRLF"),
        // An empty line ends the trailers and the body.
        (State::TrailerStart, b'\r') => State::FinalLf,
        (State::TrailerStart | State::FinalLf, b'\n') => State::Done,
        (State::FinalLf, _) => return framing("chunked body not ended by CRLF"),
        (State::Trailer, b'\r') => State::TrailerLf,
        (State::Trailer | State::TrailerLf, b'\n') => State::TrailerStart,
        (State::TrailerStart | State::Trailer, _) => State::Trailer,
        (State::TrailerLf, _) => return framing("trailer line not ended by CRLF"),
        (State::Data(_) | State::Done, _) => state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` in pieces of `step` bytes: the data, and the bytes used.
    fn decode(input: &[u8], step: usize) -> Result<(Vec<u8>, Option<usize>), WireError> {
        let mut decoder = ChunkedDecoder::new();
        let mut data = Vec::new();
        for (index, piece) in input.chunks(step).enumerate() {
            if let Progress::Done { used } =
                decoder.feed(piece, |bytes| data.extend_from_slice(bytes))?
            {
                return Ok((data, Some(index * step + used)));
            }
        }
        Ok((data, None))
    }

    #[test]
    fn decodes_whatever_the_read_boundaries() {
        let input = b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        for step in 1..=input.len() {
            assert_eq!(
                decode(input, step),
                Ok((b"hello world".to_vec(), Some(input.len() - 4))),
                "step {step}"
            );
        }
        assert_eq!(decode(b"5\r\nhel", 2), Ok((b"hel".to_vec(), None)));
    }

    #[test]
    fn refuses_bad_framing_once_the_size_line_ends() {
        let rows: &[(&[u8], Option<WireError>)] = &[
            (b"zz", None),
            (
                b"zz\r\n",
                Some(WireError::ChunkSize("chunk size is not hexadecimal")),
            ),
            (
                b"5x\n",
                Some(WireError::ChunkSize("bad byte in chunk size")),
            ),
            (
                b"\r\n",
                Some(WireError::ChunkSize("chunk size is not hexadecimal")),
            ),
            (
                b"fffffffffffffffff\r\n",
                Some(WireError::ChunkSize("chunk size too large")),
            ),
            (b"ffffffffffffffff\r\nab", None),
            (
                b"2\r\nabc",
                Some(WireError::ChunkFraming("chunk data longer than its size")),
            ),
            (
                b"0\r\nX\r\r",
                Some(WireError::ChunkFraming("trailer line not ended by CRLF")),
            ),
        ];
        for &(input, want) in rows {
            assert_eq!(
                decode(input, 1).err(),
                want,
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn knows_where_the_size_line_starts() {
        let mut decoder = ChunkedDecoder::new();
        assert_eq!(decoder.feed(b"2\r\nab\r\nz", |_| {}), Ok(Progress::More));
        assert_eq!(decoder.size_line_start(), 7);
        assert!(decoder.feed(b"z\r\n", |_| {}).is_err());
        assert_eq!(decoder.size_line_start(), 7);
    }
}
