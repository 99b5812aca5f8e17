//! Shared by the JSON and CSV sources: [`ImportSource`] reads a text input row by row
//! ([`Rows`], each codec's), and one imported row becomes a [`Record`] plus dictionary
//! entries interned on first sight.

use std::collections::HashMap;

use crate::RecordError;
use crate::meta::{AttackInfo, ErrorEntry, ErrorKind, LoadModel, RunTables, TargetInfo};
use crate::record::{GrpcStatus, Protocol, Record};
use crate::source::{InputFormat, RecordSource, SourceSummary};

const BATCH: usize = 4096;

/// A text input's rows, as one codec reads them.
pub(crate) trait Rows {
    /// The next row's result (blank rows skipped), or None at the end of the input;
    /// `Err` names the row and the field.
    fn next_result(&mut self) -> Result<Option<ImportedResult>, RecordError>;

    /// The error for `field` of the row just read (a value the dictionaries refused).
    fn row_error(&self, field: &str, reason: String) -> RecordError;
}

/// A JSON or CSV input as a [`RecordSource`]: its rows, and the dictionaries and
/// summary they build.
pub(crate) struct ImportSource<R: Rows> {
    rows: R,
    interner: Interner,
    summary: SourceSummary,
    done: bool,
}

impl<R: Rows> ImportSource<R> {
    pub(crate) fn new(rows: R, name: &str, format: InputFormat) -> ImportSource<R> {
        ImportSource {
            rows,
            interner: Interner::default(),
            summary: SourceSummary::new(name, format),
            done: false,
        }
    }
}

impl<R: Rows> RecordSource for ImportSource<R> {
    fn tables(&self) -> &RunTables {
        &self.interner.tables
    }

    fn summary(&self) -> &SourceSummary {
        &self.summary
    }

    fn watermark(&self) -> Option<u64> {
        None
    }

    fn next_batch(&mut self, out: &mut Vec<Record>) -> Result<bool, RecordError> {
        out.clear();
        while !self.done && out.len() < BATCH {
            let Some(result) = self.rows.next_result()? else {
                self.done = true;
                break;
            };
            let record = (self.interner.record(result))
                .map_err(|(field, reason)| self.rows.row_error(field, reason))?;
            out.push(record);
        }
        self.summary.records += out.len() as u64;
        self.summary
            .header
            .attacks
            .clone_from(&self.interner.tables.attacks);
        Ok(!out.is_empty() || !self.done)
    }
}

/// The fields of one imported result, as vegeta and our exports name them.
#[derive(Debug, Default)]
pub(crate) struct ImportedResult {
    pub attack: String,
    pub seq: Option<u64>,
    pub code: u16,
    pub sent_unix_ns: u64,
    pub latency_ns: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub error: String,
    pub method: String,
    pub url: String,
    pub send_lag_ns: u64,
    pub ttfb_ns: u64,
    pub error_kind: Option<ErrorKind>,
    /// Ours only; vegeta's results do not say (they read as HTTP/1.1).
    pub protocol: Protocol,
    /// Ours only: a gRPC call's status.
    pub grpc_status: Option<GrpcStatus>,
    /// Ours only, for a flow step's request: its step, its checks (in bit order), the
    /// names of those that failed, and whether the flow failed the answer.
    pub flow: ImportedFlow,
}

/// What our exports say about a flow step's request (nothing for a plain one).
#[derive(Debug, Default)]
pub(crate) struct ImportedFlow {
    pub step: Option<String>,
    pub checks: Vec<String>,
    pub checks_failed: Vec<String>,
    pub failed_by_flow: bool,
}

impl ImportedFlow {
    /// The record's `checks_failed` bits: `#N` is bit N (what our exports write for a
    /// bit whose name would not say which check it is), any other name the first
    /// check of that name not already counted. `Err` names what does not fit.
    pub(crate) fn bits(&self) -> Result<u32, (&'static str, String)> {
        if self.checks.len() > Record::MAX_CHECKS {
            return Err((
                "checks",
                format!(
                    "{} checks: a step has at most {}",
                    self.checks.len(),
                    Record::MAX_CHECKS
                ),
            ));
        }
        let mut bits = if self.failed_by_flow {
            Record::FAILED_BY_FLOW
        } else {
            0
        };
        for name in &self.checks_failed {
            let unused = || {
                self.checks
                    .iter()
                    .enumerate()
                    .position(|(i, check)| check == name && bits & (1 << i) == 0)
            };
            let index = unnamed_check_index(name).or_else(unused).ok_or_else(|| {
                (
                    "checks_failed",
                    format!("{name:?} is not one of the line's checks {:?}", self.checks),
                )
            })?;
            bits |= 1 << index;
        }
        Ok(bits)
    }
}

