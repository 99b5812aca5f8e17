//! Drives a real simulator on 127.0.0.1 (port 0) with a small HTTP/1.1 client written
//! over std's TcpStream. Every loop is bounded in count and time.

// Helpers outside #[test] fns panic on failure by design: that fails the test.
#![allow(clippy::unwrap_used)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use simulator::{Recipe, Simulator, SimulatorOptions, parse_recipe};

mod app;
mod http2;

fn start(json: Option<&str>) -> Simulator {
    start_with(json, 2)
}

fn start_with(json: Option<&str>, threads: usize) -> Simulator {
    let recipe = json.map_or_else(Recipe::default, |j| parse_recipe(j, "test").unwrap());
    let options = SimulatorOptions {
        threads,
        seed: Some(42),
        ..SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    Simulator::start(options, &recipe).unwrap()
}

#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    fn send(&mut self, raw: &[u8]) {
        self.stream.write_all(raw).unwrap();
    }

    fn get(&mut self, path: &str) -> Response {
        self.send(format!("GET {path} HTTP/1.1\r\nhost: t\r\n\r\n").as_bytes());
        self.read_response(false).unwrap()
    }

    fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed"));
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    /// Reads one response; `head_only` for answers to HEAD.
    fn read_response(&mut self, head_only: bool) -> io::Result<Response> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut parsed = httparse::Response::new(&mut headers);
            match parsed.parse(&self.buf) {
                Ok(httparse::Status::Complete(head_len)) => {
                    let status = parsed.code.unwrap();
                    let headers: Vec<(String, String)> = parsed
                        .headers
                        .iter()
                        .map(|h| {
                            (
                                h.name.to_ascii_lowercase(),
                                String::from_utf8_lossy(h.value).into_owned(),
                            )
                        })
                        .collect();
                    self.buf.drain(..head_len);
                    if status == 100 {
                        continue;
                    }
                    let mut response = Response {
                        status,
                        headers,
                        body: Vec::new(),
                    };
                    if !head_only {
                        response.body = self.read_body(&response)?;
                    }
                    return Ok(response);
                }
                Ok(httparse::Status::Partial) => self.fill()?,
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
            }
        }
    }

    fn read_body(&mut self, response: &Response) -> io::Result<Vec<u8>> {
        if response.header("transfer-encoding") == Some("chunked") {
            return self.read_chunked();
        }
        let len: usize = response
            .header("content-length")
            .map_or(0, |v| v.parse().unwrap());
        while self.buf.len() < len {
            self.fill()?;
        }
        Ok(self.buf.drain(..len).collect())
    }

    fn read_chunked(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let (used, size) = loop {
                match httparse::parse_chunk_size(&self.buf) {
                    Ok(httparse::Status::Complete(found)) => break found,
                    Ok(httparse::Status::Partial) => self.fill()?,
                    Err(_) => return Err(io::Error::new(io::ErrorKind::InvalidData, "chunk size")),
                }
            };
            let size = size as usize;
            while self.buf.len() < used + size + 2 {
                self.fill()?;
            }
            body.extend_from_slice(&self.buf[used..used + size]);
            self.buf.drain(..used + size + 2);
            if size == 0 {
                return Ok(body);
            }
        }
    }

    /// Reads until the server closes; returns what came and how it ended.
    fn read_to_close(&mut self) -> (Vec<u8>, io::Result<()>) {
        let mut rest = std::mem::take(&mut self.buf);
        let result = self.stream.read_to_end(&mut rest).map(|_| ());
        (rest, result)
    }
}

fn get(addr: SocketAddr, path: &str) -> Response {
    Client::connect(addr).get(path)
}

