//! A plan file's syntax: the TOML shape (`Raw*`, as serde reads it, with the byte
//! spans of the values that need one) and [`Spot`], which turns a byte offset into an
//! error naming the file, the line and the field.

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use toml::Spanned;
use workload::TextOrNumber;

use crate::LabError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPlan {
    pub name: Option<String>,
    pub mode: Spanned<String>,
    #[serde(default, rename = "variant")]
    pub variants: Vec<Spanned<RawVariant>>,
    pub load: Spanned<RawLoad>,
    pub slo: Option<RawSlo>,
    pub search: Option<Spanned<RawSearch>>,
    pub matrix: Option<Spanned<RawMatrix>>,
    pub trace_store: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVariant {
    pub name: Spanned<String>,
    pub targets: Option<Vec<String>>,
    pub targets_file: Option<String>,
    pub base_url: Option<Spanned<String>>,
    pub setup: Option<String>,
    pub ready: Option<Spanned<RawReady>>,
    pub teardown: Option<String>,
    pub hook_timeout: Option<Spanned<String>>,
    pub monitor: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawReady {
    pub url: Option<String>,
    pub command: Option<String>,
    pub timeout: Option<Spanned<String>>,
    pub interval: Option<Spanned<String>>,
}

/// `[load]`: the keys of the plan's own, and every other key as written, checked
/// against the attack and run keys they must be (`load.rs`).
#[derive(Deserialize)]
pub(super) struct RawLoad {
    pub rates: Option<Spanned<Vec<f64>>>,
    pub users: Option<Spanned<Vec<i64>>>,
    pub schedule: Option<Spanned<String>>,
    pub step_duration: Option<Spanned<String>>,
    pub warmup: Option<Spanned<String>>,
    pub cooldown: Option<Spanned<String>>,
    pub stop_after_failures: Option<Spanned<u32>>,
    pub check_targets: Option<bool>,
    pub shards: Option<Spanned<i64>>,
    pub via: Option<Spanned<String>>,
    pub start_delay: Option<Spanned<String>>,
    pub kube: Option<Spanned<RawKube>>,
    #[serde(default, rename = "scenario")]
    pub scenarios: Vec<Spanned<RawScenario>>,
    #[serde(flatten)]
    pub fields: BTreeMap<String, toml::Value>,
}

/// `[load.kube]`: how `via = "kube"` runs each step's shards (`loadlab kube run`'s flags).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKube {
    pub image: Option<Spanned<String>>,
    pub namespace: Option<String>,
    pub host_network: Option<bool>,
    pub pull: Option<String>,
    pub cpu: Option<String>,
    pub memory: Option<String>,
    pub start_delay: Option<Spanned<String>>,
}

/// `[[load.scenario]]`: the keys a background scenario treats itself, and every other
/// key of an `attack -scenarios` table as written.
#[derive(Deserialize)]
pub(super) struct RawScenario {
    pub name: Spanned<String>,
    pub rate: Option<Spanned<TextOrNumber>>,
    pub slo: Option<Spanned<RawSlo>>,
    #[serde(flatten)]
    pub fields: BTreeMap<String, toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSlo {
    pub success: Option<Spanned<f64>>,
    pub p50: Option<Spanned<String>>,
    pub p90: Option<Spanned<String>>,
    pub p95: Option<Spanned<String>>,
    pub p99: Option<Spanned<String>>,
    #[serde(rename = "p99.9")]
    pub p999: Option<Spanned<String>>,
    pub max: Option<Spanned<String>>,
    pub mean: Option<Spanned<String>>,
    #[serde(default)]
    pub errors: BTreeMap<String, Spanned<f64>>,
    pub achieved: Option<Spanned<f64>>,
    pub max_lag: Option<Spanned<String>>,
    pub checks: Option<Spanned<RawChecks>>,
    pub connections_held: Option<Spanned<f64>>,
    pub messages_in_per_sec: Option<Spanned<f64>>,
    pub messages_out_per_sec: Option<Spanned<f64>>,
    pub message_p50: Option<Spanned<String>>,
    pub message_p90: Option<Spanned<String>>,
    pub message_p95: Option<Spanned<String>>,
    pub message_p99: Option<Spanned<String>>,
    pub message_p999: Option<Spanned<String>>,
    pub message_max: Option<Spanned<String>>,
}

impl RawSlo {
    /// Where the first bound on connections or messages is written, if one is.
    pub fn first_stream_bound(&self) -> Option<usize> {
        let shares = [
            &self.connections_held,
            &self.messages_in_per_sec,
            &self.messages_out_per_sec,
        ];
        let shares = shares.into_iter().flatten().map(|v| v.span().start);
        let durations = self.message_latencies().into_iter();
        let durations = durations.filter_map(|(_, v)| v.as_ref().map(|v| v.span().start));
        shares.chain(durations).min()
    }

    /// The message latency bounds by statistic, as written.
    pub fn message_latencies(&self) -> [(analysis::Percentile, &Option<Spanned<String>>); 6] {
        use analysis::Percentile;
        [
            (Percentile::P50, &self.message_p50),
            (Percentile::P90, &self.message_p90),
            (Percentile::P95, &self.message_p95),
            (Percentile::P99, &self.message_p99),
            (Percentile::P999, &self.message_p999),
            (Percentile::Max, &self.message_max),
        ]
    }
}

/// `checks` in an `slo`: one share for every check (`checks = 0.999`), or a table of
/// shares by check name (`[slo.checks]`, `"login: status 200" = 0.9999`; `"*"` is
/// every other check). TOML cannot give one key both, hence the two forms; serde's
/// untagged enums would lose the table's value spans, hence the visitor.
pub(super) enum RawChecks {
    Every(f64),
    ByName(BTreeMap<String, Spanned<f64>>),
}

impl<'de> Deserialize<'de> for RawChecks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawChecks, D::Error> {
        deserializer.deserialize_any(ChecksVisitor)
    }
}

struct ChecksVisitor;

impl<'de> Visitor<'de> for ChecksVisitor {
    type Value = RawChecks;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a share (0.999) or a table of shares by check name")
    }

    fn visit_f64<E>(self, value: f64) -> Result<RawChecks, E> {
        Ok(RawChecks::Every(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<RawChecks, E> {
        Ok(RawChecks::Every(value as f64))
    }

    fn visit_u64<E>(self, value: u64) -> Result<RawChecks, E> {
        Ok(RawChecks::Every(value as f64))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawChecks, A::Error> {
        let mut shares = BTreeMap::new();
        while let Some((name, share)) = map.next_entry::<String, Spanned<f64>>()? {
            shares.insert(name, share);
        }
        Ok(RawChecks::ByName(shares))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSearch {
    pub start: Option<Spanned<f64>>,
    pub growth: Option<Spanned<f64>>,
    pub precision: Option<Spanned<f64>>,
    pub max_probes: Option<Spanned<usize>>,
    pub max_time: Option<Spanned<String>>,
    pub min_rate: Option<Spanned<f64>>,
    pub max_rate: Option<Spanned<f64>>,
    pub over: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMatrix {
    pub axes: Spanned<BTreeMap<String, Spanned<Vec<toml::Value>>>>,
    pub repeat: Option<Spanned<i64>>,
    pub order: Option<Spanned<String>>,
    pub seed: Option<u64>,
}

/// Turns byte offsets into errors naming the file, line and field.
pub(super) struct Spot<'a> {
    pub text: &'a str,
    pub source_name: &'a str,
}

impl Spot<'_> {
    pub fn line(&self, offset: usize) -> u64 {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count() as u64
            + 1
    }

    pub fn err(&self, offset: usize, field: &str, reason: impl Into<String>) -> LabError {
        LabError::Plan {
            source_name: self.source_name.to_owned(),
            line: self.line(offset),
            field: field.to_owned(),
            reason: reason.into(),
        }
    }

    pub fn err_at_line(&self, line: u64, field: &str, reason: impl Into<String>) -> LabError {
        LabError::Plan {
            source_name: self.source_name.to_owned(),
            line,
            field: field.to_owned(),
            reason: reason.into(),
        }
    }

    pub fn duration(&self, value: &Spanned<String>, field: &str) -> Result<Duration, LabError> {
        units::parse_duration(value.get_ref())
            .map_err(|e| self.err(value.span().start, field, e.to_string()))
    }

    pub fn duration_or(
        &self,
        value: Option<&Spanned<String>>,
        field: &str,
        default: Duration,
    ) -> Result<Duration, LabError> {
        value.map_or(Ok(default), |v| self.duration(v, field))
    }

    /// The line of `key = ...` in the table whose header spans `span` (a key of a
    /// flattened table has no span of its own): its lines run to the next header.
    /// The header's line when the key is not found there.
    pub fn key_line(&self, span: Range<usize>, key: &str) -> u64 {
        let body_start = span.end.min(self.text.len());
        let rest = &self.text[body_start..];
        let body_end = rest
            .match_indices('\n')
            .map(|(i, _)| i + 1)
            .find(|&i| rest[i..].trim_start().starts_with('['))
            .map_or(self.text.len(), |i| body_start + i);
        let mut offset = body_start;
        for line in self.text[body_start..body_end].split_inclusive('\n') {
            let written = line.split('=').next().unwrap_or_default();
            if written.trim().trim_matches('"') == key {
                return self.line(offset);
            }
            offset += line.len();
        }
        self.line(span.start)
    }
}

/// serde names the field in its message (`unknown field \`ratez\``); keep it for the label.
pub(super) fn field_of(message: &str) -> Option<String> {
    if !message.starts_with("unknown field") && !message.starts_with("missing field") {
        return None;
    }
    let start = message.find('`')? + 1;
    let end = start + message[start..].find('`')?;
    Some(message[start..end].to_owned())
}

/// The key written on the line of `offset`, under its table: `load.rates` for a bad
/// value of `rates = ...` in `[load]` (serde's message names the value, not the key).
pub(super) fn key_at(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next()?;
    let key = line.split_once('=')?.0.trim().trim_matches('"');
    let table = before[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']'));
    Some(match table {
        Some(table) => format!("{table}.{key}"),
        None => key.to_owned(),
    })
}
