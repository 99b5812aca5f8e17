use super::*;
use serde::Deserialize;
use std::sync::Arc;

use crate::RenderContext;

const LOGIN: &str = r#"
[[step]]
name = "login"
request = "POST http://127.0.0.1:8080/login?user={{csv.user}}\nContent-Type: application/json"
body = '{"user":"{{csv.user}}"}'
extract = { token = "json $.token", sid = "cookie session" }
checks = ["status 200", { name = "has token", expect = "json $.token exists" }]
think = "1s"

[[step]]
name = "list"
request = "GET http://127.0.0.1:8080/items\nAuthorization: Bearer {{token}}"
extract = { item = { from = "json $.items[*].id", optional = true }, rid = "header X-Request-Id" }
checks = ["status 200"]

[[step]]
name = "item"
request = "GET http://127.0.0.1:8080/items/{{item}}?u={{user}}"
if = "item"
repeat = 2
think = "uniform(10ms, 20ms)"

[[step]]
name = "again"
request = "GET http://127.0.0.1:8080/me"
if = "login: has token"
"#;

#[derive(Deserialize)]
struct Steps {
    step: Vec<StepFields>,
}

fn compile(text: &str) -> Result<Flow, WorkloadError> {
    let steps: Steps = toml::from_str(text).unwrap();
    let origin = Origin::scenario("flow.toml", 3, "shop", Path::new("."));
    Flow::compile(&steps.step, FlowOptions::default(), &[], &origin, &|_| {
        Ok(b"file body".to_vec())
    })
}

fn answer<'a>(status: u16, head: &'a [u8], body: &'a [u8]) -> Answer<'a> {
    Answer {
        status,
        head,
        body,
        body_bytes: body.len() as u64,
        latency_ns: 1_000_000,
        grpc_status: None,
    }
}

#[test]
fn a_user_walks_its_flow_with_what_it_extracted() {
    let flow = compile(LOGIN).unwrap();
    assert_eq!(flow.variables, ["sid", "token", "item", "rid"]);
    assert_eq!(flow.steps[1].needs, 0b10, "list reads token");
    assert_eq!(flow.steps[2].needs, 0b100, "item reads item");
    let mut scratch = flow.scratch();
    let mut user = UserState::default();
    assert_eq!(flow.start(&mut user, 17), Some(0));
    let url = flow.steps[0].cookie_url();
    assert_eq!((url.host, url.path), ("127.0.0.1", "/login"));
    let login = answer(
        200,
        b"HTTP/1.1 200 OK\r\nSet-Cookie: session=s1; Path=/\r\n\r\n",
        br#"{"token":"t-17"}"#,
    );
    let verdict = flow.judge(&mut user, &login, url, 0, &mut scratch);
    assert_eq!(verdict, Verdict::default());
    assert_eq!(user.variables[1], b"t-17");
    assert_eq!(user.variables[0], b"s1");
    assert_eq!(
        flow.advance(&mut user, 1),
        Next::Step {
            step: 1,
            delay_ns: 1_000_000_000
        }
    );
    // The list has ids: one is picked; the item step runs twice.
    let list = answer(
        200,
        b"HTTP/1.1 200 OK\r\nX-Request-Id: r9\r\n\r\n",
        br#"{"items":[{"id":4},{"id":5}]}"#,
    );
    let verdict = flow.judge(
        &mut user,
        &list,
        flow.steps[1].cookie_url(),
        0,
        &mut scratch,
    );
    assert_eq!(verdict, Verdict::default());
    assert!(user.variables[2] == b"4" || user.variables[2] == b"5");
    assert_eq!(user.variables[3], b"r9");
    for _ in 0..2 {
        match flow.advance(&mut user, 1) {
            Next::Step { step: 2, delay_ns } => {
                assert!(delay_ns == 0 || (10_000_000..=20_000_000).contains(&delay_ns));
            }
            other => panic!("{other:?}"),
        }
        flow.judge(
            &mut user,
            &list,
            flow.steps[2].cookie_url(),
            0,
            &mut scratch,
        );
    }
    assert!(
        matches!(flow.advance(&mut user, 1), Next::Step { step: 3, .. }),
        "login's token check passed"
    );
    assert!(matches!(flow.advance(&mut user, 1), Next::End { .. }));
}

