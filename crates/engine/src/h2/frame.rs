//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte header, the codes the client uses,
//! writers for the frames it sends, and [`FrameReader`], which cuts the bytes read off
//! a connection into frames. DATA payloads are counted as they pass, never copied:
//! a load generator needs their length, not their bytes.

/// What a client sends first on every HTTP/2 connection.
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub(crate) const HEADER_BYTES: usize = 9;

/// The largest frame either side may send until told otherwise (and all we accept).
pub(crate) const DEFAULT_MAX_FRAME_BYTES: u32 = 16_384;
/// The largest flow-control window (2^31 - 1).
pub(crate) const MAX_WINDOW: u32 = 0x7fff_ffff;
/// A window every peer starts with (the connection's cannot be changed by SETTINGS).
pub(crate) const DEFAULT_WINDOW: u32 = 65_535;

pub(crate) const DATA: u8 = 0x0;
pub(crate) const HEADERS: u8 = 0x1;
pub(crate) const RST_STREAM: u8 = 0x3;
pub(crate) const SETTINGS: u8 = 0x4;
pub(crate) const PUSH_PROMISE: u8 = 0x5;
pub(crate) const PING: u8 = 0x6;
pub(crate) const GOAWAY: u8 = 0x7;
pub(crate) const WINDOW_UPDATE: u8 = 0x8;
pub(crate) const CONTINUATION: u8 = 0x9;

/// END_STREAM on DATA and HEADERS; ACK on SETTINGS and PING.
pub(crate) const FLAG_END_STREAM: u8 = 0x1;
pub(crate) const FLAG_ACK: u8 = 0x1;
pub(crate) const FLAG_END_HEADERS: u8 = 0x4;
pub(crate) const FLAG_PADDED: u8 = 0x8;
pub(crate) const FLAG_PRIORITY: u8 = 0x20;

pub(crate) const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub(crate) const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub(crate) const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub(crate) const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

pub(crate) const NO_ERROR: u32 = 0x0;
pub(crate) const PROTOCOL_ERROR: u32 = 0x1;
pub(crate) const FLOW_CONTROL_ERROR: u32 = 0x3;
pub(crate) const FRAME_SIZE_ERROR: u32 = 0x6;
pub(crate) const REFUSED_STREAM: u32 = 0x7;
pub(crate) const CANCEL: u32 = 0x8;
pub(crate) const COMPRESSION_ERROR: u32 = 0x9;

/// A frame's 9-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameHeader {
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl FrameHeader {
    fn parse(bytes: &[u8; HEADER_BYTES]) -> FrameHeader {
        FrameHeader {
            len: u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]),
            kind: bytes[3],
            flags: bytes[4],
            stream: u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) & MAX_WINDOW,
        }
    }

    pub(crate) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// A connection error: the GOAWAY code to send and what went wrong (static text, so
/// a hostile server cannot make the client allocate per frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnError {
    pub code: u32,
    pub reason: &'static str,
}

impl ConnError {
    pub(crate) fn protocol(reason: &'static str) -> ConnError {
        ConnError {
            code: PROTOCOL_ERROR,
            reason,
        }
    }
}

/// The operation text of an error code a server sent in RST_STREAM (`rst_stream: ...`).
pub(crate) fn rst_stream_text(code: u32) -> &'static str {
    match code {
        NO_ERROR => "rst_stream: no_error",
        PROTOCOL_ERROR => "rst_stream: protocol_error",
        0x2 => "rst_stream: internal_error",
        FLOW_CONTROL_ERROR => "rst_stream: flow_control_error",
        0x5 => "rst_stream: stream_closed",
        FRAME_SIZE_ERROR => "rst_stream: frame_size_error",
        REFUSED_STREAM => "rst_stream: refused_stream",
        CANCEL => "rst_stream: cancel",
        0xb => "rst_stream: enhance_your_calm",
        0xd => "rst_stream: http_1_1_required",
        _ => "rst_stream: other error code",
    }
}

/// The operation text of a GOAWAY's error code.
pub(crate) fn goaway_text(code: u32) -> &'static str {
    match code {
        NO_ERROR => "goaway: no_error",
        PROTOCOL_ERROR => "goaway: protocol_error",
        0x2 => "goaway: internal_error",
        FLOW_CONTROL_ERROR => "goaway: flow_control_error",
        FRAME_SIZE_ERROR => "goaway: frame_size_error",
        COMPRESSION_ERROR => "goaway: compression_error",
        0xb => "goaway: enhance_your_calm",
        0xd => "goaway: http_1_1_required",
        _ => "goaway: other error code",
    }
}

