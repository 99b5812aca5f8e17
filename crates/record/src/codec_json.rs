//! JSON lines: vegeta's `encode -to json` results, and ours (the same keys plus
//! `send_lag`, `ttfb`, `error_kind`, `protocol` when not HTTP/1.1, and for a flow
//! step's request `step`, `checks`, `checks_failed` and `failed_by_flow`), so vegeta
//! tools can read our exports too (Go's decoder skips keys it does not know).

use std::io::{BufRead, Write};

use serde_json::{Map, Value};

use crate::RecordError;
use crate::import::{
    ImportSource, ImportedFlow, ImportedResult, Rows, parse_protocol, parse_timestamp,
    unnamed_check, unnamed_check_index,
};
use crate::meta::{ErrorKind, RunTables, TargetInfo};
use crate::record::{GrpcStatus, Protocol, Record};
use crate::source::InputFormat;
use crate::time_format::format_timestamp;

/// Reads JSON lines into records.
pub(crate) type JsonSource<R> = ImportSource<JsonRows<R>>;

/// JSON lines, one result each.
pub(crate) struct JsonRows<R: BufRead> {
    input: R,
    name: String,
    line: u64,
    text: String,
}

impl<R: BufRead> JsonSource<R> {
    pub(crate) fn open(input: R, name: &str) -> Self {
        let rows = JsonRows {
            input,
            name: name.to_owned(),
            line: 0,
            text: String::new(),
        };
        ImportSource::new(rows, name, InputFormat::Json)
    }
}

impl<R: BufRead> Rows for JsonRows<R> {
    fn next_result(&mut self) -> Result<Option<ImportedResult>, RecordError> {
        loop {
            self.text.clear();
            let read = (self.input.read_line(&mut self.text))
                .map_err(|err| RecordError::io(&self.name, err))?;
            if read == 0 {
                return Ok(None);
            }
            self.line += 1;
            if !self.text.trim().is_empty() {
                return self.parse_line().map(Some);
            }
        }
    }

    fn row_error(&self, field: &str, reason: String) -> RecordError {
        RecordError::Parse {
            source_name: self.name.clone(),
            line: self.line,
            field: field.to_owned(),
            reason,
        }
    }
}

impl<R: BufRead> JsonRows<R> {
    fn parse_line(&self) -> Result<ImportedResult, RecordError> {
        let fail = |field: &str, reason: String| self.row_error(field, reason);
        let value: Value = serde_json::from_str(&self.text)
            .map_err(|err| fail("(line)", format!("not JSON: {err}")))?;
        let Value::Object(object) = value else {
            return Err(fail("(line)", "expected a JSON object".to_owned()));
        };
        let fields = Fields { object: &object };
        let timestamp = fields
            .string("timestamp")
            .map_err(|r| fail("timestamp", r))?;
        let result = ImportedResult {
            attack: fields.opt_string("attack").map_err(|r| fail("attack", r))?,
            seq: fields.opt_u64("seq").map_err(|r| fail("seq", r))?,
            code: fields
                .opt_u64("code")
                .map_err(|r| fail("code", r))?
                .unwrap_or(0)
                .try_into()
                .map_err(|_| fail("code", "out of range".to_owned()))?,
            sent_unix_ns: parse_timestamp(&timestamp).map_err(|r| fail("timestamp", r))?,
            latency_ns: fields
                .opt_u64("latency")
                .map_err(|r| fail("latency", r))?
                .ok_or_else(|| fail("latency", "missing".to_owned()))?,
            bytes_out: fields
                .opt_u64("bytes_out")
                .map_err(|r| fail("bytes_out", r))?
                .unwrap_or(0),
            bytes_in: fields
                .opt_u64("bytes_in")
                .map_err(|r| fail("bytes_in", r))?
                .unwrap_or(0),
            error: fields.opt_string("error").map_err(|r| fail("error", r))?,
            method: fields.opt_string("method").map_err(|r| fail("method", r))?,
            url: fields.opt_string("url").map_err(|r| fail("url", r))?,
            send_lag_ns: fields
                .opt_u64("send_lag")
                .map_err(|r| fail("send_lag", r))?
                .unwrap_or(0),
            ttfb_ns: fields
                .opt_u64("ttfb")
                .map_err(|r| fail("ttfb", r))?
                .unwrap_or(0),
            error_kind: match fields
                .opt_string("error_kind")
                .map_err(|r| fail("error_kind", r))?
                .as_str()
            {
                "" => None,
                kind => Some(
                    ErrorKind::from_name(kind)
                        .ok_or_else(|| fail("error_kind", format!("unknown kind {kind:?}")))?,
                ),
            },
            protocol: parse_protocol(
                &fields
                    .opt_string("protocol")
                    .map_err(|r| fail("protocol", r))?,
            )
            .map_err(|r| fail("protocol", r))?,
            grpc_status: match fields
                .opt_string("grpc_status")
                .map_err(|r| fail("grpc_status", r))?
                .as_str()
            {
                "" => None,
                text => Some(GrpcStatus::from_text(text).map_err(|r| fail("grpc_status", r))?),
            },
            flow: ImportedFlow {
                step: fields.opt_text("step").map_err(|r| fail("step", r))?,
                checks: fields.strings("checks").map_err(|r| fail("checks", r))?,
                checks_failed: fields
                    .strings("checks_failed")
                    .map_err(|r| fail("checks_failed", r))?,
                failed_by_flow: fields
                    .flag("failed_by_flow")
                    .map_err(|r| fail("failed_by_flow", r))?,
            },
        };
        Ok(result)
    }
}