#[test]
fn optional_steps_skip_and_missing_variables_end_the_flow() {
    let flow = compile(LOGIN).unwrap();
    let mut scratch = flow.scratch();
    let mut user = UserState::default();
    flow.start(&mut user, 0);
    // No token: extraction fails (an error), the check fails, and list cannot be sent.
    let bad = answer(200, b"HTTP/1.1 200 OK\r\n\r\n", b"<html>oops</html>");
    let verdict = flow.judge(&mut user, &bad, flow.steps[0].cookie_url(), 0, &mut scratch);
    assert_eq!(verdict.checks_failed, 0b10);
    assert_eq!(verdict.failure, Some(FlowFailure::Check { check: 1 }));
    assert_eq!(
        flow.failure_text(0, verdict.failure.unwrap()),
        "step \"login\": check \"has token\" failed"
    );
    assert!(matches!(flow.advance(&mut user, 1), Next::End { .. }));
    // With a token but an empty list: the optional item is not an error; item is skipped.
    flow.start(&mut user, 0);
    let login = answer(200, b"", br#"{"token":"t"}"#);
    flow.judge(
        &mut user,
        &login,
        flow.steps[0].cookie_url(),
        0,
        &mut scratch,
    );
    flow.advance(&mut user, 1);
    let empty = answer(200, b"X-Request-Id: r\r\n", br#"{"items":[]}"#);
    let verdict = flow.judge(
        &mut user,
        &empty,
        flow.steps[1].cookie_url(),
        0,
        &mut scratch,
    );
    assert_eq!(verdict, Verdict::default());
    assert!(
        matches!(flow.advance(&mut user, 1), Next::Step { step: 3, .. }),
        "item skipped"
    );
    // A failed request (no answer) fails its checks but is no extraction error.
    flow.start(&mut user, 0);
    let verdict = flow.judge(
        &mut user,
        &Answer::default(),
        flow.steps[0].cookie_url(),
        0,
        &mut scratch,
    );
    assert_eq!(verdict.checks_failed, 0b11);
    // A required extraction that finds nothing names itself.
    flow.start(&mut user, 0);
    flow.judge(
        &mut user,
        &login,
        flow.steps[0].cookie_url(),
        0,
        &mut scratch,
    );
    flow.advance(&mut user, 1);
    let verdict = flow.judge(
        &mut user,
        &answer(200, b"", b"{}"),
        flow.steps[1].cookie_url(),
        0,
        &mut scratch,
    );
    assert_eq!(
        verdict.failure,
        Some(FlowFailure::Extract { extraction: 1 })
    );
    assert_eq!(
        flow.failure_text(1, verdict.failure.unwrap()),
        "step \"list\": extract rid: \"header X-Request-Id\" found nothing"
    );
}

#[test]
fn names_the_step_and_field_of_mistakes() {
    let rows: &[(&str, &str)] = &[
        (
            "[[step]]\nrequest = \"GET http://h/{{tokn}}\"",
            "flow.toml:3: scenario \"shop\": step step 1: request: template \"/{{tokn}}\": unknown variable {{tokn}} (no step before this one extracts a variable)",
        ),
        (
            "[[step]]\nname = \"a\"\nrequest = \"GET http://h/\"\nextract = { t = \"json $.t\" }\n[[step]]\nname = \"b\"\nrequest = \"GET http://h/\\nX: {{u}}\"",
            "step \"b\": request: header \"X\": template \"{{u}}\": unknown variable {{u}} (the steps before this one extract t)",
        ),
        (
            "[[step]]\nname = \"a\"",
            "step \"a\": request: every step needs one",
        ),
        (
            "[[step]]\nrequest = \"FETCH http://h/\"",
            "unknown method \"FETCH\"",
        ),
        (
            "[[step]]\nrequest = \"GET http://h/\"\nextract = { t = \"json token\" }",
            "extract.t: JSON path \"token\": want a JSONPath",
        ),
        (
            "[[step]]\nrequest = \"GET http://h/\"\nextract = { t = \"regex (\" }",
            "extract.t: regex \"(\"",
        ),
        (
            "[[step]]\nrequest = \"GET http://h/\"\nextract = { t = \"xpath //a\" }",
            "want json PATH, regex PATTERN, header NAME or cookie NAME",
        ),
        (
            "[[step]]\nrequest = \"GET http://h/\"\nextract = { seq = \"header X\" }",
            "cannot name a variable",
        ),
        (
            "[[step]]\nrequest = \"GET http://h/\"\nchecks = [\"status 2000\"]",
            "checks: status \"2000\"",
        ),
        (
            "[[step]]\nrequest = \"GET http://h/\"\nchecks = [\"status 200\", \"status 200\"]",
            "two checks are named",
        ),
        (
            "[[step]]\nrequest = \"GET http://h/\"\nthink = \"uniform(3s, 1s)\"",
            "think: uniform",
        ),
        (
            "[[step]]\nrequest = \"GET http://h/\"\nthink = \"gauss(1s)\"",
            "think: \"gauss(1s)\"",
        ),
        (
            "[[step]]\nrequest = \"GET http://h/\"\nrepeat = 0",
            "repeat: must be at least 1",
        ),
        (
            "[[step]]\nrequest = \"GET http://h/\"\nif = \"token\"",
            "if: \"token\" is neither a variable",
        ),
        (
            "[[step]]\nname = \"a\"\nrequest = \"GET http://h/\"\n[[step]]\nname = \"a\"\nrequest = \"GET http://h/\"",
            "\"a\" is used by another step",
        ),
        (
            "[[step]]\nname = \"a: b\"\nrequest = \"GET http://h/\"",
            "cannot hold",
        ),
        (
            "[[step]]\nrequest = \"GET http://h/\\n@b.json\"\nbody = \"x\"",
            "has an @file body line already",
        ),
        (
            "[[step]]\nrequest = \"GET http://h/\\nbad header\"",
            "want a header line",
        ),
    ];
    for (text, want) in rows {
        let err = compile(text).unwrap_err().to_string();
        assert!(err.contains(want), "{text}:\n{err}");
    }
}

#[test]
fn think_times() {
    let rows: &[(&str, Think)] = &[
        ("2s", Think::ConstantNs(2_000_000_000)),
        ("0s", Think::None),
        (
            "uniform(1s, 3s)",
            Think::UniformNs(1_000_000_000, 3_000_000_000),
        ),
        ("exp(2s)", Think::ExponentialNs(2_000_000_000)),
    ];
    for (text, want) in rows {
        assert_eq!(Think::parse(text).unwrap(), *want, "{text}");
    }
    let mut rng = Rng::for_request(1, 2, 3);
    let mean = (0..20_000)
        .map(|_| Think::ExponentialNs(1_000_000).draw_ns(&mut rng) as f64)
        .sum::<f64>()
        / 20_000.0;
    assert!((950_000.0..1_050_000.0).contains(&mean), "{mean}");
}

#[test]
fn a_regex_extraction_never_takes_a_value_cut_short_by_bytes_not_utf8() {
    // (pattern, body, the value taken or None, the failure text when none)
    type Row<'a> = (&'a str, &'a [u8], Option<&'a [u8]>, &'a str);
    let rows: &[Row<'_>] = &[
        ("token=(.*)", b"token=abc\n", Some(b"abc"), ""),
        (
            "token=(.*)",
            b"token=\xff\xfeabc",
            None,
            "stops at a byte that is not UTF-8",
        ),
        (
            "token=(\\S+)",
            b"token=ab\xffcd",
            None,
            "stops at a byte that is not UTF-8",
        ),
        ("token=([a-z]+)", b"token=ab\xc3\xa9", Some(b"ab"), ""),
        ("token=(.+)", b"token=\xff", None, "found nothing"),
        ("token=(.*)", b"token=caf\xc3", Some(b"caf"), ""),
    ];
    for (pattern, body, want, why) in rows {
        let text = format!(
            "[[step]]\nname = \"login\"\nrequest = \"GET http://h/\"\nextract = {{ token = 'regex {pattern}' }}\n"
        );
        let flow = compile(&text).unwrap();
        let mut user = UserState::default();
        let mut scratch = flow.scratch();
        flow.start(&mut user, 0);
        let verdict = flow.judge(
            &mut user,
            &answer(200, b"", body),
            flow.steps[0].cookie_url(),
            0,
            &mut scratch,
        );
        match want {
            Some(value) => {
                assert_eq!(verdict.failure, None, "{pattern} {body:?}");
                assert_eq!(user.variables[0], *value, "{pattern} {body:?}");
            }
            None => {
                let failure = verdict.failure.expect("a failure");
                let text = flow.failure_text(0, failure);
                assert!(text.ends_with(why), "{pattern} {body:?}: {text}");
                assert_eq!(user.extracted, 0, "{pattern}: no value for later steps");
            }
        }
    }
}

/// `text` as a scenarios file's one scenario, its steps compiled: the error as the
/// engine shows it (file, line, scenario, step, field).
fn compile_scenario(text: &str) -> Result<Flow, String> {
    let file = crate::ScenarioFile::parse(text, "chat.toml").map_err(|e| e.to_string())?;
    let (line, fields) = &file.scenarios[0];
    let origin = Origin::scenario("chat.toml", *line, "chat", Path::new("."));
    let steps = fields.step.as_deref().unwrap_or_default();
    Flow::compile(steps, FlowOptions::default(), &[], &origin, &|_| {
        Ok(Vec::new())
    })
    .map_err(|e| e.to_string())
}

#[test]
fn names_the_file_line_step_and_field_of_stream_step_mistakes() {
    let scenario = "[[scenario]]\nname = \"chat\"\nrate = 1\n\n[[scenario.step]]\nname = \"ws\"\n";
    let rows: &[(&str, &str)] = &[
        (
            "ws = \"ws://h/chat\"\nactions = [{ ping = \"x\" }]\n",
            "chat.toml:8: unknown field `ping`, expected one of",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ name = \"nothing\" }]\n",
            "chat.toml:5: scenario \"chat\": step \"ws\": actions[0]: want exactly one of send, expect, hold, close",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ send = \"a\", close = 1000 }]\n",
            "step \"ws\": actions[0]: want exactly one of",
        ),
        (
            "ws = \"\"\n",
            "chat.toml:5: scenario \"chat\": step \"ws\": ws: empty (want a URL, then header lines)",
        ),
        (
            "ws = \"http://h/chat\"\n",
            "step \"ws\": ws: \"http://h/chat\": the scheme is \"http\", want ws or wss",
        ),
        (
            "sse = \"ws://h/events\"\nevents = 1\n",
            "step \"ws\": sse: \"ws://h/events\": the scheme is \"ws\", want http or https",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ close = 999 }]\n",
            "step \"ws\": actions[0].close: 999 is not a code a client may send",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ close = 1006 }]\n",
            "actions[0].close: 1006 is not a code a client may send",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ expect = \"body contains a\", within = \"soon\" }]\n",
            "step \"ws\": actions[0].within: ",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ send = \"a\" }, { hold = \"5\" }]\n",
            "step \"ws\": actions[1].hold: ",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ expect = \"bodyy contains a\" }]\n",
            "step \"ws\": actions[0].expect: ",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ send = \"{{token}}\" }]\n",
            "step \"ws\": actions[0].send: template \"{{token}}\": unknown variable {{token}}",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ hold = \"1s\", within = \"1s\" }]\n",
            "actions[0]: within and extract go with expect",
        ),
        (
            "ws = \"ws://h/chat\\nUpgrade: h2c\"\n",
            "step \"ws\": ws: Upgrade: loadlab writes this header itself",
        ),
        (
            "ws = \"ws://h/chat\"\nchecks = [\"status 200\"]\n",
            "step \"ws\": checks: a ws step checks its messages in expect actions",
        ),
        (
            "request = \"GET http://h/\"\nws = \"ws://h/chat\"\n",
            "step \"ws\": request: a step has one of request, ws, sse and stream",
        ),
        (
            "request = \"GET http://h/\"\nactions = [{ send = \"a\" }]\n",
            "step \"ws\": actions: only a ws, sse or stream step takes it",
        ),
        (
            "sse = \"http://h/events\"\n",
            "step \"ws\": sse: give events = N or listen = DURATION",
        ),
        (
            "sse = \"http://h/events\"\nlisten = \"a while\"\n",
            "step \"ws\": listen: ",
        ),
        (
            "sse = \"http://h/events\"\nevents = 0\n",
            "step \"ws\": events: must be at least 1",
        ),
        (
            "sse = \"http://h/events\"\nevents = 1\nactions = [{ send = \"a\" }]\n",
            "step \"ws\": actions: for ws steps",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ send = \"a\", every = \"10ms\" }]\n",
            "step \"ws\": actions[0]: every and count go together",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ hold = \"1s\", every = \"10ms\", count = 2 }]\n",
            "step \"ws\": actions[0]: every, schedule and count go with send",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ hold = \"1s\", schedule = \"const(5, 1s)\" }]\n",
            "step \"ws\": actions[0]: every, schedule and count go with send",
        ),
        (
            "ws = \"ws://h/chat\"\nround_trip = \"by id\"\n",
            "step \"ws\": round_trip: \"by id\": want \"in order\"",
        ),
        (
            "ws = \"ws://h/chat\"\nround_trip = \"in order\"\nsend_time = \"json $.t\"\n",
            "step \"ws\": round_trip, send_time: one or the other",
        ),
        (
            "request = \"GET http://h/\"\nround_trip = \"in order\"\n",
            "step \"ws\": round_trip: only a ws, sse or stream step takes it",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ send = \"a\", count = 3 }]\n",
            "step \"ws\": actions[0]: count goes with every or schedule",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ send = \"a\", every = \"1s\", count = 2, schedule = \"const(5, 1s)\" }]\n",
            "step \"ws\": actions[0]: every or schedule, not both",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ send = \"a\", schedule = \"linear(1, 5, 1s)\" }]\n",
            "step \"ws\": actions[0].schedule: invalid schedule \"linear(1, 5, 1s)\"",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ send = \"a\", schedule = \"const(5, 1s)\", count = 0 }]\n",
            "step \"ws\": actions[0].count: must be at least 1",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ send = \"a\", every = \"0s\", count = 2 }]\n",
            "step \"ws\": actions[0].every: must be above 0",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ send = \"a\", every = \"1s\", count = 0 }]\n",
            "step \"ws\": actions[0].count: must be at least 1",
        ),
        (
            "ws = \"ws://h/chat\"\nreconnect = 2\n",
            "step \"ws\": events, listen, reconnect: for sse steps",
        ),
        (
            "request = \"GET http://h/\"\nreconnect = 2\n",
            "step \"ws\": reconnect: only a ws, sse or stream step takes it",
        ),
        (
            "sse = \"http://h/events\"\nevents = 1\nping = \"1s\"\n",
            "step \"ws\": ping, subprotocols, compression, send_time, round_trip: for ws steps",
        ),
        (
            "request = \"GET http://h/\"\nsubprotocols = [\"chat\"]\n",
            "step \"ws\": subprotocols: only a ws, sse or stream step takes it",
        ),
        (
            "ws = \"ws://h/chat\"\nping = \"0s\"\n",
            "step \"ws\": ping: must be above 0",
        ),
        (
            "ws = \"ws://h/chat\"\nping = \"often\"\n",
            "step \"ws\": ping: ",
        ),
        (
            "ws = \"ws://h/chat\"\nsubprotocols = [\"chat v2\"]\n",
            "step \"ws\": subprotocols[0]: \"chat v2\" is not a token",
        ),
        (
            "ws = \"ws://h/chat\"\nsubprotocols = [\"a\", \"a\"]\n",
            "step \"ws\": subprotocols[1]: \"a\" is asked twice",
        ),
        (
            "ws = \"ws://h/chat\\nSec-WebSocket-Protocol: x\"\nsubprotocols = [\"a\"]\n",
            "step \"ws\": ws: Sec-WebSocket-Protocol: loadlab writes this header itself",
        ),
        (
            "ws = \"ws://h/chat\"\ncompression = \"gzip\"\n",
            "step \"ws\": compression: \"gzip\" is not a WebSocket compression (deflate)",
        ),
        (
            "request = \"GET http://h/\"\ncompression = \"deflate\"\n",
            "step \"ws\": compression: only a ws, sse or stream step takes it",
        ),
        (
            "ws = \"ws://h/chat\\nSec-WebSocket-Extensions: permessage-deflate\"\n",
            "step \"ws\": ws: Sec-WebSocket-Extensions: loadlab writes this header itself (compression = \"deflate\")",
        ),
        (
            "request = \"GET http://h/\"\nchecks = [\"event tick: status 200\"]\n",
            "step \"ws\": checks: \"event tick: status 200\": only an sse or stream step's events have a type",
        ),
        (
            "sse = \"http://h/e\"\nevents = 1\nchecks = [\"event tick status 200\"]\n",
            "step \"ws\": checks: check \"event tick status 200\": want event TYPE: CHECK",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ expect = \"event a: body contains a\" }]\n",
            "step \"ws\": actions[0].expect: a WebSocket message has no event type",
        ),
        (
            "ws = \"ws://h/chat\"\nextract = { a = \"json $.a\" }\n",
            "step \"ws\": extract: a ws step extracts in its expect actions",
        ),
        (
            "ws = \"ws://h/chat\"\nactions = [{ send = \"{{send_time_ns}} {{send_time_ns}}\" }]\n",
            "step \"ws\": actions[0].send: {{send_time_ns}} at most once",
        ),
        (
            "ws = \"ws://h/chat\"\nsend_time = \"header date\"\n",
            "step \"ws\": send_time: \"header date\": want json PATH or regex REGEX",
        ),
        (
            "ws = \"ws://h/chat\"\nsend_time = \"json nope\"\n",
            "step \"ws\": send_time: ",
        ),
        (
            "sse = \"http://h/e\"\nevents = 1\nsend_time = \"json $.t\"\n",
            "step \"ws\": ping, subprotocols, compression, send_time, round_trip: for ws steps",
        ),
        (
            "request = \"GET http://h/\"\nsend_time = \"json $.t\"\n",
            "step \"ws\": send_time: only a ws, sse or stream step takes it",
        ),
        (
            "stream = \"POST http://h/v1\"\nreconnect = 1\n",
            "step \"ws\": reconnect: for sse steps (a stream step's request is not sent again)",
        ),
        (
            "stream = \"http://h/v1\"\n",
            "step \"ws\": stream: \"http://h/v1\": want METHOD URL",
        ),
        (
            "stream = \"POST http://h/v1\"\nbody = \"{{nope}}\"\n",
            "step \"ws\": body: body: template \"{{nope}}\": unknown variable {{nope}}",
        ),
        (
            "sse = \"http://h/events\"\nevents = 1\nbody = \"x\"\n",
            "step \"ws\": body: a ws or sse step sends no body (a stream step does)",
        ),
        (
            "stream = \"POST http://h/v1\"\nsse = \"http://h/events\"\n",
            "step \"ws\": ws: a step has one of request, ws, sse and stream",
        ),
        (
            "stream = \"POST http://h/v1\"\nactions = [{ send = \"a\" }]\n",
            "step \"ws\": actions: for ws steps; a stream step reads its answer",
        ),
        (
            "ws = \"ws://h/chat\\nSec-WebSocket-Extensions: x\"\ncompression = \"deflate\"\n",
            "step \"ws\": ws: Sec-WebSocket-Extensions: loadlab writes this header itself",
        ),
    ];
    for (step, want) in rows {
        let err = compile_scenario(&format!("{scenario}{step}")).unwrap_err();
        assert!(err.contains(want), "{step}:\n{err}");
    }
}

