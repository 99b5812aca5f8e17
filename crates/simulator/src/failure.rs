//! Failure modes: what a misbehaving origin does instead of (or while) answering.
//!
//! Modes without a status (`reset`, `close`, `stall`, `malformed`, `rst_stream`)
//! replace the answer; modes with one (`trickle`, `close_mid_body`, `chunked`,
//! `goaway`) change how the answer is sent. Each has an HTTP/1.1 and an HTTP/2 form
//! (`respond`, `respond_h2`; the table is in docs/SIMULATOR.md): `rst_stream` and
//! `goaway` name the HTTP/2 frames, and do the nearest thing over HTTP/1.1.
//! A mode is a string (`"reset"`) or an object with options
//! (`{"mode": "trickle", "chunk": "1kb", "every": "100ms"}`). The recipe's latency is
//! waited first in every mode, so a reset after `"2s"` is a slow reset.

use std::time::Duration;

use serde_json::Value;

use crate::duration_size::{duration_from_json, parse_size};
use crate::latency::reject_unknown_keys;

/// One way of misbehaving, with its options resolved to defaults.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// Abort the connection with a TCP reset (SO_LINGER 0), sending nothing.
    Reset,
    /// Close the connection cleanly (FIN) without answering.
    Close,
    /// Accept the request and never answer; close after `for_duration` if given.
    Stall { for_duration: Option<Duration> },
    /// Answer with bytes that are not an HTTP response, then close.
    Malformed,
    /// Send the body `chunk_bytes` at a time, waiting `every` between pieces.
    Trickle { chunk_bytes: usize, every: Duration },
    /// Announce the full length, send `after_bytes` of the body (default: half), close.
    CloseMidBody { after_bytes: Option<usize> },
    /// Send a valid `transfer-encoding: chunked` body in `chunk_bytes` pieces.
    Chunked { chunk_bytes: usize },
    /// HTTP/2: reset the stream with `code` (the connection lives on). HTTP/1.1 has no
    /// streams: a TCP reset, as `reset`.
    RstStream { code: h2::Reason },
    /// Answer, then send GOAWAY and finish the streams in flight (a server draining for
    /// a restart). HTTP/1.1: answer with `connection: close`, then close.
    GoAway,
}

/// Names accepted in place of a status code in a status mix.
pub(crate) const STATUSLESS_MODES: &[&str] =
    &["reset", "close", "stall", "malformed", "rst_stream"];

/// HTTP/2 error codes by their RFC 9113 names, lowercase (`rst_stream`'s `code`).
const ERROR_CODES: &[(&str, h2::Reason)] = &[
    ("no_error", h2::Reason::NO_ERROR),
    ("protocol_error", h2::Reason::PROTOCOL_ERROR),
    ("internal_error", h2::Reason::INTERNAL_ERROR),
    ("flow_control_error", h2::Reason::FLOW_CONTROL_ERROR),
    ("settings_timeout", h2::Reason::SETTINGS_TIMEOUT),
    ("stream_closed", h2::Reason::STREAM_CLOSED),
    ("frame_size_error", h2::Reason::FRAME_SIZE_ERROR),
    ("refused_stream", h2::Reason::REFUSED_STREAM),
    ("cancel", h2::Reason::CANCEL),
    ("compression_error", h2::Reason::COMPRESSION_ERROR),
    ("connect_error", h2::Reason::CONNECT_ERROR),
    ("enhance_your_calm", h2::Reason::ENHANCE_YOUR_CALM),
    ("inadequate_security", h2::Reason::INADEQUATE_SECURITY),
    ("http_1_1_required", h2::Reason::HTTP_1_1_REQUIRED),
];

