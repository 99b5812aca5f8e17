//! [`StepFields`]: a flow step's `[[scenario.step]]` table as written (with its
//! [`ExtractField`]s and [`CheckField`]s), for scenario files and plans alike;
//! [`crate::Flow::compile`] checks them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One `[[scenario.step]]` table, as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StepFields {
    /// The step's name in reports.
    pub name: Option<String>,
    /// The request in vegeta's http target syntax.
    pub request: Option<String>,
    /// An inline body (a template); a gRPC step's message, in JSON.
    pub body: Option<String>,
    /// A gRPC step's `.proto` files (instead of the scenario's `proto`).
    pub proto: Option<Vec<String>>,
    /// Where its `.proto` files' imports are looked up.
    pub import_path: Option<Vec<String>>,
    /// Variables to take from the answer: name -> expression.
    #[serde(default)]
    pub extract: BTreeMap<String, ExtractField>,
    /// Checks on the answer.
    #[serde(default)]
    pub checks: Vec<CheckField>,
    /// The pause after the answer: `2s`, `uniform(1s, 3s)`, `exp(2s)`.
    pub think: Option<String>,
    /// Times in a row the step is sent.
    pub repeat: Option<u32>,
    /// Run only when this variable was extracted or this check passed.
    #[serde(rename = "if")]
    pub condition: Option<String>,
    /// A WebSocket session instead of a request: `ws://HOST/PATH`, then header lines.
    pub ws: Option<String>,
    /// What a `ws` step does once connected, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<ActionFields>,
    /// A `ws` step sends a ping this often while connected (`5s`); a ping without a
    /// pong within the scenario's timeout fails the session.
    pub ping: Option<String>,
    /// A `ws` step asks for these subprotocols (`Sec-WebSocket-Protocol`); the server
    /// must choose one of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subprotocols: Vec<String>,
    /// A `ws` step offers this compression (`"deflate"`: permessage-deflate, RFC 7692)
    /// and uses it when the server agrees.
    pub compression: Option<String>,
    /// Where a `ws` step's messages carry the time they were sent (`json $.sent_ns`,
    /// `regex sent=([0-9]+)`): unix nanoseconds, read back as each message's one-way
    /// delay (a `send` writes it with `{{send_time_ns}}`).
    pub send_time: Option<String>,
    /// `"in order"`: each message that arrives on a `ws` step answers the oldest one
    /// sent and not yet answered (an echo): its round trip is timed from when that one
    /// was due.
    pub round_trip: Option<String>,
    /// A server-sent event stream instead of a request: `http://HOST/PATH`, then
    /// header lines.
    pub sse: Option<String>,
    /// A request whose answer is read as it comes (an LLM's token stream): `POST
    /// http://HOST/PATH`, then header lines, with `body`; its events when the answer is
    /// `text/event-stream`, else its chunks.
    pub stream: Option<String>,
    /// An `sse` step stops reading after this many events.
    pub events: Option<u64>,
    /// An `sse` step stops reading after this long: `10s`.
    pub listen: Option<String>,
    /// An `sse` step reconnects (with `Last-Event-ID`) at most this many times when the
    /// server ends the stream before `events` or `listen` are done.
    pub reconnect: Option<u32>,
    /// The line of the step's table, when the file says (set by the parser).
    #[serde(skip)]
    pub line: Option<u64>,
}

/// One action of a `ws` step: exactly one of `send`, `expect`, `hold`, `close`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ActionFields {
    /// The action's name in reports (after its step's): `send 1`, `expect 2` unless given.
    pub name: Option<String>,
    /// Send this text message (a template).
    pub send: Option<String>,
    /// With `send`: send it this often (`50ms`), `count` times in all.
    pub every: Option<String>,
    /// With `send` and `every`: how many messages; with `schedule`: at most this many.
    pub count: Option<u64>,
    /// With `send`: send it at this many messages per second over time, in the
    /// scenario `schedule` grammar (`line(1, 50, 30s)`), until the schedule ends.
    pub schedule: Option<String>,
    /// Wait for a message this check passes on (`body contains hi`, `json $.id exists`).
    pub expect: Option<String>,
    /// How long `expect` waits (default: the scenario's `timeout`).
    pub within: Option<String>,
    /// Variables taken from the message `expect` matched.
    #[serde(default)]
    pub extract: BTreeMap<String, ExtractField>,
    /// Keep the connection open this long: `5s`.
    pub hold: Option<String>,
    /// Close the connection with this code (1000: normal).
    pub close: Option<i64>,
}

/// `token = "json $.token"` or `coupon = { from = "json $.coupon", optional = true }`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum ExtractField {
    /// The expression.
    Text(String),
    /// The expression, and whether finding nothing is fine.
    Table {
        /// The expression.
        from: String,
        /// Finding nothing is not an error (steps may test it with `if`).
        #[serde(default)]
        optional: bool,
    },
}

/// `"status 200"` or `{ name = "logged in", expect = "status 200" }`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum CheckField {
    /// The expression, which names the check too.
    Text(String),
    /// A named check.
    Named {
        /// The check's name.
        name: String,
        /// The expression.
        expect: String,
    },
}
