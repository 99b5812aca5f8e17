//! The server's side of a WebSocket, read frame by frame: [`FrameReader`] turns the
//! bytes of a connection into [`Incoming`] messages (fragments joined, text checked
//! as UTF-8, control frames as they come), and [`Deflate`] is permessage-deflate
//! (RFC 7692) both ways once the upgrade agreed it.
//!
//! Why not tungstenite's reader (its writer still frames what we send): it refuses
//! any frame with RSV1 set, which is how a compressed message is marked; and it
//! zero-fills its read buffer before every read. This one reads into a buffer
//! zeroed once, and knows when a plain socket is drained (a short read), so a
//! session woken by a deadline does not ask the kernel for bytes that are not there.

use std::io::Read;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use record::ErrorKind;

use super::{Failure, io_failure, would_block};

/// The read buffer's first size: most messages fit; a bigger frame grows it.
const READ_BUFFER_BYTES: usize = 4096;
/// The bytes a sync flush ends with, left off a compressed message (RFC 7692 7.2.1)
/// and put back before it is inflated.
const DEFLATE_TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];
/// The largest message taken whole (as tungstenite's default): larger is a protocol
/// error, compressed or not, so a small frame that inflates to gigabytes stops here.
pub(super) const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// What the server sent.
#[derive(Debug, PartialEq)]
pub(super) enum Incoming {
    /// A whole data message; its bytes are [`FrameReader::message`] until the next read.
    Data {
        text: bool,
    },
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    /// A close frame: its code (1005 when it has none) and reason.
    Close {
        code: u16,
        reason: String,
    },
}

/// A data message arriving in fragments.
#[derive(Clone, Copy)]
struct Assembling {
    text: bool,
    compressed: bool,
}

pub(super) struct FrameReader {
    /// Bytes read; `start..filled` are not parsed yet.
    buffer: Vec<u8>,
    start: usize,
    filled: usize,
    /// The data message being put together (inflated when it came compressed).
    message: Vec<u8>,
    assembling: Option<Assembling>,
    /// The inflater, when the upgrade agreed permessage-deflate.
    inflate: Option<Decompress>,
    /// The last read of a plain socket returned less than it asked for (or would
    /// block): nothing more until the poller says the socket is readable again.
    drained: bool,
    /// Whether a short read means drained: true of a plain socket, not of TLS, whose
    /// reader may stop at a record's end with more in the kernel.
    short_read_drains: bool,
}

impl FrameReader {
    /// A reader starting with `rest`, the bytes that came after the upgrade's head.
    pub(super) fn new(rest: &[u8], deflate: bool, short_read_drains: bool) -> FrameReader {
        let mut buffer = vec![0; READ_BUFFER_BYTES.max(rest.len())];
        buffer[..rest.len()].copy_from_slice(rest);
        FrameReader {
            buffer,
            start: 0,
            filled: rest.len(),
            message: Vec::new(),
            assembling: None,
            inflate: deflate.then(|| Decompress::new(false)),
            drained: false,
            short_read_drains,
        }
    }

    /// The poller said the socket is readable (or closed): read it again.
    pub(super) fn readable(&mut self) {
        self.drained = false;
    }

    /// The last [`Incoming::Data`] message's bytes.
    pub(super) fn message(&self) -> &[u8] {
        &self.message
    }

    /// The next thing the server sent, `None` when it has not come yet.
    pub(super) fn next(&mut self, wire: &mut impl Read) -> Result<Option<Incoming>, Failure> {
        loop {
            if let Some(incoming) = self.parse()? {
                return Ok(Some(incoming));
            }
            if self.drained {
                return Ok(None);
            }
            self.make_room();
            let asked = self.buffer.len() - self.filled;
            match wire.read(&mut self.buffer[self.filled..]) {
                Ok(0) => {
                    return Err((
                        ErrorKind::Closed,
                        "the server closed the connection without a close frame".to_owned(),
                    ));
                }
                Ok(read) => {
                    self.filled += read;
                    self.drained = self.short_read_drains && read < asked;
                }
                Err(e) if would_block(&e) => {
                    self.drained = self.short_read_drains;
                    return Ok(None);
                }
                Err(e) => return Err(io_failure(&e)),
            }
        }
    }

