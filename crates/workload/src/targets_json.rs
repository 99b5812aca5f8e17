//! vegeta's `json` target format: one object per line,
//! `{"method": "GET", "url": "http://...", "body": "<base64>", "header": {"K": ["v"]}}`.

use std::io::BufRead;

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::WorkloadError;
use crate::lines::{BoundedLines, LineError};
use crate::target::{Header, Target, check_body, check_header, check_method, check_target_url};

/// Reads every JSON target line. Unknown keys are rejected so typos do not pass silently.
/// Only the tests read a whole file at once; the run streams with [`JsonTargetReader`].
#[cfg(test)]
fn parse_json_targets(
    input: impl BufRead,
    source_name: &str,
    global_headers: &[Header],
    default_body: &[u8],
) -> Result<Vec<Target>, WorkloadError> {
    let targets = JsonTargetReader::new(input, source_name, global_headers, default_body)
        .collect::<Result<Vec<_>, _>>()?;
    if targets.is_empty() {
        return Err(WorkloadError::NoTargets {
            source_name: source_name.to_owned(),
        });
    }
    Ok(targets)
}

/// Reads JSON targets one line at a time (vegeta's `-lazy`).
pub struct JsonTargetReader<R: BufRead> {
    lines: BoundedLines<R>,
    line_number: u64,
    source_name: String,
    global_headers: Vec<Header>,
    default_body: Vec<u8>,
    failed: bool,
}

impl<R: BufRead> JsonTargetReader<R> {
    /// A reader of `input`, named `source_name` in errors; `global_headers` come first in each target, `default_body` serves targets without a body.
    pub fn new(
        input: R,
        source_name: &str,
        global_headers: &[Header],
        default_body: &[u8],
    ) -> Self {
        JsonTargetReader {
            lines: BoundedLines::new(input),
            line_number: 0,
            source_name: source_name.to_owned(),
            global_headers: global_headers.to_vec(),
            default_body: default_body.to_vec(),
            failed: false,
        }
    }
}

impl<R: BufRead> Iterator for JsonTargetReader<R> {
    type Item = Result<Target, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        for line in self.lines.by_ref() {
            self.line_number += 1;
            let result = match line {
                Err(LineError::Io(source)) => Err(WorkloadError::Read {
                    source_name: self.source_name.clone(),
                    source,
                }),
                Err(LineError::TooLong) => Err(WorkloadError::Target {
                    source_name: self.source_name.clone(),
                    line: self.line_number,
                    reason: LineError::too_long_reason(),
                }),
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => parse_json_target(&line, &self.global_headers, &self.default_body)
                    .map_err(|reason| WorkloadError::Target {
                        source_name: self.source_name.clone(),
                        line: self.line_number,
                        reason,
                    }),
            };
            self.failed = result.is_err();
            return Some(result);
        }
        None
    }
}

/// Parses one JSON target line.
pub fn parse_json_target(
    line: &str,
    global_headers: &[Header],
    default_body: &[u8],
) -> Result<Target, String> {
    let value: Value = serde_json::from_str(line).map_err(|err| format!("not JSON: {err}"))?;
    let Value::Object(object) = value else {
        return Err("expected a JSON object".to_owned());
    };
    if let Some(key) = object
        .keys()
        .find(|k| !["method", "url", "body", "header"].contains(&k.as_str()))
    {
        return Err(format!(
            "unknown field {key:?} (want method, url, body, header)"
        ));
    }
    let method = string_field(&object, "method")?;
    check_method(&method).map_err(|r| format!("field \"method\": {r}"))?;
    let (url, templated_path) = check_target_url(&string_field(&object, "url")?)
        .map_err(|r| format!("field \"url\": {r}"))?;
    let body = match object.get("body") {
        None | Some(Value::Null) => default_body.to_vec(),
        Some(Value::String(text)) => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|err| format!("field \"body\": not base64: {err}"))?,
        Some(_) => return Err("field \"body\": expected a base64 string".to_owned()),
    };
    check_body(&body).map_err(|r| format!("field \"body\": {r}"))?;
    let mut headers = global_headers.to_vec();
    headers.extend(parse_header_object(object.get("header"))?);
    Ok(Target {
        method,
        url,
        headers,
        body,
        templated_path,
        grpc_message: None,
        grpc_stream: None,
    })
}

