//! [`ReplayFields`]: a replay as written (`attack -replay` flags, or a scenario's
//! `[scenario.replay]` table); the engine reads the logs they name.

use serde::{Deserialize, Serialize};

/// How to replay access logs, every field optional until checked.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayFields {
    /// The logs (`-replay`, repeatable: merged by time).
    #[serde(default)]
    pub files: Vec<String>,
    /// Only the logs' shape (requests per second over time) drives the attack's own
    /// targets or flow (`-replay-shape`).
    pub shape_only: Option<bool>,
    /// The logs' format (`-log-format`), `auto` when absent.
    pub log_format: Option<String>,
    /// An nginx `log_format` string the logs were written with (`-nginx-log-format`).
    pub nginx_log_format: Option<String>,
    /// For JSON lines: which keys hold which fields (`-log-fields`).
    pub log_fields: Option<String>,
    /// How much faster than logged (`-speed`), 1 when absent.
    pub speed: Option<f64>,
    /// The window's start (`-from`): a time, or `+5m` after the log's first request.
    pub from: Option<String>,
    /// The window's end (`-to`).
    pub to: Option<String>,
    /// Replay again from the start until `duration` (`-loop`).
    #[serde(rename = "loop")]
    pub repeat: Option<bool>,
    /// Only requests whose path and query match this regex (`-replay-path`).
    pub path: Option<String>,
    /// Only these methods (`-replay-method`).
    #[serde(default)]
    pub methods: Vec<String>,
    /// Only these statuses or classes, like `2xx` (`-replay-status`).
    #[serde(default)]
    pub statuses: Vec<String>,
    /// Only these hosts (`-replay-host`).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// How far out of order lines may be (`-reorder-window`), `10s` when absent.
    pub reorder_window: Option<String>,
    /// Where the requests go, `scheme://host:port` (in a scenario file; `-base-url`
    /// on the command line).
    pub base_url: Option<String>,
}