    /// Moves the unparsed bytes to the front; grows the buffer when a frame's head
    /// says it needs more than there is.
    fn make_room(&mut self) {
        if self.start > 0 {
            self.buffer.copy_within(self.start..self.filled, 0);
            self.filled -= self.start;
            self.start = 0;
        }
        let needed = frame_length(&self.buffer[..self.filled]).unwrap_or(0);
        if self.filled == self.buffer.len() || needed > self.buffer.len() {
            let grown = needed.max(self.buffer.len() * 2);
            self.buffer.resize(grown, 0);
        }
    }

    /// One whole frame from the buffer, handled; `None` when the bytes for the next
    /// frame (or the rest of a fragmented message) are not all here.
    fn parse(&mut self) -> Result<Option<Incoming>, Failure> {
        loop {
            let bytes = &self.buffer[self.start..self.filled];
            let Some(head) = FrameHead::parse(bytes)? else {
                return Ok(None);
            };
            if bytes.len() < head.length() {
                return Ok(None);
            }
            let payload = self.start + head.header_bytes..self.start + head.length();
            self.start += head.length();
            if self.start == self.filled {
                (self.start, self.filled) = (0, 0);
            }
            if let Some(incoming) = self.frame(&head, payload)? {
                return Ok(Some(incoming));
            }
        }
    }

    fn frame(
        &mut self,
        head: &FrameHead,
        payload: std::ops::Range<usize>,
    ) -> Result<Option<Incoming>, Failure> {
        if head.opcode >= 0x8 {
            return control(head, &self.buffer[payload]).map(Some);
        }
        let assembling = match (head.opcode, self.assembling) {
            (0x0, Some(assembling)) if !head.rsv1 => assembling,
            (0x0, _) => {
                return Err(protocol(
                    "a continuation frame without a message to continue",
                ));
            }
            (0x1 | 0x2, None) => {
                if head.rsv1 && self.inflate.is_none() {
                    return Err(protocol(
                        "a compressed frame, but no compression was agreed",
                    ));
                }
                self.message.clear();
                Assembling {
                    text: head.opcode == 0x1,
                    compressed: head.rsv1,
                }
            }
            (0x1 | 0x2, Some(_)) => {
                return Err(protocol("a new message began before the last one ended"));
            }
            (opcode, _) => return Err(protocol(&format!("a frame of reserved opcode {opcode}"))),
        };
        self.assembling = Some(assembling);
        let (buffer, message) = (&self.buffer, &mut self.message);
        match (&mut self.inflate, assembling.compressed) {
            (Some(inflate), true) => {
                inflate_into(inflate, &buffer[payload], message)?;
                if head.fin {
                    inflate_into(inflate, &DEFLATE_TAIL, message)?;
                }
            }
            _ => message.extend_from_slice(&buffer[payload]),
        }
        if message.len() > MAX_MESSAGE_BYTES {
            return Err(protocol(&format!(
                "a message over the size limit ({MAX_MESSAGE_BYTES} bytes)"
            )));
        }
        if !head.fin {
            return Ok(None);
        }
        self.assembling = None;
        if assembling.text && std::str::from_utf8(message).is_err() {
            return Err(protocol("a text message that is not UTF-8"));
        }
        Ok(Some(Incoming::Data {
            text: assembling.text,
        }))
    }
}

