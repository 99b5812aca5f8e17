//! vegeta's results, as `vegeta encode` writes them: [`VegetaJson`] (`{"attack",
//! "seq","code","timestamp","latency","bytes_out","bytes_in","error","body","method",
//! "url","headers"}`) and [`VegetaCsv`] (timestamp in unix ns, code, latency ns,
//! bytes_out, bytes_in, error, body, attack, seq, method, url, headers). The timestamp
//! is when the request was sent; code 0 means no response.

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::fields::{count, digits_u64, quoted, status};
use super::request_line::{authority, method, target};
use super::timestamps::iso8601_ns;
use crate::{LineParser, LoggedRequest};

/// vegeta's JSON results.
pub(super) struct VegetaJson;

/// vegeta's CSV results.
pub(super) struct VegetaCsv;

/// The fields of a result we read. `attack` and `seq` are required though unused:
/// they tell a vegeta result from other JSON lines.
#[derive(Deserialize)]
struct JsonResult {
    #[serde(rename = "attack")]
    _attack: IgnoredAny,
    #[serde(rename = "seq")]
    _seq: IgnoredAny,
    code: u16,
    timestamp: String,
    latency: u64,
    bytes_in: u64,
    method: Option<String>,
    url: Option<String>,
}

/// What both encodings give, checked.
fn result(
    time_unix_ns: u64,
    code: u16,
    latency_ns: u64,
    bytes_in: u64,
    method_text: &[u8],
    url: &[u8],
) -> Result<LoggedRequest, String> {
    let target = target(url)?;
    Ok(LoggedRequest {
        time_unix_ns,
        method: method(method_text)?,
        host: authority(&target),
        target,
        status: (code != 0).then_some(code),
        bytes: Some(bytes_in),
        user_agent: None,
        latency_ns: Some(latency_ns),
        line: 0,
        put_back_ns: 0,
    })
}

const NO_REQUEST: &str = "result has no method and url (written by a vegeta too old to log them)";

impl LineParser for VegetaJson {
    fn parse_line(&self, line: &str) -> Result<Option<LoggedRequest>, String> {
        let line = line.trim();
        if line.is_empty() {
            return Ok(None);
        }
        let parsed: JsonResult =
            serde_json::from_str(line).map_err(|e| format!("not a vegeta result: {e}"))?;
        let (time_unix_ns, _) = iso8601_ns(parsed.timestamp.as_bytes())
            .map_err(|e| e.replacen("time", "timestamp", 1))?;
        let (Some(method), Some(url)) = (parsed.method, parsed.url) else {
            return Err(NO_REQUEST.to_owned());
        };
        result(
            time_unix_ns,
            parsed.code,
            parsed.latency,
            parsed.bytes_in,
            method.as_bytes(),
            url.as_bytes(),
        )
        .map(Some)
    }

    fn resolution_ns(&self) -> u64 {
        1
    }

    fn name(&self) -> String {
        "vegeta-json".to_owned()
    }
}

/// The fields of a CSV line (RFC 4180 quoting, as Go's encoder writes), a quoted
/// field's doubled quotes left doubled (no field we read holds a quote).
fn csv_fields<const N: usize>(line: &[u8]) -> ([&[u8]; N], usize) {
    let mut fields = [&[][..]; N];
    let mut found = 0;
    let mut pos = 0;
    while found < N && pos <= line.len() {
        let (field, next) = if line.get(pos) == Some(&b'"') {
            let mut end = pos + 1;
            while end < line.len() && !(line[end] == b'"' && line.get(end + 1) != Some(&b'"')) {
                end += if line[end] == b'"' { 2 } else { 1 };
            }
            (&line[(pos + 1).min(end)..end.min(line.len())], end + 2)
        } else {
            let end = line[pos..]
                .iter()
                .position(|&b| b == b',')
                .map_or(line.len(), |n| pos + n);
            (&line[pos..end], end + 1)
        };
        fields[found] = field;
        found += 1;
        pos = next;
    }
    (fields, found)
}