fn post(addr: SocketAddr, path: &str, body: &str) -> Response {
    let mut client = Client::connect(addr);
    client.send(
        format!(
            "POST {path} HTTP/1.1\r\nhost: t\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    client.read_response(false).unwrap()
}

fn timed_get(client: &mut Client, path: &str) -> (Response, Duration) {
    let started = Instant::now();
    let response = client.get(path);
    (response, started.elapsed())
}

#[test]
fn readme_flow_without_a_recipe_then_stages() {
    let sim = start(None);
    let addr = sim.local_addr();
    assert_ne!(addr.port(), 0);
    let first = get(addr, "/");
    assert_eq!(first.status, 406);
    assert_eq!(
        first.text(),
        "Recipe not set, please POST a recipe to /_admin/add_recipe"
    );
    assert_eq!(
        get(addr, "/_admin/current_recipe").text(),
        "\"Not set, please POST a recipe to /_admin/add_recipe\""
    );
    assert_eq!(get(addr, "/_admin/status").text(), "ok!");

    let recipe = r#"{"body": "hi", "stages": [
        {"at": 0, "status": 404, "latency": "50ms"},
        {"at": "400ms", "status": 503, "latency": "10ms"},
        {"at": "800ms", "status": 200, "latency": 0}]}"#;
    let added = post(addr, "/_admin/add_recipe", recipe);
    assert_eq!(added.status, 201, "{}", added.text());
    let loaded_at = Instant::now();
    let mut client = Client::connect(addr);
    let (response, took) = timed_get(&mut client, "/any/path");
    assert_eq!(
        (response.status, response.text().as_str()),
        (404, "Not found")
    );
    assert!(took >= Duration::from_millis(48), "{took:?}");
    std::thread::sleep(Duration::from_millis(500).saturating_sub(loaded_at.elapsed()));
    let response = client.get("/");
    assert_eq!(
        (response.status, response.text().as_str()),
        (503, "Error 503")
    );
    std::thread::sleep(Duration::from_millis(900).saturating_sub(loaded_at.elapsed()));
    let response = client.get("/");
    assert_eq!((response.status, response.text().as_str()), (200, "hi"));
    assert_eq!(get(addr, "/_admin/routes").text(), "/*");
    assert_eq!(get(addr, "/_admin/routes_status").text(), "/* 200 0");
    let current: serde_json::Value =
        serde_json::from_str(&get(addr, "/_admin/current_recipe").text()).unwrap();
    assert_eq!(current[0]["stages"][2]["status"], 200);
    assert_eq!(get(addr, "/_admin/restart").text(), "ok!");
    assert_eq!(get(addr, "/").status, 406);
    sim.stop();
}

