//! JSON lines: vegeta's `encode -to json` results, and ours (the same keys plus
//! `send_lag`, `ttfb`, `error_kind`, and `protocol` when not HTTP/1.1), so vegeta tools
//! can read our exports too.

use std::io::{BufRead, Write};

use serde_json::{Map, Value};

use crate::RecordError;
use crate::import::{ImportSource, ImportedResult, Rows, parse_protocol, parse_timestamp};
use crate::meta::{ErrorKind, RunTables};
use crate::record::{Protocol, Record};
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
        line.extend_from_slice(b"}\n");
        self.out.write_all(line)
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

fn json_string(out: &mut Vec<u8>, text: &str) {
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