struct Fields<'a> {
    object: &'a Map<String, Value>,
}

impl Fields<'_> {
    fn string(&self, key: &str) -> Result<String, String> {
        match self.object.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Number(n)) => Ok(n.to_string()),
            Some(other) => Err(format!("expected a string, found {other}")),
            None => Err("missing".to_owned()),
        }
    }

    fn opt_string(&self, key: &str) -> Result<String, String> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!("expected a string, found {other}")),
        }
    }

    /// A string that may be absent (`None`), unlike [`Fields::opt_string`]'s empty one.
    fn opt_text(&self, key: &str) -> Result<Option<String>, String> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("expected a string, found {other}")),
        }
    }

    /// An array of strings; absent is empty.
    fn strings(&self, key: &str) -> Result<Vec<String>, String> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(format!("expected strings, found {other}")),
                })
                .collect(),
            Some(other) => Err(format!("expected an array of strings, found {other}")),
        }
    }

    /// A boolean; absent is false.
    fn flag(&self, key: &str) -> Result<bool, String> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(flag)) => Ok(*flag),
            Some(other) => Err(format!("expected true or false, found {other}")),
        }
    }

    fn opt_u64(&self, key: &str) -> Result<Option<u64>, String> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("expected a whole number >= 0, found {n}")),
            Some(other) => Err(format!("expected a number, found {other}")),
        }
    }
}

/// Writes records as JSON lines.
pub struct JsonEncoder<W: Write> {
    out: W,
    line: Vec<u8>,
}

impl<W: Write> JsonEncoder<W> {
    /// An encoder writing one JSON object per line to `out`.
    pub fn new(out: W) -> Self {
        JsonEncoder {
            out,
            line: Vec::with_capacity(512),
        }
    }

