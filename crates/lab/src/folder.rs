//! The run folder, which is the write-up:
//!
//! ```text
//! plan.toml            the plan as run, secrets REDACTED
//! log.txt              a line per step: time, what ran, verdict, why
//! summary.json         plan, mode, complete flag, per-variant results, per-step rows
//! summary.md           Markdown tables ready to paste
//! steps/NNN-VARIANT-RATE/records.llr, report.txt, hooks.txt
//! ```
//!
//! `summary.json` is rewritten after every step, so an interrupted plan leaves a
//! summary (marked incomplete) that `-resume` continues from.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use analysis::{Percentile, StepSummary, Verdict};
use serde::{Deserialize, Serialize};

use crate::LabError;
use crate::cells::{Cell, format_rate};
use crate::plan::Plan;

/// One step's row in `summary.json` and `summary.md`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    /// The step's folder under `steps/`, its key for `-resume`.
    pub step: String,
    /// The variant's name.
    pub variant: String,
    /// Axis values (matrix), hook values aside.
    pub params: BTreeMap<String, String>,
    /// `sweep`, `probe`, `confirm` or `matrix`.
    pub kind: String,
    /// 1-based run of a repeated cell.
    pub repeat: u32,
    /// The rate asked by the plan, requests per second (open model).
    pub rate_asked: Option<f64>,
    /// Users (closed model).
    pub users: Option<u64>,
    /// The rate the plan made due in the window, per second.
    pub asked_per_sec: f64,
    /// The rate sent in the window, per second.
    pub achieved_per_sec: f64,
    /// Requests in the window.
    pub requests: u64,
    /// Share of the window's requests that succeeded.
    pub success: f64,
    /// Latency percentiles of the window, in milliseconds.
    pub p50_ms: Option<f64>,
    /// 90th percentile, ms.
    pub p90_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// Slowest, ms.
    pub max_ms: Option<f64>,
    /// The generator's send lag p99, ms.
    pub lag_p99_ms: f64,
    /// Failed requests by kind (HTTP status or transport error kind).
    pub errors: BTreeMap<String, u64>,
    /// `pass`, `fail`, `inconclusive`, `failed` (the cell could not run) or `interrupted`.
    pub verdict: String,
    /// Every reason.
    pub why: String,
    /// The record file, relative to the run folder.
    pub records: Option<String>,
    /// The step's report, relative to the run folder.
    pub report: Option<String>,
    /// The hooks' output, relative to the run folder, if any hook ran.
    pub hooks: Option<String>,
    /// Wall time of the cell, hooks included, seconds.
    pub seconds: f64,
    /// Hook problems that did not fail the cell (a teardown).
    #[serde(skip)]
    pub notes: Vec<String>,
}

impl StepRow {
    /// An empty row for `cell`, run in `dir`.
    pub fn new(plan: &Plan, cell: &Cell, dir: &Path, run_dir: &Path) -> StepRow {
        let variant = &plan.variants[cell.variant];
        let has_hooks =
            variant.setup.is_some() || variant.ready.is_some() || variant.teardown.is_some();
        StepRow {
            step: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            variant: variant.name.clone(),
            params: cell.params.iter().cloned().collect(),
            kind: plan.mode.word().to_owned(),
            repeat: cell.repeat,
            rate_asked: cell.offer.rate(),
            users: match cell.offer {
                crate::cells::Offer::Users(users) => Some(users),
                _ => None,
            },
            hooks: has_hooks.then(|| crate::step::relative(&dir.join("hooks.txt"), run_dir)),
            records: Some(crate::step::relative(&dir.join("records.llr"), run_dir)),
            ..StepRow::default()
        }
    }

    /// The cell could not run: no verdict on the server, only the reason.
    pub fn set_failed(&mut self, why: String) {
        self.verdict = "failed".to_owned();
        self.why = why;
    }

    /// Copies a window's figures and its verdict.
    pub fn fill(&mut self, summary: &StepSummary, verdict: &Verdict) {
        let ms = |p: Percentile| {
            summary
                .latency_ns
                .iter()
                .find(|(q, _)| *q == p)
                .map(|(_, ns)| *ns as f64 / 1e6)
        };
        self.asked_per_sec = summary.asked_per_sec;
        self.achieved_per_sec = summary.sent_per_sec;
        self.requests = summary.requests;
        self.success = summary.success_ratio;
        self.p50_ms = ms(Percentile::P50);
        self.p90_ms = ms(Percentile::P90);
        self.p99_ms = ms(Percentile::P99);
        self.max_ms = ms(Percentile::Max);
        self.lag_p99_ms = summary.lag_p99_ns as f64 / 1e6;
        self.errors = summary.errors_by_kind.iter().cloned().collect();
        self.verdict = verdict.word().to_owned();
        self.why = verdict.why();
    }