/// A control frame (close, ping, pong), which may come between a message's fragments.
fn control(head: &FrameHead, payload: &[u8]) -> Result<Incoming, Failure> {
    if !head.fin || payload.len() > 125 || head.rsv1 {
        return Err(protocol(
            "a control frame fragmented, compressed or over 125 bytes",
        ));
    }
    match head.opcode {
        0x8 => match payload {
            [] => Ok(Incoming::Close {
                code: 1005,
                reason: String::new(),
            }),
            [_] => Err(protocol("a close frame of one byte")),
            [high, low, reason @ ..] => Ok(Incoming::Close {
                code: u16::from_be_bytes([*high, *low]),
                reason: std::str::from_utf8(reason)
                    .map_err(|_| protocol("a close reason that is not UTF-8"))?
                    .to_owned(),
            }),
        },
        0x9 => Ok(Incoming::Ping(payload.to_vec())),
        0xa => Ok(Incoming::Pong(payload.to_vec())),
        opcode => Err(protocol(&format!("a frame of reserved opcode {opcode}"))),
    }
}

/// A frame's first bytes, read.
struct FrameHead {
    fin: bool,
    rsv1: bool,
    opcode: u8,
    header_bytes: usize,
    payload_bytes: usize,
}

impl FrameHead {
    /// The head at the start of `bytes`, `None` until all of it is there.
    fn parse(bytes: &[u8]) -> Result<Option<FrameHead>, Failure> {
        let [first, second, ..] = *bytes else {
            return Ok(None);
        };
        if first & 0x30 != 0 {
            return Err(protocol("a frame with reserved bits set (RSV2, RSV3)"));
        }
        if second & 0x80 != 0 {
            return Err(protocol("a masked frame from the server"));
        }
        let (header_bytes, payload_bytes) = match second & 0x7f {
            126 if bytes.len() >= 4 => (4, u64::from(u16::from_be_bytes([bytes[2], bytes[3]]))),
            127 if bytes.len() >= 10 => {
                let mut length = [0; 8];
                length.copy_from_slice(&bytes[2..10]);
                (10, u64::from_be_bytes(length))
            }
            126 | 127 => return Ok(None),
            short => (2, u64::from(short)),
        };
        let payload_bytes = usize::try_from(payload_bytes)
            .ok()
            .filter(|&n| n <= MAX_MESSAGE_BYTES)
            .ok_or_else(|| {
                protocol(&format!(
                    "a frame of {payload_bytes} bytes, over the size limit ({MAX_MESSAGE_BYTES} bytes)"
                ))
            })?;
        Ok(Some(FrameHead {
            fin: first & 0x80 != 0,
            rsv1: first & 0x40 != 0,
            opcode: first & 0x0f,
            header_bytes,
            payload_bytes,
        }))
    }

    fn length(&self) -> usize {
        self.header_bytes + self.payload_bytes
    }
}

/// The whole length of the frame starting `bytes`, once its head is there.
fn frame_length(bytes: &[u8]) -> Option<usize> {
    FrameHead::parse(bytes)
        .ok()
        .flatten()
        .map(|head| head.length())
}

/// Inflates `input` onto the end of `out`; a stream's end (a server that does not
/// keep its context) starts the next message afresh.
fn inflate_into(
    inflate: &mut Decompress,
    mut input: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), Failure> {
    loop {
        if out.capacity() - out.len() < 1024 {
            out.reserve(input.len().max(4096));
        }
        let (read_before, written_before) = (inflate.total_in(), inflate.total_out());
        let status = inflate
            .decompress_vec(input, out, FlushDecompress::Sync)
            .map_err(|e| protocol(&format!("a compressed message that does not inflate: {e}")))?;
        let read = (inflate.total_in() - read_before) as usize;
        let written = inflate.total_out() - written_before;
        input = &input[read..];
        if status == Status::StreamEnd {
            inflate.reset(false);
            return Ok(());
        }
        if out.len() > MAX_MESSAGE_BYTES {
            return Err(protocol(&format!(
                "a message over the size limit ({MAX_MESSAGE_BYTES} bytes)"
            )));
        }
        let room_left = out.len() < out.capacity();
        if (input.is_empty() && room_left) || (read == 0 && written == 0 && room_left) {
            return Ok(());
        }
    }
}