/// An HTTP/2 error code by name (`"refused_stream"`) or number (`7`).
fn error_code(value: &Value) -> Result<h2::Reason, String> {
    let names = || {
        ERROR_CODES
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match value {
        Value::String(name) => ERROR_CODES
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, reason)| *reason)
            .ok_or_else(|| {
                format!(
                    "code: unknown HTTP/2 error code {name:?}; one of {}",
                    names()
                )
            }),
        Value::Number(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(h2::Reason::from)
            .ok_or_else(|| format!("code: {n} is not a 32-bit error code")),
        other => Err(format!(
            "code: expected an error code like \"refused_stream\", got {other}"
        )),
    }
}

impl Failure {
    /// Reads `"reset"` or `{"mode": "...", options}`.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        match value {
            Value::String(mode) => Self::with_options(mode, &Value::Null),
            Value::Object(object) => {
                let mode = object
                    .get("mode")
                    .and_then(Value::as_str)
                    .ok_or_else(|| "mode: missing (e.g. \"reset\", \"trickle\")".to_owned())?;
                Self::with_options(mode, value)
            }
            other => Err(format!("expected a mode name or an object, got {other}")),
        }
    }

    fn with_options(mode: &str, options: &Value) -> Result<Self, String> {
        let allowed: &[&str] = match mode {
            "reset" | "close" | "malformed" => &["mode"],
            "stall" => &["mode", "for"],
            "trickle" => &["mode", "chunk", "every"],
            "close_mid_body" => &["mode", "after"],
            "chunked" => &["mode", "chunk"],
            "rst_stream" => &["mode", "code"],
            "goaway" => &["mode"],
            other => {
                return Err(format!(
                    "unknown failure mode {other:?}; one of reset, close, stall, malformed, trickle, close_mid_body, chunked, rst_stream, goaway"
                ));
            }
        };
        reject_unknown_keys(options, allowed)?;
        let size = |key: &str, default: usize| -> Result<usize, String> {
            match options.get(key) {
                None | Some(Value::Null) => Ok(default),
                Some(Value::String(text)) => parse_size(text)
                    .map(|n| n as usize)
                    .map_err(|e| format!("{key}: {e}")),
                Some(other) => Err(format!("{key}: expected a size like \"1kb\", got {other}")),
            }
        };
        let duration = |key: &str| -> Result<Option<Duration>, String> {
            match options.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => duration_from_json(v)
                    .map(Some)
                    .map_err(|e| format!("{key}: {e}")),
            }
        };
        Ok(match mode {
            "reset" => Failure::Reset,
            "close" => Failure::Close,
            "malformed" => Failure::Malformed,
            "stall" => Failure::Stall {
                for_duration: duration("for")?,
            },
            "trickle" => Failure::Trickle {
                chunk_bytes: nonzero(size("chunk", 1024)?, "chunk")?,
                every: duration("every")?.unwrap_or(Duration::from_millis(100)),
            },
            "close_mid_body" => Failure::CloseMidBody {
                after_bytes: options
                    .get("after")
                    .filter(|v| !v.is_null())
                    .map(|_| size("after", 0))
                    .transpose()?,
            },
            "chunked" => Failure::Chunked {
                chunk_bytes: nonzero(size("chunk", 4096)?, "chunk")?,
            },
            "rst_stream" => Failure::RstStream {
                code: match options.get("code") {
                    None | Some(Value::Null) => h2::Reason::INTERNAL_ERROR,
                    Some(code) => error_code(code)?,
                },
            },
            _ => Failure::GoAway,
        })
    }

    /// True for modes that still send a status line (so a status code applies).
    pub fn sends_status(&self) -> bool {
        matches!(
            self,
            Failure::Trickle { .. }
                | Failure::CloseMidBody { .. }
                | Failure::Chunked { .. }
                | Failure::GoAway
        )
    }

    /// The label used in metrics and `current_count` for modes that send no status.
    pub fn label(&self) -> &'static str {
        match self {
            Failure::Reset => "reset",
            Failure::Close => "close",
            Failure::Stall { .. } => "stall",
            Failure::Malformed => "malformed",
            Failure::Trickle { .. } => "trickle",
            Failure::CloseMidBody { .. } => "close_mid_body",
            Failure::Chunked { .. } => "chunked",
            Failure::RstStream { .. } => "rst_stream",
            Failure::GoAway => "goaway",
        }
    }
}