#[test]
fn bad_recipes_are_rejected_and_the_running_one_stays() {
    let sim = start(Some(
        r#"{"route": "/ok", "body": "still here", "stages": [{"status": 200}]}"#,
    ));
    let addr = sim.local_addr();
    let dead_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let unreachable =
        format!(r#"{{"origin": "http://127.0.0.1:{dead_port}/", "stages": [{{"status": 200}}]}}"#);
    let rows: Vec<(String, &str)> = vec![
        (
            r#"{"stages": [{"at": 0, "latency": "100"}]}"#.into(),
            "add_recipe: stages[0].latency: bad duration \"100\"",
        ),
        (
            r#"{"stages": [{"status": 200}], "colour": 1}"#.into(),
            "add_recipe: colour: unknown field",
        ),
        (
            r#"{"random_content": "12parsecs", "stages": [{"status": 200}]}"#.into(),
            "add_recipe: random_content: bad size",
        ),
        (
            r#"{"stages": [{"status": {"200": "most"}}]}"#.into(),
            "add_recipe: stages[0].status.200: weight \"most\"",
        ),
        (unreachable, "add_recipe: origin: http://127.0.0.1"),
        ("{not json".into(), "add_recipe: not valid json"),
        (String::new(), "add_recipe: not valid json"),
    ];
    for (body, want) in rows {
        let response = post(addr, "/_admin/add_recipe", &body);
        assert_eq!(response.status, 400, "{body}");
        assert!(
            response.text().contains(want),
            "{body}\n got: {}\nwant: {want}",
            response.text()
        );
        let still = get(addr, "/ok");
        assert_eq!((still.status, still.text().as_str()), (200, "still here"));
    }
    let mut client = Client::connect(addr);
    client.send(b"POST /_admin/add_recipe HTTP/1.1\r\ncontent-length: 2\r\n\r\n\xff\xfe");
    assert_eq!(client.read_response(false).unwrap().status, 400);
    assert_eq!(get(addr, "/_admin/add_recipe").status, 405);
    assert_eq!(get(addr, "/_admin/nope").status, 404);
    let current = get(addr, "/_admin/current_recipe").text();
    assert!(current.contains("still here"), "{current}");
    sim.stop();
}

#[test]
fn reloading_cancels_old_stages_and_merges_routes() {
    let sim = start(Some(
        r#"[{"route": "/a", "stages": [{"status": 200}, {"at": "300ms", "status": 500}]},
                             {"route": "/b", "stages": [{"status": 201}]}]"#,
    ));
    let addr = sim.local_addr();
    let reload = post(
        addr,
        "/_admin/add_recipe",
        r#"{"route": "/a", "stages": [{"status": 202}]}"#,
    );
    assert_eq!(reload.status, 201);
    std::thread::sleep(Duration::from_millis(450));
    assert_eq!(
        get(addr, "/a").status,
        202,
        "the old 300ms stage must never fire"
    );
    assert_eq!(get(addr, "/b").status, 201, "other routes are kept");
    assert_eq!(
        get(addr, "/c").text(),
        "Recipe not set at /c, please POST a recipe for this route to /_admin/add_recipe"
    );
    // In-process reload works the same way.
    sim.load_recipe(&parse_recipe(r#"{"route": "/b", "stages": [{"status": 203}]}"#, "t").unwrap())
        .unwrap();
    assert_eq!(get(addr, "/b").status, 203);
    sim.stop();
}

#[test]
fn latency_is_served_as_asked() {
    let sim = start(Some(
        r#"[{"route": "/fixed", "stages": [{"latency": "100ms"}]},
                             {"route": "/range", "stages": [{"latency": "20ms..40ms"}]}]"#,
    ));
    let mut client = Client::connect(sim.local_addr());
    // Timers are aimed to be unbiased with about 1 ms of jitter (see dispatch.rs), so a
    // single answer may come up to 1 ms early; the mean must sit on the recipe's value.
    let mut total = Duration::ZERO;
    for _ in 0..10 {
        let (response, took) = timed_get(&mut client, "/fixed");
        assert_eq!(response.status, 200);
        assert!(
            took >= Duration::from_millis(98) && took < Duration::from_millis(150),
            "{took:?}"
        );
        total += took;
    }
    let mean = total / 10;
    assert!(
        mean >= Duration::from_millis(99) && mean < Duration::from_millis(110),
        "mean {mean:?}"
    );
    for _ in 0..10 {
        let (_, took) = timed_get(&mut client, "/range");
        assert!(
            took >= Duration::from_millis(19) && took < Duration::from_millis(80),
            "{took:?}"
        );
    }
    sim.stop();
}

#[test]
fn pipelined_requests_are_served_concurrently_in_order() {
    let sim = start(Some(
        r#"[{"route": "/slow", "body": "slow", "stages": [{"latency": "200ms"}]},
                             {"route": "/fast", "body": "fast", "stages": [{"status": 200}]}]"#,
    ));
    let mut client = Client::connect(sim.local_addr());
    let mut batch = String::new();
    for i in 0..20 {
        let path = if i % 2 == 0 { "/slow" } else { "/fast" };
        batch.push_str(&format!("GET {path}?i={i} HTTP/1.1\r\nhost: t\r\n\r\n"));
    }
    let started = Instant::now();
    client.send(batch.as_bytes());
    for i in 0..20 {
        let response = client.read_response(false).unwrap();
        assert_eq!(
            response.text(),
            if i % 2 == 0 { "slow" } else { "fast" },
            "answer {i} out of order"
        );
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(700),
        "10 pipelined 200ms requests took {took:?}"
    );
    sim.stop();
}

#[test]
fn http_details_keepalive_head_gzip_continue() {
    let sim = start(Some(
        r#"[{"route": "/gz", "random_content": "20kb", "headers": {"content-encoding": "gzip", "x-sim": "yes"}, "stages": [{"status": 200}]},
                             {"route": "/json", "body": "{\"a\": 1}", "stages": [{"status": 200}]}]"#,
    ));
    let addr = sim.local_addr();
    let mut client = Client::connect(addr);
    for _ in 0..50 {
        assert_eq!(
            client.get("/json").status,
            200,
            "keep-alive serves many requests"
        );
    }
    let json = client.get("/json");
    assert_eq!(json.header("content-type"), Some("application/json"));
    assert!(json.header("date").is_some_and(|d| d.ends_with(" GMT")));

    let gz = client.get("/gz");
    assert_eq!(
        (gz.header("content-encoding"), gz.header("x-sim")),
        (Some("gzip"), Some("yes"))
    );
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&gz.body[..])
        .read_to_end(&mut plain)
        .unwrap();
    assert_eq!(plain.len(), 20 * 1024);

    client.send(b"HEAD /gz HTTP/1.1\r\nhost: t\r\n\r\n");
    let head = client.read_response(true).unwrap();
    assert_eq!(
        head.header("content-length"),
        Some(gz.body.len().to_string().as_str())
    );
    assert_eq!(
        client.get("/json").text(),
        "{\"a\": 1}",
        "no stray body bytes after HEAD"
    );

    let mut old = Client::connect(addr);
    old.send(b"GET /json HTTP/1.0\r\n\r\n");
    let response = old.read_response(false).unwrap();
    assert_eq!(response.header("connection"), Some("close"));
    assert!(
        old.read_to_close().0.is_empty(),
        "HTTP/1.0 without keep-alive closes"
    );

    let recipe = r#"{"route": "/posted", "stages": [{"status": 200}]}"#;
    let mut slow = Client::connect(addr);
    slow.send(format!("POST /_admin/add_recipe HTTP/1.1\r\nexpect: 100-continue\r\ncontent-length: {}\r\n\r\n", recipe.len()).as_bytes());
    let mut interim = [0u8; 25];
    slow.stream.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    slow.send(recipe.as_bytes());
    assert_eq!(slow.read_response(false).unwrap().status, 201);
    sim.stop();
}

