//! Agent mode: `loadlab monitor -serve 127.0.0.1:PORT` runs on the machine under test
//! ([`AgentServer`]) and streams its samples to `-monitor agent=HOST:PORT` on the
//! attacking side ([`AgentClient`]), as Yandex.Tank's telegraf-over-SSH did.
//!
//! The protocol (one TCP connection per client, see `docs/MONITOR.md`):
//!
//! ```text
//! client -> agent   "LOADLAB-MONITOR 1 <client unix ns>\n"
//! agent  -> client  "LOADLAB-MONITOR 1 <agent unix ns>\n"   (or "ERROR <reason>\n")
//! agent  -> client  a record file: preamble, header, then series (0x40) and samples
//!                   (0x41) blocks as the agent samples, the first series block
//!                   holding every sampler and series known so far
//! ```
//! The client estimates the clock offset from the handshake (the agent's time against
//! the middle of the round trip) and moves sample times onto its own clock.

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use record::{
    BinaryReader, Compression, RecordSource, RecordWriter, RunHeader, SampleBatch, SampleFrame,
    SampleTables, SamplerInfo,
};

use crate::MonitorError;
use crate::clock::system_unix_ns;
use crate::hub::{Reading, SeriesDef};
use crate::sampler::ThreadContext;

const HELLO: &str = "LOADLAB-MONITOR 1";
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(2);
/// Frames queued per client; a client this far behind is dropped (it reconnects).
const CLIENT_QUEUE: usize = 1024;

struct ClientSlot {
    peer: SocketAddr,
    frames: SyncSender<Arc<SampleFrame>>,
}

#[derive(Default)]
struct Shared {
    tables: SampleTables,
    clients: Vec<ClientSlot>,
}

/// The agent's listening side. Feed it every frame of the local monitor with
/// [`AgentServer::broadcast`]; it accepts clients on its own thread.
pub struct AgentServer {
    local_addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
}

impl AgentServer {
    /// Listens on `addr` (`HOST:PORT`; loopback unless the user asks otherwise).
    pub fn bind(addr: &str) -> Result<AgentServer, MonitorError> {
        let fail = |source| MonitorError::Agent {
            addr: addr.to_owned(),
            source,
        };
        let listener = TcpListener::bind(addr).map_err(fail)?;
        let local_addr = listener.local_addr().map_err(fail)?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let accepting = Arc::clone(&shared);
        thread::Builder::new()
            .name("loadlab-mon-serve".to_owned())
            .spawn(move || accept_loop(&listener, &accepting))
            .map_err(|source| MonitorError::Thread {
                what: "agent".to_owned(),
                source,
            })?;
        Ok(AgentServer { local_addr, shared })
    }

    /// The address the agent listens on (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Sends a frame to every client; a client that cannot keep up is dropped.
    pub fn broadcast(&self, frame: &SampleFrame) {
        let mut shared = self.lock();
        if shared.tables.extend_from(frame).is_err() {
            return;
        }
        let frame = Arc::new(frame.clone());
        shared
            .clients
            .retain(|client| match client.frames.try_send(Arc::clone(&frame)) {
                Ok(()) => true,
                Err(TrySendError::Full(_)) => {
                    eprintln!(
                        "loadlab monitor: agent client {} fell behind; dropping it",
                        client.peer
                    );
                    false
                }
                Err(TrySendError::Disconnected(_)) => false,
            });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Mutex<Shared>>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let shared = Arc::clone(shared);
        let _ = thread::Builder::new()
            .name("loadlab-mon-client".to_owned())
            .spawn(move || serve_client(stream, &shared));
    }
}

/// Handshake, then the tables so far, then every frame until the client goes away.
fn serve_client(mut stream: TcpStream, shared: &Mutex<Shared>) {
    let Ok(peer) = stream.peer_addr() else { return };
    if let Err(reason) = agent_handshake(&mut stream) {
        let _ = writeln!(stream, "ERROR {reason}");
        return;
    }
    let (tx, frames) = sync_channel(CLIENT_QUEUE);
    let snapshot = {
        let mut shared = shared.lock().unwrap_or_else(PoisonError::into_inner);
        shared.clients.push(ClientSlot { peer, frames: tx });
        SampleFrame {
            samplers: shared.tables.samplers.clone(),
            series: shared.tables.series.clone(),
            ..SampleFrame::default()
        }
    };
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let _ = stream_frames(stream, &snapshot, &frames);
}

