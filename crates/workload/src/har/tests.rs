//! [`har_to_flow`] end to end: HAR files built here (happy and sad rows), every flow
//! made checked for docs/FLOWS.md's structure, and the golden flow of
//! `examples/har/app_login.har` (recorded against the simulator by
//! `examples/har/record_har.py`; `UPDATE_GOLDEN=1 cargo test -p loadlab-workload har`
//! rewrites `examples/har/app_login.toml`; review the diff).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use super::{HarFlow, HarOptions, har_to_flow};

/// One HAR entry, built up from a plain GET answered 200 with `{}`.
#[derive(Clone)]
struct E(Value);

impl E {
    /// A request `at_ms` after 10:00:00 that took 10 ms.
    fn new(at_ms: u64, method: &str, url: &str) -> E {
        E(json!({
            "startedDateTime": timestamp(at_ms),
            "time": 10,
            "request": {"method": method, "url": url, "httpVersion": "HTTP/1.1", "headers": []},
            "response": {
                "status": 200,
                "headers": [],
                "content": {"size": 2, "mimeType": "application/json", "text": "{}"}
            }
        }))
    }

    fn header(mut self, name: &str, value: &str) -> E {
        push(&mut self.0["request"]["headers"], name, value);
        self
    }

    fn body(mut self, mime: &str, text: &str) -> E {
        self.0["request"]["postData"] = json!({"mimeType": mime, "text": text});
        self
    }

    fn answer(mut self, status: u16, mime: &str, text: &str) -> E {
        self.0["response"]["status"] = json!(status);
        self.0["response"]["content"] = json!({"mimeType": mime, "text": text});
        self
    }

    fn answer_header(mut self, name: &str, value: &str) -> E {
        push(&mut self.0["response"]["headers"], name, value);
        self
    }

    fn time(mut self, ms: u64) -> E {
        self.0["time"] = json!(ms);
        self
    }

    /// Sets the value at a JSON pointer (its parent must exist).
    fn set(mut self, pointer: &str, value: Value) -> E {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let parent = self.0.pointer_mut(parent).unwrap();
        parent[key] = value;
        self
    }

    fn remove(mut self, pointer: &str) -> E {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        self.0
            .pointer_mut(parent)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove(key);
        self
    }
}

fn push(list: &mut Value, name: &str, value: &str) {
    list.as_array_mut()
        .unwrap()
        .push(json!({"name": name, "value": value}));
}

fn timestamp(at_ms: u64) -> String {
    let (minutes, rest) = (at_ms / 60_000, at_ms % 60_000);
    format!(
        "2024-05-01T10:{minutes:02}:{:02}.{:03}Z",
        rest / 1000,
        rest % 1000
    )
}

/// A HAR file of `entries`, pretty-printed so fields have lines of their own.
fn har(entries: &[E]) -> String {
    let entries: Vec<&Value> = entries.iter().map(|e| &e.0).collect();
    serde_json::to_string_pretty(&json!({
        "log": {
            "version": "1.2",
            "creator": {"name": "test", "version": "1"},
            "entries": entries
        }
    }))
    .unwrap()
}

fn options() -> HarOptions {
    HarOptions {
        source_name: "session.har".to_owned(),
        ..HarOptions::default()
    }
}

fn convert(text: &str, options: &HarOptions) -> HarFlow {
    let flow = har_to_flow(text, options).unwrap_or_else(|err| panic!("{err}"));
    check_flow(&flow.toml);
    flow
}

/// docs/FLOWS.md's structure, as far as a HAR import writes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowFile {
    scenario: Vec<Scenario>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    name: String,
    concurrency: u64,
    duration: String,
    step: Vec<FlowStep>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowStep {
    name: String,
    request: String,
    body: Option<String>,
    #[serde(default)]
    extract: BTreeMap<String, String>,
    checks: Vec<String>,
    think: Option<String>,
}

