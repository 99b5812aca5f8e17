//! Routes that hold their connection open (HTTP/1.1 only): `"websocket": "echo"`
//! upgrades and sends every text or binary message back, `"silent"` upgrades and
//! never reads (pings go unanswered), `"broadcast"` sends every message to every
//! connection of the route (and with `every`, a tick to all of them at that rate);
//! `"events": {"count", "every",
//! "data"}` answers a `text/event-stream` of `count` events, one every `every`, each
//! `data: DATA N` (N from 1), then ends the stream; with `"first"` its head waits that
//! long, and `"format": "text"` sends plain `DATA N` lines as chunks instead (a long
//! chunked answer, an LLM's token stream's shape). The connection closes after either.
//! Framing is `tokio-tungstenite`'s; the upgrade answer is ours (the request was
//! already parsed by `http`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::broadcast;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use crate::duration_size::duration_from_json;
use crate::request::RequestHeaders;

/// An echo connection's frame read buffer. Small: tungstenite zero-fills the whole
/// buffer before a read, and at its default (128 KiB) tens of thousands of idle
/// connections would cost gigabytes; bigger messages grow it as they come.
const READ_BUFFER_BYTES: usize = 4096;

/// Keys of an `events` object.
const EVENTS_KEYS: &[&str] = &[
    "count", "every", "data", "retry", "first", "format", "event",
];
/// Keys of a `websocket` object.
const WEBSOCKET_KEYS: &[&str] = &["mode", "every", "data", "subprotocol", "limit"];
/// Messages a broadcast room keeps for a connection that reads slowly; past them it
/// misses the oldest (a slow consumer).
const ROOM_BACKLOG: usize = 1024;

/// What a streaming route does.
#[derive(Debug, Clone)]
pub(crate) enum StreamSpec {
    /// A WebSocket route.
    WebSocket(WebSocketSpec),
    /// `count` events, one every `every`, numbered on from the client's
    /// `Last-Event-ID`; `retry` is sent first when set.
    Events {
        count: u64,
        every: Duration,
        data: String,
        retry: Option<Duration>,
        /// The wait before the answer's head (its first byte).
        first: Duration,
        /// Plain `text/plain` lines as chunks, not events.
        text: bool,
        /// Each event's `event:` type (none: `message`, the default).
        event: Option<String>,
    },
}

/// A WebSocket route: what it does with messages, and the subprotocol it chooses.
#[derive(Debug, Clone)]
pub(crate) struct WebSocketSpec {
    pub mode: Mode,
    /// Chosen when the client asks for it among others; without it none is chosen.
    pub subprotocol: Option<String>,
    /// At most this many upgraded connections at once (`"limit": N`); beyond it the
    /// upgrade is refused with a 503, as a server out of connections would.
    pub limit: Option<Arc<ConnectionLimit>>,
}

/// A route's connection limit and the connections it holds now.
#[derive(Debug)]
pub(crate) struct ConnectionLimit {
    max: usize,
    open: std::sync::atomic::AtomicUsize,
}

/// One connection held under a [`ConnectionLimit`], given back when dropped.
struct Held<'a>(&'a ConnectionLimit);

impl ConnectionLimit {
    fn take(&self) -> Option<Held<'_>> {
        use std::sync::atomic::Ordering;
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < self.max).then_some(open + 1)
            })
            .ok()
            .map(|_| Held(self))
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0
            .open
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// What a WebSocket route does once upgraded.
#[derive(Debug, Clone)]
pub(crate) enum Mode {
    /// Sends every data message back.
    Echo,
    /// Reads nothing and sends nothing: pings go unanswered, the connection idles.
    Silent,
    /// Sends every message any connection sends to every connection of the route
    /// (the sender's too), and with `every`, `DATA N` to all of them every `every`.
    Broadcast(Arc<Room>),
}

/// A broadcast route's connections: a channel each subscribes to, and the time its
/// ticks count from, so every connection gets tick N at the same moment.
#[derive(Debug)]
pub(crate) struct Room {
    sender: broadcast::Sender<Arc<str>>,
    every: Option<Duration>,
    data: String,
    epoch: Instant,
}