fn agent_handshake(stream: &mut TcpStream) -> Result<(), String> {
    stream
        .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(&mut *stream)
        .take_line(&mut line)
        .map_err(|err| format!("no hello: {err}"))?;
    if !line.starts_with(HELLO) {
        return Err("expected a loadlab monitor client".to_owned());
    }
    writeln!(stream, "{HELLO} {}", system_unix_ns()).map_err(|e| e.to_string())
}

fn stream_frames(
    stream: TcpStream,
    snapshot: &SampleFrame,
    frames: &Receiver<Arc<SampleFrame>>,
) -> Result<(), record::RecordError> {
    let header = RunHeader {
        tool: format!("loadlab {} monitor agent", env!("CARGO_PKG_VERSION")),
        start_unix_ns: system_unix_ns(),
        ..RunHeader::default()
    };
    let mut writer = RecordWriter::new(stream, &header, Compression::Raw)?;
    writer.write_samples(snapshot)?;
    for frame in frames {
        writer.write_samples(&frame)?;
    }
    Ok(())
}

/// Reads one line byte by byte, so nothing after it is consumed from the stream.
trait TakeLine {
    fn take_line(&mut self, line: &mut String) -> std::io::Result<()>;
}

impl<R: std::io::Read> TakeLine for BufReader<R> {
    fn take_line(&mut self, line: &mut String) -> std::io::Result<()> {
        let mut bytes = Vec::new();
        let mut byte = [0u8; 1];
        while bytes.len() < 256 {
            let read = self.get_mut().read(&mut byte)?;
            if read == 0 || byte[0] == b'\n' {
                break;
            }
            bytes.push(byte[0]);
        }
        *line = String::from_utf8_lossy(&bytes).into_owned();
        Ok(())
    }
}

/// The attacking side of an agent connection: a sampler thread that connects (and
/// reconnects each tick while the agent is away, each attempt a gap), then forwards
/// every remote batch as readings of `sampler@HOST:PORT`.
pub(crate) struct AgentClient {
    info: SamplerInfo,
    addr: String,
}

impl AgentClient {
    pub(crate) fn new(info: SamplerInfo, addr: String) -> AgentClient {
        AgentClient { info, addr }
    }

    pub(crate) fn run(self, context: &ThreadContext) {
        let ThreadContext {
            anchor, interval, ..
        } = *context;
        let mut index = anchor.next_tick_index(Instant::now(), interval);
        loop {
            if context.stop.wait_until(anchor.tick(index, interval)) {
                return;
            }
            let reason = match self.connect(interval) {
                Ok((stream, offset_ns)) => {
                    context.stop.watch_socket(&stream);
                    if context.stop.is_stopped() {
                        return;
                    }
                    match self.forward(stream, offset_ns, context) {
                        Ok(()) => "the agent closed the connection".to_owned(),
                        Err(reason) => reason,
                    }
                }
                Err(reason) => reason,
            };
            if context.stop.is_stopped() {
                return;
            }
            let mut reading = Reading::new(&self.info, anchor.unix_ns_at(Instant::now()));
            reading.gap(None, reason);
            if context.readings.send(reading).is_err() {
                return;
            }
            index = anchor
                .next_tick_index(Instant::now(), interval)
                .max(index + 1);
        }
    }