    /// How the step's offer reads in a table: `500/s`, `10 users`, `schedule`.
    fn offer(&self) -> String {
        match (self.rate_asked, self.users) {
            (Some(rate), _) => format!("{}/s", format_rate(rate)),
            (None, Some(users)) => format!("{users} users"),
            (None, None) => "schedule".to_owned(),
        }
    }
}

/// One variant's answer to the plan's question.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VariantResult {
    /// The variant's name.
    pub variant: String,
    /// The highest rate that met the SLO, requests per second, if any did.
    pub max_rate_held: Option<f64>,
    /// How it was found.
    pub how: String,
    /// Search: probes run (the confirmation included).
    pub probes: Option<usize>,
    /// Search: wall time, seconds.
    pub seconds: Option<f64>,
}

/// `summary.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The plan's name.
    pub plan: String,
    /// The plan file as given.
    pub plan_file: String,
    /// `sweep`, `search` or `matrix`.
    pub mode: String,
    /// False while running, or when the plan was interrupted.
    pub complete: bool,
    /// Per variant, in plan order.
    pub variants: Vec<VariantResult>,
    /// Per step, in run order.
    pub steps: Vec<StepRow>,
}

impl RunSummary {
    /// Writes `summary.json` and `summary.md` (whole files, replaced atomically).
    pub fn write(&self, dir: &Path) -> Result<(), LabError> {
        let json = serde_json::to_string_pretty(self)
            .map_err(|e| LabError::Folder(format!("summary.json: {e}")))?;
        write_atomic(&dir.join("summary.json"), json.as_bytes())?;
        write_atomic(&dir.join("summary.md"), self.markdown().as_bytes())
    }

