//! Routes that hold their connection open (HTTP/1.1 only): `"websocket": "echo"`
//! upgrades and sends every text or binary message back; `"events": {"count", "every",
//! "data"}` answers a `text/event-stream` of `count` events, one every `every`, each
//! `data: DATA N` (N from 1), then ends the stream. The connection closes after either.
//! Framing is `tokio-tungstenite`'s; the upgrade answer is ours (the request was
//! already parsed by `http`).

use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use crate::duration_size::duration_from_json;
use crate::request::RequestHeaders;

/// An echo connection's frame read buffer. Small: tungstenite zero-fills the whole
/// buffer before a read, and at its default (128 KiB) tens of thousands of idle
/// connections would cost gigabytes; bigger messages grow it as they come.
const READ_BUFFER_BYTES: usize = 4096;

/// Keys of an `events` object.
const EVENTS_KEYS: &[&str] = &["count", "every", "data"];

/// What a streaming route does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StreamSpec {
    /// Echo every message back.
    Echo,
    /// `count` events, one every `every`.
    Events {
        count: u64,
        every: Duration,
        data: String,
    },
}

/// A streaming request, ready to be served on its connection.
pub(crate) struct StreamStart {
    pub spec: StreamSpec,
    /// The client's `Sec-WebSocket-Key` (a WebSocket route).
    pub key: Option<String>,
}

impl StreamStart {
    /// The start of `spec` for a request with `headers`; `Err` names what is missing.
    pub(crate) fn new(
        spec: &StreamSpec,
        headers: &RequestHeaders<'_>,
    ) -> Result<StreamStart, String> {
        let key = headers.find_map("sec-websocket-key", |v| {
            std::str::from_utf8(v).ok().map(|k| k.trim().to_owned())
        });
        if *spec == StreamSpec::Echo && key.is_none() {
            return Err(
                "a websocket route: send an upgrade request (Sec-WebSocket-Key)".to_owned(),
            );
        }
        Ok(StreamStart {
            spec: spec.clone(),
            key,
        })
    }
}

/// Reads a route's `websocket` (only `"echo"`) or `events` value; errors say the field.
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
        (Some(Value::String(kind)), None) if kind == "echo" => Ok(Some(StreamSpec::Echo)),
        (Some(other), None) => Err(("websocket".to_owned(), format!("{other}: want \"echo\""))),
        (None, Some(Value::Object(map))) => {
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
            let data = match map.get("data") {
                None => "event".to_owned(),
                Some(Value::String(text)) if !text.contains(['\r', '\n']) => text.clone(),
                Some(other) => {
                    return Err((
                        "events.data".to_owned(),
                        format!("{other}: want one line of text"),
                    ));
                }
            };
            Ok(Some(StreamSpec::Events { count, every, data }))
        }
        (None, Some(other)) => Err((
            "events".to_owned(),
            format!("{other}: want {{\"count\": N, \"every\": \"100ms\"}}"),
        )),
    }
}

/// Serves `start` on `stream`, whose request (and nothing after it) was read.
pub(crate) async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    start: StreamStart,
) -> std::io::Result<()> {
    match start.spec {
        StreamSpec::Echo => {
            let key = start.key.unwrap_or_default();
            let accept =
                tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
            let head = format!(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).await?;
            stream.flush().await?;
            let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER_BYTES);
            echo(WebSocketStream::from_raw_socket(stream, Role::Server, Some(config)).await).await;
            Ok(())
        }
        StreamSpec::Events { count, every, data } => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
                .await?;
            stream.flush().await?;
            for n in 1..=count {
                tokio::time::sleep(every).await;
                let event = format!("id: {n}\ndata: {data} {n}\n\n");
                let chunk = format!("{:x}\r\n{event}\r\n", event.len());
                stream.write_all(chunk.as_bytes()).await?;
                stream.flush().await?;
            }
            stream.write_all(b"0\r\n\r\n").await?;
            stream.flush().await
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