/// Reads a flow back and checks what the flow parser will: the structure, unique step
/// names, each `{{NAME}}` extracted by an earlier step, requests in vegeta's syntax:
/// the flow parser's own judgement), think times as durations, checks and extractions
/// spelled as docs/FLOWS.md spells them.
fn check_flow(text: &str) -> FlowFile {
    // The flow parser itself takes it, steps and all.
    let parsed =
        crate::ScenarioFile::parse(text, "har.toml").unwrap_or_else(|err| panic!("{err}\n{text}"));
    for (line, fields) in &parsed.scenarios {
        let name = fields.name.as_deref().unwrap_or_default();
        let origin = crate::Origin::scenario("har.toml", *line, name, Path::new("."));
        let steps = fields.step.as_deref().unwrap_or_default();
        crate::Flow::compile(steps, crate::FlowOptions::default(), &[], &origin, &|_| {
            Err(std::io::Error::other("no body files"))
        })
        .unwrap_or_else(|err| panic!("{err}\n{text}"));
    }
    let file: FlowFile = toml::from_str(text).unwrap_or_else(|err| panic!("{err}\n{text}"));
    assert_eq!(file.scenario.len(), 1);
    let scenario = &file.scenario[0];
    assert!(!scenario.name.is_empty());
    assert_eq!(scenario.concurrency, 1);
    assert_eq!(scenario.duration, "1m");
    // Unique names, requests, variables used after their extraction: the parser
    // above has judged them; what is left is how the import spells things.
    for step in &scenario.step {
        assert!(!step.name.contains(':'), "{}", step.name);
        if let Some(think) = &step.think {
            units::parse_duration(think).unwrap_or_else(|err| panic!("{think}: {err}"));
        }
        for check in &step.checks {
            let status = check.strip_prefix("status ").unwrap();
            assert!(
                status.len() == 3 && status.parse::<u16>().is_ok(),
                "{check}"
            );
        }
        for (name, expression) in &step.extract {
            assert!(
                expression.starts_with("json $")
                    || expression.starts_with("json /")
                    || expression.starts_with("header ")
                    || expression.starts_with("cookie "),
                "{expression}"
            );
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{name}"
            );
        }
    }
    file
}

fn step<'a>(file: &'a FlowFile, name: &str) -> &'a FlowStep {
    file.scenario[0]
        .step
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| {
            panic!(
                "no step {name:?} in {:?}",
                file.scenario[0]
                    .step
                    .iter()
                    .map(|s| &s.name)
                    .collect::<Vec<_>>()
            )
        })
}

fn step_names(file: &FlowFile) -> Vec<&str> {
    file.scenario[0]
        .step
        .iter()
        .map(|s| s.name.as_str())
        .collect()
}