pub(crate) fn put_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = (len as u32).to_be_bytes();
    out.extend_from_slice(&[len[1], len[2], len[3], kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

pub(crate) fn put_settings(out: &mut Vec<u8>, settings: &[(u16, u32)]) {
    put_header(out, settings.len() * 6, SETTINGS, 0, 0);
    for (id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

pub(crate) fn put_settings_ack(out: &mut Vec<u8>) {
    put_header(out, 0, SETTINGS, FLAG_ACK, 0);
}

pub(crate) fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_header(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

pub(crate) fn put_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_header(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// A PING ACK's length on the wire: a frame header and 8 bytes of payload.
pub(crate) const PING_ACK_BYTES: usize = 9 + 8;

pub(crate) fn put_ping_ack(out: &mut Vec<u8>, payload: &[u8]) {
    put_header(out, payload.len(), PING, FLAG_ACK, 0);
    out.extend_from_slice(payload);
}

pub(crate) fn put_goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    put_header(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// One step of reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    /// `len` payload bytes of a DATA frame on `stream` (a frame may come in several
    /// pieces); `end_stream` on the frame's last piece when the frame ends the stream.
    Data {
        stream: u32,
        len: usize,
        end_stream: bool,
        /// Where the data is in the piece's `len` bytes, `start..end`: all of them
        /// but a padded frame's pad length and padding.
        data: (usize, usize),
    },
    /// A whole frame of another type; its payload is [`FrameReader::payload`].
    Frame(FrameHeader),
}

/// Cuts a byte stream into frames, across reads.
pub(crate) struct FrameReader {
    head: [u8; HEADER_BYTES],
    head_len: usize,
    current: Option<FrameHeader>,
    remaining: usize,
    payload: Vec<u8>,
    /// Whether the server's first frame (its SETTINGS) has come.
    prefaced: bool,
    /// A padded DATA frame's pad length (its first payload byte), once read.
    pad: usize,
}

impl FrameReader {
    pub(crate) fn new() -> FrameReader {
        FrameReader {
            head: [0; HEADER_BYTES],
            head_len: 0,
            current: None,
            remaining: 0,
            payload: Vec::new(),
            prefaced: false,
            pad: 0,
        }
    }

    /// The payload of the frame [`FrameReader::next`] returned last.
    #[cfg(test)]
    fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// Lends the payload out (to be handled while the reader is borrowed elsewhere).
    pub(crate) fn take_payload(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.payload)
    }

    /// Takes back what [`FrameReader::take_payload`] lent, keeping its capacity.
    pub(crate) fn put_back_payload(&mut self, payload: Vec<u8>) {
        self.payload = payload;
    }

    /// A server starts with SETTINGS (RFC 9113 §3.4); one that answers in HTTP/1.1
    /// does not speak h2c at all, and says so in its first bytes.
    fn check_preface(&mut self, header: &FrameHeader) -> Result<(), ConnError> {
        if self.head.starts_with(b"HTTP/") {
            return Err(ConnError::protocol(
                "h2: the server answered in HTTP/1.x (it does not speak h2c)",
            ));
        }
        if header.kind != SETTINGS || header.has(FLAG_ACK) {
            return Err(ConnError::protocol(
                "h2: the server's first frame is not SETTINGS",
            ));
        }
        self.prefaced = true;
        Ok(())
    }

    /// Where the data is in `piece`, the bytes of a DATA frame's payload from offset
    /// `at`: a padded frame's first byte (its pad length) and its padding are not.
    fn data_within(&mut self, header: &FrameHeader, at: usize, piece: &[u8]) -> (usize, usize) {
        if !header.has(FLAG_PADDED) {
            return (0, piece.len());
        }
        if at == 0 && !piece.is_empty() {
            self.pad = usize::from(piece[0]);
        }
        let data_end = (header.len as usize).saturating_sub(self.pad).max(1);
        let start = 1usize.saturating_sub(at).min(piece.len());
        let end = data_end.saturating_sub(at).clamp(start, piece.len());
        (start, end)
    }

    /// The next piece in `input` (consuming it), `None` when `input` is used up
    /// in the middle of a frame.
    pub(crate) fn next(&mut self, input: &mut &[u8]) -> Result<Option<Piece>, ConnError> {
        let header = match self.current {
            Some(header) => header,
            None => {
                let take = (HEADER_BYTES - self.head_len).min(input.len());
                self.head[self.head_len..self.head_len + take].copy_from_slice(&input[..take]);
                self.head_len += take;
                *input = &input[take..];
                if self.head_len < HEADER_BYTES {
                    return Ok(None);
                }
                self.head_len = 0;
                let header = FrameHeader::parse(&self.head);
                if !self.prefaced {
                    self.check_preface(&header)?;
                }
                if header.len > DEFAULT_MAX_FRAME_BYTES {
                    return Err(ConnError {
                        code: FRAME_SIZE_ERROR,
                        reason: "h2: frame larger than the client's max frame size",
                    });
                }
                self.current = Some(header);
                self.remaining = header.len as usize;
                self.payload.clear();
                header
            }
        };
        let take = self.remaining.min(input.len());
        let at = header.len as usize - self.remaining;
        self.remaining -= take;
        let done = self.remaining == 0;
        if header.kind == DATA {
            let data = self.data_within(&header, at, &input[..take]);
            *input = &input[take..];
            if take == 0 && !done {
                return Ok(None);
            }
            if done {
                self.current = None;
            }
            return Ok(Some(Piece::Data {
                stream: header.stream,
                len: take,
                end_stream: done && header.has(FLAG_END_STREAM),
                data,
            }));
        }
        self.payload.extend_from_slice(&input[..take]);
        *input = &input[take..];
        if !done {
            return Ok(None);
        }
        self.current = None;
        Ok(Some(Piece::Frame(header)))
    }
}

/// The payload of a HEADERS frame without its padding and priority fields.
pub(crate) fn header_fragment<'a>(
    header: &FrameHeader,
    payload: &'a [u8],
) -> Result<&'a [u8], ConnError> {
    let mut fragment = payload;
    let mut padding = 0usize;
    if header.has(FLAG_PADDED) {
        let (&pad, rest) = fragment
            .split_first()
            .ok_or(ConnError::protocol("h2: padded frame without a pad length"))?;
        padding = usize::from(pad);
        fragment = rest;
    }
    if header.kind == HEADERS && header.has(FLAG_PRIORITY) {
        fragment = fragment.get(5..).ok_or(ConnError::protocol(
            "h2: HEADERS too short for its priority",
        ))?;
    }
    let end = fragment
        .len()
        .checked_sub(padding)
        .ok_or(ConnError::protocol("h2: padding longer than the frame"))?;
    Ok(&fragment[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_header(&mut out, payload.len(), kind, flags, stream);
        out.extend_from_slice(payload);
        out
    }

    /// Feeds `bytes` in reads of `chunk` bytes; returns the pieces and payloads.
    fn read_all(bytes: &[u8], chunk: usize) -> Result<Vec<(Piece, Vec<u8>)>, ConnError> {
        let mut reader = FrameReader::new();
        let mut pieces = Vec::new();
        for mut input in bytes.chunks(chunk) {
            while let Some(piece) = reader.next(&mut input)? {
                pieces.push((piece, reader.payload().to_vec()));
            }
            assert!(input.is_empty(), "the reader consumes every read");
        }
        Ok(pieces)
    }

    fn data_total(pieces: &[(Piece, Vec<u8>)]) -> (usize, usize) {
        let mut total = 0;
        let mut ends = 0;
        for (piece, _) in pieces {
            if let Piece::Data {
                len, end_stream, ..
            } = piece
            {
                total += len;
                ends += usize::from(*end_stream);
            }
        }
        (total, ends)
    }

    #[test]
    fn frames_come_out_whole_however_the_reads_cut_them() {
        let mut bytes = frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
        bytes.extend(frame(HEADERS, FLAG_END_HEADERS, 1, &[0x88]));
        bytes.extend(frame(DATA, 0, 1, &[7; 300]));
        bytes.extend(frame(DATA, FLAG_END_STREAM, 1, &[]));
        bytes.extend(frame(PING, 0, 0, &[1, 2, 3, 4, 5, 6, 7, 8]));
        for chunk in [1, 2, 9, 10, 64, 4096] {
            let pieces = read_all(&bytes, chunk).unwrap();
            let frames: Vec<_> = pieces
                .iter()
                .filter_map(|(p, payload)| match p {
                    Piece::Frame(h) => Some((h.kind, h.stream, payload.clone())),
                    Piece::Data { .. } => None,
                })
                .collect();
            assert_eq!(
                frames,
                vec![
                    (SETTINGS, 0, vec![0, 3, 0, 0, 0, 100]),
                    (HEADERS, 1, vec![0x88]),
                    (PING, 0, vec![1, 2, 3, 4, 5, 6, 7, 8]),
                ],
                "chunk {chunk}"
            );
            assert_eq!(data_total(&pieces), (300, 1), "chunk {chunk}");
        }
    }

    #[test]
    fn a_padded_data_frames_data_is_told_apart_from_its_padding() {
        let mut bytes = frame(SETTINGS, 0, 0, &[]);
        // Pad length 3, then "hello", then three bytes of padding.
        bytes.extend(frame(DATA, FLAG_PADDED, 1, b"\x03hello\0\0\0"));
        bytes.extend(frame(DATA, FLAG_END_STREAM, 1, b" world"));
        bytes.extend(frame(DATA, FLAG_PADDED, 1, b"\x00!"));
        for chunk in [1, 2, 3, 7, 4096] {
            let mut reader = FrameReader::new();
            let mut data = Vec::new();
            for mut input in bytes.chunks(chunk) {
                while !input.is_empty() {
                    let before = input;
                    match reader.next(&mut input).unwrap() {
                        Some(Piece::Data {
                            len,
                            data: (start, end),
                            ..
                        }) => {
                            let used = before.len() - input.len();
                            let piece = &before[used - len..used];
                            data.extend_from_slice(&piece[start..end]);
                        }
                        Some(Piece::Frame(_)) | None => {}
                    }
                }
            }
            assert_eq!(data, b"hello world!", "chunk {chunk}");
        }
    }

    #[test]
    fn sad_frames_are_connection_errors() {
        let mut big = frame(SETTINGS, 0, 0, &[]);
        put_header(&mut big, 20_000, DATA, 0, 1);
        assert_eq!(read_all(&big, 100).unwrap_err().code, FRAME_SIZE_ERROR);
        let openings: [(&[u8], &str); 3] = [
            (
                b"HTTP/1.1 400 Bad Request\r\n\r\n",
                "h2: the server answered in HTTP/1.x (it does not speak h2c)",
            ),
            (
                &frame(PING, 0, 0, &[0; 8]),
                "h2: the server's first frame is not SETTINGS",
            ),
            (
                &frame(SETTINGS, FLAG_ACK, 0, &[]),
                "h2: the server's first frame is not SETTINGS",
            ),
        ];
        for (bytes, want) in openings {
            assert_eq!(read_all(bytes, 3).unwrap_err().reason, want);
        }

        type Row = (
            FrameHeader,
            &'static [u8],
            Result<&'static [u8], &'static str>,
        );
        let rows: Vec<Row> = vec![
            (head(HEADERS, FLAG_PADDED), &[2, 0x88, 0, 0], Ok(&[0x88])),
            (
                head(HEADERS, FLAG_PRIORITY),
                &[0, 0, 0, 0, 16, 0x88],
                Ok(&[0x88]),
            ),
            (head(CONTINUATION, FLAG_PRIORITY), &[0x88], Ok(&[0x88])),
            (
                head(HEADERS, FLAG_PADDED),
                &[],
                Err("h2: padded frame without a pad length"),
            ),
            (
                head(HEADERS, FLAG_PADDED),
                &[5, 0x88],
                Err("h2: padding longer than the frame"),
            ),
            (
                head(HEADERS, FLAG_PRIORITY),
                &[0, 0],
                Err("h2: HEADERS too short for its priority"),
            ),
        ];
        for (header, payload, want) in rows {
            let got = header_fragment(&header, payload).map_err(|e| e.reason);
            assert_eq!(got, want, "{header:?} {payload:?}");
        }
    }

    fn head(kind: u8, flags: u8) -> FrameHeader {
        FrameHeader {
            len: 0,
            kind,
            flags,
            stream: 1,
        }
    }

    #[test]
    fn the_reserved_bit_of_the_stream_id_is_ignored() {
        let mut bytes = frame(SETTINGS, 0, 0, &[]);
        bytes.extend(frame(RST_STREAM, 0, 3, &[0, 0, 0, 8]));
        bytes[14] |= 0x80;
        let pieces = read_all(&bytes, 64).unwrap();
        assert!(matches!(pieces[1].0, Piece::Frame(h) if h.stream == 3));
    }
}