    /// Writes one record as a line; `tables` resolves its attack, target and error ids.
    pub fn write(&mut self, record: &Record, tables: &RunTables) -> std::io::Result<()> {
        let line = &mut self.line;
        line.clear();
        let (attack, target, error) = tables.names_of(record);
        line.extend_from_slice(b"{\"attack\":");
        json_string(line, attack);
        write!(
            line,
            ",\"seq\":{},\"code\":{},\"timestamp\":\"{}\",\"latency\":{},\"bytes_out\":{},\"bytes_in\":{},\"error\":",
            record.seq,
            record.status,
            format_timestamp(record.sent_unix_ns()),
            record.latency_ns,
            record.bytes_out,
            record.bytes_in
        )?;
        json_string(line, error.map_or("", |e| e.text.as_str()));
        line.extend_from_slice(b",\"body\":\"\",\"method\":");
        json_string(line, target.map_or("", |t| t.method.as_str()));
        line.extend_from_slice(b",\"url\":");
        json_string(line, target.map_or("", |t| t.url.as_str()));
        write!(
            line,
            ",\"headers\":{{}},\"send_lag\":{},\"ttfb\":{}",
            record.send_lag_ns, record.ttfb_ns
        )?;
        if let Some(error) = error {
            write!(line, ",\"error_kind\":\"{}\"", error.kind.name())?;
        }
        // Only when not HTTP/1.1: an HTTP/1.1 run's lines stay as they were before the
        // field, and a missing `protocol` reads back as HTTP/1.1.
        if record.protocol != Protocol::Http1 {
            write!(line, ",\"protocol\":\"{}\"", record.protocol.name())?;
        }
        // Only for a gRPC call, by name (`code N` past the names).
        if let Some(status) = record.grpc_status {
            write!(line, ",\"grpc_status\":\"{status}\"")?;
        }
        write_flow(line, record, target);
        line.extend_from_slice(b"}\n");
        self.out.write_all(line)
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A flow step's keys: `step`, `checks` (the step's checks, in bit order, so a reader
/// counts passes too), `checks_failed` (the names of those that failed) and
/// `failed_by_flow` when the flow failed the answer. None for a plain target, so its
/// lines are what they were before flows.
fn write_flow(line: &mut Vec<u8>, record: &Record, target: Option<&TargetInfo>) {
    let (step, checks) = target.map_or((None, &[][..]), |t| (t.step.as_deref(), &t.checks[..]));
    if let Some(step) = step {
        line.extend_from_slice(b",\"step\":");
        json_string(line, step);
    }
    if !checks.is_empty() || record.checks_failed & !Record::FAILED_BY_FLOW != 0 {
        line.extend_from_slice(b",\"checks\":");
        json_strings(line, checks.iter().map(String::as_str));
        line.extend_from_slice(b",\"checks_failed\":");
        json_failed_checks(line, record, checks);
    }
    if record.checks_failed & Record::FAILED_BY_FLOW != 0 {
        line.extend_from_slice(b",\"failed_by_flow\":true");
    }
}

/// The names of the record's failed checks (of `checks`, its target's) as a JSON
/// array, in bit order. A bit whose name would not say which check it is (the target
/// names no check for it, names two checks alike, or a check is named like `#N`
/// itself) is `#N`, so it reads back as the same bit.
pub(crate) fn json_failed_checks(out: &mut Vec<u8>, record: &Record, checks: &[String]) {
    out.push(b'[');
    let failed = (0..Record::MAX_CHECKS).filter(|&index| record.check_failed(index));
    for (n, index) in failed.enumerate() {
        if n > 0 {
            out.push(b',');
        }
        match checks.get(index) {
            Some(name)
                if unnamed_check_index(name).is_none()
                    && checks.iter().filter(|c| *c == name).count() == 1 =>
            {
                json_string(out, name);
            }
            _ => json_string(out, &unnamed_check(index)),
        }
    }
    out.push(b']');
}

/// A JSON array of strings.
pub(crate) fn json_strings<'a>(out: &mut Vec<u8>, items: impl Iterator<Item = &'a str>) {
    out.push(b'[');
    for (n, item) in items.enumerate() {
        if n > 0 {
            out.push(b',');
        }
        json_string(out, item);
    }
    out.push(b']');
}

pub(crate) fn json_string(out: &mut Vec<u8>, text: &str) {
    // serde_json escapes exactly as JSON requires; writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

#[cfg(test)]
mod tests {
    use super::*;

    const VEGETA_LINE: &str = r#"{"attack":"","seq":0,"code":200,"timestamp":"2020-05-09T11:52:50.528381465+02:00","latency":2315900,"bytes_out":0,"bytes_in":12,"error":"","body":"SGVsbG8sIFdvcmxkIQ==","method":"GET","url":"http://localhost:8080/","headers":{"Content-Type":["text/plain"]}}"#;

    fn read_all(text: &str) -> Result<(Vec<Record>, RunTables), RecordError> {
        crate::input::read_text(text, "in.json")
    }

    #[test]
    fn imports_vegeta_json() {
        let text = format!(
            "{VEGETA_LINE}\n\n{}\n",
            VEGETA_LINE
                .replace("\"code\":200", "\"code\":500")
                .replace("\"error\":\"\"", "\"error\":\"500 Internal Server Error\"")
        );
        let (records, tables) = read_all(&text).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].intended_unix_ns, 1_589_017_970_528_381_465);
        assert_eq!(records[0].latency_ns, 2_315_900);
        assert_eq!(records[0].bytes_in, 12);
        assert_eq!(records[1].status, 500);
        let error = tables.error(records[1].error).unwrap();
        assert_eq!(
            (error.kind, error.text.as_str()),
            (ErrorKind::Status, "500 Internal Server Error")
        );
        assert_eq!(tables.targets[0].url, "http://localhost:8080/");
    }