/// A streaming request, ready to be served on its connection.
pub(crate) struct StreamStart {
    pub spec: StreamSpec,
    /// The client's `Sec-WebSocket-Key` (a WebSocket route).
    pub key: Option<String>,
    /// The subprotocols the client asked for, as written.
    pub protocols: Option<String>,
    /// The client's `Last-Event-ID`, when it is a number (an event stream).
    pub last_event_id: Option<u64>,
}

impl StreamStart {
    /// The start of `spec` for a request with `headers`; `Err` names what is missing.
    pub(crate) fn new(
        spec: &StreamSpec,
        headers: &RequestHeaders<'_>,
    ) -> Result<StreamStart, String> {
        let header = |name: &str| {
            headers.find_map(name, |v| {
                std::str::from_utf8(v).ok().map(|k| k.trim().to_owned())
            })
        };
        let key = header("sec-websocket-key");
        if matches!(spec, StreamSpec::WebSocket(_)) && key.is_none() {
            return Err(
                "a websocket route: send an upgrade request (Sec-WebSocket-Key)".to_owned(),
            );
        }
        Ok(StreamStart {
            spec: spec.clone(),
            key,
            protocols: header("sec-websocket-protocol"),
            last_event_id: header("last-event-id").and_then(|id| id.parse().ok()),
        })
    }
}

/// Reads a route's `websocket` or `events` value; errors say the field.
pub(crate) fn parse(
    websocket: Option<&Value>,
    events: Option<&Value>,
) -> Result<Option<StreamSpec>, (String, String)> {
    match (websocket, events) {
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err((
            "events".to_owned(),
            "a route has websocket or events, not both".to_owned(),
        )),
        (Some(Value::String(mode)), None) => {
            let mode = parse_mode(mode, None, None).map_err(|m| ("websocket".to_owned(), m))?;
            Ok(Some(StreamSpec::WebSocket(WebSocketSpec {
                mode,
                subprotocol: None,
                limit: None,
            })))
        }
        (Some(Value::Object(map)), None) => parse_websocket(map).map(Some),
        (Some(other), None) => Err((
            "websocket".to_owned(),
            format!("{other}: want \"echo\", \"silent\", \"broadcast\" or {{\"mode\": ...}}"),
        )),
        (None, Some(Value::Object(map))) => parse_events(map).map(Some),
        (None, Some(other)) => Err((
            "events".to_owned(),
            format!("{other}: want {{\"count\": N, \"every\": \"100ms\"}}"),
        )),
    }
}

fn parse_websocket(map: &serde_json::Map<String, Value>) -> Result<StreamSpec, (String, String)> {
    if let Some(key) = map.keys().find(|k| !WEBSOCKET_KEYS.contains(&k.as_str())) {
        return Err((format!("websocket.{key}"), "unknown field".to_owned()));
    }
    let mode = match map.get("mode") {
        Some(Value::String(mode)) => mode.as_str(),
        None => "echo",
        Some(other) => {
            return Err((
                "websocket.mode".to_owned(),
                format!("{other}: want \"echo\", \"silent\" or \"broadcast\""),
            ));
        }
    };
    let every = map
        .get("every")
        .map(duration_from_json)
        .transpose()
        .map_err(|m| ("websocket.every".to_owned(), m))?;
    if every.is_some_and(|every| every.is_zero()) {
        return Err(("websocket.every".to_owned(), "must be above 0".to_owned()));
    }
    let data = one_line(map.get("data"), "websocket.data")?;
    let subprotocol = match map.get("subprotocol") {
        None => None,
        Some(Value::String(name)) if !name.is_empty() && !name.contains([',', ' ']) => {
            Some(name.clone())
        }
        Some(other) => {
            return Err((
                "websocket.subprotocol".to_owned(),
                format!("{other}: want one name"),
            ));
        }
    };
    let limit = match map.get("limit") {
        None => None,
        Some(value) => match value.as_u64().filter(|&n| n > 0) {
            Some(max) => Some(Arc::new(ConnectionLimit {
                max: usize::try_from(max).unwrap_or(usize::MAX),
                open: 0.into(),
            })),
            None => {
                return Err((
                    "websocket.limit".to_owned(),
                    format!("{value}: want a whole number above 0"),
                ));
            }
        },
    };
    let mode = parse_mode(mode, every, data).map_err(|m| ("websocket.mode".to_owned(), m))?;
    Ok(StreamSpec::WebSocket(WebSocketSpec {
        mode,
        subprotocol,
        limit,
    }))
}