fn nonzero(bytes: usize, key: &str) -> Result<usize, String> {
    if bytes == 0 {
        Err(format!("{key}: must be at least 1b"))
    } else {
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_modes_and_options() {
        let rows: Vec<(Value, Result<Failure, &str>)> = vec![
            (json!("reset"), Ok(Failure::Reset)),
            (json!("close"), Ok(Failure::Close)),
            (json!("malformed"), Ok(Failure::Malformed)),
            (json!("stall"), Ok(Failure::Stall { for_duration: None })),
            (
                json!({"mode": "stall", "for": "2s"}),
                Ok(Failure::Stall {
                    for_duration: Some(Duration::from_secs(2)),
                }),
            ),
            (
                json!("trickle"),
                Ok(Failure::Trickle {
                    chunk_bytes: 1024,
                    every: Duration::from_millis(100),
                }),
            ),
            (
                json!({"mode": "trickle", "chunk": "10b", "every": "5ms"}),
                Ok(Failure::Trickle {
                    chunk_bytes: 10,
                    every: Duration::from_millis(5),
                }),
            ),
            (
                json!("close_mid_body"),
                Ok(Failure::CloseMidBody { after_bytes: None }),
            ),
            (
                json!({"mode": "close_mid_body", "after": "1kb"}),
                Ok(Failure::CloseMidBody {
                    after_bytes: Some(1024),
                }),
            ),
            (
                json!({"mode": "chunked", "chunk": "1b"}),
                Ok(Failure::Chunked { chunk_bytes: 1 }),
            ),
            (json!("explode"), Err("unknown failure mode \"explode\"")),
            (json!({"chunk": "1kb"}), Err("mode: missing")),
            (
                json!({"mode": "reset", "for": "1s"}),
                Err("for: unknown field"),
            ),
            (
                json!({"mode": "trickle", "chunk": "0b"}),
                Err("chunk: must be at least 1b"),
            ),
            (
                json!({"mode": "trickle", "every": 5}),
                Err("every: bad duration 5"),
            ),
            (
                json!({"mode": "chunked", "chunk": 12}),
                Err("chunk: expected a size"),
            ),
            (json!(3), Err("expected a mode name")),
            (
                json!("rst_stream"),
                Ok(Failure::RstStream {
                    code: h2::Reason::INTERNAL_ERROR,
                }),
            ),
            (
                json!({"mode": "rst_stream", "code": "refused_stream"}),
                Ok(Failure::RstStream {
                    code: h2::Reason::REFUSED_STREAM,
                }),
            ),
            (
                json!({"mode": "rst_stream", "code": 8}),
                Ok(Failure::RstStream {
                    code: h2::Reason::CANCEL,
                }),
            ),
            (
                json!({"mode": "rst_stream", "code": "refused"}),
                Err("code: unknown HTTP/2 error code \"refused\"; one of no_error"),
            ),
            (
                json!({"mode": "rst_stream", "code": -1}),
                Err("code: -1 is not a 32-bit error code"),
            ),
            (
                json!({"mode": "rst_stream", "code": true}),
                Err("code: expected an error code"),
            ),
            (json!("goaway"), Ok(Failure::GoAway)),
            (
                json!({"mode": "goaway", "code": "cancel"}),
                Err("code: unknown field"),
            ),
        ];
        for (input, want) in rows {
            match (Failure::from_json(&input), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "input {input}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "input {input}: {got}"),
                (got, want) => panic!("input {input}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn status_bearing_modes() {
        assert!(Failure::Chunked { chunk_bytes: 1 }.sends_status());
        assert!(Failure::GoAway.sends_status());
        assert!(!Failure::Reset.sends_status());
        for name in STATUSLESS_MODES {
            assert!(
                !Failure::from_json(&json!(name)).unwrap().sends_status(),
                "{name}"
            );
        }
    }
}
