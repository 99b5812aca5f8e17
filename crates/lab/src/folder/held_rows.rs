//! Held connections in the run folder: each step's window figures
//! ([`ConnectionsRow`], `summary.json` `connections`) and each variant's answer in
//! connections held and messages a second ([`HeldAnswer`]), with their Markdown.
//! Only steps that had connections carry them, so an HTTP plan's files are unchanged.

use std::fmt::Write as _;

use analysis::{ConnectionsAsked, Percentile, StreamWindow};
use serde::{Deserialize, Serialize};

use crate::folder::{StepRow, StepVerdict, millis};

/// A step's connections and messages in its window (`crate::summarise::held`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionsRow {
    /// What `asked` counts: `users` (closed model) or `arrivals` (open model).
    pub asked_by: String,
    /// Connections asked: the users, or the window's arrivals.
    pub asked: u64,
    /// Connections held against `asked`: the peak for users, those opened for arrivals.
    pub held: u64,
    /// The most open at once (exact from the entries; without them, at a stats
    /// sample's time).
    pub peak_held: u64,
    /// Open at the window's last sample.
    pub held_at_end: u64,
    /// Opened in the window.
    pub opened: u64,
    /// Upgrades (or event streams) refused with a status, a 503 past a limit.
    pub refused: u64,
    /// Connections the server closed or that broke while in use.
    pub cut: u64,
    /// Messages sent a second over the window.
    pub messages_out_per_sec: f64,
    /// Messages (events) received a second over the window.
    pub messages_in_per_sec: f64,
    /// Message latency median, ms (`None` when no message was timed).
    pub message_p50_ms: Option<f64>,
    /// 90th percentile, ms.
    pub message_p90_ms: Option<f64>,
    /// 99th percentile, ms.
    pub message_p99_ms: Option<f64>,
    /// Slowest, ms.
    pub message_max_ms: Option<f64>,
}

impl ConnectionsRow {
    /// The row of a window's figures.
    pub fn of(window: &StreamWindow) -> ConnectionsRow {
        let ms = |p: Percentile| {
            (window.latency_ns.iter())
                .find(|(q, _)| *q == p)
                .map(|(_, ns)| *ns as f64 / 1e6)
        };
        let asked_by = match window.asked {
            ConnectionsAsked::Users(_) => "users",
            ConnectionsAsked::Arrivals(_) => "arrivals",
        };
        ConnectionsRow {
            asked_by: asked_by.to_owned(),
            asked: window.asked.count(),
            held: window.held(),
            peak_held: window.peak_held,
            held_at_end: window.held_at_end,
            opened: window.opened,
            refused: window.refused,
            cut: window.cut,
            messages_out_per_sec: window.messages_out_per_sec,
            messages_in_per_sec: window.messages_in_per_sec,
            message_p50_ms: ms(Percentile::P50),
            message_p90_ms: ms(Percentile::P90),
            message_p99_ms: ms(Percentile::P99),
            message_max_ms: ms(Percentile::Max),
        }
    }

    /// The cells of the connections table, after the step's name: asked, held, peak,
    /// at the end, opened, refused, cut, messages out/s and in/s, message p50, p99, max.
    pub(crate) fn texts(&self) -> [String; 11] {
        [
            format!("{} {}", self.asked, self.asked_by),
            self.held.to_string(),
            self.peak_held.to_string(),
            self.held_at_end.to_string(),
            self.opened.to_string(),
            self.refused.to_string(),
            self.cut.to_string(),
            format!("{:.1}", self.messages_out_per_sec),
            format!("{:.1}", self.messages_in_per_sec),
            millis(self.message_p50_ms),
            format!(
                "{} / {}",
                millis(self.message_p99_ms),
                millis(self.message_max_ms)
            ),
        ]
    }
}

/// The headers of [`ConnectionsRow::texts`], after `step`.
pub(crate) const CONNECTION_HEADERS: [&str; 11] = [
    "asked",
    "held",
    "peak held",
    "held at end",
    "opened",
    "refused",
    "cut",
    "msgs out/s",
    "msgs in/s",
    "msg p50",
    "msg p99 / max",
];