/// A login, a list, an item and a profile: the shape of examples/recipes/app_login.json.
fn login_session() -> Vec<E> {
    vec![
        E::new(0, "POST", "http://127.0.0.1:8080/login")
            .header("Content-Type", "application/json")
            .header("User-Agent", "Mozilla/5.0")
            .header("Accept-Encoding", "gzip, br")
            .body("application/json", r#"{"user":"ann","password":"hunter2"}"#)
            .answer(
                200,
                "application/json",
                r#"{"token": "tk-5f2a9c", "user": "ann"}"#,
            )
            .answer_header("Set-Cookie", "session=77; Path=/"),
        E::new(30, "GET", "http://127.0.0.1:8080/static/app.css").answer(200, "text/css", "body{}"),
        E::new(31, "GET", "http://127.0.0.1:8080/logo.png").answer(200, "image/png", ""),
        E::new(1500, "GET", "http://127.0.0.1:8080/items?page=1")
            .header("Authorization", "Bearer tk-5f2a9c")
            .header("Cookie", "session=77")
            .answer(
                200,
                "application/json",
                r#"{"count": 3, "items": [{"id": 11}, {"id": 12}, {"id": 13}]}"#,
            ),
        E::new(1600, "GET", "http://127.0.0.1:8080/items/12")
            .header("Authorization", "Bearer tk-5f2a9c")
            .header(":authority", "127.0.0.1:8080")
            .answer(200, "application/json", r#"{"id": 12}"#),
        E::new(4700, "GET", "http://127.0.0.1:8080/items/13?x=1#frag")
            .header("Authorization", "Bearer tk-5f2a9c"),
    ]
}

#[test]
fn turns_a_session_into_a_flow() {
    let flow = convert(&har(&login_session()), &options());
    assert_eq!((flow.entries, flow.steps, flow.extractions), (6, 4, 3));
    let file = check_flow(&flow.toml);
    assert_eq!(file.scenario[0].name, "session");
    assert_eq!(
        step_names(&file),
        [
            "POST login",
            "GET items",
            "GET items/{item_id}",
            "GET items/{item_id_2}"
        ]
    );
    let login = step(&file, "POST login");
    assert_eq!(
        login.request,
        "POST http://127.0.0.1:8080/login\nContent-Type: application/json\n"
    );
    assert_eq!(
        login.body.as_deref(),
        Some(r#"{"user":"ann","password":"hunter2"}"#)
    );
    assert_eq!(login.extract["token"], "json $.token");
    assert_eq!(login.checks, ["status 200"]);
    assert_eq!(
        login.think.as_deref(),
        Some("1.5s"),
        "from the end of login to items"
    );
    let items = step(&file, "GET items");
    assert_eq!(
        items.request,
        "GET http://127.0.0.1:8080/items?page=1\nAuthorization: Bearer {{token}}\n"
    );
    assert_eq!(items.extract["item_id"], "json $.items[1].id");
    assert_eq!(items.extract["item_id_2"], "json $.items[2].id");
    assert_eq!(items.think, None, "90 ms is the page's own work");
    let last = step(&file, "GET items/{item_id_2}");
    assert_eq!(
        last.request,
        "GET http://127.0.0.1:8080/items/{{item_id_2}}?x=1\nAuthorization: Bearer {{token}}\n"
    );
    assert_eq!(last.think, None, "the last step has none");
    assert_eq!(
        step(&file, "GET items/{item_id}").think.as_deref(),
        Some("3.1s")
    );
    for want in [
        "# A flow from session.har (recorded by test 1)",
        "# Steps: 4 of the 6 entries",
        "# Left out: 2 static assets (/static/app.css, /logo.png; -har-keep-static keeps them).",
        "#   token = \"json $.token\" of \"POST login\" (recorded \"tk-5f2a9c\"), sent by \"GET items\"",
        "#   \"POST login\" sends a recorded password in its body",
    ] {
        assert!(flow.toml.contains(want), "{want}\n{}", flow.toml);
    }
    assert!(
        !flow.toml.contains("cookies no earlier answer"),
        "the login set the cookie"
    );
}

#[test]
fn options_choose_entries_headers_and_name() {
    let text = har(&login_session());
    let rows: &[(&str, HarOptions, &[&str])] = &[
        (
            "keep static",
            HarOptions {
                keep_static: true,
                ..options()
            },
            &[
                "POST login",
                "GET app.css",
                "GET logo.png",
                "GET items",
                "GET items/{item_id}",
                "GET items/{item_id_2}",
            ],
        ),
        (
            "only another port",
            HarOptions {
                hosts: vec!["127.0.0.1:9090".to_owned(), "127.0.0.1:8080".to_owned()],
                ..options()
            },
            &[
                "POST login",
                "GET items",
                "GET items/{item_id}",
                "GET items/{item_id_2}",
            ],
        ),
    ];
    for (what, options, want) in rows {
        let file = check_flow(&convert(&text, options).toml);
        assert_eq!(step_names(&file), *want, "{what}");
    }
    let named = HarOptions {
        name: Some("shop".to_owned()),
        keep_headers: vec!["accept-encoding".to_owned(), "User-Agent".to_owned()],
        ..options()
    };
    let file = check_flow(&convert(&text, &named).toml);
    assert_eq!(file.scenario[0].name, "shop");
    assert_eq!(
        step(&file, "POST login").request,
        "POST http://127.0.0.1:8080/login\nContent-Type: application/json\nUser-Agent: Mozilla/5.0\nAccept-Encoding: gzip, br\n"
    );
    let skipped = HarOptions {
        skip_hosts: vec!["127.0.0.1".to_owned()],
        ..options()
    };
    let err = har_to_flow(&text, &skipped).unwrap_err().to_string();
    assert!(
        err.starts_with("session.har:7: log.entries: every entry was left out (6 to other hosts)"),
        "{err}"
    );
}

/// A session on shop.test with third parties: a font host, analytics, and one call to
/// an API on another origin.
fn session_with_third_parties() -> Vec<E> {
    vec![
        E::new(0, "GET", "https://shop.test/").answer(200, "text/html", "<html>"),
        E::new(20, "GET", "https://fonts.test/css2?family=Inter").answer(200, "text/html", ""),
        E::new(40, "POST", "https://analytics.test/collect?v=2"),
        E::new(900, "GET", "https://shop.test/items?page=2")
            .header("Origin", "https://shop.test")
            .header("X-Back", "https://shop.test/items"),
        E::new(1800, "GET", "https://api.shop.test/stock/7"),
        E::new(2700, "POST", "https://shop.test/cart")
            .header("Origin", "https://shop.test")
            .body("application/json", r#"{"item":7}"#),
    ]
}

#[test]
fn base_url_sends_the_main_origin_or_the_chosen_hosts_elsewhere() {
    let text = har(&session_with_third_parties());
    let base = |url: &str, hosts: &[&str]| HarOptions {
        base_url: Some(url.to_owned()),
        hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
        ..options()
    };
    // (what, options, each step's request line, a line the header must hold)
    let rows: &[(&str, HarOptions, &[&str], &str)] = &[
        (
            "none: the recorded origins",
            options(),
            &[
                "GET https://shop.test/",
                "GET https://fonts.test/css2?family=Inter",
                "POST https://analytics.test/collect?v=2",
                "GET https://shop.test/items?page=2",
                "GET https://api.shop.test/stock/7",
                "POST https://shop.test/cart",
            ],
            "Hosts: shop.test (3 entries, 3 steps), fonts.test",
        ),
        (
            "the main origin, others left out",
            base("http://127.0.0.1:8080", &[]),
            &[
                "GET http://127.0.0.1:8080/",
                "GET http://127.0.0.1:8080/items?page=2",
                "POST http://127.0.0.1:8080/cart",
            ],
            "Left out: 3 to other hosts (fonts.test, analytics.test, api.shop.test)",
        ),
        (
            "a path prefix, with or without its last slash",
            base("https://staging.test:8443/v2/shop/", &[]),
            &[
                "GET https://staging.test:8443/v2/shop/",
                "GET https://staging.test:8443/v2/shop/items?page=2",
                "POST https://staging.test:8443/v2/shop/cart",
            ],
            "Sent to https://staging.test:8443/v2/shop (-base-url) instead of https://shop.test",
        ),
        (
            "-har-host: every host it keeps",
            base("http://[::1]:9000", &["shop.test", "api.shop.test"]),
            &[
                "GET http://[::1]:9000/",
                "GET http://[::1]:9000/items?page=2",
                "GET http://[::1]:9000/stock/7",
                "POST http://[::1]:9000/cart",
            ],
            "instead of https://shop.test, https://api.shop.test (the hosts -har-host keeps)",
        ),
    ];
    for (what, options, want, header) in rows {
        let flow = convert(&text, options);
        let file = check_flow(&flow.toml);
        let lines: Vec<&str> = file.scenario[0]
            .step
            .iter()
            .map(|s| s.request.lines().next().unwrap())
            .collect();
        assert_eq!(lines, *want, "{what}");
        let header_text = flow.toml.replace("\n# ", " ");
        assert!(
            header_text.contains(header),
            "{what}: {header}\n{}",
            flow.toml
        );
    }
    // A recorded Origin names the base URL's; other values keep the recorded origin.
    let flow = convert(&text, &base("http://127.0.0.1:8080/shop", &[]));
    let file = check_flow(&flow.toml);
    assert_eq!(
        step(&file, "GET items").request,
        "GET http://127.0.0.1:8080/shop/items?page=2\nOrigin: http://127.0.0.1:8080\nX-Back: https://shop.test/items\n"
    );
    // A bad URL is named by its flag, before the file is read.
    let rows: &[(&str, &str)] = &[
        (
            "localhost:8080",
            "-base-url: \"localhost:8080\" has no scheme",
        ),
        (
            "ftp://a.test/",
            "-base-url: \"ftp://a.test/\" is not an http or https URL",
        ),
        (
            "http://a.test/?x=1",
            "-base-url: \"http://a.test/?x=1\" has a query",
        ),
        ("", "-base-url: \"\" has no scheme"),
    ];
    for (url, want) in rows {
        let err = har_to_flow("not even JSON", &base(url, &[]))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(want), "{url}: {err}");
    }
}

#[test]
fn handles_what_browsers_record() {
    struct Row {
        what: &'static str,
        entries: Vec<E>,
        want_steps: &'static [&'static str],
        want_in_toml: &'static [&'static str],
    }
    let rows = vec![
        Row {
            what: "a followed redirect: one step, the final answer checked and extracted from",
            entries: vec![
                E::new(0, "POST", "http://a.test/login")
                    .body("application/x-www-form-urlencoded", "user=ann&pwd=x")
                    .answer(302, "text/html", "")
                    .answer_header("Location", "/home"),
                E::new(20, "GET", "http://a.test/home").answer(
                    200,
                    "application/json",
                    r#"{"csrf": "c5rf-t0ken"}"#,
                ),
                E::new(900, "POST", "http://a.test/save")
                    .header("X-CSRF-Token", "c5rf-t0ken")
                    .body("application/json", r#"{"n": 1}"#),
            ],
            want_steps: &["POST login", "POST save"],
            want_in_toml: &[
                "checks = [\"status 200\"]\nthink = \"900ms\"",
                "extract = { csrf = \"json $.csrf\" }",
                "X-CSRF-Token: {{csrf}}",
                "1 followed redirect (/home; the engine follows redirects itself)",
                "sends a recorded pwd in its body",
            ],
        },
        Row {
            what: "a CSRF cookie copied into a header; the session cookie left to the jar",
            entries: vec![
                E::new(0, "GET", "http://a.test/api/start")
                    .answer_header("Set-Cookie", "session=s3ss10n-77; Path=/; HttpOnly")
                    .answer_header("Set-Cookie", "XSRF-TOKEN=x5rf-9b; Path=/"),
                E::new(10, "POST", "http://a.test/api/save")
                    .header("Cookie", "session=s3ss10n-77; XSRF-TOKEN=x5rf-9b")
                    .header("X-XSRF-TOKEN", "x5rf-9b")
                    .body("application/json", r#"{"a": 1}"#),
            ],
            want_steps: &["GET start", "POST save"],
            want_in_toml: &[
                "extract = { xsrf_token = \"cookie XSRF-TOKEN\" }",
                "X-XSRF-TOKEN: {{xsrf_token}}\n",
                "Extractions proposed",
            ],
        },
        Row {
            what: "cached entries, browser URLs and other hosts",
            entries: vec![
                E::new(0, "GET", "http://a.test/").answer(200, "text/html", "<html>"),
                E::new(5, "GET", "http://a.test/api/config").set("/_fromCache", json!("memory")),
                E::new(6, "GET", "data:image/png;base64,AAAA"),
                E::new(7, "GET", "wss://a.test/live"),
                E::new(8, "GET", "https://analytics.test/collect?id=1"),
                E::new(9, "GET", "http://a.test/api/me").header("Cookie", "sid=1; theme=dark"),
            ],
            want_steps: &["GET /", "GET collect", "GET me"],
            want_in_toml: &[
                "1 from the browser's cache (/api/config)",
                "2 not HTTP (data, wss)",
                "Hosts: a.test (3 entries, 2 steps), analytics.test (1 entry, 1 step)",
                "\"GET me\" sends cookies no earlier answer of the recording set (sid, theme)",
            ],
        },
        Row {
            what: "repeated names, a root path, status 0, a body without its type header",
            entries: vec![
                E::new(0, "GET", "http://a.test/page/2"),
                E::new(10, "GET", "http://a.test/page"),
                E::new(20, "GET", "http://a.test/page"),
                E::new(
                    30,
                    "PUT",
                    "http://a.test/doc/0f8fad5b-d9cb-469f-a165-70867728950e",
                )
                .body("text/plain", "it's {{ here")
                .answer(0, "", ""),
            ],
            want_steps: &["GET page/{id}", "GET page", "GET page 2", "PUT doc/{id}"],
            want_in_toml: &[
                "Content-Type: text/plain",
                "body = \"it's {{\\\"{{\\\"}} here\"",
                "checks = []",
                "holds a recorded `{{`",
                "got no answer in the recording (status 0)",
            ],
        },
        Row {
            what: "long pauses round to seconds; an authorization header not from an answer",
            entries: vec![
                E::new(0, "GET", "http://a.test/a")
                    .time(1000)
                    .header("Authorization", "Basic YW5uOnB3"),
                E::new(13_600, "GET", "http://a.test/b"),
            ],
            want_steps: &["GET a", "GET b"],
            want_in_toml: &[
                "think = \"13s\"",
                "sends the recorded Authorization header as it is",
            ],
        },
        Row {
            what: "a recorded pause of 1e9 s is capped (a tab left open), and said",
            entries: vec![
                E::new(0, "GET", "http://a.test/a"),
                // 1e9 s after the first.
                E::new(0, "GET", "http://a.test/b")
                    .set("/startedDateTime", json!("2056-01-08T11:46:40.000Z")),
            ],
            want_steps: &["GET a", "GET b"],
            want_in_toml: &[
                "think = \"300s\"",
                "\"GET a\" thinks 300s, not the 999999999.99s recorded",
            ],
        },
        Row {
            what: "entries out of order are sorted; the page's own pauses are none",
            entries: vec![
                E::new(300, "GET", "http://a.test/second"),
                E::new(0, "GET", "http://a.test/first").time(100),
            ],
            want_steps: &["GET first", "GET second"],
            want_in_toml: &[],
        },
    ];
    for row in rows {
        let flow = convert(&har(&row.entries), &options());
        let file = check_flow(&flow.toml);
        assert_eq!(step_names(&file), row.want_steps, "{}", row.what);
        for want in row.want_in_toml {
            assert!(
                flow.toml.contains(want),
                "{}: {want}\n{}",
                row.what,
                flow.toml
            );
        }
        if row.what.starts_with("entries out of order") {
            assert_eq!(step(&file, "GET first").think, None, "200 ms apart");
        }
    }
}

#[test]
fn names_what_is_wrong_with_bad_input() {
    let good = har(&login_session());
    let one = |entry: E| har(&[entry]);
    let base = || E::new(0, "GET", "http://a.test/");
    let postman = r#"{"info": {"_postman_id": "1", "name": "x", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"}, "item": []}"#;
    let rows: Vec<(&str, String, &str)> = vec![
        (
            "empty",
            String::new(),
            "session.har:1:0: not JSON: this looks like an empty file",
        ),
        (
            "a k6 script",
            "import http from 'k6/http';\nexport default function () { http.get('http://a/'); }\n"
                .to_owned(),
            "session.har:1:1: not JSON: this looks like a k6 script (JavaScript), not a HAR file",
        ),
        (
            "truncated",
            good[..good.len() / 2].to_owned(),
            "the JSON ends early (a truncated file?): EOF while parsing",
        ),
        (
            "broken",
            "{\n  \"log\": {\n    \"entries\": [,]\n}".to_owned(),
            "session.har:3:17: not JSON: expected value",
        ),
        (
            "nested arrays",
            format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
            "session.har:1:128: not JSON: nested deeper than 128 levels (serde_json's limit), not a HAR file",
        ),
        (
            "nested objects over lines",
            "{\"a\":\n".repeat(10_000),
            "session.har:128:",
        ),
        (
            "nested inside a HAR",
            good.replacen(
                "\"entries\": [",
                &format!(
                    "\"x\": {}0{}, \"entries\": [",
                    "[".repeat(500),
                    "]".repeat(500)
                ),
                1,
            ),
            "not JSON: nested deeper than 128 levels (serde_json's limit), not a HAR file",
        ),
        (
            "postman",
            postman.to_owned(),
            "session.har:1: not a HAR file: this looks like a Postman collection; a HAR file is",
        ),
        (
            "an array",
            "[1]".to_owned(),
            "session.har:1: not a HAR file: this looks like a JSON array",
        ),
        (
            "log not an object",
            r#"{"log": []}"#.to_owned(),
            "session.har:1: log: expected an object, found an array",
        ),
        (
            "no entries key",
            "{\n\"log\": {\n\"version\": \"1.2\"}}".to_owned(),
            "session.har:2: log.entries: missing: a HAR log lists",
        ),
        (
            "no entries",
            har(&[]),
            "session.har:7: log.entries: no entries: the recording holds no request",
        ),
        (
            "no url",
            one(base().remove("/request/url")),
            "session.har:9: log.entries[0].request.url: missing",
        ),
        (
            "no response",
            one(base().remove("/response")),
            "session.har:8: log.entries[0].response: missing",
        ),
        (
            "no start",
            one(base().remove("/startedDateTime")),
            "session.har:8: log.entries[0].startedDateTime: missing",
        ),
        (
            "status as text",
            one(base().set("/response/status", json!("200"))),
            "log.entries[0].response.status: expected a number, found \"200\"",
        ),
        (
            "status too big",
            one(base().set("/response/status", json!(1000))),
            "log.entries[0].response.status: 1000 is not an HTTP status",
        ),
        (
            "ftp",
            one(base().set("/request/url", json!("ftp://a.test/f"))),
            "log.entries[0].request.url: \"ftp://a.test/f\" is not an http or https URL",
        ),
        (
            "relative",
            one(base().set("/request/url", json!("/items"))),
            "log.entries[0].request.url: \"/items\" is not a URL (relative URL without a base)",
        ),
        (
            "method",
            one(base().set("/request/method", json!("FETCH"))),
            "log.entries[0].request.method: unknown method \"FETCH\"",
        ),
        (
            "date",
            one(base().set("/startedDateTime", json!("yesterday"))),
            "log.entries[0].startedDateTime: \"yesterday\" is not an ISO 8601 date and time",
        ),
        (
            "time",
            one(base().set("/time", json!(null))),
            "log.entries[0].time: expected a number, found null",
        ),
        (
            "headers",
            one(base().set("/request/headers", json!({}))),
            "log.entries[0].request.headers: expected an array, found an object",
        ),
        (
            "header value",
            one(base()
                .header("Accept", "x")
                .remove("/request/headers/0/value")),
            "log.entries[0].request.headers[0].value: missing",
        ),
        (
            "entry",
            har(&[]).replace("\"entries\": []", "\"entries\": [7]"),
            "log.entries[0]: expected an object, found 7",
        ),
        (
            "all static",
            one(base().answer(200, "image/png", "")),
            "log.entries: every entry was left out (1 static asset): -har-keep-static keeps static assets",
        ),
    ];
    for (what, text, want) in rows {
        let err = har_to_flow(&text, &options())
            .map(|f| f.toml)
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{what}: {err}\n{text}");
        assert!(err.starts_with("session.har:"), "{what}: {err}");
    }
}

#[test]
fn a_byte_order_mark_is_ignored() {
    let text = format!("\u{feff}{}", har(&login_session()));
    assert_eq!(convert(&text, &options()).steps, 4);
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/har")
}

/// The recording of examples/recipes/app_login.json gives the committed flow.
#[test]
fn golden_app_login_flow() {
    let dir = examples_dir();
    let har_text = std::fs::read_to_string(dir.join("app_login.har")).unwrap();
    let options = HarOptions {
        source_name: "app_login.har".to_owned(),
        ..HarOptions::default()
    };
    let flow = convert(&har_text, &options);
    let file = check_flow(&flow.toml);
    // What the recording must show whatever its ids: the token and an item id extracted.
    assert_eq!(
        step_names(&file),
        ["POST login", "GET items", "GET items/{item_id}", "GET me"]
    );
    assert_eq!(step(&file, "POST login").extract["token"], "json $.token");
    assert!(
        step(&file, "GET me")
            .request
            .contains("Authorization: Bearer {{token}}")
    );
    let golden = dir.join("app_login.toml");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &flow.toml).unwrap();
    }
    let want = std::fs::read_to_string(&golden)
        .unwrap_or_else(|_| panic!("{} is missing: run with UPDATE_GOLDEN=1", golden.display()));
    assert!(
        flow.toml == want,
        "app_login.toml differs from the golden file (UPDATE_GOLDEN=1 cargo test -p loadlab-workload har accepts it):\n--- got\n{}\n--- want\n{want}",
        flow.toml
    );
}