#[test]
fn stream_steps_get_a_target_per_action_and_for_their_events() {
    let flow = compile_scenario(
        r#"
[[scenario]]
name = "chat"
rate = 1

[[scenario.step]]
name = "login"
request = "POST http://h/login"
extract = { token = "json $.token" }

[[scenario.step]]
name = "chat"
ws = "wss://h/chat?room=1\nAuthorization: Bearer {{token}}"
actions = [
  { send = "hi {{token}}", every = "20ms", count = 5 },
  { name = "reply", expect = "json $.text exists", extract = { said = "json $.text" } },
  { hold = "1s" },
  { close = 4000 },
]
ping = "250ms"
subprotocols = ["chat.v2", "chat"]
compression = "deflate"

[[scenario.step]]
name = "ticks"
sse = "http://h/events"
listen = "2s"
reconnect = 3
checks = ["body contains tick"]

[[scenario.step]]
name = "llm"
stream = "POST http://h/v1/chat\nContent-Type: application/json"
body = '{"prompt": "hi {{said}}", "stream": true}'
"#,
    )
    .unwrap();
    let chat = &flow.steps[1];
    assert_eq!(chat.target.url.as_str(), "https://h/chat?room=1");
    assert_eq!(chat.needs, 1, "its header and its message read the token");
    let Some(Stream::WebSocket(WebSocket {
        actions,
        ping_ns,
        subprotocols,
        deflate,
        ..
    })) = &chat.stream
    else {
        panic!("{:?}", chat.stream);
    };
    assert_eq!(
        (*ping_ns, subprotocols.len(), *deflate),
        (Some(250_000_000), 2, true)
    );
    let header = |name: &str| {
        let header = chat.target.headers.iter().find(|h| h.name == name);
        header.map(|h| h.value.as_str())
    };
    assert_eq!(header("Sec-WebSocket-Protocol"), Some("chat.v2, chat"));
    assert_eq!(
        header("Sec-WebSocket-Extensions"),
        Some("permessage-deflate")
    );
    let names: Vec<&str> = actions.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["send 1", "reply", "hold 3", "close 4"]);
    assert!(matches!(actions[3].kind, ActionKind::Close(4000)));
    let pace = Pace {
        count: 5,
        times: PaceTimes::Every(20_000_000),
    };
    assert_eq!((&actions[0].pace, &actions[1].pace), (&Some(pace), &None));
    assert_eq!(flow.variables, ["token", "said"]);
    let targets: Vec<(usize, &str, usize)> = flow
        .stream_targets
        .iter()
        .map(|t| (t.step, t.name.as_str(), t.checks.len()))
        .collect();
    assert_eq!(
        targets,
        [
            (1, "chat send 1", 0),
            (1, "chat reply", 1),
            (1, "chat hold 3", 0),
            (1, "chat close 4", 0),
            (2, "ticks events", 1),
            (3, "llm body", 0),
        ]
    );
    assert_eq!(
        actions.iter().map(|a| a.target).collect::<Vec<_>>(),
        [4, 5, 6, 7]
    );
    let Some(Stream::Events(events)) = &flow.steps[2].stream else {
        panic!("{:?}", flow.steps[2].stream);
    };
    assert_eq!(
        (
            events.max_events,
            events.listen_ns,
            events.event_target,
            events.max_reconnects
        ),
        (None, Some(2_000_000_000), 8, 3)
    );
    assert!(!events.whole_answer);
    let llm = &flow.steps[3];
    assert_eq!(llm.target.method, "POST");
    assert_eq!(llm.needs, 2, "its body reads `said`");
    assert!(
        !llm.target.headers.iter().any(|h| h.name == "Accept"),
        "a stream step asks for no event stream"
    );
    let Some(Stream::Events(events)) = &llm.stream else {
        panic!("{:?}", llm.stream);
    };
    assert_eq!(
        (events.whole_answer, events.max_events, events.listen_ns),
        (true, None, None)
    );
}

