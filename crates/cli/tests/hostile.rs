//! Hostile input, end to end through the real binary. First a hostile server: its
//! answers carry CRLF payloads that flows extract, and the server checks byte for
//! byte what reached it (no extra header, no second request; docs/FLOWS.md, "Values
//! from outside a request"). Then one test per input loadlab reads from elsewhere,
//! each a table of cases: no panic, no hang, a clear error naming the input (or a
//! counted error kind), and a record file that stays readable.

#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use record::{ErrorKind, Record, RunTables};

const USER_AGENT: &str = concat!("loadlab/", env!("CARGO_PKG_VERSION"));

/// What an answer smuggles: a header, then a whole second request.
const SMUGGLE: &str = "abc\r\nX-Injected: yes\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x";

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "loadlab-hostile-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path.to_string_lossy().into_owned()
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the binary with `stdin`, killed after `limit`: (exit code or None when it
/// had to be killed, stdout, stderr).
fn loadlab_within(args: &[&str], stdin: &[u8], limit: Duration) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    // Both pipes drain as the child writes: a full pipe must not look like a hang.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = writer.join();
    (code, stdout.join().unwrap(), stderr.join().unwrap())
}

fn loadlab(args: &[&str]) -> (Option<i32>, String, String) {
    loadlab_within(args, b"", Duration::from_secs(20))
}

/// Every record and the run's tables.
fn read(path: &str) -> (Vec<Record>, RunTables) {
    let mut source = record::open_input(path).unwrap();
    let (mut all, mut batch) = (Vec::new(), Vec::new());
    while source.next_batch(&mut batch).unwrap() {
        all.extend_from_slice(&batch);
    }
    (all, source.tables().clone())
}

/// A loopback server that answers by path with what a test gives it and keeps every
/// request exactly as its bytes arrived, split by their heads and `Content-Length`.
struct HostileServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
}

type Answers = Arc<dyn Fn(&str) -> Vec<u8> + Send + Sync>;

impl HostileServer {
    fn start(answers: Answers) -> HostileServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (kept, stopping) = (Arc::clone(&requests), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stopping.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (kept, answers) = (Arc::clone(&kept), Arc::clone(&answers));
                        std::thread::spawn(move || serve(stream, &kept, &answers));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        HostileServer {
            addr,
            requests,
            stop,
        }
    }

    fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|r| String::from_utf8_lossy(r).into_owned())
            .collect()
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn serve(mut stream: TcpStream, kept: &Mutex<Vec<Vec<u8>>>, answers: &Answers) {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 65536];
    // Where the search for a head's end goes on (a huge head is searched once).
    let mut searched = 0;
    loop {
        while let Some(head_end) = find(&buffer[searched..], b"\r\n\r\n").map(|at| at + searched) {
            let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .unwrap_or(0);
            let end = head_end + 4 + length;
            if buffer.len() < end {
                searched = head_end;
                break;
            }
            let request: Vec<u8> = buffer.drain(..end).collect();
            searched = 0;
            kept.lock().unwrap().push(request);
            let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
            let body = answers(&path);
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            if stream.write_all(answer.as_bytes()).is_err() || stream.write_all(&body).is_err() {
                return;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => {
                // What came without a whole head is kept too: it was sent.
                if !buffer.is_empty() {
                    kept.lock().unwrap().push(std::mem::take(&mut buffer));
                }
                return;
            }
            Ok(n) => {
                searched = searched.max(buffer.len().saturating_sub(3));
                buffer.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// An answer's values carry CRLF and a second request into every place of a flow's
/// requests: a header value and the request line (refused, then encoded), the query
/// (encoded), a body (as is), by `json` and by `regex` extraction. The server must get
/// exactly the requests the flow meant, and the report count each refusal by kind.
#[test]
fn a_hostile_server_never_smuggles_a_header_or_a_request_through_a_flow() {
    let json = serde_json::json!({ "token": SMUGGLE })
        .to_string()
        .into_bytes();
    let text = format!("t={SMUGGLE}").into_bytes();
    let server = HostileServer::start(Arc::new(move |path: &str| match path {
        "/login" => json.clone(),
        "/text" => text.clone(),
        _ => b"{}".to_vec(),
    }));
    let addr = server.addr;
    let flow = format!(
        r#"
[[scenario]]
name = "hostile"
concurrency = 1
max_requests = 1
duration = "10s"

[[scenario.step]]
name = "login"
request = "POST http://{addr}/login"
body = "{{}}"
extract = {{ token = "json $.token" }}

[[scenario.step]]
name = "header"
request = "GET http://{addr}/me\nAuthorization: Bearer {{{{token}}}}"

[[scenario.step]]
name = "path"
request = "GET http://{addr}/echo/{{{{token}}}}?t={{{{token}}}}"

[[scenario.step]]
name = "body"
request = "POST http://{addr}/body"
body = "{{{{token}}}}"

[[scenario.step]]
name = "text"
request = "GET http://{addr}/text"
extract = {{ word = "regex (?s)t=(.*)" }}

[[scenario.step]]
name = "regex header"
request = "GET http://{addr}/me\nX-Word: {{{{word}}}}"

[[scenario.step]]
name = "regex path"
request = "GET http://{addr}/r/{{{{word}}}}"
"#
    );
    let dir = TempDir::new();
    let scenarios = dir.write("flow.toml", flow.as_bytes());
    let output = dir.path("run.llr");
    let (code, _, stderr) = loadlab(&[
        "attack",
        "-scenarios",
        &scenarios,
        "-output",
        &output,
        "-quiet",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let encoded = "abc%0D%0AX-Injected:%20yes%0D%0A%0D%0AGET%20/smuggled%20HTTP/1.1%0D%0AHost:%20x";
    let head = |line: &str| format!("{line}\r\nHost: {addr}\r\nUser-Agent: {USER_AGENT}\r\n");
    let want = [
        format!(
            "{}Content-Length: 2\r\n\r\n{{}}",
            head("POST /login HTTP/1.1")
        ),
        format!(
            "{}\r\n",
            head(&format!("GET /echo/{encoded}?t={encoded} HTTP/1.1"))
        ),
        format!(
            "{}Content-Length: {}\r\n\r\n{SMUGGLE}",
            head("POST /body HTTP/1.1"),
            SMUGGLE.len()
        ),
        format!("{}\r\n", head("GET /text HTTP/1.1")),
        format!("{}\r\n", head(&format!("GET /r/{encoded} HTTP/1.1"))),
    ];
    assert_eq!(server.requests(), want);
    // Each refusal is counted by kind, naming the step, the variable and the header.
    let (records, tables) = read(&output);
    let refused: Vec<(String, ErrorKind, String)> = records
        .iter()
        .filter(|r| r.error != 0)
        .map(|r| {
            let entry = tables.error(r.error).unwrap();
            let step = tables.targets[r.target as usize].step.clone().unwrap();
            (step, entry.kind, entry.text.clone())
        })
        .collect();
    assert_eq!(
        refused,
        [
            (
                "header".to_owned(),
                ErrorKind::UnsafeValue,
                "step \"header\": {{token}} in header Authorization holds CR, LF or NUL: not sent"
                    .to_owned()
            ),
            (
                "regex header".to_owned(),
                ErrorKind::UnsafeValue,
                "step \"regex header\": {{word}} in header X-Word holds CR, LF or NUL: not sent"
                    .to_owned()
            ),
        ]
    );
    let (code, report, _) = loadlab(&["report", &output]);
    assert_eq!(code, Some(0));
    assert!(
        report.contains("{{token}} in header Authorization holds CR, LF or NUL: not sent"),
        "{report}"
    );
}

// ---------------------------------------------------------------------------------
// The hostile-input suite: one test per input loadlab reads from elsewhere.

/// What a case must end with, besides no panic and no hang.
enum Want {
    /// Exit 0; stdout or stderr holds the text ("" for anything).
    Ok(&'static str),
    /// A non-zero exit (not a panic's 101) whose stderr holds the text, which names
    /// the input.
    Fails(&'static str),
    /// Either, as long as a failure's stderr holds the text.
    Either(&'static str),
}

/// A case's verdict: `None` when it behaved, else what went wrong.
fn judge(
    name: &str,
    (code, stdout, stderr): &(Option<i32>, String, String),
    want: &Want,
) -> Option<String> {
    let said = format!("{name}: exit {code:?}\nstdout: {stdout:.400}\nstderr: {stderr:.600}");
    let Some(code) = code else {
        return Some(format!("hung: {said}"));
    };
    if *code == 101 || stderr.contains("panicked") {
        return Some(format!("panicked: {said}"));
    }
    let good = match want {
        Want::Ok(text) => *code == 0 && (stdout.contains(text) || stderr.contains(text)),
        Want::Fails(text) => *code != 0 && stderr.contains(text) && !stderr.trim().is_empty(),
        Want::Either(text) => *code == 0 || (stderr.contains(text) && !stderr.trim().is_empty()),
    };
    (!good).then(|| format!("unexpected: {said}"))
}

/// Whether a record file written by a run reads to its end (every block whole).
fn readable(path: &str) -> Result<usize, String> {
    let mut source = record::open_input(path).map_err(|e| e.to_string())?;
    let (mut count, mut batch) = (0, Vec::new());
    while source.next_batch(&mut batch).map_err(|e| e.to_string())? {
        count += batch.len();
    }
    Ok(count)
}

/// The kinds of the errors a record file counts.
fn error_kinds(path: &str) -> Vec<ErrorKind> {
    let (records, tables) = read(path);
    let mut kinds: Vec<ErrorKind> = records
        .iter()
        .filter(|r| r.error != 0)
        .map(|r| tables.error(r.error).unwrap().kind)
        .collect();
    kinds.dedup();
    kinds
}

fn assert_all_behaved(suite: &str, cases: usize, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{suite}: {} of {cases} cases misbehaved:\n{}",
        failures.len(),
        failures.join("\n---\n")
    );
}

/// A server answering `ok` to everything, keeping what it got.
fn plain_server() -> HostileServer {
    HostileServer::start(Arc::new(|_: &str| b"ok".to_vec()))
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

const NGINX_TIME: &str = "[24/Nov/2026:10:00:00 +0000]";

/// Access logs in every format: garbage, escapes that decode to CRLF (a user agent
/// must never add a header), huge lines, truncated gzip.
#[test]
fn hostile_access_logs_are_counted_or_named_and_never_smuggle() {
    let server = plain_server();
    let dir = TempDir::new();
    let base = format!("http://{}", server.addr);
    let nginx = |request: &str, agent: &str| {
        format!("192.0.2.1 - - {NGINX_TIME} \"{request}\" 200 5 \"-\" \"{agent}\"\n")
    };
    let good = nginx("GET /fine HTTP/1.1", "ua");
    let cloudfront = |agent: &str| {
        format!(
            "#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query\n\
             2026-11-24\t10:00:00\tLAX1\t392\t192.0.2.100\tGET\td1.cloudfront.net\t/cf\t200\t-\t{agent}\t-\n"
        )
    };
    let mut gz = gzip(good.repeat(50).as_bytes());
    gz.truncate(gz.len() / 2);
    // (name, log-format, bytes, what must happen)
    let cases: Vec<(&str, &str, Vec<u8>, Want)> = vec![
        ("nginx agent \\x0D\\x0A", "auto", nginx("GET /a HTTP/1.1", r"ua\x0D\x0AX-Injected: yes\x0D\x0A\x0D\x0AGET /smuggled HTTP/1.1").into_bytes(), Want::Ok("")),
        ("nginx agent NUL", "auto", format!("{good}{}", nginx("GET /b HTTP/1.1", r"ua\x00x")).into_bytes(), Want::Ok("")),
        ("apache agent \\r\\n", "apache-combined", format!("192.0.2.1 - - {NGINX_TIME} \"GET /c HTTP/1.1\" 200 5 \"-\" \"ua\\r\\nX-Injected: yes\"\n").into_bytes(), Want::Ok("")),
        ("json agent \\r\\n", "json", b"{\"time\":\"2026-11-24T10:00:00Z\",\"method\":\"GET\",\"path\":\"/j\",\"status\":200,\"user_agent\":\"ua\\r\\nX-Injected: yes\"}\n".to_vec(), Want::Ok("")),
        ("json method with CRLF", "json", b"{\"time\":\"2026-11-24T10:00:00Z\",\"method\":\"GET / HTTP/1.1\\r\\nX-Injected: yes\\r\\n\\r\\nGET\",\"path\":\"/j\",\"status\":200}\n{\"time\":\"2026-11-24T10:00:00Z\",\"method\":\"GET\",\"path\":\"/j\",\"status\":200}\n".to_vec(), Want::Ok("")),
        ("cloudfront agent %0D%0A", "cloudfront", cloudfront("ua%0D%0AX-Injected:%20yes").into_bytes(), Want::Ok("")),
        ("request line \\x0D\\x0A", "nginx", format!("{good}{}", nginx(r"GET /a\x0D\x0AX-Injected: yes HTTP/1.1", "ua")).into_bytes(), Want::Ok("")),
        ("method smuggled", "nginx", format!("{good}{}", nginx(r"GET\x0D\x0AX: y /a HTTP/1.1", "ua")).into_bytes(), Want::Ok("")),
        ("binary garbage", "auto", (0..=255u8).cycle().take(4096).collect(), Want::Fails("garbage.log")),
        ("empty file", "auto", Vec::new(), Want::Fails("empty.log")),
        ("2 MB line", "auto", format!("{good}{}\n", "x".repeat(2 << 20)).into_bytes(), Want::Either("huge.log")),
        ("truncated gzip", "auto", gz, Want::Fails("truncated.log.gz")),
        ("not a log: a k6 script", "auto", b"import http from 'k6/http';\nexport default function () {}\n".to_vec(), Want::Fails("k6.js")),
    ];
    let mut failures = Vec::new();
    for (index, (name, format, bytes, want)) in cases.iter().enumerate() {
        let file = match *name {
            "binary garbage" => "garbage.log".to_owned(),
            "empty file" => "empty.log".to_owned(),
            "2 MB line" => "huge.log".to_owned(),
            "truncated gzip" => "truncated.log.gz".to_owned(),
            "not a log: a k6 script" => "k6.js".to_owned(),
            _ => format!("log{index}.log"),
        };
        let log = dir.write(&file, bytes);
        let out = dir.path(&format!("replay{index}.llr"));
        let run = loadlab(&[
            "attack",
            "-replay",
            &log,
            "-log-format",
            format,
            "-base-url",
            &base,
            "-output",
            &out,
            "-quiet",
        ]);
        if let Some(failure) = judge(name, &run, want) {
            failures.push(failure);
            continue;
        }
        if run.0 != Some(0) {
            continue;
        }
        if let Err(err) = readable(&out) {
            failures.push(format!("{name}: record file unreadable: {err}"));
        }
        // A user agent that would add a header is refused and counted, by kind.
        if name.contains("agent") && !error_kinds(&out).contains(&ErrorKind::UnsafeValue) {
            failures.push(format!("{name}: no unsafe_value counted"));
        }
    }
    let smuggled: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.contains("X-Injected") || r.contains("smuggled") || r.contains('\0'))
        .collect();
    assert!(smuggled.is_empty(), "the server got: {smuggled:?}");
    assert_all_behaved("access logs", cases.len(), &failures);
}

/// Runs `attack` cases against `server`: each a target input and flags; a run that
/// ends well leaves a readable record file; none sends the server a smuggled line.
fn attack_cases(suite: &str, server: &HostileServer, cases: &[(&str, Vec<String>, Vec<u8>, Want)]) {
    let dir = TempDir::new();
    let mut failures = Vec::new();
    for (index, (name, args, stdin, want)) in cases.iter().enumerate() {
        let out = dir.path(&format!("run{index}.llr"));
        let mut all: Vec<&str> = vec!["attack", "-output", &out, "-quiet"];
        all.extend(args.iter().map(String::as_str));
        let run = loadlab_within(&all, stdin, Duration::from_secs(20));
        if let Some(failure) = judge(name, &run, want) {
            failures.push(failure);
            continue;
        }
        if run.0 != Some(0) {
            continue;
        }
        if let Err(err) = readable(&out) {
            failures.push(format!("{name}: record file unreadable: {err}"));
        } else if (name.contains("CRLF") || name.contains("NUL"))
            && !error_kinds(&out).contains(&ErrorKind::UnsafeValue)
        {
            failures.push(format!("{name}: no unsafe_value counted"));
        }
    }
    let smuggled: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.contains("X-Injected") || r.starts_with("GET /smuggled"))
        .collect();
    assert!(smuggled.is_empty(), "{suite}: the server got {smuggled:?}");
    assert_all_behaved(suite, cases.len(), &failures);
}

/// Yandex.Tank ammo: sizes past the end, huge or negative sizes, a second request
/// hidden in a phantom block, control bytes in a bracket header.
#[test]
fn hostile_tank_ammo_is_named_by_line() {
    let server = plain_server();
    let dir = TempDir::new();
    let host = server.addr.to_string();
    let phantom = |request: &str| format!("{} tag\n{request}\n", request.len());
    let smuggle = format!(
        "GET /a HTTP/1.1\r\nHost: {host}\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: {host}\r\n\r\n"
    );
    // (name, format, ammo, what must happen)
    let ammo: Vec<(&str, &str, String, Want)> = vec![
        (
            "size past the end",
            "phantom",
            format!("500 tag\nGET / HTTP/1.1\r\nHost: {host}\r\n\r\n"),
            Want::Fails("ammo:1"),
        ),
        (
            "huge size",
            "phantom",
            "99999999999999999999 tag\nGET /\n".to_owned(),
            Want::Fails("ammo:1"),
        ),
        (
            "negative size",
            "phantom",
            "-5 tag\nGET /\n".to_owned(),
            Want::Fails("ammo:1"),
        ),
        (
            "a request hidden in a block",
            "phantom",
            phantom(&smuggle),
            Want::Ok(""),
        ),
        (
            "CR in a bracket header",
            "uri",
            format!("[Host: {host}]\n[X-A: a\rX-Injected: yes]\n/a\n"),
            Want::Fails("X-A"),
        ),
        (
            "uripost size past the end",
            "uripost",
            format!("[Host: {host}]\n999 /p\nabc\n"),
            Want::Fails("ammo:2"),
        ),
        (
            "binary",
            "uri",
            String::from_utf8_lossy(&(0..=255u8).collect::<Vec<_>>()).into_owned(),
            Want::Fails("ammo"),
        ),
        (
            "header line with no colon",
            "phantom",
            phantom(&format!(
                "GET / HTTP/1.1\r\nHost: {host}\r\nnocolon\r\n\r\n"
            )),
            Want::Fails("ammo:"),
        ),
        (
            "bad method",
            "phantom",
            phantom(&format!("G\x01T / HTTP/1.1\r\nHost: {host}\r\n\r\n")),
            Want::Fails("ammo:"),
        ),
    ];
    let cases: Vec<(&str, Vec<String>, Vec<u8>, Want)> = ammo
        .into_iter()
        .enumerate()
        .map(|(index, (name, format, text, want))| {
            let file = dir.write(&format!("{index}.ammo"), text.as_bytes());
            let args = vec![
                format!("-format={format}"),
                format!("-targets={file}"),
                "-rate=50".to_owned(),
                "-max-requests=2".to_owned(),
            ];
            (name, args, Vec::new(), want)
        })
        .collect();
    attack_cases("tank ammo", &server, &cases);
}

/// `-data` CSV rows: ragged, not UTF-8, empty, huge, and values that would add a
/// header (refused and counted) or restructure the path (encoded).
#[test]
fn hostile_data_rows_are_named_or_refused() {
    let server = plain_server();
    let dir = TempDir::new();
    let target = format!(
        "GET http://{}/u/{{{{csv.id}}}}?q={{{{csv.id}}}}\nX-Id: {{{{csv.id}}}}\n",
        server.addr
    );
    let rows: Vec<(&str, Vec<u8>, Want)> = vec![
        (
            "ragged row",
            b"id,name\n1,a\n2\n".to_vec(),
            Want::Fails("rows.csv"),
        ),
        (
            "not UTF-8",
            b"id\n\xff\xfe\n".to_vec(),
            Want::Either("rows.csv"),
        ),
        ("empty file", Vec::new(), Want::Fails("rows.csv")),
        ("header only", b"id\n".to_vec(), Want::Fails("rows.csv")),
        ("no such column", b"name\nx\n".to_vec(), Want::Fails("id")),
        (
            "CRLF value",
            b"id\n\"1\r\nX-Injected: yes\r\n\r\nGET /smuggled HTTP/1.1\"\n2\n".to_vec(),
            Want::Ok(""),
        ),
        ("NUL value", b"id\n\"a\x00b\"\n".to_vec(), Want::Ok("")),
        (
            "1 MB field",
            format!("id\n{}\n", "x".repeat(1 << 20)).into_bytes(),
            Want::Ok(""),
        ),
        (
            "unclosed quote",
            b"id\n\"abc\n".to_vec(),
            Want::Either("rows.csv"),
        ),
    ];
    let cases: Vec<(&str, Vec<String>, Vec<u8>, Want)> = rows
        .into_iter()
        .enumerate()
        .map(|(index, (name, csv, want))| {
            let folder = dir.path(&format!("rows{index}"));
            std::fs::create_dir_all(&folder).unwrap();
            let path = format!("{folder}/rows.csv");
            std::fs::write(&path, &csv).unwrap();
            let args = vec![
                "-data".to_owned(),
                path,
                "-rate=50".to_owned(),
                "-max-requests=2".to_owned(),
            ];
            (name, args, target.clone().into_bytes(), want)
        })
        .collect();
    attack_cases("data rows", &server, &cases);
}

/// Scenario and plan files: not TOML, not UTF-8, absurd numbers, deep nesting, a
/// header value that would split.
#[test]
fn hostile_scenario_and_plan_files_name_the_line() {
    let server = plain_server();
    let dir = TempDir::new();
    let url = format!("http://{}/", server.addr);
    let scenario =
        |extra: &str| format!("[[scenario]]\nname = \"s\"\nrate = 10\nmax_requests = 2\n{extra}\n");
    let step = |extra: &str| {
        scenario(&format!(
            "\n[[scenario.step]]\nname = \"a\"\nrequest = \"GET {url}\"\n{extra}"
        ))
    };
    let files: Vec<(&str, Vec<u8>, Want)> = vec![
        (
            "not TOML",
            b"this is not toml = = =\n".to_vec(),
            Want::Fails("s.toml:1"),
        ),
        (
            "not UTF-8",
            b"[[scenario]]\nname = \"\xff\"\n".to_vec(),
            Want::Fails("s.toml"),
        ),
        (
            "10000 nested arrays",
            format!("x = {}{}\n", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(),
            Want::Fails("s.toml"),
        ),
        (
            "repeat 1e300",
            step("repeat = 1e300").into_bytes(),
            Want::Fails("s.toml:9"),
        ),
        (
            "repeat i64 max",
            step("repeat = 9223372036854775807").into_bytes(),
            Want::Fails("s.toml"),
        ),
        (
            "repeat -1",
            step("repeat = -1").into_bytes(),
            Want::Fails("s.toml:9"),
        ),
        (
            "rate 1e400",
            scenario(&format!("targets = [\"GET {url}\"]"))
                .replace("rate = 10", "rate = \"1e400/1s\"")
                .into_bytes(),
            Want::Fails("rate"),
        ),
        (
            "duration of ages",
            scenario(&format!(
                "targets = [\"GET {url}\"]\nduration = \"99999999999999h\""
            ))
            .into_bytes(),
            Want::Fails("duration"),
        ),
        (
            "header value with CR",
            scenario(&format!(
                "targets = [\"GET {url}\\nX-A: a\\rX-Injected: yes\"]"
            ))
            .into_bytes(),
            Want::Fails("X-A"),
        ),
        (
            "header name with a space",
            scenario(&format!("targets = [\"GET {url}\\nX A: b\"]")).into_bytes(),
            Want::Fails("s.toml"),
        ),
        (
            "a 1 MB name",
            scenario("")
                .replace(
                    "name = \"s\"",
                    &format!("name = \"{}\"", "n".repeat(1 << 20)),
                )
                .into_bytes(),
            Want::Fails("s.toml"),
        ),
        (
            "a quoted CRLF placeholder in a header",
            step("")
                .replace(
                    &format!("GET {url}\""),
                    &format!("GET {url}\\nX-A: {{{{\\\"\\r\\nX-Injected: yes\\\"}}}}\""),
                )
                .into_bytes(),
            Want::Fails("X-A"),
        ),
        (
            "a stated length with a templated body",
            step("body = \"{{user}}\"")
                .replace(
                    &format!("GET {url}\""),
                    &format!("POST {url}\\nContent-Length: 1\""),
                )
                .into_bytes(),
            Want::Fails("Content-Length"),
        ),
    ];
    let cases: Vec<(&str, Vec<String>, Vec<u8>, Want)> = files
        .into_iter()
        .enumerate()
        .map(|(index, (name, text, want))| {
            let folder = dir.path(&format!("s{index}"));
            std::fs::create_dir_all(&folder).unwrap();
            let path = format!("{folder}/s.toml");
            std::fs::write(&path, &text).unwrap();
            (name, vec!["-scenarios".to_owned(), path], Vec::new(), want)
        })
        .collect();
    attack_cases("scenario files", &server, &cases);
    // Plans: `loadlab run` names the file and line, never panics.
    let plans: Vec<(&str, String, Want)> = vec![
        ("not TOML", "[load\n".to_owned(), Want::Fails("plan.toml")),
        (
            "deep nesting",
            format!("x = {}{}\n", "{a=".repeat(5_000), "1}".repeat(5_000)),
            Want::Fails("plan.toml"),
        ),
        (
            "unknown table",
            "[nonsense]\nx = 1\n".to_owned(),
            Want::Fails("plan.toml"),
        ),
        (
            "huge sweep",
            format!(
                "[load]\ntargets = [\"GET {url}\"]\n[sweep]\nrates = [{}]\n",
                vec!["1"; 100_000].join(",")
            ),
            Want::Fails("plan.toml"),
        ),
    ];
    let mut failures = Vec::new();
    for (index, (name, text, want)) in plans.iter().enumerate() {
        let folder = dir.path(&format!("p{index}"));
        std::fs::create_dir_all(&folder).unwrap();
        let path = format!("{folder}/plan.toml");
        std::fs::write(&path, text).unwrap();
        let out = format!("{folder}/out");
        let run = loadlab(&["run", &path, "-output", &out]);
        failures.extend(judge(name, &run, want));
    }
    assert_all_behaved("plan files", plans.len(), &failures);
}

/// Record files cut short, with bits flipped, with a block claiming 4 GiB: `report`
/// and `encode` read what is whole and say what is not, never panic.
#[test]
fn hostile_record_files_are_read_as_far_as_they_are_whole() {
    let server = plain_server();
    let dir = TempDir::new();
    let good = dir.path("good.llr");
    let targets = format!("GET http://{}/a\n", server.addr);
    let made = loadlab_within(
        &[
            "attack",
            "-rate=200",
            "-max-requests=40",
            "-output",
            &good,
            "-quiet",
        ],
        targets.as_bytes(),
        Duration::from_secs(20),
    );
    assert_eq!(made.0, Some(0), "{}", made.2);
    let bytes = std::fs::read(&good).unwrap();
    let mut variants: Vec<(String, Vec<u8>)> = vec![
        ("empty".to_owned(), Vec::new()),
        (
            "garbage".to_owned(),
            (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect(),
        ),
    ];
    for cut in [
        1,
        8,
        9,
        13,
        bytes.len() / 3,
        bytes.len() / 2,
        bytes.len() - 1,
    ] {
        variants.push((format!("cut at {cut}"), bytes[..cut].to_vec()));
    }
    for at in [
        0,
        5,
        9,
        10,
        20,
        bytes.len() / 4,
        bytes.len() / 2,
        bytes.len() - 3,
    ] {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x5a;
        variants.push((format!("bit flip at {at}"), flipped));
    }
    // Every block's length field (after its kind byte) claiming 4 GiB, in turn.
    let mut at = 8usize.min(bytes.len());
    let mut blocks = 0;
    while at + 9 <= bytes.len() && blocks < 4 {
        let length = u32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap()) as usize;
        let mut huge = bytes.clone();
        huge[at + 1..at + 5].copy_from_slice(&u32::MAX.to_le_bytes());
        variants.push((format!("block {blocks} claims 4 GiB"), huge));
        at += 9 + length;
        blocks += 1;
    }
    let mut failures = Vec::new();
    let mut cases = 0;
    for (index, (name, variant)) in variants.iter().enumerate() {
        let path = dir.write(&format!("v{index}.llr"), variant);
        for command in [
            &["report"][..],
            &["encode", "-to", "json"][..],
            &["report", "-type=json"][..],
        ] {
            cases += 1;
            let mut args = command.to_vec();
            args.push(&path);
            let run = loadlab(&args);
            let label = format!("{} {name}", command.join(" "));
            failures.extend(judge(&label, &run, &Want::Either(".llr")));
        }
    }
    assert_all_behaved("record files", cases, &failures);
}

/// What a monitored Prometheus endpoint or PostgreSQL server answers: garbage, huge
/// lines, absurd numbers. The run goes on (a fault is a gap), its file is whole.
#[test]
fn hostile_monitor_answers_are_gaps_not_crashes() {
    let answers: Vec<(&str, Vec<u8>)> = vec![
        ("binary", (0..=255u8).cycle().take(8192).collect()),
        ("a 2 MB line", format!("m{{a=\"{}\"}} 1\n", "x".repeat(2 << 20)).into_bytes()),
        ("absurd values", b"# TYPE m gauge\nm NaN\nm +Inf\nm 1e400\nm -0\nm{a=\"b\"} 99999999999999999999999999\n".to_vec()),
        ("types that disagree", b"# TYPE m counter\n# TYPE m histogram\nm_bucket{le=\"x\"} 1\nm_bucket{le=\"+Inf\"} -1\nm_count 2\n".to_vec()),
        ("10,000 series", (0..10_000).map(|i| format!("m{{i=\"{i}\"}} {i}\n")).collect::<String>().into_bytes()),
        ("unterminated label", b"m{a=\"b 1\n".to_vec()),
    ];
    let dir = TempDir::new();
    let mut failures = Vec::new();
    for (index, (name, body)) in answers.iter().enumerate() {
        let body = body.clone();
        let server = HostileServer::start(Arc::new(move |_: &str| body.clone()));
        let monitor = format!("prom=http://{}/metrics", server.addr);
        let out = dir.path(&format!("m{index}.llr"));
        failures.extend(monitored_run(name, &monitor, &server, &out, &Want::Ok("")));
    }
    // A PostgreSQL server that speaks garbage, or nothing, or closes at once.
    let pg_answers: [(&str, Vec<u8>); 3] = [
        ("garbage", (0..=255u8).cycle().take(4096).collect()),
        (
            "an error with a huge length",
            b"E\xff\xff\xff\xffSFATAL".to_vec(),
        ),
        (
            "auth asking for an unknown method",
            b"R\x00\x00\x00\x08\x00\x00\x00\x63".to_vec(),
        ),
    ];
    for (index, (name, answer)) in pg_answers.iter().enumerate() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let answer = answer.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(20) {
                let Ok(mut stream) = stream else { return };
                let answer = answer.clone();
                std::thread::spawn(move || {
                    let mut first = [0u8; 512];
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                    let _ = stream.read(&mut first);
                    let _ = stream.write_all(&answer);
                });
            }
        });
        let monitor = format!("postgres=postgres://u:pw@{addr}/db");
        let out = dir.path(&format!("pg{index}.llr"));
        let label = format!("postgres {name}");
        let want = Want::Either("postgres");
        failures.extend(monitored_run(
            &label,
            &monitor,
            &plain_server(),
            &out,
            &want,
        ));
    }
    assert_all_behaved(
        "monitor answers",
        answers.len() + pg_answers.len(),
        &failures,
    );
}

/// A second of load on `server` watched by `-monitor monitor`: what went wrong, if
/// anything (a run that ends well leaves a readable file).
fn monitored_run(
    name: &str,
    monitor: &str,
    server: &HostileServer,
    out: &str,
    want: &Want,
) -> Option<String> {
    let targets = format!("GET http://{}/a\n", server.addr);
    let run = loadlab_within(
        &[
            "attack",
            "-rate=20",
            "-duration=1s",
            "-monitor",
            monitor,
            "-monitor-interval",
            "200ms",
            "-output",
            out,
            "-quiet",
        ],
        targets.as_bytes(),
        Duration::from_secs(20),
    );
    if let Some(failure) = judge(name, &run, want) {
        return Some(failure);
    }
    let error = (run.0 == Some(0)).then(|| readable(out).err()).flatten();
    error.map(|err| format!("{name}: record file unreadable: {err}"))
}

/// A shard's answers to the coordinator (`loadlab steer`): garbage, huge, absurd
/// figures. The coordinator names the shard and ends by its deadline.
#[test]
fn hostile_shard_answers_never_hang_the_coordinator() {
    let answers: Vec<(&str, Vec<u8>)> = vec![
        ("binary", (0..=255u8).cycle().take(8192).collect()),
        ("JSON of another shape", b"{\"seconds\": \"many\"}".to_vec()),
        (
            "absurd figures",
            b"{\"run\":\"x\",\"shard\":[9,2],\"settled\":18446744073709551615,\"seconds\":[]}"
                .to_vec(),
        ),
        ("a 5 MB answer", vec![b'['; 5 << 20]),
        ("deep nesting", "[".repeat(100_000).into_bytes()),
    ];
    let mut failures = Vec::new();
    for (name, body) in &answers {
        let body = body.clone();
        let server = HostileServer::start(Arc::new(move |_: &str| body.clone()));
        let shard: &'static str = Box::leak(server.addr.to_string().into_boxed_str());
        let run = loadlab_within(
            &["steer", shard, "-quiet", "-wait", "2s", "-deadline", "6s"],
            b"",
            Duration::from_secs(20),
        );
        failures.extend(judge(name, &run, &Want::Either(shard)));
    }
    assert_all_behaved("shard answers", answers.len(), &failures);
}

/// What clients send the simulator: garbage, a huge head, a slow trickle, broken
/// chunked bodies. Each is answered or closed in bounded time, and the simulator
/// serves the next client.
#[test]
fn hostile_requests_never_stop_the_simulator() {
    let recipe = r#"{"route": "/*", "body": "ok", "stages": [{"at": 0, "status": 200}]}"#;
    let recipe = simulator::parse_recipe(recipe, "test recipe").unwrap();
    let options = simulator::SimulatorOptions {
        threads: 1,
        ..simulator::SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    let server = simulator::Simulator::start(options, &recipe).unwrap();
    let addr = server.local_addr();
    let requests: Vec<(&str, Vec<u8>)> = vec![
        ("binary", (0..=255u8).cycle().take(8192).collect()),
        ("a 2 MB head", format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "x".repeat(2 << 20)).into_bytes()),
        ("10,000 headers", format!("GET / HTTP/1.1\r\n{}\r\n", "X-A: b\r\n".repeat(10_000)).into_bytes()),
        ("bad chunk size", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n".to_vec()),
        ("huge chunk size", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nabc".to_vec()),
        ("negative length", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n".to_vec()),
        ("two lengths", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 5\r\n\r\nabcde".to_vec()),
        ("a bare LF head", b"GET / HTTP/1.1\nHost: x\n\n".to_vec()),
        ("a NUL in the path", b"GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
        ("HTTP/2 preface then garbage", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xff\xff\xff\xff\xff\xff\xff\xff\xff".to_vec()),
    ];
    let mut failures = Vec::new();
    let mut cases = 0;
    for (name, bytes) in &requests {
        cases += 1;
        let started = Instant::now();
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let _ = stream.write_all(bytes);
        let mut answer = [0u8; 256];
        let _ = stream.read(&mut answer);
        if started.elapsed() > Duration::from_secs(5) {
            failures.push(format!("{name}: neither answered nor closed within 5 s"));
        }
        if let Some(failure) = still_serves(addr) {
            failures.push(format!("{name}: {failure}"));
        }
    }
    // A slow trickle (a byte every 20 ms for a second) holds one connection, not the
    // server.
    cases += 1;
    let mut slow = TcpStream::connect(addr).unwrap();
    for byte in b"GET / HTTP/1.1\r\nX-Slow: ".iter().cycle().take(50) {
        let _ = slow.write_all(&[*byte]);
        if let Some(failure) = still_serves(addr).filter(|_| *byte == b'G') {
            failures.push(format!("slow trickle: {failure}"));
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_all_behaved("simulator requests", cases, &failures);
}

/// Whether a good request on a new connection gets its 200.
fn still_serves(addr: SocketAddr) -> Option<String> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .write_all(b"GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
        .ok()?;
    let mut answer = [0u8; 64];
    let n = stream.read(&mut answer).unwrap_or(0);
    (!answer[..n].starts_with(b"HTTP/1.1 200")).then(|| {
        format!(
            "a good request then got {:?}",
            String::from_utf8_lossy(&answer[..n])
        )
    })
}

/// HAR files: not JSON, cut short, nested past reason, values that would split a
/// request in the flow file written from them.
#[test]
fn hostile_har_files_are_named_by_line_and_field() {
    let entry = |headers: &str| {
        format!(
            r#"{{"log":{{"version":"1.2","entries":[{{"startedDateTime":"2026-11-24T10:00:00.000Z","time":5,"request":{{"method":"GET","url":"http://127.0.0.1:8080/a?x=1","headers":[{headers}],"queryString":[]}},"response":{{"status":200,"headers":[],"content":{{"size":2,"mimeType":"application/json","text":"{{}}"}}}},"timings":{{}}}}]}}}}"#
        )
    };
    let good = entry("");
    let files: Vec<(&str, Vec<u8>, Want)> = vec![
        (
            "not JSON",
            b"GET / HTTP/1.1\n".to_vec(),
            Want::Fails("s.har"),
        ),
        (
            "cut short",
            good.as_bytes()[..good.len() / 2].to_vec(),
            Want::Fails("s.har"),
        ),
        (
            "10,000 deep",
            format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(),
            Want::Fails("s.har"),
        ),
        (
            "not UTF-8",
            b"{\"log\": \"\xff\"}".to_vec(),
            Want::Fails("s.har"),
        ),
        (
            "CRLF in a header value",
            entry(r#"{"name":"X-A","value":"a\r\nX-Injected: yes"}"#).into_bytes(),
            Want::Fails("X-A"),
        ),
        (
            "CRLF in a header name",
            entry(r#"{"name":"X-A\r\nX-Injected","value":"a"}"#).into_bytes(),
            Want::Fails("s.har"),
        ),
        (
            "CRLF in the method",
            good.replace(
                "\"GET\"",
                "\"GET / HTTP/1.1\\r\\nX-Injected: yes\\r\\n\\r\\nGET\"",
            )
            .into_bytes(),
            Want::Fails("s.har"),
        ),
        (
            "a URL with CRLF",
            good.replace("/a?x=1", "/a\\r\\nX-Injected: yes")
                .into_bytes(),
            Want::Either("s.har"),
        ),
    ];
    let dir = TempDir::new();
    let mut failures = Vec::new();
    for (index, (name, bytes, want)) in files.iter().enumerate() {
        let folder = dir.path(&format!("h{index}"));
        std::fs::create_dir_all(&folder).unwrap();
        let path = format!("{folder}/s.har");
        std::fs::write(&path, bytes).unwrap();
        let run = loadlab(&["encode", "-from", "har", &path]);
        if let Some(failure) = judge(name, &run, want) {
            failures.push(failure);
        } else if run.0 == Some(0)
            && (run.1.contains("\\nX-Injected")
                || run.1.lines().any(|l| l.starts_with("X-Injected")))
        {
            failures.push(format!(
                "{name}: the flow file carries the injected header:\n{}",
                run.1
            ));
        }
    }
    assert_all_behaved("HAR files", files.len(), &failures);
}