/// What our exports write for a failed check bit the target names no check for:
/// `#N`, N below [`Record::MAX_CHECKS`].
pub(crate) fn unnamed_check(index: usize) -> String {
    format!("#{index}")
}

/// The bit an `#N` name stands for.
pub(crate) fn unnamed_check_index(name: &str) -> Option<usize> {
    let index: usize = name.strip_prefix('#')?.parse().ok()?;
    (index < Record::MAX_CHECKS).then_some(index)
}

/// Builds dictionaries while importing.
#[derive(Default)]
pub(crate) struct Interner {
    pub tables: RunTables,
    attacks: HashMap<String, u16>,
    targets: HashMap<TargetInfo, u32>,
    errors: HashMap<ErrorEntry, u32>,
    lines: u64,
}

impl Interner {
    /// Turns an imported result into a record. `Err` names the field that overflowed.
    pub fn record(&mut self, result: ImportedResult) -> Result<Record, (&'static str, String)> {
        let line_seq = self.lines;
        self.lines += 1;
        let attack = self.attack(result.attack)?;
        let checks_failed = result.flow.bits()?;
        let target = self.target(TargetInfo {
            step: result.flow.step,
            checks: result.flow.checks,
            method: result.method,
            url: result.url,
        })?;
        let error = if result.error.is_empty() {
            0
        } else {
            let kind = result
                .error_kind
                .unwrap_or_else(|| ErrorKind::guess(&result.error, result.code));
            self.error(ErrorEntry {
                kind,
                text: result.error,
            })?
        };
        let intended_unix_ns = result.sent_unix_ns.checked_sub(result.send_lag_ns).ok_or((
            "send_lag",
            format!("{} ns is later than the timestamp", result.send_lag_ns),
        ))?;
        Ok(Record {
            checks_failed,
            attack,
            target,
            seq: result.seq.unwrap_or(line_seq),
            intended_unix_ns,
            send_lag_ns: result.send_lag_ns,
            latency_ns: result.latency_ns,
            ttfb_ns: result.ttfb_ns,
            status: result.code,
            error,
            bytes_in: result.bytes_in,
            bytes_out: result.bytes_out,
            protocol: result.protocol,
            grpc_status: result.grpc_status,
        })
    }

    fn attack(&mut self, name: String) -> Result<u16, (&'static str, String)> {
        if let Some(&id) = self.attacks.get(&name) {
            return Ok(id);
        }
        let id = u16::try_from(self.tables.attacks.len())
            .map_err(|_| ("attack", "more than 65536 distinct attack names".to_owned()))?;
        self.tables.attacks.push(AttackInfo {
            name: name.clone(),
            model: LoadModel::Unknown,
            ..AttackInfo::default()
        });
        self.attacks.insert(name, id);
        Ok(id)
    }

    fn target(&mut self, target: TargetInfo) -> Result<u32, (&'static str, String)> {
        if let Some(&id) = self.targets.get(&target) {
            return Ok(id);
        }
        let id = u32::try_from(self.tables.targets.len())
            .map_err(|_| ("url", "too many distinct targets".to_owned()))?;
        self.tables.targets.push(target.clone());
        self.targets.insert(target, id);
        Ok(id)
    }

    fn error(&mut self, entry: ErrorEntry) -> Result<u32, (&'static str, String)> {
        if let Some(&id) = self.errors.get(&entry) {
            return Ok(id);
        }
        self.tables.errors.push(entry.clone());
        let id = u32::try_from(self.tables.errors.len())
            .map_err(|_| ("error", "too many distinct errors".to_owned()))?;
        self.errors.insert(entry, id);
        Ok(id)
    }
}

