//! The simulator answering like an application (`examples/recipes/app_login.json`):
//! log in, take the Set-Cookie, list items, open one; `requires` refusals; templates
//! echoing the request, pipelined too. Real HTTP/1.1 over 127.0.0.1.

use std::path::Path;

use super::{Client, Response, get, start};

const APP_LOGIN: &str = include_str!("../../../../examples/recipes/app_login.json");

/// One GET with extra header lines (each ending in CRLF).
fn get_with(client: &mut Client, path: &str, headers: &str) -> Response {
    client.send(format!("GET {path} HTTP/1.1\r\nhost: t\r\n{headers}\r\n").as_bytes());
    client.read_response(false).unwrap()
}

fn json(response: &Response) -> serde_json::Value {
    serde_json::from_slice(&response.body).unwrap_or_else(|e| panic!("{e}: {}", response.text()))
}

fn set_cookies(response: &Response) -> Vec<&str> {
    response
        .headers
        .iter()
        .filter(|(name, _)| name == "set-cookie")
        .map(|(_, value)| value.as_str())
        .collect()
}

#[test]
fn log_in_list_items_open_one() {
    let sim = start(Some(APP_LOGIN));
    let addr = sim.local_addr();
    let mut client = Client::connect(addr);

    let login = client.get("/login?user=ann");
    assert_eq!(login.status, 200);
    assert_eq!(login.header("content-type"), Some("application/json"));
    let token = json(&login)["token"].as_str().unwrap().to_owned();
    assert_eq!(json(&login)["user"], "ann");
    let cookies = set_cookies(&login);
    assert_eq!(
        cookies,
        [
            format!("session={token}; Path=/; HttpOnly").as_str(),
            "user=ann; Path=/"
        ],
        "one id per answer, shared by its headers and body"
    );
    let again = json(&client.get("/login"))["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(again, token, "each answer gets its own id");
    let cookie = format!("cookie: session={token}\r\n");

    let refused = client.get("/items");
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("content-type"), Some("application/json"));
    assert_eq!(
        json(&refused),
        serde_json::json!({"error": "unauthorized", "missing": "cookie session"})
    );

    let list = get_with(&mut client, "/items", &cookie);
    assert_eq!(list.status, 200, "{}", list.text());
    let items = json(&list)["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 20);
    let id = items[3]["id"].as_u64().unwrap();
    let item = get_with(&mut client, &format!("/items/{id}"), &cookie);
    assert_eq!(item.status, 200);
    assert_eq!(
        json(&item),
        serde_json::json!({"id": id, "name": format!("item {id}")})
    );

    let rows = [
        ("/items/21", 404),
        ("/items/0", 404),
        ("/items/abc", 404),
        ("/items/20", 200),
    ];
    for (path, want) in rows {
        assert_eq!(get_with(&mut client, path, &cookie).status, want, "{path}");
    }
    let missing = get_with(&mut client, "/items/21", &cookie);
    assert_eq!(
        json(&missing),
        serde_json::json!({"error": "not found", "id": "21"})
    );
    assert_eq!(client.get("/items/4").status, 401, "requires comes first");

    let metrics = get(addr, "/metrics").text();
    for want in [
        "loadlab_sim_requests_total{route=\"/items\",status=\"401\"} 1",
        "loadlab_sim_requests_total{route=\"/items/{id}\",status=\"404\"} 4",
        "loadlab_sim_requests_total{route=\"/items/{id}\",status=\"401\"} 1",
        "loadlab_sim_requests_total{route=\"/items/{id}\",status=\"200\"} 2",
    ] {
        assert!(metrics.contains(want), "{want}\n{metrics}");
    }
    sim.stop();
}

#[test]
fn templates_echo_the_request() {
    let sim = start(Some(APP_LOGIN));
    let mut client = Client::connect(sim.local_addr());
    let auth = "authorization: Bearer abc\r\nuser-agent: tester/1\r\ncookie: a=1; session=s9\r\n";
    let me = get_with(&mut client, "/me?x=1&q=hello", auth);
    assert_eq!(me.status, 200, "{}", me.text());
    assert_eq!(
        json(&me),
        serde_json::json!({"path": "/me", "q": "hello", "agent": "tester/1", "session": "s9"})
    );
    assert!(me.header("x-request-id").unwrap().parse::<u64>().is_ok());

    let bare = get_with(&mut client, "/me", "authorization: Bearer z\r\n");
    assert_eq!(
        json(&bare),
        serde_json::json!({"path": "/me", "q": "", "agent": "", "session": ""}),
        "missing values render empty"
    );
    let basic = get_with(&mut client, "/me", "authorization: Basic abc\r\n");
    assert_eq!(basic.status, 401);
    assert_eq!(
        json(&basic)["invalid"],
        "header authorization does not match ^Bearer .+"
    );

    // Rendered while the request's bytes are at hand: pipelined answers keep their own.
    let pipelined: String = ["one", "two", "three"]
        .iter()
        .map(|q| format!("GET /me?q={q} HTTP/1.1\r\nauthorization: Bearer t\r\n\r\n"))
        .collect();
    client.send(pipelined.as_bytes());
    for q in ["one", "two", "three"] {
        let response = client.read_response(false).unwrap();
        assert_eq!(json(&response)["q"], q);
    }

    client.send(b"HEAD /me?q=hello HTTP/1.1\r\nauthorization: Bearer t\r\n\r\n");
    let head = client.read_response(true).unwrap();
    let want = br#"{"path": "/me", "q": "hello", "agent": "", "session": ""}"#.len();
    assert_eq!(
        head.header("content-length"),
        Some(want.to_string().as_str())
    );
    sim.stop();
}

/// Every recipe under examples/recipes parses (parsing does no I/O).
#[test]
fn every_shipped_recipe_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/recipes");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            if let Err(e) = simulator::parse_recipe_file(&path) {
                panic!("{e}");
            }
            names.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert!(names.iter().any(|n| n == "app_login.json"), "{names:?}");
}

/// A pool's rejection keeps the route's rendered headers but answers its own body; a
/// failure mode that bends the body (chunked) sends the rendered one.
#[test]
fn rendered_answers_meet_the_pool_and_the_failure_modes() {
    let sim = start(Some(
        r#"[{"route": "/busy", "body": "hello {{request.query.who}}", "headers": {"x-who": "{{request.query.who}}"},
             "capacity": {"workers": 1}, "stages": [{"status": 200, "latency": "300ms"}]},
            {"route": "/chunked", "body": "path {{request.path}}",
             "stages": [{"status": 200, "failure": {"mode": "chunked", "chunk": "4b"}}]}]"#,
    ));
    let addr = sim.local_addr();
    let mut holder = Client::connect(addr);
    holder.send(b"GET /busy?who=first HTTP/1.1\r\n\r\n");
    std::thread::sleep(std::time::Duration::from_millis(100));
    let mut client = Client::connect(addr);
    let rejected = client.get("/busy?who=second");
    assert_eq!(rejected.status, 503);
    assert_eq!(rejected.text(), "Error 503");
    assert_eq!(rejected.header("x-who"), Some("second"));
    let served = holder.read_response(false).unwrap();
    assert_eq!(
        (served.status, served.text()),
        (200, "hello first".to_owned())
    );
    assert_eq!(served.header("x-who"), Some("first"));

    let chunked = client.get("/chunked");
    assert_eq!(chunked.header("transfer-encoding"), Some("chunked"));
    assert_eq!(chunked.text(), "path /chunked");
    sim.stop();
}
