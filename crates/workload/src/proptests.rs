//! Property tests of the parsers that read user input: target files (vegeta's `http`
//! and `json` formats), schedules and templates. Inputs are built from each grammar's
//! own pieces so cases get past the first token.
//!
//! Cases default to a CI-sized count; `PROPTEST_CASES=100000 cargo test -p
//! loadlab-workload proptest` runs longer. Failures are not persisted: a case found
//! becomes a table row beside the parser instead.

use std::path::Path;

use base64::Engine as _;
use proptest::prelude::*;

use crate::{
    Header, JsonTargetReader, RenderContext, Schedule, Target, Template, WorkloadError,
    parse_http_targets,
};

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok());
    let config = ProptestConfig::with_cases(cases.unwrap_or(256));
    ProptestConfig {
        failure_persistence: None,
        ..config
    }
}

fn body_file(path: &Path) -> std::io::Result<Vec<u8>> {
    match path.to_str() {
        Some("body.bin") => Ok(vec![0, 0xff, b'{', b'{']),
        Some("body.txt") => Ok(b"id={{seq}}".to_vec()),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such file",
        )),
    }
}

/// A template-ish text: literals, well-formed and broken placeholders.
fn template_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-z0-9/?=&.-]{0,6}",
        "\\{\\{ ?(rand\\.(lower|upper|alpha|digits|alnum|hex) [0-9]{1,3}|uuid|seq|csv\\.[a-z]{0,3}) ?\\}\\}",
        "\\{\\{rand\\.int -?[0-9]{1,20} -?[0-9]{1,20}\\}\\}",
        "\\{\\{pick( [a-z]{1,3}| \"[a-z ]{0,4}\"?){0,3}\\}\\}",
        "[{}\" .a-z0-9-]{0,6}",
    ];
    prop::collection::vec(piece, 0..6).prop_map(|pieces| pieces.concat())
}

fn http_line() -> impl Strategy<Value = String> {
    prop_oneof![
        ("(GET|POST|HEAD|PUT|get|FOO)[ \t]{1,2}", url_text()).prop_map(|(m, u)| m + &u),
        "[A-Za-z-]{0,8}: ?[ -~]{0,8}",
        template_text().prop_map(|t| format!("X-T: {t}")),
        "@ ?(body\\.bin|body\\.txt|missing|)",
        "#[ -~]{0,8}",
        Just(String::new()),
        "[ -~\t]{0,12}",
    ]
}

fn url_text() -> impl Strategy<Value = String> {
    prop_oneof![
        (
            "(http|https|ftp)://",
            "(127\\.0\\.0\\.1|\\[::1\\]|[a-z.]{0,5})(:[0-9]{0,6})?",
            template_text()
        )
            .prop_map(|(s, h, p)| format!("{s}{h}/{p}")),
        "[ -~]{0,12}",
    ]
}

fn http_file() -> impl Strategy<Value = String> {
    prop::collection::vec(http_line(), 0..12).prop_map(|lines| lines.join("\n"))
}

/// Checks an error points at a line of the input.
fn check_line(err: &WorkloadError, line_count: usize) -> Result<(), TestCaseError> {
    if let WorkloadError::Target { line, .. } | WorkloadError::BodyFile { line, .. } = err {
        prop_assert!(
            *line >= 1 && *line as usize <= line_count,
            "line {line} of {line_count}: {err}"
        );
    }
    Ok(())
}

/// A target and its `http`-format text, for the round trip.
fn http_target() -> impl Strategy<Value = (String, Vec<(String, String)>)> {
    let header = ("X-[A-Za-z]{1,6}", "[!-z]([ -z]{0,6}[!-z])?");
    ("/[a-z0-9]{0,6}", prop::collection::vec(header, 0..3))
}

fn json_line() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        Just("null".to_owned()),
        "-?[0-9]{1,3}",
        "\"[ -~]{0,8}\"".prop_map(|s| s.replace('\\', "")),
        Just("\"http://127.0.0.1/{{seq}}\"".to_owned()),
        Just("\"GET\"".to_owned()),
        Just("\"aGk=\"".to_owned()),
        Just("{\"K\": [\"v\", 1]}".to_owned()),
        Just("[]".to_owned()),
    ];
    let key = "(method|url|body|header|Url|x)";
    prop_oneof![
        prop::collection::vec((key, value), 0..5).prop_map(|fields| {
            let fields: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("\"{k}\": {v}"))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }),
        "[{}\\[\\]\":, a-z0-9]{0,16}",
    ]
}

fn schedule_item() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        "[0-9]{1,4}(\\.[0-9]{1,2})?",
        "-?[0-9.e+]{0,5}",
        Just("1e308".to_owned())
    ];
    let duration = prop_oneof!["[0-9]{1,4}(ns|ms|s|m|h)", "[0-9]{1,7}h", "[0-9a-z.]{0,3}"];
    let step = prop_oneof![number.clone(), number.clone().prop_map(|n| format!("x{n}"))];
    prop_oneof![
        (number.clone(), duration.clone()).prop_map(|(r, d)| format!("const({r}, {d})")),
        (number.clone(), number.clone(), duration.clone())
            .prop_map(|(a, b, d)| format!("line({a},{b},{d})")),
        (number.clone(), number.clone(), step, duration.clone())
            .prop_map(|(a, b, s, d)| format!("step({a}, {b}, {s}, {d})")),
        (
            number.clone(),
            number.clone(),
            duration.clone(),
            duration.clone()
        )
            .prop_map(|(m, a, p, d)| format!("sine({m}, {a}, {p}, {d})")),
        (prop::collection::vec(number, 1..4), duration)
            .prop_map(|(values, d)| format!("{}@{d}", values.join(","))),
        "[a-z(),@ 0-9.x]{0,10}",
    ]
}