/// A mode by name; `every` and `data` only go with a broadcast.
fn parse_mode(mode: &str, every: Option<Duration>, data: Option<String>) -> Result<Mode, String> {
    match mode {
        "broadcast" => Ok(Mode::Broadcast(Arc::new(Room {
            sender: broadcast::channel(ROOM_BACKLOG).0,
            every,
            data: data.unwrap_or_else(|| "broadcast".to_owned()),
            epoch: Instant::now(),
        }))),
        _ if every.is_some() || data.is_some() => {
            Err(format!("{mode:?}: every and data go with \"broadcast\""))
        }
        "echo" => Ok(Mode::Echo),
        "silent" => Ok(Mode::Silent),
        other => Err(format!(
            "{other:?}: want \"echo\", \"silent\" or \"broadcast\""
        )),
    }
}

fn one_line(value: Option<&Value>, field: &str) -> Result<Option<String>, (String, String)> {
    match value {
        None => Ok(None),
        Some(Value::String(text)) if !text.contains(['\r', '\n']) => Ok(Some(text.clone())),
        Some(other) => Err((field.to_owned(), format!("{other}: want one line of text"))),
    }
}

fn parse_events(map: &serde_json::Map<String, Value>) -> Result<StreamSpec, (String, String)> {
    if let Some(key) = map.keys().find(|k| !EVENTS_KEYS.contains(&k.as_str())) {
        return Err((format!("events.{key}"), "unknown field".to_owned()));
    }
    let count = map
        .get("count")
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
        .ok_or((
            "events.count".to_owned(),
            "missing or not a whole number above 0".to_owned(),
        ))?;
    let every = map
        .get("every")
        .map(duration_from_json)
        .transpose()
        .map_err(|m| ("events.every".to_owned(), m))?
        .unwrap_or(Duration::from_millis(100));
    let data = one_line(map.get("data"), "events.data")?.unwrap_or_else(|| "event".to_owned());
    let retry = map
        .get("retry")
        .map(duration_from_json)
        .transpose()
        .map_err(|m| ("events.retry".to_owned(), m))?;
    let first = map
        .get("first")
        .map(duration_from_json)
        .transpose()
        .map_err(|m| ("events.first".to_owned(), m))?
        .unwrap_or_default();
    let text = match map.get("format").and_then(Value::as_str) {
        None if !map.contains_key("format") => false,
        Some("sse") => false,
        Some("text") => true,
        _ => {
            let format = map.get("format").cloned().unwrap_or_default();
            return Err((
                "events.format".to_owned(),
                format!("{format}: want \"sse\" or \"text\""),
            ));
        }
    };
    let event = one_line(map.get("event"), "events.event")?;
    if text && (retry.is_some() || event.is_some()) {
        return Err((
            "events.format".to_owned(),
            "\"text\" has no retry or event".to_owned(),
        ));
    }
    Ok(StreamSpec::Events {
        count,
        every,
        data,
        retry,
        first,
        text,
        event,
    })
}

