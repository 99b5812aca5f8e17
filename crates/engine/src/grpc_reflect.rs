//! The wire under gRPC reflection ([`workload::Reflector`]): one call over a fresh
//! connection (h2c, or TLS with h2 in ALPN for an `https://` address), blocking, with
//! the engine's own HTTP/2 session. It runs once per address and service while the
//! targets are read, before any worker starts, so it is written for clarity, not speed.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use workload::{CallAnswer, Reflector, TlsOptions};

use crate::h2::frame::{self, Piece};
use crate::h2::{Event, Session, State};

/// How long a server has to take the connection, and then to answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// The most answer bytes kept: reflection sends file descriptors, kilobytes each.
const MAX_ANSWER_BYTES: usize = 64 << 20;

/// Reflection calls over h2c, or over TLS verified as the run's calls are (`-insecure`,
/// `-root-certs`, `-tls-server-name`, `-cert`/`-key`).
pub(crate) struct H2Reflector {
    pub tls: TlsOptions,
}

/// A connection either way.
trait Wire: Read + Write {}
impl<T: Read + Write> Wire for T {}

impl Reflector for H2Reflector {
    fn call(&self, address: &str, path: &str, body: &[u8]) -> Result<CallAnswer, String> {
        let mut wire: Box<dyn Wire> = match address.strip_prefix("https://") {
            Some(host_port) => Box::new(self.tls_connect(address, host_port)?),
            None => Box::new(connect(address)?),
        };
        let host_port = address.strip_prefix("https://").unwrap_or(address);
        let mut session = Session::new(State::Starting);
        let mut out = Vec::new();
        session.start(&mut out);
        let mut h1 = format!(
            "POST {path} HTTP/1.1\r\nhost: {host_port}\r\ncontent-type: application/grpc\r\nte: trailers\r\n\r\n"
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
            wire.write_all(&out)
                .and_then(|()| wire.flush())
                .map_err(|e| failed(address, &e))?;
            out.clear();
            let read = read_some(&mut *wire, &mut buffer, deadline, address)?;
            call.take(&mut session, &buffer[..read], &mut out)
                .map_err(|reason| format!("reflection at {address}: {reason}"))?;
        }
        Ok(call.answer)
    }
}

impl H2Reflector {
    /// A TLS connection to `host_port` that agreed to h2 in ALPN.
    fn tls_connect(
        &self,
        address: &str,
        host_port: &str,
    ) -> Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>, String> {
        let config = crate::tls::client_config(&self.tls, true).map_err(|e| e.to_string())?;
        let host = host_port
            .rsplit_once(':')
            .map_or(host_port, |(host, _)| host)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let name = self.tls.server_name.as_deref().unwrap_or(host).to_owned();
        let name = ServerName::try_from(name).map_err(|e| format!("{address}: {e}"))?;
        let tls = rustls::ClientConnection::new(Arc::clone(&config), name)
            .map_err(|e| format!("{address}: tls: {e}"))?;
        let mut stream = rustls::StreamOwned::new(tls, connect(host_port)?);
        while stream.conn.is_handshaking() {
            stream
                .conn
                .complete_io(&mut stream.sock)
                .map_err(|e| failed(address, &e))?;
        }
        if stream.conn.alpn_protocol() != Some(b"h2") {
            return Err(format!(
                "reflection at {address}: the server did not choose h2 in TLS ALPN (gRPC needs HTTP/2)"
            ));
        }
        Ok(stream)
    }
}

/// An I/O error of the reflection call at `address`; a TLS one with its usual fix.
fn failed(address: &str, err: &std::io::Error) -> String {
    let tls = err
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match tls {
        Some(tls) => format!(
            "reflection at {address}: tls: {tls}{}",
            crate::tls::hint(tls)
        ),
        None => format!("reflection at {address}: {err}"),
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
    wire: &mut dyn Wire,
    buffer: &mut [u8],
    deadline: Instant,
    address: &str,
) -> Result<usize, String> {
    if Instant::now() > deadline {
        return Err(format!(
            "{address} did not answer reflection within {ANSWER_TIMEOUT:?}"
        ));
    }
    match wire.read(buffer) {
        Ok(0) => Err(format!(
            "{address} closed the connection before answering reflection (is it a gRPC server?)"
        )),
        Ok(read) => Ok(read),
        Err(e) => Err(failed(address, &e)),
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