impl ErrorKind {
    /// Classifies another tool's error text (vegeta's are Go `net/http` errors).
    pub fn guess(text: &str, status: u16) -> ErrorKind {
        let lower = text.to_ascii_lowercase();
        let has = |needle: &str| lower.contains(needle);
        if status != 0 && text.starts_with(&status.to_string()) {
            ErrorKind::Status
        } else if has("reset by peer") {
            ErrorKind::Reset
        } else if has("i/o timeout") && has("dial") {
            ErrorKind::ConnectTimeout
        } else if has("timeout") || has("deadline exceeded") {
            ErrorKind::Timeout
        } else if has("refused") || has("no route") || has("unreachable") || has("dial") {
            ErrorKind::Connect
        } else if has("tls") || has("x509") || has("certificate") {
            ErrorKind::Tls
        } else if has("redirect") {
            ErrorKind::Redirect
        } else if lower.ends_with("eof") || has("closed") {
            ErrorKind::Closed
        } else if has("malformed") || has("protocol") {
            ErrorKind::Protocol
        } else {
            ErrorKind::Other
        }
    }
}

/// Parses our exports' `protocol` (a [`Protocol::name`]); empty is HTTP/1.1, as
/// vegeta's results and our exports before the field.
pub(crate) fn parse_protocol(text: &str) -> Result<Protocol, String> {
    match text {
        "" => Ok(Protocol::Http1),
        name => Protocol::from_name(name).ok_or_else(|| {
            format!(
                "unknown protocol {name:?}: want one of {}",
                Protocol::known_names()
            )
        }),
    }
}

/// Parses an RFC 3339 timestamp (any offset) or integer unix nanoseconds.
pub(crate) fn parse_timestamp(text: &str) -> Result<u64, String> {
    if let Ok(ns) = text.parse::<u64>() {
        return Ok(ns);
    }
    let timestamp: jiff::Timestamp = text.parse().map_err(|err: jiff::Error| err.to_string())?;
    u64::try_from(timestamp.as_nanosecond()).map_err(|_| "before 1970".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time_format::format_timestamp;

    #[test]
    fn guesses_vegeta_error_kinds() {
        let rows: &[(&str, u16, ErrorKind)] = &[
            ("500 Internal Server Error", 500, ErrorKind::Status),
            ("422", 422, ErrorKind::Status),
            (
                "Get \"http://x\": dial tcp 203.0.113.1:80: connect: connection refused",
                0,
                ErrorKind::Connect,
            ),
            (
                "Get \"http://x\": dial tcp 203.0.113.1:80: i/o timeout",
                0,
                ErrorKind::ConnectTimeout,
            ),
            (
                "Get \"http://x\": context deadline exceeded (Client.Timeout exceeded)",
                0,
                ErrorKind::Timeout,
            ),
            (
                "read tcp 1.2.3.4:5->6.7.8.9:80: read: connection reset by peer",
                0,
                ErrorKind::Reset,
            ),
            ("Get \"http://x\": EOF", 0, ErrorKind::Closed),
            (
                "Get \"https://x\": x509: certificate signed by unknown authority",
                0,
                ErrorKind::Tls,
            ),
            (
                "Get \"http://x\": stopped after 10 redirects",
                0,
                ErrorKind::Redirect,
            ),
            ("something odd", 0, ErrorKind::Other),
        ];
        for &(text, status, want) in rows {
            assert_eq!(ErrorKind::guess(text, status), want, "{text}");
        }
    }

    #[test]
    fn timestamps_round_trip_and_accept_offsets() {
        let rows: &[(&str, Result<u64, &str>)] = &[
            (
                "2020-05-09T11:52:50.528381465+02:00",
                Ok(1_589_017_970_528_381_465),
            ),
            (
                "2020-05-09T09:52:50.528381465Z",
                Ok(1_589_017_970_528_381_465),
            ),
            ("1589017970528381465", Ok(1_589_017_970_528_381_465)),
            ("yesterday", Err("")),
            ("1960-01-01T00:00:00Z", Err("before 1970")),
        ];
        for (text, want) in rows {
            match (parse_timestamp(text), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want, "{text}"),
                (Err(err), Err(want)) => assert!(err.contains(want), "{text}: {err}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
        assert_eq!(
            format_timestamp(1_589_017_970_528_381_465),
            "2020-05-09T09:52:50.528381465Z"
        );
        assert_eq!(
            format_timestamp(1_589_017_970_500_000_000),
            "2020-05-09T09:52:50.5Z"
        );
    }
}