fn string_field(object: &Map<String, Value>, key: &str) -> Result<String, String> {
    match object.get(key) {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(format!("field {key:?}: expected a string")),
        None => Err(format!("field {key:?}: missing")),
    }
}

fn parse_header_object(value: Option<&Value>) -> Result<Vec<Header>, String> {
    let object = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(object)) => object,
        Some(_) => return Err("field \"header\": expected an object of string arrays".to_owned()),
    };
    let mut headers = Vec::new();
    for (name, values) in object {
        let Value::Array(values) = values else {
            return Err(format!(
                "field \"header\": {name:?} must map to an array of strings"
            ));
        };
        for value in values {
            let Value::String(value) = value else {
                return Err(format!(
                    "field \"header\": {name:?} must map to an array of strings"
                ));
            };
            check_header(name, value).map_err(|r| format!("field \"header\": {r}"))?;
            headers.push(Header {
                name: name.clone(),
                value: value.clone(),
            });
        }
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Target>, WorkloadError> {
        parse_json_targets(text.as_bytes(), "targets.json", &[], b"default")
    }

    #[test]
    fn reads_vegeta_json_targets() {
        let text = "{\"method\":\"POST\",\"url\":\"http://127.0.0.1:8080/a\",\"body\":\"aGVsbG8=\",\"header\":{\"X-A\":[\"1\",\"2\"]}}\n\n\
                    {\"method\":\"GET\",\"url\":\"http://127.0.0.1:8080/b\"}\n";
        let targets = parse(text).unwrap();
        assert_eq!(targets.len(), 2);
        assert_eq!(targets[0].body, b"hello");
        assert_eq!(targets[0].headers.len(), 2);
        assert_eq!(targets[1].body, b"default");
    }

    #[test]
    fn names_the_line_and_field_of_bad_json_targets() {
        let good = "{\"method\":\"GET\",\"url\":\"http://x/\"}";
        let rows: &[(&str, &str)] = &[
            (
                "{\"method\":\"GET\"}",
                "targets.json:2: field \"url\": missing",
            ),
            ("{\"url\":\"http://x/\"}", "field \"method\": missing"),
            (
                "{\"method\":\"FETCH\",\"url\":\"http://x/\"}",
                "field \"method\": unknown method",
            ),
            (
                "{\"method\":\"GET\",\"url\":\"x\"}",
                "field \"url\": bad URL",
            ),
            (
                "{\"method\":\"GET\",\"url\":\"http://x/\",\"body\":\"!!\"}",
                "field \"body\": not base64",
            ),
            (
                "{\"method\":\"GET\",\"url\":\"http://x/\",\"header\":{\"A\":\"v\"}}",
                "array of strings",
            ),
            (
                "{\"method\":\"GET\",\"url\":\"http://x/\",\"headers\":{}}",
                "unknown field \"headers\"",
            ),
            ("{\"method\":\"GET\",", "targets.json:2: not JSON"),
            ("[]", "expected a JSON object"),
        ];
        for (line, want) in rows {
            let err = parse(&format!("{good}\n{line}\n")).unwrap_err().to_string();
            assert!(err.contains(want), "{line}: {err}");
        }
        assert!(parse("\n").unwrap_err().to_string().contains("no targets"));
    }

    #[test]
    fn refuses_lines_over_the_size_cap() {
        let line = |len: usize| {
            let head = "{\"method\":\"GET\",\"url\":\"http://x/";
            format!("{head}{}\"}}\n", "a".repeat(len - head.len() - 2))
        };
        let cap = crate::MAX_TARGET_BYTES;
        assert_eq!(parse(&line(cap)).unwrap().len(), 1);
        let err = parse(&format!("\n{}", line(cap + 1)))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("targets.json:2: line is longer than 1048576 bytes"),
            "{err}"
        );
    }
}