/// A variant's answer when its steps held connections: its highest passing step's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HeldAnswer {
    /// The step's users (a closed step), the most that met the SLO.
    pub users: Option<u64>,
    /// The most connections the step held at once (its `connections.peak_held`).
    pub connections: u64,
    /// Messages received a second (a server's fan-out).
    pub messages_in_per_sec: f64,
    /// Messages sent a second.
    pub messages_out_per_sec: f64,
    /// The step it was read from.
    pub step: String,
}

impl HeldAnswer {
    /// The answer of a variant's highest passing step `row`, when it had connections.
    pub fn of(row: &StepRow) -> Option<HeldAnswer> {
        let connections = row.connections.as_ref()?;
        (row.verdict == StepVerdict::Pass).then(|| HeldAnswer {
            users: row.users,
            connections: connections.peak_held,
            messages_in_per_sec: connections.messages_in_per_sec,
            messages_out_per_sec: connections.messages_out_per_sec,
            step: row.step.clone(),
        })
    }

    /// `500 connections (500 users), 1000.0 messages/s in, 10.0 out`.
    pub fn words(&self) -> String {
        let users = self
            .users
            .map_or(String::new(), |u| format!(" ({u} users)"));
        format!(
            "{} connections{users}, {:.1} messages/s in, {:.1} out",
            self.connections, self.messages_in_per_sec, self.messages_out_per_sec
        )
    }
}

/// `## Connections`: a row per step that had connections; empty when none had.
pub(crate) fn connections_markdown(steps: &[StepRow]) -> String {
    let rows: Vec<(&StepRow, &ConnectionsRow)> = (steps.iter())
        .filter_map(|s| Some((s, s.connections.as_ref()?)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut md = "## Connections\n\nEach step's window: connections asked (users, or arrivals) \
                  and held (users: the most open at once; arrivals: those opened), refused \
                  upgrades, connections cut by the server, messages a second each way and \
                  message latency.\n\n| step |"
        .to_owned();
    for header in CONNECTION_HEADERS {
        let _ = write!(md, " {header} |");
    }
    md.push_str("\n|---|");
    md.push_str(&"---:|".repeat(CONNECTION_HEADERS.len()));
    md.push('\n');
    for (step, row) in rows {
        let _ = writeln!(md, "| {} | {} |", step.step, row.texts().join(" | "));
    }
    md.push('\n');
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window() -> StreamWindow {
        StreamWindow {
            asked: ConnectionsAsked::Users(600),
            peak_held: 500,
            held_at_end: 498,
            opened: 520,
            refused: 1234,
            cut: 2,
            messages_out_per_sec: 10.0,
            messages_in_per_sec: 5000.0,
            latency_ns: vec![
                (Percentile::P50, 2_000_000),
                (Percentile::P99, 40_000_000),
                (Percentile::Max, 51_000_000),
            ],
        }
    }

    #[test]
    fn a_held_step_has_a_connections_row_and_an_answer_when_it_passed() {
        let row = ConnectionsRow::of(&window());
        assert_eq!(
            (row.asked_by.as_str(), row.asked, row.held),
            ("users", 600, 500)
        );
        assert_eq!(
            row.message_p90_ms, None,
            "p90 was not in the window's figures"
        );
        let step = |verdict| StepRow {
            step: "003-ws-users-600".to_owned(),
            users: Some(600),
            connections: Some(row.clone()),
            verdict,
            ..StepRow::default()
        };
        let md = connections_markdown(&[step(StepVerdict::Fail), StepRow::default()]);
        assert!(
            md.contains("| 003-ws-users-600 | 600 users | 500 | 500 | 498 | 520 | 1234 | 2 | 10.0 | 5000.0 | 2.0ms | 40.0ms / 51.0ms |"),
            "{md}"
        );
        assert_eq!(md.matches("\n| ").count(), 2, "a header and one row: {md}");
        assert_eq!(HeldAnswer::of(&step(StepVerdict::Fail)), None);
        let answer = HeldAnswer::of(&step(StepVerdict::Pass)).expect("an answer");
        assert_eq!(
            answer.words(),
            "500 connections (600 users), 5000.0 messages/s in, 10.0 out"
        );
        assert_eq!(connections_markdown(&[StepRow::default()]), "");
        assert_eq!(HeldAnswer::of(&StepRow::default()), None);
    }
}