#[test]
fn bad_http_is_refused_not_crashed() {
    let sim = start(Some(r#"{"stages": [{"status": 200}]}"#));
    let addr = sim.local_addr();
    let rows: Vec<(Vec<u8>, u16)> = vec![
        (b"NOT HTTP AT ALL\r\n\r\n".to_vec(), 400),
        (
            b"GET / HTTP/1.1\r\ncontent-length: nope\r\n\r\n".to_vec(),
            400,
        ),
        (
            b"GET / HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\n".to_vec(),
            501,
        ),
        (
            format!("GET / HTTP/1.1\r\nx-big: {}\r\n\r\n", "a".repeat(70 * 1024)).into_bytes(),
            431,
        ),
        (
            b"POST / HTTP/1.1\r\ncontent-length: 999999999\r\n\r\n".to_vec(),
            413,
        ),
    ];
    for (raw, status) in rows {
        let mut client = Client::connect(addr);
        client.send(&raw);
        let response = client.read_response(false).unwrap();
        assert_eq!(
            response.status,
            status,
            "{}",
            String::from_utf8_lossy(&raw[..30])
        );
        assert_eq!(response.header("connection"), Some("close"));
    }
    // Half a request then a hang-up must not disturb anyone else.
    let mut quitter = Client::connect(addr);
    quitter.send(b"GET / HT");
    drop(quitter);
    assert_eq!(get(addr, "/").status, 200);
    let metrics = get(addr, "/metrics").text();
    assert!(
        metrics.contains("loadlab_sim_requests_total{route=\"(bad_request)\",status=\"400\"} 2"),
        "{metrics}"
    );
    sim.stop();
}

#[test]
fn failure_modes_misbehave_as_named() {
    let sim = start(Some(include_str!(
        "../../../examples/recipes/failure_modes.json"
    )));
    let addr = sim.local_addr();

    let mut reset = Client::connect(addr);
    reset.send(b"GET /reset HTTP/1.1\r\n\r\n");
    let (bytes, ended) = reset.read_to_close();
    assert!(bytes.is_empty());
    assert_eq!(ended.unwrap_err().kind(), io::ErrorKind::ConnectionReset);

    let mut close = Client::connect(addr);
    close.send(b"GET /close HTTP/1.1\r\n\r\n");
    let (bytes, ended) = close.read_to_close();
    assert!(
        bytes.is_empty() && ended.is_ok(),
        "clean close with no answer"
    );

    let mut malformed = Client::connect(addr);
    malformed.send(b"GET /malformed HTTP/1.1\r\n\r\n");
    assert!(
        malformed.read_response(false).is_err(),
        "the answer must not parse as HTTP"
    );

    let mut stall = Client::connect(addr);
    stall
        .stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    stall.send(b"GET /stall HTTP/1.1\r\n\r\n");
    let err = stall.read_response(false).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ),
        "{err}"
    );

    let mut trickle = Client::connect(addr);
    let (response, took) = timed_get(&mut trickle, "/trickle");
    assert_eq!(response.body.len(), 8 * 1024);
    assert!(
        took >= Duration::from_millis(7 * 200),
        "8 chunks 200ms apart took {took:?}"
    );

    let mut cut = Client::connect(addr);
    cut.send(b"GET /close_mid_body HTTP/1.1\r\n\r\n");
    let (bytes, _) = cut.read_to_close();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("content-length: 65536"));
    let head_end = text.find("\r\n\r\n").unwrap() + 4;
    assert_eq!(bytes.len() - head_end, 16 * 1024);

    let mut chunked = Client::connect(addr);
    let response = chunked.get("/chunked");
    assert_eq!(response.header("transfer-encoding"), Some("chunked"));
    assert_eq!(response.body.len(), 10 * 1024);
    assert_eq!(
        chunked.get("/chunked").status,
        200,
        "chunked answers keep the connection"
    );

    // The HTTP/2 modes' HTTP/1.1 forms: a stream reset is the connection's reset, and
    // GOAWAY is an answer with `connection: close`.
    let mut rst_stream = Client::connect(addr);
    rst_stream.send(b"GET /rst_stream HTTP/1.1\r\n\r\n");
    let (bytes, ended) = rst_stream.read_to_close();
    assert!(bytes.is_empty());
    assert_eq!(ended.unwrap_err().kind(), io::ErrorKind::ConnectionReset);
    let mut goaway = Client::connect(addr);
    let response = goaway.get("/goaway");
    assert_eq!((response.status, response.text().as_str()), (200, "bye"));
    assert_eq!(response.header("connection"), Some("close"));
    let (bytes, ended) = goaway.read_to_close();
    assert!(bytes.is_empty() && ended.is_ok(), "closed after the answer");
    sim.stop();
}