const GREETER_PROTO: &str = r#"syntax = "proto3";
package hello;
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply) {}
  rpc SayMany (HelloRequest) returns (stream HelloReply) {}
  rpc Chat (stream HelloRequest) returns (stream HelloReply) {}
}
message HelloRequest { string name = 1; int32 times = 2; Inner inner = 3; }
message Inner { string note = 1; }
message HelloReply { string message = 1; int32 count = 2; }
"#;

/// A flow of an HTTP login and gRPC calls, the `.proto` in a fresh directory (the
/// scenario's `proto`, or a step's own when `step_proto`).
fn compile_grpc(steps: &str, step_proto: bool) -> (tempfile::TempDir, Result<Flow, String>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greeter.proto"), GREETER_PROTO).unwrap();
    let steps: Steps = toml::from_str(steps).unwrap();
    let origin = Origin::scenario("flow.toml", 3, "shop", dir.path());
    let protos = (!step_proto).then(|| {
        Arc::new(crate::ProtoSet::compile(&[dir.path().join("greeter.proto")], &[]).unwrap())
    });
    let mut types = TypeSource::new(protos, None);
    let read = |path: &Path| std::fs::read(path);
    let flow = Flow::compile_with(
        &steps.step,
        FlowOptions::default(),
        &[],
        &origin,
        &read,
        &mut types,
    );
    (dir, flow.map_err(|e| e.to_string()))
}