fn schedule_text() -> impl Strategy<Value = String> {
    prop::collection::vec(schedule_item(), 0..4).prop_map(|items| items.join(" "))
}

/// A schedule that parses, written as the parser reads it.
fn schedule_value() -> impl Strategy<Value = String> {
    let rate = prop_oneof![0.0..1e6f64, (0u32..100_000).prop_map(f64::from)];
    let segment = prop_oneof![
        (rate.clone(), 1u64..10_000_000_000_000).prop_map(|(r, ns)| format!("const({r}, {ns}ns)")),
        (rate.clone(), rate, 1u64..10_000_000_000_000)
            .prop_map(|(a, b, ns)| format!("line({a}, {b}, {ns}ns)")),
        (0u32..1000, 1u64..10_000_000_000_000, 1u64..10_000_000_000)
            .prop_map(|(r, period_ns, ns)| format!("sine({r}, {r}, {period_ns}ns, {ns}ns)")),
    ];
    prop::collection::vec(segment, 1..5).prop_map(|items| items.join(" "))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn proptest_http_targets_never_panic(text in http_file()) {
        let line_count = text.lines().count();
        if let Err(err) = parse_http_targets(text.as_bytes(), "t.txt", &[], b"", &body_file) {
            check_line(&err, line_count)?;
        }
    }

    #[test]
    fn proptest_http_targets_round_trip(targets in prop::collection::vec(http_target(), 1..5)) {
        let mut text = String::new();
        for (path, headers) in &targets {
            text += &format!("GET http://127.0.0.1:8080{path}\n");
            for (name, value) in headers {
                text += &format!("{name}: {value}\n");
            }
            text += "\n";
        }
        let parsed = parse_http_targets(text.as_bytes(), "t.txt", &[], b"", &body_file)
            .map_err(|err| TestCaseError::fail(format!("{err}\n{text}")))?;
        prop_assert_eq!(parsed.len(), targets.len());
        for (got, (path, headers)) in parsed.iter().zip(&targets) {
            prop_assert_eq!(got.url.path(), if path.is_empty() { "/" } else { path.as_str() });
            let want: Vec<Header> = headers
                .iter()
                .map(|(name, value)| Header { name: name.clone(), value: value.clone() })
                .collect();
            prop_assert_eq!(&got.headers, &want);
        }
    }

    #[test]
    fn proptest_json_targets_never_panic(lines in prop::collection::vec(json_line(), 0..6)) {
        let text = lines.join("\n");
        for result in JsonTargetReader::new(text.as_bytes(), "t.json", &[], b"") {
            if let Err(err) = result {
                check_line(&err, lines.len())?;
            }
        }
    }

    #[test]
    fn proptest_json_target_round_trips(
        path in "/[a-z0-9]{0,6}",
        body in prop::collection::vec(any::<u8>(), 0..16),
        value in "[ -z|}~]{0,8}",
    ) {
        let target = Target {
            headers: vec![Header { name: "X-A".to_owned(), value: value.trim().to_owned() }],
            body,
            ..Target::get("POST", url::Url::parse(&format!("http://127.0.0.1{path}")).map_err(|e| TestCaseError::fail(e.to_string()))?)
        };
        let line = serde_json::json!({
            "method": target.method,
            "url": target.url.as_str(),
            "body": base64::engine::general_purpose::STANDARD.encode(&target.body),
            "header": {"X-A": [target.headers[0].value]},
        })
        .to_string();
        let parsed = crate::parse_json_target(&line, &[], b"");
        // A binary body with `{{` but no valid placeholder is text only when it is UTF-8.
        if let Ok(parsed) = parsed {
            prop_assert_eq!(parsed, target);
        } else {
            prop_assert!(std::str::from_utf8(&target.body).is_ok_and(|t| t.contains("{{")), "{:?}", parsed);
        }
    }

    #[test]
    fn proptest_template_never_panics(text in template_text(), seed in any::<u64>(), seq in any::<u64>()) {
        if let Ok(template) = Template::parse(&text) {
            let mut out = Vec::new();
            template.render(&RenderContext::plain(seed, seq, None), &mut out);
            if !text.contains("{{") {
                prop_assert_eq!(out, text.as_bytes());
            }
        }
    }

    #[test]
    fn proptest_template_int_in_range(min in any::<i64>(), width in any::<u64>(), seed in any::<u64>()) {
        let max = min.saturating_add_unsigned(width);
        let template = Template::parse(&format!("{{{{rand.int {min} {max}}}}}"))
            .map_err(TestCaseError::fail)?;
        let mut out = Vec::new();
        template.render(&RenderContext::plain(seed, 0, None), &mut out);
        let value: i64 = String::from_utf8_lossy(&out).parse().map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert!((min..=max).contains(&value), "{value} not in {min}..={max}");
    }

    #[test]
    fn proptest_schedule_never_panics(text in schedule_text(), k in any::<u64>(), t_ns in any::<u64>()) {
        if let Ok(schedule) = Schedule::parse(&text) {
            // A parsed schedule's pacing must not panic either, however large its numbers.
            let _ = schedule.intended_ns(k);
            let _ = schedule.due_by(t_ns);
            let _ = schedule.value_at(t_ns);
            let _ = schedule.duration_ns();
            let _ = schedule.max_value();
        } else if let Err(err) = Schedule::parse(&text) {
            prop_assert!(err.contains(&format!("{text:?}")), "{err}");
        }
    }

    #[test]
    fn proptest_schedule_round_trips(text in schedule_value()) {
        let schedule = Schedule::parse(&text).map_err(TestCaseError::fail)?;
        let printed = schedule.to_string();
        prop_assert_eq!(Schedule::parse(&printed), Ok(schedule), "{} printed as {}", text, printed);
    }
}