#[test]
fn status_mix_matches_its_weights() {
    let sim = start(Some(
        r#"{"stages": [{"status": {"200": 80, "503": 15, "500": 5}}]}"#,
    ));
    let mut client = Client::connect(sim.local_addr());
    let mut counts = std::collections::HashMap::new();
    for _ in 0..3000 {
        *counts.entry(client.get("/").status).or_insert(0usize) += 1;
    }
    let share = |s| counts.get(&s).copied().unwrap_or(0) as f64 / 3000.0;
    assert!((share(200) - 0.80).abs() < 0.03, "{counts:?}");
    assert!((share(503) - 0.15).abs() < 0.03, "{counts:?}");
    assert!((share(500) - 0.05).abs() < 0.02, "{counts:?}");
    let count: serde_json::Value =
        serde_json::from_str(&get(sim.local_addr(), "/_admin/current_count").text()).unwrap();
    assert_eq!(count["total_requests"], 3000);
    assert_eq!(
        get(sim.local_addr(), "/_admin/clear_current_count").text(),
        r#"{"cleared": "yes"}"#
    );
    let count: serde_json::Value =
        serde_json::from_str(&get(sim.local_addr(), "/_admin/current_count").text()).unwrap();
    assert_eq!(count["total_requests"], 0);
    sim.stop();
}

#[test]
fn bodies_from_files_and_origins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("page.html"), "<p>from a file</p>").unwrap();
    let upstream = start(Some(
        r#"{"body": "from the origin", "stages": [{"status": 200}]}"#,
    ));
    let recipe_path = dir.path().join("recipe.json");
    let recipe = format!(
        r#"[{{"route": "/file", "body_file": "page.html", "stages": [{{"status": 200}}]}},
            {{"route": "/origin", "origin": "http://{}/x", "stages": [{{"status": 200}}]}}]"#,
        upstream.local_addr()
    );
    std::fs::write(&recipe_path, recipe).unwrap();
    let options = SimulatorOptions {
        threads: 1,
        ..SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    let sim = Simulator::start(
        options,
        &simulator::parse_recipe_file(&recipe_path).unwrap(),
    )
    .unwrap();
    assert_eq!(get(sim.local_addr(), "/file").text(), "<p>from a file</p>");
    assert_eq!(get(sim.local_addr(), "/origin").text(), "from the origin");
    // A missing file in the operator's own recipe is named. (Recipes posted over the
    // admin API may not name files at all without -files: see
    // `posted_recipes_cannot_read_files_outside_the_files_dir`.)
    let missing = sim
        .load_recipe(
            &parse_recipe(
                r#"{"body_file": "/nonexistent/x.html", "stages": [{"status": 200}]}"#,
                "add_recipe",
            )
            .unwrap(),
        )
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("body_file: cannot read /nonexistent/x.html"),
        "{missing}"
    );
    sim.stop();
    upstream.stop();
}

/// Open-loop load from `threads` senders, each on its own keep-alive connection, for
/// `duration` at `rate` requests per second in total. Returns statuses seen.
fn open_loop(addr: SocketAddr, rate: u32, duration: Duration, threads: u32) -> Vec<u16> {
    let interval = Duration::from_secs(1) * threads / rate;
    let start = Instant::now() + Duration::from_millis(20);
    let senders: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::spawn(move || {
                let mut client = Client::connect(addr);
                let mut statuses = Vec::new();
                let mut next = start + interval * t / threads;
                while next < start + duration {
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    statuses.push(client.get("/").status);
                    next += interval;
                }
                statuses
            })
        })
        .collect();
    senders
        .into_iter()
        .flat_map(|s| s.join().unwrap())
        .collect()
}