/// permessage-deflate for what we send: each message compressed (its context kept
/// across messages unless the server asked `client_no_context_takeover`).
pub(super) struct Deflate {
    compress: Compress,
    reset_each: bool,
}

impl Deflate {
    pub(super) fn new(reset_each: bool) -> Deflate {
        Deflate {
            compress: Compress::new(Compression::fast(), false),
            reset_each,
        }
    }

    /// `message` compressed, its sync flush's tail left off: the frame's payload.
    pub(super) fn compress(&mut self, message: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(message.len() / 2 + 64);
        let mut input = message;
        loop {
            let read_before = self.compress.total_in();
            // Compressing into a Vec cannot fail: only a stream misused errs.
            let _ = self
                .compress
                .compress_vec(input, &mut out, FlushCompress::Sync);
            input = &input[(self.compress.total_in() - read_before) as usize..];
            if input.is_empty() && out.len() < out.capacity() {
                break;
            }
            out.reserve(out.capacity().max(64));
        }
        if out.ends_with(&DEFLATE_TAIL) {
            out.truncate(out.len() - DEFLATE_TAIL.len());
        }
        if self.reset_each {
            self.compress.reset();
        }
        out
    }
}

/// What the server's `Sec-WebSocket-Extensions` agreed: `Ok(None)` none,
/// `Ok(Some(reset_each))` permessage-deflate (and whether it asks us not to keep our
/// context), or an error for an answer that agrees to what was not offered.
pub(super) fn agreed_deflate(answer: Option<&str>, offered: bool) -> Result<Option<bool>, String> {
    let Some(answer) = answer.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(None);
    };
    let mut params = answer.split(';').map(str::trim);
    let name = params.next().unwrap_or_default();
    if !offered || !name.eq_ignore_ascii_case("permessage-deflate") || answer.contains(',') {
        return Err(format!(
            "the server agreed to extensions {answer:?}, not the ones offered ({})",
            if offered {
                "permessage-deflate"
            } else {
                "none"
            }
        ));
    }
    let mut reset_each = false;
    for param in params {
        let key = param.split('=').next().unwrap_or_default().trim();
        match key.to_ascii_lowercase().as_str() {
            "client_no_context_takeover" => reset_each = true,
            // The server's own choices: the inflater takes any window and any reset.
            "server_no_context_takeover" | "server_max_window_bits" => {}
            _ => {
                return Err(format!(
                    "the server's permessage-deflate has a parameter not offered: {param:?}"
                ));
            }
        }
    }
    Ok(Some(reset_each))
}