    /// Reads a run folder's `summary.json`, if there is one.
    pub fn read(dir: &Path) -> Result<Option<RunSummary>, LabError> {
        let path = dir.join("summary.json");
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| LabError::Folder(format!("{}: {e}", path.display()))),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(LabError::Io { path, source }),
        }
    }

    /// Markdown ready to paste: the maximum rate per variant with its improvement
    /// against the first variant (field report 000), then one row per step (001, 004).
    pub fn markdown(&self) -> String {
        let mut md = format!(
            "# {}\n\nmode: {}{}\n\n",
            self.plan,
            self.mode,
            if self.complete {
                ""
            } else {
                " (INCOMPLETE: interrupted or still running)"
            }
        );
        let baseline = self.variants.first().and_then(|v| v.max_rate_held);
        if self.mode != "matrix" {
            md.push_str("| variant | max req/s held | improvement | how |\n|---|---:|---:|---|\n");
            for v in &self.variants {
                let held = v.max_rate_held.map_or("none".to_owned(), format_rate);
                let improvement = match (v.max_rate_held, baseline) {
                    (Some(held), Some(base)) if base > 0.0 => format!("{:.2}x", held / base),
                    _ => "-".to_owned(),
                };
                let _ = writeln!(md, "| {} | {held} | {improvement} | {} |", v.variant, v.how);
            }
            md.push('\n');
        }
        let axes: Vec<&String> = self
            .steps
            .iter()
            .flat_map(|s| s.params.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        md.push_str("| step | variant |");
        for axis in &axes {
            let _ = write!(md, " {axis} |");
        }
        md.push_str(" offered | achieved/s | success | p50 | p90 | p99 | max | errors | verdict | why |\n|---|---|");
        md.push_str(&"---|".repeat(axes.len()));
        md.push_str("---:|---:|---:|---:|---:|---:|---:|---|---|---|\n");
        for s in &self.steps {
            let _ = write!(md, "| {} | {} |", s.step, s.variant);
            for axis in &axes {
                let _ = write!(md, " {} |", s.params.get(*axis).map_or("", String::as_str));
            }
            let errors = if s.errors.is_empty() {
                "-".to_owned()
            } else {
                s.errors
                    .iter()
                    .map(|(k, n)| format!("{k}: {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(
                md,
                " {} | {:.1} | {:.2}% | {} | {} | {} | {} | {errors} | {} | {} |",
                s.offer(),
                s.achieved_per_sec,
                s.success * 100.0,
                millis(s.p50_ms),
                millis(s.p90_ms),
                millis(s.p99_ms),
                millis(s.max_ms),
                s.verdict,
                s.why.replace('|', "/"),
            );
        }
        md
    }
}

fn millis(ms: Option<f64>) -> String {
    ms.map_or("-".to_owned(), |ms| format!("{ms:.1}ms"))
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), LabError> {
    let tmp = path.with_extension("tmp");
    let io = |source| LabError::Io {
        path: path.to_owned(),
        source,
    };
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// Appends a line to `log.txt`: time, what ran, verdict, why.
pub fn log_line(dir: &Path, line: &str) -> Result<(), LabError> {
    let path = dir.join("log.txt");
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut file = std::fs::File::options()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|source| LabError::Io {
            path: path.clone(),
            source,
        })?;
    writeln!(file, "{} {line}", record::format_timestamp(now_ns))
        .map_err(|source| LabError::Io { path, source })
}

/// Secret header values (`Authorization`, `Cookie`, `X-Api-Key`, `Proxy-Authorization`)
/// and URL passwords become `REDACTED`, so a run folder can be shared.
pub fn redact(text: &str) -> String {
    const SECRET_HEADERS: [&str; 4] = [
        "proxy-authorization:",
        "authorization:",
        "cookie:",
        "x-api-key:",
    ];
    let mut out = String::with_capacity(text.len());
    let lower = text.to_ascii_lowercase();
    let mut at = 0;
    while at < text.len() {
        let next = SECRET_HEADERS
            .iter()
            .filter_map(|h| lower[at..].find(h).map(|i| (at + i, h.len())))
            .min_by_key(|(i, _)| *i);
        let Some((start, len)) = next else { break };
        let value_start = start + len;
        // The value ends at the end of the line, a TOML string's quote or its `\n`.
        let value_end = text[value_start..]
            .find(['"', '\'', '\n'])
            .into_iter()
            .chain(text[value_start..].find("\\n"))
            .min()
            .map_or(text.len(), |i| value_start + i);
        out.push_str(&text[at..value_start]);
        if text[value_start..value_end].trim().is_empty() {
            out.push_str(&text[value_start..value_end]);
        } else {
            out.push_str(" REDACTED");
        }
        at = value_end;
    }
    out.push_str(&text[at..]);
    redact_url_passwords(&out)
}

/// `scheme://user:password@host` keeps the user and hides the password.
fn redact_url_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let authority_end = tail
            .find(|c: char| c == '/' || c == '"' || c == '\'' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        match (authority.rfind('@'), authority.find(':')) {
            (Some(at), Some(colon)) if colon < at => {
                out.push_str(&authority[..colon]);
                out.push_str(":REDACTED");
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted() {
        let rows = [
            (
                r#"targets = ["GET http://h/\nAuthorization: bearer abc\nX-Trace: 1"]"#,
                r#"targets = ["GET http://h/\nAuthorization: REDACTED\nX-Trace: 1"]"#,
            ),
            (
                r#"headers = ["Cookie: a=b; c=d"]"#,
                r#"headers = ["Cookie: REDACTED"]"#,
            ),
            ("x-api-key: k\nname = 1", "x-api-key: REDACTED\nname = 1"),
            (
                "url = \"postgres://u:pw@127.0.0.1/db\"",
                "url = \"postgres://u:REDACTED@127.0.0.1/db\"",
            ),
            (
                "plain = \"http://127.0.0.1:8080/\"",
                "plain = \"http://127.0.0.1:8080/\"",
            ),
            (
                "# an Authorization: header goes here",
                "# an Authorization: REDACTED",
            ),
        ];
        for (text, want) in rows {
            assert_eq!(redact(text), want, "{text}");
        }
    }

    #[test]
    fn markdown_has_the_improvement_and_step_tables() {
        let summary = RunSummary {
            plan: "p".to_owned(),
            mode: "sweep".to_owned(),
            complete: true,
            variants: vec![
                VariantResult {
                    variant: "ruby".to_owned(),
                    max_rate_held: Some(256.0),
                    how: "sweep".to_owned(),
                    ..VariantResult::default()
                },
                VariantResult {
                    variant: "go".to_owned(),
                    max_rate_held: Some(1024.0),
                    how: "sweep".to_owned(),
                    ..VariantResult::default()
                },
            ],
            steps: vec![StepRow {
                step: "000-ruby-256".to_owned(),
                variant: "ruby".to_owned(),
                rate_asked: Some(256.0),
                success: 1.0,
                p50_ms: Some(1.26),
                verdict: "pass".to_owned(),
                ..StepRow::default()
            }],
            ..RunSummary::default()
        };
        let md = summary.markdown();
        assert!(md.contains("| ruby | 256 | 1.00x | sweep |"), "{md}");
        assert!(md.contains("| go | 1024 | 4.00x | sweep |"), "{md}");
        assert!(
            md.contains("| 000-ruby-256 | ruby | 256/s | 0.0 | 100.00% | 1.3ms |"),
            "{md}"
        );
    }
}