#[test]
fn capacity_model_has_its_knee_at_workers_over_service_time() {
    // W = 4 workers, S = 50 ms: capacity 80 req/s. No queue: excess is refused at once.
    let sim = start(Some(
        r#"{"stages": [{"latency": "50ms"}], "capacity": {"workers": 4, "reject_status": 503}}"#,
    ));
    let addr = sim.local_addr();
    let below = open_loop(addr, 40, Duration::from_millis(1500), 8);
    assert!(
        below.iter().all(|s| *s == 200),
        "below the knee all succeed: {below:?}"
    );

    let above = open_loop(addr, 200, Duration::from_millis(1500), 25);
    let ok = above.iter().filter(|s| **s == 200).count();
    let refused = above.iter().filter(|s| **s == 503).count();
    assert_eq!(above.len(), ok + refused, "only 200 and 503: {above:?}");
    let served = ok as f64 / 1.5;
    assert!(
        (60.0..=84.0).contains(&served),
        "served {served:.1} req/s, model says 80"
    );
    assert!(refused > 100, "refused {refused}");

    let metrics = get(addr, "/metrics").text();
    for line in [
        "loadlab_sim_pool_workers{route=\"/*\"} 4",
        "loadlab_sim_pool_capacity_rps{route=\"/*\"} 80.000",
        "loadlab_sim_pool_busy{route=\"/*\"} 0",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "missing {line}\n{metrics}"
        );
    }
    let rejected: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("loadlab_sim_pool_rejected_total{route=\"/*\"} "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(rejected as usize, refused);
    sim.stop();
}

#[test]
fn queue_and_timeout_shape_the_overload() {
    // One worker of 100 ms, a queue of 2 waiting at most 150 ms.
    let sim = start(Some(
        r#"{"stages": [{"latency": "100ms"}], "capacity": {"workers": 1, "queue": 2, "queue_timeout": "150ms", "reject_status": 500, "reject_latency": "20ms"}}"#,
    ));
    let addr = sim.local_addr();
    let started = Instant::now();
    let clients: Vec<_> = (0..5)
        .map(|i| {
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(i * 5));
                let begun = Instant::now();
                (get(addr, "/").status, begun.elapsed())
            })
        })
        .collect();
    let mut results: Vec<(u16, Duration)> =
        clients.into_iter().map(|c| c.join().unwrap()).collect();
    results.sort_by_key(|r| r.1);
    let statuses: Vec<u16> = results.iter().map(|r| r.0).collect();
    // 2 arrive to a full pool and full queue: refused after 20 ms. The first is served at
    // ~100 ms, the first waiter at ~200 ms; the second waiter gives up at 150 ms and is
    // refused 20 ms later.
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        2,
        "{results:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 500).count(),
        3,
        "{results:?}"
    );
    assert!(
        results[0].1 >= Duration::from_millis(18) && results[0].1 < Duration::from_millis(90),
        "{results:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    sim.stop();
}

