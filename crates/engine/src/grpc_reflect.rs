//! The wire under gRPC reflection ([`workload::Reflector`]): one call over a fresh
//! h2c connection, blocking, with the engine's own HTTP/2 session. It runs once per
//! address and service while the targets are read, before any worker starts, so it
//! is written for clarity, not speed.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use workload::{CallAnswer, Reflector};

use crate::h2::frame::{self, Piece};
use crate::h2::{Event, Session, State};

/// How long a server has to take the connection, and then to answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// The most answer bytes kept: reflection sends file descriptors, kilobytes each.
const MAX_ANSWER_BYTES: usize = 64 << 20;

/// Reflection calls over h2c (gRPC targets take no TLS yet).
pub(crate) struct H2Reflector;

impl Reflector for H2Reflector {
    fn call(&self, address: &str, path: &str, body: &[u8]) -> Result<CallAnswer, String> {
        let mut tcp = connect(address)?;
        let mut session = Session::new(State::Starting);
        let mut out = Vec::new();
        session.start(&mut out);
        let mut h1 = format!(
            "POST {path} HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/grpc\r\nte: trailers\r\n\r\n"
        )
        .into_bytes();
        h1.extend_from_slice(body);
        let id = session
            .send_request(0, &h1, false, &mut out)
            .map_err(|reason| format!("reflection at {address}: {reason}"))?;
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        let mut call = Call {
            id,
            answer: CallAnswer::default(),
            done: false,
        };
        let mut buffer = vec![0u8; 64 * 1024];
        while !call.done {
            tcp.write_all(&out)
                .map_err(|e| format!("reflection at {address}: {e}"))?;
            out.clear();
            let read = read_some(&mut tcp, &mut buffer, deadline, address)?;
            call.take(&mut session, &buffer[..read], &mut out)
                .map_err(|reason| format!("reflection at {address}: {reason}"))?;
        }
        Ok(call.answer)
    }
}

fn connect(address: &str) -> Result<TcpStream, String> {
    let socket = address
        .to_socket_addrs()
        .ok()
        .and_then(|mut all| all.next())
        .ok_or_else(|| format!("cannot resolve {address} to ask its reflection service"))?;
    let tcp = TcpStream::connect_timeout(&socket, CONNECT_TIMEOUT)
        .map_err(|e| {
            format!("cannot reach {address} to ask its reflection service for the message types (or give -proto FILE): {e}")
        })?;
    // A socket without a read timeout could wait forever on a silent server.
    tcp.set_read_timeout(Some(ANSWER_TIMEOUT))
        .and_then(|()| tcp.set_nodelay(true))
        .map_err(|e| format!("reflection at {address}: {e}"))?;
    Ok(tcp)
}

fn read_some(
    tcp: &mut TcpStream,
    buffer: &mut [u8],
    deadline: Instant,
    address: &str,
) -> Result<usize, String> {
    if Instant::now() > deadline {
        return Err(format!(
            "{address} did not answer reflection within {ANSWER_TIMEOUT:?}"
        ));
    }
    match tcp.read(buffer) {
        Ok(0) => Err(format!(
            "{address} closed the connection before answering reflection (is it a gRPC server?)"
        )),
        Ok(read) => Ok(read),
        Err(e) => Err(format!("reflection at {address}: {e}")),
    }
}

/// The one call's answer, as frames come.
struct Call {
    id: u32,
    answer: CallAnswer,
    done: bool,
}

impl Call {
    /// Reads the frames in `input`; anything to send back goes to `out`.
    fn take(
        &mut self,
        session: &mut Session,
        mut input: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        while !self.done {
            let before = input;
            let piece = session.reader.next(&mut input).map_err(|e| e.reason)?;
            match piece {
                None => break,
                Some(Piece::Data {
                    stream,
                    len,
                    end_stream,
                    data: (start, end),
                }) => {
                    let consumed = before.len() - input.len();
                    session.on_data(stream, len, out).map_err(|e| e.reason)?;
                    if stream == self.id {
                        let piece = &before[consumed - len..consumed];
                        self.data(&piece[start..end], end_stream)?;
                    }
                }
                Some(Piece::Frame(header)) => {
                    let event = session.on_frame(header, out).map_err(|e| e.reason)?;
                    self.event(session, event)?;
                }
            }
        }
        Ok(())
    }

    fn data(&mut self, bytes: &[u8], end_stream: bool) -> Result<(), String> {
        if self.answer.data.len() + bytes.len() > MAX_ANSWER_BYTES {
            return Err(format!("an answer over {MAX_ANSWER_BYTES} bytes"));
        }
        self.answer.data.extend_from_slice(bytes);
        // A stream ended by DATA has no trailers: no grpc-status.
        self.done = end_stream;
        Ok(())
    }

    fn event(&mut self, session: &Session, event: Event) -> Result<(), String> {
        match event {
            Event::Head {
                stream,
                status,
                end_stream,
                ..
            } if stream == self.id => {
                if status > 0 {
                    self.answer.http_status = status;
                }
                if let Some(code) = session.grpc_status {
                    self.answer.grpc_status = Some(code.0);
                    self.answer.grpc_message =
                        String::from_utf8_lossy(&session.grpc_message).into_owned();
                }
                self.done = end_stream;
                Ok(())
            }
            Event::Reset { stream, code } if stream == self.id => Err(format!(
                "the server reset the call ({})",
                frame::rst_stream_text(code)
            )),
            Event::GoAway { code, .. } => Err(format!(
                "the server closed the connection ({})",
                frame::goaway_text(code)
            )),
            _ => Ok(()),
        }
    }
}
