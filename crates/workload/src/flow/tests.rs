use super::*;
use serde::Deserialize;

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