fn number(text: &[u8], field: &str) -> Result<u64, String> {
    digits_u64(text).ok_or_else(|| format!("{field} {} is not a number", quoted(text)))
}

impl LineParser for VegetaCsv {
    fn parse_line(&self, line: &str) -> Result<Option<LoggedRequest>, String> {
        let line = line.trim_end_matches(['\r', '\n']).as_bytes();
        if line.is_empty() {
            return Ok(None);
        }
        let (f, found) = csv_fields::<12>(line);
        let time_unix_ns = number(f[0], "timestamp")?;
        let code = status(f[1])?.unwrap_or(0);
        let latency_ns = number(f[2], "latency")?;
        let bytes_in = count(f[4], "bytes_in")?.unwrap_or(0);
        if found < 11 {
            return Err(format!("{found} fields: {NO_REQUEST}"));
        }
        result(time_unix_ns, code, latency_ns, bytes_in, f[9], f[10]).map(Some)
    }

    fn resolution_ns(&self) -> u64 {
        1
    }

    fn name(&self) -> String {
        "vegeta-csv".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{Want, check_rows};
    use super::*;

    const JSON: &str = r#"{"attack":"","seq":0,"code":200,"timestamp":"2018-05-08T14:13:47.123456789+02:00","latency":1934000,"bytes_out":0,"bytes_in":13,"error":"","body":"aGVsbG8sIHdvcmxkIQ==","method":"GET","url":"http://localhost:8080/a?b=1\u0026c=2","headers":{"Content-Type":["text/plain"]}}"#;
    const CSV: &str = r#"1525781627123456789,200,1934000,0,13,"",aGVsbG8sIHdvcmxkIQ==,,0,GET,http://localhost:8080/a?b=1&c=2,Q29udGVudC1UeXBlOiB0ZXh0L3BsYWluDQo="#;

    fn sent(status: Option<u16>) -> Want {
        Ok(Some((
            1_525_781_627_123_456_789,
            "GET",
            "http://localhost:8080/a?b=1&c=2",
            Some("localhost:8080"),
            status,
            Some(13),
            None,
            Some(1_934_000),
        )))
    }

    #[test]
    fn json_results() {
        let rows: &[(&str, Want)] = &[
            (JSON, sent(Some(200))),
            (&JSON.replace("\"code\":200", "\"code\":0"), sent(None)),
            ("", Ok(None)),
            (&JSON.replace(",\"method\":\"GET\"", ""), Err(NO_REQUEST)),
            (
                &JSON.replace("2018-05-08T14:13:47.123456789+02:00", "now"),
                Err("timestamp \"now\" is not an ISO 8601 time"),
            ),
            (
                &JSON.replace("\"GET\"", "\"FETCH\""),
                Err("method \"FETCH\" is not an HTTP method"),
            ),
            (
                r#"{"time":1,"url":"/"}"#,
                Err("not a vegeta result: missing field `attack` at line 1 column 20"),
            ),
        ];
        check_rows(&VegetaJson, rows);
    }

    #[test]
    fn csv_results() {
        let rows: &[(&str, Want)] = &[
            (CSV, sent(Some(200))),
            (
                &CSV.replace(",\"\",", ",\"Get \"\"http://x\"\": refused, sorry\",")
                    .replace(",200,", ",0,"),
                sent(None),
            ),
            (
                "1525781627123456789,200,1934000,0,13,,,,0",
                Err(
                    "9 fields: result has no method and url (written by a vegeta too old to log them)",
                ),
            ),
            (
                &CSV.replace("1525781627123456789", "yesterday"),
                Err("timestamp \"yesterday\" is not a number"),
            ),
            (
                &CSV.replace(",1934000,", ",fast,"),
                Err("latency \"fast\" is not a number"),
            ),
            (
                &CSV.replace(",200,", ",ok,"),
                Err("status \"ok\" is not a number"),
            ),
            (
                &CSV.replace(",GET,", ",get me,"),
                Err("method \"get me\" is not an HTTP method"),
            ),
        ];
        check_rows(&VegetaCsv, rows);
    }
}