const GRPC_FLOW: &str = r#"
[[step]]
name = "login"
request = "POST http://127.0.0.1:8080/login"
extract = { token = "json $.token" }

[[step]]
name = "hello"
request = "GRPC 127.0.0.1:50051 hello.Greeter/SayHello\nauthorization: Bearer {{token}}\ngrpc-timeout: 2s"
body = '{"name": "{{token}}", "times": 3, "inner": {"note": "n {{user}}"}}'
extract = { said = "json $.message" }
checks = ["grpc OK", "json $.count = 0"]

[[step]]
name = "many"
request = "GRPC 127.0.0.1:50051 hello.Greeter/SayMany"
checks = ["grpc = OK", "json $[1].message = b"]
"#;

/// `messages` of `hello.HelloReply` (message text, count), each behind its prefix.
fn reply_frames(messages: &[(&str, u8)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (text, count) in messages {
        let mut bytes = vec![0x0a, text.len() as u8];
        bytes.extend_from_slice(text.as_bytes());
        if *count > 0 {
            bytes.extend_from_slice(&[0x10, *count]);
        }
        out.extend_from_slice(&crate::frame(&bytes));
    }
    out
}

#[test]
fn grpc_steps_call_with_outside_values_in_string_fields_and_judge_the_answers_json() {
    for step_proto in [false, true] {
        let steps = if step_proto {
            GRPC_FLOW
                .replace(
                    "name = \"hello\"",
                    "name = \"hello\"\nproto = [\"greeter.proto\"]",
                )
                .replace(
                    "name = \"many\"",
                    "name = \"many\"\nproto = [\"greeter.proto\"]",
                )
        } else {
            GRPC_FLOW.to_owned()
        };
        let (_dir, flow) = compile_grpc(&steps, step_proto);
        let flow = flow.unwrap();
        let hello = &flow.steps[1];
        assert!(hello.target.is_grpc() && hello.grpc.is_some());
        assert_eq!(
            hello.target.url.as_str(),
            "http://127.0.0.1:50051/hello.Greeter/SayHello"
        );
        assert_eq!(hello.needs, 0b1, "hello reads token");
        let metadata: Vec<(&str, &str)> = hello
            .target
            .headers
            .iter()
            .map(|h| (h.name.as_str(), h.value.as_str()))
            .collect();
        assert_eq!(
            metadata,
            [
                ("content-type", "application/grpc"),
                ("te", "trailers"),
                ("grpc-accept-encoding", "gzip"),
                ("authorization", "Bearer {{token}}"),
                ("grpc-timeout", "2000000u")
            ]
        );

        // A hostile token lands as the string field's bytes, whatever it holds.
        let token = br#"x", "times": 9, "inner": {"note": "}}{{"#;
        let message = hello
            .target
            .grpc_message
            .as_ref()
            .expect("templated message");
        let variables = vec![token.to_vec()];
        let context = RenderContext {
            seed: 0,
            seq: 0,
            data: None,
            row: 0,
            variables: &variables,
            user: 7,
        };
        let mut frame = Vec::new();
        message.render(&context, &mut frame);
        let input = crate::ProtoSet::compile(&[_dir.path().join("greeter.proto")], &[])
            .unwrap()
            .method("hello.Greeter/SayHello")
            .unwrap()
            .input();
        let sent = prost_reflect::DynamicMessage::decode(input, &frame[5..]).unwrap();
        let sent = serde_json::to_value(&sent).unwrap();
        assert_eq!(
            sent,
            serde_json::json!({"name": String::from_utf8_lossy(token), "times": 3, "inner": {"note": "n 7"}})
        );

        // The answer's message as JSON: extracted from, checked, its status by name.
        let mut scratch = flow.scratch();
        let mut user = UserState::default();
        flow.start(&mut user, 7);
        user.step = 1;
        let body = reply_frames(&[("Hello \"you\"", 0)]);
        let ok = Answer {
            grpc_status: Some(0),
            ..answer(200, b"", &body)
        };
        let url = hello.cookie_url();
        assert_eq!(
            flow.judge(&mut user, &ok, url, 0, &mut scratch),
            Verdict::default()
        );
        assert_eq!(user.variables[1], br#"Hello "you""#);
        let failed = Answer {
            grpc_status: Some(14),
            ..answer(200, b"", b"")
        };
        let verdict = flow.judge(&mut user, &failed, url, 0, &mut scratch);
        assert_eq!(verdict.checks_failed, 0b11, "no message: no count either");
        assert_eq!(verdict.failure, Some(FlowFailure::Check { check: 0 }));

        user.step = 2;
        let body = reply_frames(&[("a", 1), ("b", 2)]);
        let stream = Answer {
            grpc_status: Some(0),
            ..answer(200, b"", &body)
        };
        assert_eq!(
            flow.judge(&mut user, &stream, url, 0, &mut scratch),
            Verdict::default()
        );
        let gzip = |bytes: &[u8]| {
            use std::io::Write;
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(bytes).unwrap();
            encoder.finish().unwrap()
        };
        // One message of the stream compressed (the flag says which), one not.
        let plain = reply_frames(&[("a", 1)]);
        let packed = gzip(&plain[5..]);
        let mut mixed = vec![1];
        mixed.extend_from_slice(&(packed.len() as u32).to_be_bytes());
        mixed.extend_from_slice(&packed);
        mixed.extend_from_slice(&reply_frames(&[("b", 2)]));
        let compressed = Answer {
            grpc_status: Some(0),
            ..answer(200, b"grpc-encoding: gzip\r\n", &mixed)
        };
        assert_eq!(
            flow.judge(&mut user, &compressed, url, 0, &mut scratch),
            Verdict::default(),
            "a gzip message reads as the plain one"
        );
        let bad_gzip = [&[1, 0, 0, 0, 4][..], b"\x1f\x8b\x08\x00"].concat();
        let bomb = gzip(&vec![0; 1 << 20]);
        let mut bombed = vec![1];
        bombed.extend_from_slice(&(bomb.len() as u32).to_be_bytes());
        bombed.extend_from_slice(&bomb);
        let gzipped: &[u8] = b"grpc-encoding: gzip\r\n";
        /// The answer's head and body, its size on the wire, how it fails and says so.
        type Row<'a> = (&'a [u8], &'a [u8], u64, DecodeFailure, &'a str);
        let rows: &[Row<'_>] = &[
            (
                b"",
                &body[..body.len() - 2],
                body.len() as u64,
                DecodeFailure::Cut,
                "step \"many\": the answer's hello.HelloReply goes past check_body_limit",
            ),
            (
                b"",
                &body[..body.len() - 2],
                body.len() as u64 - 2,
                DecodeFailure::Malformed,
                "step \"many\": the answer is not a hello.HelloReply message",
            ),
            (
                b"",
                b"\x01\0\0\0\0",
                5,
                DecodeFailure::Compressed,
                "step \"many\": the answer's hello.HelloReply is compressed in an encoding we do not read",
            ),
            (
                b"grpc-encoding: br\r\n",
                &mixed,
                mixed.len() as u64,
                DecodeFailure::Compressed,
                "step \"many\": the answer's hello.HelloReply is compressed in an encoding we do not read",
            ),
            (
                gzipped,
                &bad_gzip,
                bad_gzip.len() as u64,
                DecodeFailure::Inflate,
                "step \"many\": the answer's hello.HelloReply does not inflate as gzip",
            ),
            (
                gzipped,
                &bombed,
                bombed.len() as u64,
                DecodeFailure::Inflate,
                "step \"many\": the answer's hello.HelloReply does not inflate as gzip",
            ),
            (
                b"",
                b"\0\0\0\0\x02\x0a\x05",
                7,
                DecodeFailure::Malformed,
                "step \"many\": the answer is not a hello.HelloReply",
            ),
        ];
        for (head, body, body_bytes, want, text) in rows {
            let cut = Answer {
                grpc_status: Some(0),
                body_bytes: *body_bytes,
                ..answer(200, head, body)
            };
            let verdict = flow.judge(&mut user, &cut, url, 0, &mut scratch);
            assert_eq!(
                verdict.failure,
                Some(FlowFailure::Decode(*want)),
                "{body:?}"
            );
            let said = flow.failure_text(2, verdict.failure.unwrap());
            assert!(said.starts_with(text), "{said}");
        }
    }
}

#[test]
fn grpc_steps_check_and_extract_from_metadata_and_trailers() {
    let steps = r#"
[[step]]
name = "hello"
request = "GRPC 127.0.0.1:50051 hello.Greeter/SayHello"
extract = { region = "header x-region" }
checks = ["header content-type = application/grpc", "header grpc-status = 0"]

[[step]]
name = "again"
request = "GRPC 127.0.0.1:50051 hello.Greeter/SayHello\nx-region: {{region}}"
body = '{"name": "{{region}}"}'
"#;
    let (_dir, flow) = compile_grpc(steps, false);
    let flow = flow.unwrap();
    let mut scratch = flow.scratch();
    let url = flow.steps[0].cookie_url();
    let body = reply_frames(&[("hi", 0)]);
    // The head's metadata, then the trailers, as the engine keeps them.
    let rows: [(&[u8], Verdict, &[u8]); 2] = [
        (
            b"content-type: application/grpc\r\nx-region: eu-1\r\ngrpc-status: 0\r\n",
            Verdict::default(),
            b"eu-1",
        ),
        (
            b"content-type: application/grpc\r\ngrpc-status: 14\r\n",
            Verdict {
                checks_failed: 0b10,
                failure: Some(FlowFailure::Check { check: 1 }),
            },
            b"",
        ),
    ];
    for (head, want, region) in rows {
        let mut user = UserState::default();
        flow.start(&mut user, 1);
        let answer = Answer {
            grpc_status: Some(0),
            ..answer(200, head, &body)
        };
        assert_eq!(flow.judge(&mut user, &answer, url, 0, &mut scratch), want);
        assert_eq!(user.variables[0], region);
    }
}

#[test]
fn a_grpc_step_calls_a_bidirectional_method_with_a_message_per_line_and_reads_its_answers_as_an_array()
 {
    let steps = r#"
[[step]]
name = "login"
request = "POST http://127.0.0.1:8080/login"
extract = { token = "json $.token" }

[[step]]
name = "chat"
request = "GRPC 127.0.0.1:50051 hello.Greeter/Chat"
body = """
{"name": "first"}
{"name": "{{token}}"}

{"name": "last"}
"""
checks = ["grpc OK", "json $[1].message = b"]
"#;
    let (_dir, flow) = compile_grpc(steps, false);
    let flow = flow.unwrap();
    let chat = &flow.steps[1];
    let stream = chat.target.grpc_stream.expect("a stream");
    assert_eq!((stream.messages_out, stream.bidi), (3, true));
    let message = chat.target.grpc_message.as_ref().expect("a placeholder");
    assert_eq!(message.texts().collect::<Vec<_>>(), ["{{token}}"]);
    assert!(chat.grpc.as_ref().is_some_and(|call| call.server_streaming));
}

#[test]
fn grpc_step_mistakes_are_named() {
    let login = "[[step]]\nname = \"login\"\nrequest = \"POST http://127.0.0.1:8080/login\"\nextract = { token = \"json $.token\" }\n";
    let call =
        "[[step]]\nname = \"hello\"\nrequest = \"GRPC 127.0.0.1:50051 hello.Greeter/SayHello\"\n";
    let rows: &[(String, &str)] = &[
        (
            format!("{call}extract = {{ a = \"cookie s\" }}"),
            "extract: \"cookie s\": a gRPC call sets no cookies (extract from its metadata with header NAME",
        ),
        (
            format!("{login}checks = [\"grpc OK\"]"),
            "step \"login\": checks: \"grpc OK\": only a GRPC step's answer has a gRPC status",
        ),
        (
            format!("{login}proto = [\"greeter.proto\"]"),
            "step \"login\": proto: only a GRPC step",
        ),
        (
            format!("{login}{call}body = '{{\"times\": \"{{{{token}}}}\"}}'"),
            "step \"hello\": body: message hello.HelloRequest at times: ",
        ),
        (
            format!("{call}body = '{{\"nme\": \"x\"}}'"),
            "step \"hello\": body: message hello.HelloRequest: unrecognized field name 'nme'",
        ),
        (
            format!("{call}body = '{{\"name\": \"{{{{nope}}}}\"}}'"),
            "step \"hello\": body: template \"{{nope}}\": unknown variable",
        ),
        (
            format!(
                "{call}body = '{{}}'\n[[step]]\nrequest = \"GRPC 127.0.0.1:50051 hello.Greeter/SayHi\""
            ),
            "step 2: request: no method \"hello.Greeter/SayHi\" in the .proto files (known: hello.Greeter/SayHello, hello.Greeter/SayMany, hello.Greeter/Chat)",
        ),
        (
            format!("{call}body = '''{{\"name\": \"a\"}}\n{{\"times\": \"{{{{user}}}}\"}}'''")
                .replace("SayHello", "Chat"),
            "step \"hello\": body: message hello.HelloRequest at times: ",
        ),
        (
            format!("{call}import_path = [\"x\"]"),
            "step \"hello\": import_path: is where a .proto's imports are looked up",
        ),
        (
            format!("{call}proto = [\"gone.proto\"]"),
            "step \"hello\": proto: ",
        ),
        (
            call.replace("SayHello\"", "SayHello\\nx-a: 1\\n{}\"") + "body = '{}'",
            "step \"hello\": body: the request has its message on a line already",
        ),
    ];
    for (steps, want) in rows {
        let (_dir, flow) = compile_grpc(steps, false);
        let err = flow.unwrap_err();
        assert!(err.contains(want), "{steps}: {err}");
    }
    let (_dir, flow) = compile_grpc(&format!("{call}body = '{{}}'"), true);
    let err = flow.unwrap_err();
    assert!(
        err.contains("step \"hello\": request: a GRPC target needs the .proto files"),
        "{err}"
    );
}

#[test]
fn a_send_time_is_read_back_from_where_the_step_says() {
    let flow = compile_scenario(
        r#"
[[scenario]]
name = "chat"
rate = 1

[[scenario.step]]
name = "json"
ws = "ws://h/chat"
send_time = "json $.sent"
actions = [{ send = '{"sent": {{send_time_ns}}, "to": "{{user}}"}' }]

[[scenario.step]]
name = "regex"
ws = "ws://h/chat"
send_time = "regex at=([0-9a-z]+)"
actions = [{ send = "{{send_time_ns}}" }]
"#,
    )
    .unwrap();
    let send_time = |step: usize| match &flow.steps[step].stream {
        Some(Stream::WebSocket(session)) => session.send_time.clone().unwrap(),
        other => panic!("{other:?}"),
    };
    let (json, regex) = (send_time(0), send_time(1));
    // (where, the message, the time read: none, a number, or the error's end)
    type Row<'a> = (&'a SendTime, &'a str, Option<Result<u64, &'a str>>);
    let rows: &[Row<'_>] = &[
        (
            &json,
            r#"{"sent": 1700000000000000000}"#,
            Some(Ok(1_700_000_000_000_000_000)),
        ),
        (&json, r#"{"sent": "0000000000000000042"}"#, Some(Ok(42))),
        (&json, r#"{"other": 1}"#, None),
        (&json, "not json", None),
        (
            &json,
            r#"{"sent": -5}"#,
            Some(Err(r#""-5" is not unix nanoseconds"#)),
        ),
        (
            &json,
            r#"{"sent": {"a": 1}}"#,
            Some(Err("is not unix nanoseconds")),
        ),
        (&regex, "tick at=17 ok", Some(Ok(17))),
        (
            &regex,
            "tick at=soon",
            Some(Err(r#""soon" is not unix nanoseconds"#)),
        ),
        (&regex, "tick", None),
    ];
    for (send_time, message, want) in rows {
        let got = flow.send_time_in(send_time, message.as_bytes());
        match (got, want) {
            (None, None) => {}
            (Some(Ok(got)), Some(Ok(want))) => assert_eq!(got, *want, "{message}"),
            (Some(Err(text)), Some(Err(want))) => assert!(text.contains(want), "{message}: {text}"),
            (got, want) => panic!("{message}: {got:?}, want {want:?}"),
        }
    }
    let Some(Stream::WebSocket(session)) = &flow.steps[0].stream else {
        panic!();
    };
    assert!(matches!(
        session.actions[0].kind,
        ActionKind::Send(_, Some(_))
    ));
    assert_eq!(flow.steps[0].needs, 0, "{{user}} is no variable");
}

#[test]
fn a_paced_sends_kth_message_is_due_by_its_every_or_its_schedule() {
    let schedule = |text: &str| PaceTimes::Schedule(crate::Schedule::parse(text).unwrap());
    let second = 1_000_000_000;
    let rows = [
        (
            "every 10ns, 3",
            3,
            PaceTimes::Every(10),
            [Some(0), Some(10), Some(20), None],
        ),
        (
            "2/s for 1s",
            u64::MAX,
            schedule("const(2, 1s)"),
            [Some(0), Some(second / 2), None, None],
        ),
        (
            "2/s for 1s, at most 1",
            1,
            schedule("const(2, 1s)"),
            [Some(0), None, None, None],
        ),
        (
            "a pause first",
            u64::MAX,
            schedule("const(0, 1s) const(1, 2s)"),
            [Some(second), Some(2 * second), None, None],
        ),
    ];
    for (name, count, times, want) in rows {
        let pace = Pace { count, times };
        let got: Vec<Option<u64>> = (0..4).map(|k| pace.offset_ns(k)).collect();
        assert_eq!(got, want, "{name}");
    }
}