#[test]
fn start_and_stop_are_clean() {
    for threads in [1, 3] {
        let sim = start_with(Some(r#"{"stages": [{"status": 200}]}"#), threads);
        let addr = sim.local_addr();
        let mut idle = Client::connect(addr);
        assert_eq!(idle.get("/").status, 200);
        sim.stop();
        let waited = Instant::now();
        let (bytes, _) = idle.read_to_close();
        assert!(
            bytes.is_empty() && waited.elapsed() < Duration::from_secs(2),
            "stop closes open connections"
        );
        assert!(
            TcpStream::connect(addr).is_err(),
            "nothing listens after stop"
        );
    }
    // A fixed port already in use is an error, not a silent share.
    let first = start(None);
    let options = SimulatorOptions {
        threads: 2,
        ..SimulatorOptions::new(first.local_addr())
    };
    let err = Simulator::start(options, &Recipe::default()).err().unwrap();
    assert!(err.to_string().contains("cannot listen on"), "{err}");
    first.stop();
}

#[test]
fn http10_keepalive_and_ipv6_loopback() {
    let sim = start(Some(r#"{"body": "x", "stages": [{"status": 200}]}"#));
    let mut client = Client::connect(sim.local_addr());
    for _ in 0..3 {
        client.send(b"GET / HTTP/1.0\r\nconnection: keep-alive\r\n\r\n");
        let response = client.read_response(false).unwrap();
        assert_eq!(
            response.header("connection"),
            Some("keep-alive"),
            "ab -k needs this to reuse"
        );
    }
    sim.stop();
    // IPv6 loopback, where the machine has it.
    if std::net::TcpListener::bind("[::1]:0").is_ok() {
        let options = SimulatorOptions {
            threads: 2,
            ..SimulatorOptions::new("[::1]:0".parse().unwrap())
        };
        let sim = Simulator::start(
            options,
            &parse_recipe(r#"{"stages": [{"status": 201}]}"#, "t").unwrap(),
        )
        .unwrap();
        assert!(sim.local_addr().is_ipv6());
        assert_eq!(get(sim.local_addr(), "/").status, 201);
        sim.stop();
    }
}

fn start_options(options: SimulatorOptions) -> Simulator {
    Simulator::start(
        SimulatorOptions {
            threads: 1,
            seed: Some(42),
            ..options
        },
        &Recipe::default(),
    )
    .unwrap()
}

fn loopback_options() -> SimulatorOptions {
    SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
}

fn request(addr: SocketAddr, head: &str, body: &str) -> Response {
    let mut client = Client::connect(addr);
    let length = body.len();
    client.send(format!("{head}\r\nhost: t\r\ncontent-length: {length}\r\n\r\n{body}").as_bytes());
    client.read_response(false).unwrap()
}

/// issue 11 item 3: `add_recipe` with `"body_file": "/etc/passwd"` then `GET /leak`
/// served the file.
#[test]
fn posted_recipes_cannot_read_files_outside_the_files_dir() {
    let sim = start_options(loopback_options());
    let addr = sim.local_addr();
    let leak = post(
        addr,
        "/_admin/add_recipe",
        r#"{"route": "/leak", "body_file": "/etc/passwd", "stages": [{"status": 200}]}"#,
    );
    assert_eq!(leak.status, 400, "{}", leak.text());
    assert!(
        leak.text()
            .contains("add_recipe: body_file: /etc/passwd: recipes posted to /_admin/add_recipe may not name files unless simulate runs with -files DIR"),
        "{}",
        leak.text()
    );
    let served = get(addr, "/leak");
    assert_eq!(served.status, 406);
    assert!(!served.text().contains("root:"));
    sim.stop();

    let root = tempfile::tempdir().unwrap();
    let files = root.path().join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("page.html"), "<p>allowed</p>").unwrap();
    std::fs::write(root.path().join("secret.txt"), "not for you").unwrap();
    std::os::unix::fs::symlink(root.path().join("secret.txt"), files.join("link.html")).unwrap();
    let sim = start_options(SimulatorOptions {
        files_dir: Some(files),
        ..loopback_options()
    });
    let addr = sim.local_addr();
    let rows = [
        ("page.html", Ok("<p>allowed</p>")),
        ("../secret.txt", Err("\"..\" is not allowed")),
        ("/etc/passwd", Err("outside the -files directory")),
        ("link.html", Err("outside the -files directory")),
    ];
    for (file, want) in rows {
        let recipe =
            format!(r#"{{"route": "/f", "body_file": "{file}", "stages": [{{"status": 200}}]}}"#);
        let answer = post(addr, "/_admin/add_recipe", &recipe);
        match want {
            Ok(body) => {
                assert_eq!(answer.status, 201, "{file}: {}", answer.text());
                assert_eq!(get(addr, "/f").text(), body);
            }
            Err(message) => {
                assert_eq!(answer.status, 400, "{file}: {}", answer.text());
                assert!(answer.text().contains(message), "{file}: {}", answer.text());
                assert!(!answer.text().contains(&*root.path().to_string_lossy()));
                assert_eq!(get(addr, "/f").text(), "<p>allowed</p>", "{file}");
            }
        }
    }
    sim.stop();
}

#[test]
fn admin_token_is_checked_on_every_admin_request() {
    let sim = start_options(SimulatorOptions {
        admin_token: Some("s3cr3t".to_owned()),
        ..loopback_options()
    });
    let addr = sim.local_addr();
    let recipe = r#"{"route": "/a", "stages": [{"status": 200}]}"#;
    let rows: &[(&str, &str, u16)] = &[
        ("GET /_admin/status HTTP/1.1", "", 401),
        ("POST /_admin/add_recipe HTTP/1.1", recipe, 401),
        ("GET /_admin/metrics HTTP/1.1", "", 401),
        (
            "GET /_admin/restart HTTP/1.1\r\nauthorization: Bearer wrong",
            "",
            401,
        ),
        (
            "GET /_admin/status HTTP/1.1\r\nauthorization: Bearer s3cr3t",
            "",
            200,
        ),
        (
            "POST /_admin/add_recipe HTTP/1.1\r\nauthorization: Bearer s3cr3t",
            recipe,
            201,
        ),
        ("GET /metrics HTTP/1.1", "", 200),
        ("GET /a HTTP/1.1", "", 200),
    ];
    for (head, body, want) in rows {
        let answer = request(addr, head, body);
        assert_eq!(answer.status, *want, "{head}: {}", answer.text());
        if *want == 401 {
            assert!(
                answer.text().contains("authorization: Bearer"),
                "{}",
                answer.text()
            );
            assert!(!answer.text().contains("s3cr3t"));
        }
    }
    // Refused requests changed nothing: /a is still the only route.
    let routes = request(
        addr,
        "GET /_admin/routes HTTP/1.1\r\nauthorization: Bearer s3cr3t",
        "",
    );
    assert_eq!(routes.text(), "/a");
    sim.stop();
    let bad = Simulator::start(
        SimulatorOptions {
            admin_token: Some(String::new()),
            ..loopback_options()
        },
        &Recipe::default(),
    );
    assert!(bad.err().unwrap().to_string().contains("admin-token"));
}

/// issue 11 item 4: `"body_file": "/dev/zero"` read until memory ran out, and eight
/// routes of `"<<256mb>>"` in one small POST grew the simulator to 2 GiB.
#[test]
fn recipes_are_held_to_the_memory_caps() {
    let sim = start_options(loopback_options());
    let addr = sim.local_addr();
    let routes: Vec<String> = (0..8)
        .map(|i| {
            format!(r#"{{"route": "/r{i}", "body": "<<256mb>>", "stages": [{{"status": 200}}]}}"#)
        })
        .collect();
    let big = post(
        addr,
        "/_admin/add_recipe",
        &format!("[{}]", routes.join(",")),
    );
    assert_eq!(big.status, 400, "{}", big.text());
    assert!(
        big.text().contains("add_recipe: recipe[0].body: body larger than the 64mb cap on one body (simulate -max-body-size)"),
        "{}",
        big.text()
    );
    let zero = sim
        .load_recipe(
            &parse_recipe(
                r#"{"body_file": "/dev/zero", "stages": [{"status": 200}]}"#,
                "r.json",
            )
            .unwrap(),
        )
        .unwrap_err()
        .to_string();
    assert!(
        zero.contains("r.json: body_file: /dev/zero: larger than the 64mb"),
        "{zero}"
    );
    sim.stop();

    let sim = start_options(SimulatorOptions {
        max_body_bytes: 1024 * 1024,
        // Two 1mb bodies and their routes' JSON (kept for current_recipe) fit.
        max_recipe_memory_bytes: 2 * 1024 * 1024 + 4096,
        ..loopback_options()
    });
    let addr = sim.local_addr();
    let route = |name: &str| {
        format!(r#"{{"route": "/{name}", "body": "<<1mb>>", "stages": [{{"status": 200}}]}}"#)
    };
    assert_eq!(post(addr, "/_admin/add_recipe", &route("a")).status, 201);
    assert_eq!(post(addr, "/_admin/add_recipe", &route("b")).status, 201);
    // A third megabyte is over the total, counting the routes kept in force.
    let third = post(addr, "/_admin/add_recipe", &route("c"));
    assert_eq!(third.status, 400);
    assert!(
        third.text().contains("add_recipe: body: the routes in force would hold more than 2052kb of bodies (simulate -max-recipe-memory)"),
        "{}",
        third.text()
    );
    // Replacing a route frees what it held.
    assert_eq!(post(addr, "/_admin/add_recipe", &route("a")).status, 201);
    let mix = r#"{"route": "/b", "stages": [{"status": {"200": 1, "500": {"weight": 1, "body": "<<2mb>>"}}}]}"#;
    let over = post(addr, "/_admin/add_recipe", mix);
    assert!(
        over.text()
            .contains("stages[0].status.500.body: body larger than the 1mb cap"),
        "{}",
        over.text()
    );
    let routes = get(addr, "/_admin/routes").text();
    assert_eq!(routes, "/a\n/b");
    assert_eq!(get(addr, "/b").body.len(), 1024 * 1024);
    sim.stop();
}