fn protocol(what: &str) -> Failure {
    (ErrorKind::Protocol, format!("websocket: {what}"))
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    /// Reads from `chunks` in turn, each read at most one chunk, then would block.
    struct Chunks(Vec<Vec<u8>>);

    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let chunk = &mut self.0[0];
            let n = chunk.len().min(buf.len());
            buf[..n].copy_from_slice(&chunk[..n]);
            chunk.drain(..n);
            if chunk.is_empty() {
                self.0.remove(0);
            }
            Ok(n)
        }
    }

    fn frame(first: u8, payload: &[u8]) -> Vec<u8> {
        let mut bytes = vec![first];
        match payload.len() {
            n @ 0..=125 => bytes.push(n as u8),
            n @ 126..=65535 => {
                bytes.push(126);
                bytes.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                bytes.push(127);
                bytes.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        bytes.extend_from_slice(payload);
        bytes
    }

    fn deflated(message: &[u8]) -> Vec<u8> {
        Deflate::new(false).compress(message)
    }

    /// What a reader makes of `bytes` (read in chunks of `chunk` bytes): each message as
    /// text, or the first error's text.
    fn read_all(bytes: &[u8], chunk: usize, deflate: bool) -> Result<Vec<String>, String> {
        let mut wire = Chunks(bytes.chunks(chunk).map(<[u8]>::to_vec).collect());
        let mut reader = FrameReader::new(&[], deflate, false);
        let mut seen = Vec::new();
        loop {
            match reader.next(&mut wire) {
                Ok(Some(Incoming::Data { text })) => seen.push(format!(
                    "{}:{}",
                    if text { "text" } else { "binary" },
                    String::from_utf8_lossy(reader.message())
                )),
                Ok(Some(other)) => seen.push(format!("{other:?}")),
                Ok(None) => return Ok(seen),
                Err((kind, text)) => return Err(format!("{kind:?}: {text}")),
            }
        }
    }

    #[test]
    fn frames_read_as_messages_whatever_the_reads_cut() {
        let big = "x".repeat(70_000);
        let compressed = deflated(b"hello hello hello");
        let (first_half, second_half) = compressed.split_at(compressed.len() / 2);
        /// A row: its name, the bytes, whether deflate was agreed, what is read.
        type Row = (&'static str, Vec<u8>, bool, Result<Vec<String>, String>);
        let rows: Vec<Row> = vec![
            ("text", frame(0x81, b"hi"), false, Ok(vec!["text:hi".into()])),
            ("binary", frame(0x82, b"\x01"), false, Ok(vec!["binary:\u{1}".into()])),
            (
                "fragments around a ping",
                [frame(0x01, b"he"), frame(0x89, b"p"), frame(0x80, b"llo")].concat(),
                false,
                Ok(vec!["Ping([112])".into(), "text:hello".into()]),
            ),
            ("64-bit length", frame(0x81, big.as_bytes()), false, Ok(vec![format!("text:{big}")])),
            (
                "close with a reason",
                frame(0x88, b"\x03\xe8bye"),
                false,
                Ok(vec!["Close { code: 1000, reason: \"bye\" }".into()]),
            ),
            ("close without a code", frame(0x88, b""), false, Ok(vec!["Close { code: 1005, reason: \"\" }".into()])),
            ("compressed", frame(0xc1, &compressed), true, Ok(vec!["text:hello hello hello".into()])),
            (
                "compressed in fragments",
                [frame(0x41, first_half), frame(0x80, second_half)].concat(),
                true,
                Ok(vec!["text:hello hello hello".into()]),
            ),
            ("uncompressed beside deflate", frame(0x81, b"plain"), true, Ok(vec!["text:plain".into()])),
            (
                "compressed, none agreed",
                frame(0xc1, &compressed),
                false,
                Err("Protocol: websocket: a compressed frame, but no compression was agreed".into()),
            ),
            ("masked", vec![0x81, 0x82, 1, 2, 3, 4, 0, 0], false, Err("Protocol: websocket: a masked frame from the server".into())),
            ("rsv2", frame(0xa1, b"x"), false, Err("Protocol: websocket: a frame with reserved bits set (RSV2, RSV3)".into())),
            ("reserved opcode", frame(0x83, b""), false, Err("Protocol: websocket: a frame of reserved opcode 3".into())),
            ("lone continuation", frame(0x80, b"x"), false, Err("Protocol: websocket: a continuation frame without a message to continue".into())),
            (
                "a message inside a message",
                [frame(0x01, b"a"), frame(0x81, b"b")].concat(),
                false,
                Err("Protocol: websocket: a new message began before the last one ended".into()),
            ),
            ("text not UTF-8", frame(0x81, b"\xff"), false, Err("Protocol: websocket: a text message that is not UTF-8".into())),
            ("fragmented ping", frame(0x09, b""), false, Err("Protocol: websocket: a control frame fragmented, compressed or over 125 bytes".into())),
            ("one-byte close", frame(0x88, b"\x03"), false, Err("Protocol: websocket: a close frame of one byte".into())),
            (
                "over the size limit",
                [0x82, 127, 0, 0, 0, 0, 0x10, 0, 0, 0].to_vec(),
                false,
                Err("Protocol: websocket: a frame of 268435456 bytes, over the size limit (67108864 bytes)".into()),
            ),
            (
                "does not inflate",
                frame(0xc1, b"\xff\xff\xff"),
                true,
                Err("Protocol: websocket: a compressed message that does not inflate: invalid block type".into()),
            ),
        ];
        for (name, bytes, deflate, expected) in rows {
            for chunk in [1, 3, 4096] {
                let got = read_all(&bytes, chunk, deflate);
                match (&got, &expected) {
                    (Err(g), Err(e)) if g.starts_with(e.split(": invalid").next().unwrap_or(e)) => {
                    }
                    _ => assert_eq!(got, expected, "{name}, read {chunk} bytes at a time"),
                }
            }
        }
    }

    #[test]
    fn a_compressed_stream_keeps_its_context_across_messages() {
        let mut deflate = Deflate::new(false);
        let bytes: Vec<u8> = (0..3)
            .flat_map(|_| frame(0xc1, &deflate.compress(b"the same words again")))
            .collect();
        let got = read_all(&bytes, 5, true).unwrap();
        assert_eq!(got, vec!["text:the same words again"; 3]);
        // The second message leans on the first's window: it is shorter.
        let mut fresh = Deflate::new(false);
        let first = fresh.compress(b"the same words again");
        let second = fresh.compress(b"the same words again");
        assert!(
            second.len() < first.len(),
            "{} !< {}",
            second.len(),
            first.len()
        );
    }

    #[test]
    fn eof_is_a_close_without_a_frame_and_a_short_read_drains_a_plain_socket() {
        struct Eof;
        impl Read for Eof {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Ok(0)
            }
        }
        let mut reader = FrameReader::new(&frame(0x81, b"left"), false, true);
        assert_eq!(
            reader.next(&mut Eof),
            Ok(Some(Incoming::Data { text: true }))
        );
        let (kind, _) = reader.next(&mut Eof).unwrap_err();
        assert_eq!(kind, ErrorKind::Closed);

        /// Counts its reads; always has one short frame.
        struct Counted(usize);
        impl Read for Counted {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.0 += 1;
                let bytes = frame(0x81, b"a");
                buf[..bytes.len()].copy_from_slice(&bytes);
                Ok(bytes.len())
            }
        }
        let mut wire = Counted(0);
        let mut reader = FrameReader::new(&[], false, true);
        assert!(matches!(reader.next(&mut wire), Ok(Some(_))));
        assert_eq!(reader.next(&mut wire), Ok(None), "drained: no second read");
        assert_eq!(wire.0, 1);
        reader.readable();
        assert!(matches!(reader.next(&mut wire), Ok(Some(_))));
        assert_eq!(wire.0, 2);
    }

    #[test]
    fn the_servers_extension_answer_is_read_or_refused() {
        let rows = [
            (None, true, Ok(None)),
            (Some(""), false, Ok(None)),
            (Some("permessage-deflate"), true, Ok(Some(false))),
            (
                Some("permessage-deflate; server_no_context_takeover; client_no_context_takeover"),
                true,
                Ok(Some(true)),
            ),
            (
                Some("permessage-deflate; server_max_window_bits=10"),
                true,
                Ok(Some(false)),
            ),
            (
                Some("permessage-deflate"),
                false,
                Err(
                    "the server agreed to extensions \"permessage-deflate\", not the ones offered (none)",
                ),
            ),
            (
                Some("x-webkit-deflate-frame"),
                true,
                Err(
                    "the server agreed to extensions \"x-webkit-deflate-frame\", not the ones offered (permessage-deflate)",
                ),
            ),
            (
                Some("permessage-deflate; client_max_window_bits=9"),
                true,
                Err(
                    "the server's permessage-deflate has a parameter not offered: \"client_max_window_bits=9\"",
                ),
            ),
        ];
        for (answer, offered, expected) in rows {
            let expected = expected.map_err(str::to_owned);
            assert_eq!(agreed_deflate(answer, offered), expected, "{answer:?}");
        }
    }
}