/// Serves `start` on `stream`, whose request (and nothing after it) was read.
pub(crate) async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    start: StreamStart,
) -> std::io::Result<()> {
    match start.spec {
        StreamSpec::WebSocket(spec) => {
            let held = match spec.limit.as_deref().map(ConnectionLimit::take) {
                Some(None) => return refuse_over_limit(stream, &spec).await,
                held => held,
            };
            let key = start.key.unwrap_or_default();
            let accept =
                tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
            // The route's subprotocol, when the client asked for it.
            let asked = start.protocols.unwrap_or_default();
            let chosen = (spec.subprotocol.as_deref())
                .filter(|name| asked.split(',').any(|a| a.trim() == *name))
                .map(|name| format!("Sec-WebSocket-Protocol: {name}\r\n"))
                .unwrap_or_default();
            let head = format!(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n{chosen}\r\n"
            );
            stream.write_all(head.as_bytes()).await?;
            stream.flush().await?;
            let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER_BYTES);
            let ws = WebSocketStream::from_raw_socket(stream, Role::Server, Some(config)).await;
            match spec.mode {
                Mode::Echo => echo(ws).await,
                Mode::Silent => silent(ws).await,
                Mode::Broadcast(room) => broadcast_to(ws, &room).await,
            }
            drop(held);
            Ok(())
        }
        StreamSpec::Events {
            count,
            every,
            data,
            retry,
            first,
            text,
            event,
        } => {
            let event = event
                .map(|name| format!("event: {name}\n"))
                .unwrap_or_default();
            tokio::time::sleep(first).await;
            let content_type = if text {
                "text/plain"
            } else {
                "text/event-stream"
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).await?;
            if let Some(retry) = retry {
                let field = format!("retry: {}\n\n", retry.as_millis());
                let chunk = format!("{:x}\r\n{field}\r\n", field.len());
                stream.write_all(chunk.as_bytes()).await?;
            }
            stream.flush().await?;
            // A reconnecting client goes on from the last event it had.
            let first = start.last_event_id.unwrap_or(0).saturating_add(1);
            for n in first..first.saturating_add(count) {
                tokio::time::sleep(every).await;
                let event = if text {
                    format!("{data} {n}\n")
                } else {
                    format!("{event}id: {n}\ndata: {data} {n}\n\n")
                };
                let chunk = format!("{:x}\r\n{event}\r\n", event.len());
                stream.write_all(chunk.as_bytes()).await?;
                stream.flush().await?;
            }
            stream.write_all(b"0\r\n\r\n").await?;
            stream.flush().await
        }
    }
}

/// The upgrade refused: the route holds its `limit` of connections.
async fn refuse_over_limit<S: AsyncWrite + Unpin>(
    stream: &mut S,
    spec: &WebSocketSpec,
) -> std::io::Result<()> {
    let max = spec.limit.as_ref().map_or(0, |limit| limit.max);
    let body = format!("connection limit reached ({max} open)");
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await
}

/// Holds the connection without reading it (so pings go unanswered) until the client
/// goes.
async fn silent<S: AsyncRead + AsyncWrite + Unpin>(ws: WebSocketStream<&mut S>) {
    // Read and dropped as bytes, never as frames: nothing is ever answered.
    let stream = ws.into_inner();
    let mut sink = [0u8; 4096];
    while let Ok(1..) = stream.read(&mut sink).await {}
}

/// Sends every message any connection of the room sends, and the room's ticks, to
/// this connection until it closes.
async fn broadcast_to<S: AsyncRead + AsyncWrite + Unpin>(
    mut ws: WebSocketStream<&mut S>,
    room: &Room,
) {
    let mut inbox = room.sender.subscribe();
    // The next tick: the first after now on the room's clock.
    let mut tick = room.every.map(|every| {
        let elapsed = room.epoch.elapsed().as_nanos();
        let number = (elapsed / every.as_nanos().max(1)) as u64 + 1;
        (number, every)
    });
    loop {
        let due = tick.map(|(number, every): (u64, Duration)| {
            let at_ns = (every.as_nanos() as u64).saturating_mul(number);
            room.epoch + Duration::from_nanos(at_ns)
        });
        let sleep = async {
            match due {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            read = ws.next() => match read {
                Some(Ok(message)) if message.is_text() || message.is_binary() => {
                    let text: Arc<str> = message.to_text().unwrap_or_default().into();
                    let _ = room.sender.send(text);
                }
                Some(Ok(_)) => {}
                _ => return,
            },
            heard = inbox.recv() => match heard {
                Ok(text) => {
                    if ws.send(Message::text(text.as_ref())).await.is_err() {
                        return;
                    }
                }
                // A slow consumer missed the oldest messages: it goes on from here.
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            },
            () = sleep => {
                if let Some((number, every)) = tick {
                    let text = format!("{} {number}", room.data);
                    if ws.send(Message::text(text)).await.is_err() {
                        return;
                    }
                    tick = Some((number + 1, every));
                }
            }
        }
    }
}

/// Sends every data message back until the client closes (its close is answered by
/// the library).
async fn echo<S: AsyncRead + AsyncWrite + Unpin>(mut ws: WebSocketStream<&mut S>) {
    while let Some(Ok(message)) = ws.next().await {
        if (message.is_text() || message.is_binary()) && ws.send(message).await.is_err() {
            return;
        }
    }
}