    /// Connects and shakes hands; returns the stream and the agent's clock minus ours.
    fn connect(&self, timeout: Duration) -> Result<(TcpStream, i128), String> {
        let address: SocketAddr = self
            .addr
            .to_socket_addrs()
            .map_err(|err| format!("resolve {}: {err}", self.addr))?
            .next()
            .ok_or_else(|| format!("resolve {}: no address", self.addr))?;
        let mut stream = TcpStream::connect_timeout(&address, timeout)
            .map_err(|err| format!("connect: {err}"))?;
        stream
            .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
            .map_err(|e| e.to_string())?;
        let sent_ns = system_unix_ns();
        writeln!(stream, "{HELLO} {sent_ns}").map_err(|err| format!("hello: {err}"))?;
        let mut line = String::new();
        BufReader::new(&mut stream)
            .take_line(&mut line)
            .map_err(|err| format!("hello: {err}"))?;
        let received_ns = system_unix_ns();
        let agent_ns = line
            .strip_prefix(HELLO)
            .and_then(|rest| rest.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                format!(
                    "not a loadlab monitor agent: {:?}",
                    line.chars().take(60).collect::<String>()
                )
            })?;
        stream.set_read_timeout(None).map_err(|e| e.to_string())?;
        let middle = (i128::from(sent_ns) + i128::from(received_ns)) / 2;
        Ok((stream, i128::from(agent_ns) - middle))
    }

    /// Forwards batches until the stream ends; an error says why it ended early.
    fn forward(
        &self,
        stream: TcpStream,
        offset_ns: i128,
        context: &ThreadContext,
    ) -> Result<(), String> {
        let mut source =
            BinaryReader::open(stream, &self.addr).map_err(|err| units::error_chain(&err))?;
        let (mut records, mut batches) = (Vec::new(), Vec::new());
        loop {
            let more = source
                .next_batch(&mut records)
                .map_err(|err| units::error_chain(&err))?;
            source.drain_samples(&mut batches);
            let tables = &source.summary().samples.tables;
            for batch in batches.drain(..) {
                for reading in self.readings(tables, &batch, offset_ns) {
                    if context.readings.send(reading).is_err() {
                        return Ok(());
                    }
                }
            }
            if !more {
                return match &source.summary().torn {
                    Some(torn) => Err(format!("agent stream damaged: {}", torn.reason)),
                    None => Ok(()),
                };
            }
        }
    }

    /// One remote batch as readings, one per remote sampler, on our clock.
    fn readings(
        &self,
        tables: &SampleTables,
        batch: &SampleBatch,
        offset_ns: i128,
    ) -> Vec<Reading> {
        let at_unix_ns = u64::try_from(i128::from(batch.at_unix_ns) - offset_ns).unwrap_or(0);
        let mut by_sampler: BTreeMap<u32, Reading> = BTreeMap::new();
        for value in &batch.values {
            let info = &tables.series[value.series as usize];
            self.reading_for(&mut by_sampler, tables, info.sampler, at_unix_ns)
                .value(def(info), value.value);
        }
        for gap in &batch.gaps {
            let series = gap.series.map(|s| def(&tables.series[s as usize]));
            self.reading_for(&mut by_sampler, tables, gap.sampler, at_unix_ns)
                .gap(series, gap.reason.clone());
        }
        by_sampler.into_values().collect()
    }

    /// The reading of remote sampler `sampler`, named `NAME@HOST:PORT` here.
    fn reading_for<'a>(
        &self,
        by_sampler: &'a mut BTreeMap<u32, Reading>,
        tables: &SampleTables,
        sampler: u32,
        at_unix_ns: u64,
    ) -> &'a mut Reading {
        by_sampler.entry(sampler).or_insert_with(|| {
            let remote = &tables.samplers[sampler as usize];
            let info = SamplerInfo {
                kind: remote.kind.clone(),
                name: format!("{}@{}", remote.name, self.addr),
            };
            Reading::new(&info, at_unix_ns)
        })
    }
}

fn def(info: &record::SeriesInfo) -> SeriesDef {
    SeriesDef {
        name: info.name.clone(),
        labels: info.labels.clone(),
        unit: info.unit.clone(),
        kind: info.kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_refuses_strangers() {
        let server = AgentServer::bind("127.0.0.1:0").unwrap();
        let mut stream = TcpStream::connect(server.local_addr()).unwrap();
        writeln!(stream, "GET / HTTP/1.1").unwrap();
        let mut line = String::new();
        BufReader::new(&mut stream).take_line(&mut line).unwrap();
        assert!(
            line.starts_with("ERROR expected a loadlab monitor client"),
            "{line}"
        );
        let client = AgentClient::new(SamplerInfo::default(), "127.0.0.1:1".to_owned());
        let err = client.connect(Duration::from_millis(200)).unwrap_err();
        assert!(err.starts_with("connect:"), "{err}");
    }
}