    #[test]
    fn names_the_line_and_field_of_bad_input() {
        let rows: &[(&str, &str)] = &[
            ("{\"latency\":1}", "in.json:1: field \"timestamp\": missing"),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\"}",
                "field \"latency\": missing",
            ),
            (
                "{\"timestamp\":\"soon\",\"latency\":1}",
                "field \"timestamp\"",
            ),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":-5}",
                "field \"latency\": expected a whole number",
            ),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"code\":70000}",
                "field \"code\": out of range",
            ),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"error_kind\":\"gremlins\",\"error\":\"x\"}",
                "unknown kind",
            ),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"send_lag\":99999999999999999999}",
                "send_lag",
            ),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"protocol\":\"h3\"}",
                "field \"protocol\": unknown protocol \"h3\": want one of http/1.1, h2",
            ),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"protocol\":2}",
                "field \"protocol\": expected a string",
            ),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"checks\":\"status 200\"}",
                "field \"checks\": expected an array of strings",
            ),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"checks\":[200]}",
                "field \"checks\": expected strings, found 200",
            ),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"checks\":[\"a\"],\"checks_failed\":[\"b\"]}",
                "field \"checks_failed\": \"b\" is not one of the line's checks [\"a\"]",
            ),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"checks\":[\"a\"],\"checks_failed\":[\"a\",\"a\"]}",
                "field \"checks_failed\": \"a\" is not one of",
            ),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"checks_failed\":[\"#31\"]}",
                "field \"checks_failed\": \"#31\" is not one of",
            ),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"failed_by_flow\":1}",
                "field \"failed_by_flow\": expected true or false",
            ),
            (
                "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"step\":[]}",
                "field \"step\": expected a string",
            ),
            ("{\"timestamp\": ", "in.json:1: field \"(line)\": not JSON"),
            ("[1,2]", "expected a JSON object"),
        ];
        for (line, want) in rows {
            let text = format!("{VEGETA_LINE}\n{line}\n");
            let err = read_all(&text).unwrap_err().to_string();
            let want = want.replace("in.json:1", "in.json:2");
            assert!(err.contains(&want), "{line}: {err}");
        }
    }

    #[test]
    fn our_json_round_trips() {
        let (records, tables) = read_all(VEGETA_LINE).unwrap();
        let mut record = records[0];
        record.send_lag_ns = 1234;
        record.ttfb_ns = 999;
        let mut encoder = JsonEncoder::new(Vec::new());
        encoder.write(&record, &tables).unwrap();
        let out = encoder.finish().unwrap();
        let (again, again_tables) = read_all(std::str::from_utf8(&out).unwrap()).unwrap();
        assert_eq!(again[0], record);
        assert_eq!(again_tables.targets, tables.targets);
        assert!(!String::from_utf8_lossy(&out).contains("grpc_status"));
        // A gRPC call's status by name, read back to the code.
        let calls: Vec<Record> = [0, 4, 255 - 1]
            .into_iter()
            .map(|code| Record {
                grpc_status: Some(GrpcStatus(code)),
                ..record
            })
            .collect();
        let mut encoder = JsonEncoder::new(Vec::new());
        for call in &calls {
            encoder.write(call, &tables).unwrap();
        }
        let out = String::from_utf8(encoder.finish().unwrap()).unwrap();
        for want in [
            "\"grpc_status\":\"OK\"",
            "\"grpc_status\":\"DEADLINE_EXCEEDED\"",
            "\"grpc_status\":\"code 254\"",
        ] {
            assert!(out.contains(want), "{want} in {out}");
        }
        let (again, _) = read_all(&out).unwrap();
        assert_eq!(again, calls);
        let bad = "{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"grpc_status\":\"SOON\"}";
        let err = read_all(bad).unwrap_err().to_string();
        assert!(
            err.contains("field \"grpc_status\": \"SOON\" is no gRPC status"),
            "{err}"
        );
    }

    #[test]
    fn too_many_checks_name_the_field() {
        let checks: Vec<String> = (0..=Record::MAX_CHECKS)
            .map(|i| format!("\"c{i}\""))
            .collect();
        let line = format!(
            "{{\"timestamp\":\"2020-05-09T11:52:50Z\",\"latency\":1,\"checks\":[{}]}}",
            checks.join(",")
        );
        let err = read_all(&line).unwrap_err().to_string();
        assert!(
            err.contains("in.json:1: field \"checks\": 32 checks: a step has at most 31"),
            "{err}"
        );
    }

    /// The flow keys each record's line ends with, and that it reads back as written.
    #[test]
    fn flow_checks_are_written_by_name_and_read_back() {
        let (records, mut tables) = read_all(VEGETA_LINE).unwrap();
        let plain = records[0];
        let mut flow = |target: TargetInfo| {
            tables.targets.push(target);
            (tables.targets.len() - 1) as u32
        };
        let target = |step: Option<&str>, checks: &[&str]| TargetInfo {
            method: "POST".to_owned(),
            url: "http://localhost:8080/login".to_owned(),
            step: step.map(str::to_owned),
            checks: checks.iter().map(|c| (*c).to_owned()).collect(),
        };
        let login = flow(target(
            Some("login"),
            &["status 200", "json $.token exists", "body contains \"a,b\""],
        ));
        let twice = flow(target(Some("twice"), &["status 200", "status 200"]));
        let bare = flow(target(Some("bare"), &[]));
        let hashed = flow(target(Some("hashed"), &["#1", "ok"]));
        const FLOW: u32 = Record::FAILED_BY_FLOW;
        // (target, checks_failed, the line's end)
        let rows: &[(u32, u32, &str)] = &[
            (0, 0, "\"ttfb\":0}"),
            (0, FLOW, "\"ttfb\":0,\"failed_by_flow\":true}"),
            (
                login,
                0,
                "\"step\":\"login\",\"checks\":[\"status 200\",\"json $.token exists\",\"body contains \\\"a,b\\\"\"],\"checks_failed\":[]}",
            ),
            (
                login,
                0b101 | FLOW,
                "\"checks_failed\":[\"status 200\",\"body contains \\\"a,b\\\"\"],\"failed_by_flow\":true}",
            ),
            // Two checks alike: by position, which the name cannot say.
            (
                twice,
                0b10,
                "\"checks\":[\"status 200\",\"status 200\"],\"checks_failed\":[\"#1\"]}",
            ),
            (twice, 0b11, "\"checks_failed\":[\"#0\",\"#1\"]}"),
            // A bit the target names no check for (a damaged or foreign file).
            (login, 1 << 30, "\"checks_failed\":[\"#30\"]}"),
            (bare, 0, "\"ttfb\":0,\"step\":\"bare\"}"),
            // A check named like a bit number goes by its own.
            (hashed, 0b11, "\"checks_failed\":[\"#0\",\"ok\"]}"),
        ];
        for &(target, checks_failed, end) in rows {
            let record = Record {
                target,
                checks_failed,
                ..plain
            };
            let mut encoder = JsonEncoder::new(Vec::new());
            encoder.write(&record, &tables).unwrap();
            let out = String::from_utf8(encoder.finish().unwrap()).unwrap();
            assert!(out.trim_end().ends_with(end), "{checks_failed:#x}: {out}");
            let (again, again_tables) = read_all(&out).unwrap();
            assert_eq!(again[0].checks_failed, checks_failed, "{out}");
            assert_eq!(
                again_tables.targets[again[0].target as usize], tables.targets[target as usize],
                "{out}"
            );
        }
    }

    #[test]
    fn protocol_is_written_only_when_not_http1_and_reads_back() {
        let (records, tables) = read_all(VEGETA_LINE).unwrap();
        assert_eq!(
            records[0].protocol,
            Protocol::Http1,
            "vegeta's lines are HTTP/1.1"
        );
        let rows: &[(Protocol, Option<&str>)] = &[
            (Protocol::Http1, None),
            (Protocol::Http2, Some(",\"protocol\":\"h2\"}")),
        ];
        for &(protocol, suffix) in rows {
            let record = Record {
                protocol,
                ..records[0]
            };
            let mut encoder = JsonEncoder::new(Vec::new());
            encoder.write(&record, &tables).unwrap();
            let out = String::from_utf8(encoder.finish().unwrap()).unwrap();
            match suffix {
                Some(suffix) => assert!(out.trim_end().ends_with(suffix), "{out}"),
                None => assert!(!out.contains("protocol"), "{out}"),
            }
            let (again, _) = read_all(&out).unwrap();
            assert_eq!(again[0], record, "{protocol}");
        }
    }
}
