//! `attack -format=uri|uripost|phantom` end to end: the real binary reads Yandex.Tank
//! ammo files and sends their requests to a loopback server of the test's own, which
//! records what arrived; `report` counts them. And the ammo errors a user meets,
//! named by file and line.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A request as the server read it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Arrived {
    method: String,
    path: String,
    /// Header lines as sent, lowercased names: `x-ammo: uri`.
    headers: Vec<String>,
    body: String,
}

/// A keep-alive HTTP/1.1 server on a loopback port of its own that records each
/// request and answers 200 with no body.
struct Server {
    port: u16,
    arrived: Arc<Mutex<Vec<Arrived>>>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let arrived = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&arrived);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = Arc::clone(&log);
                std::thread::spawn(move || serve(stream, &log));
            }
        });
        Server { port, arrived }
    }

    fn take(&self) -> Vec<Arrived> {
        std::mem::take(&mut *self.arrived.lock().unwrap())
    }
}

/// Answers the requests of one connection until the client closes it.
fn serve(stream: TcpStream, log: &Mutex<Vec<Arrived>>) {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_request(&mut reader) {
        log.lock().unwrap().push(request);
        if writer
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            .is_err()
        {
            return;
        }
    }
}

fn read_request(reader: &mut impl BufRead) -> Option<Arrived> {
    let mut line = String::new();
    reader.read_line(&mut line).ok().filter(|&n| n > 0)?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok().filter(|&n| n > 0)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "content-length" {
            length = value.parse().ok()?;
        }
        headers.push(format!("{name}: {value}"));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Arrived {
        method,
        path,
        headers,
        body: String::from_utf8(body).ok()?,
    })
}

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "loadlab-tank-{}-{}",
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
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `loadlab attack -format=FORMAT -targets=FILE` for `requests` requests, its records
/// piped into `loadlab report -type=json`.
fn attack(format: &str, file: &str, requests: usize) -> (Output, String) {
    let attack = loadlab()
        .args([
            "attack",
            &format!("-format={format}"),
            &format!("-targets={file}"),
            "-rate=50",
            &format!("-max-requests={requests}"),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    if !attack.status.success() {
        return (attack, String::new());
    }
    let mut report = loadlab()
        .args(["report", "-type=json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    report
        .stdin
        .take()
        .unwrap()
        .write_all(&attack.stdout)
        .unwrap();
    let report = report.wait_with_output().unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    (attack, String::from_utf8(report.stdout).unwrap())
}

fn expect(
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> (String, String, Vec<String>, String) {
    (
        method.to_owned(),
        path.to_owned(),
        headers.iter().map(|h| (*h).to_owned()).collect(),
        body.to_owned(),
    )
}

#[test]
fn each_tank_format_sends_its_requests_as_written() {
    let server = Server::start();
    let dir = TempDir::new();
    let host = format!("127.0.0.1:{}", server.port);
    let uri = format!(
        "[Host: {host}]\n[X-Ammo: uri]\n/search?q=tank first\n[X-Ammo: changed]\n/second\n"
    );
    let uripost = format!(
        "[Host: {host}]\n[Content-Type: text/plain]\n5 /things post\nhello\n9 /more\nline\nnext\n"
    );
    let request = format!(
        "PUT /items/7?x=1 HTTP/1.1\r\nHost: {host}\r\nX-Ammo: phantom\r\nContent-Length: 4\r\n\r\nbody"
    );
    let phantom = format!("{} tag\n{request}\r\n", request.len());
    // (format, ammo, requests, what the server must see: method, path, one header, body)
    let rows = [
        (
            "uri",
            uri,
            vec![
                expect("GET", "/search?q=tank", &["x-ammo: uri"], ""),
                expect("GET", "/second", &["x-ammo: changed"], ""),
            ],
        ),
        (
            "uripost",
            uripost,
            vec![
                expect("POST", "/things", &["content-type: text/plain"], "hello"),
                expect("POST", "/more", &["content-type: text/plain"], "line\nnext"),
            ],
        ),
        (
            "phantom",
            phantom,
            vec![expect("PUT", "/items/7?x=1", &["x-ammo: phantom"], "body")],
        ),
    ];
    for (format, ammo, want) in rows {
        let file = dir.write(&format!("{format}.ammo"), ammo.as_bytes());
        let (attack, report) = attack(format, &file, want.len());
        assert!(attack.status.success(), "{format}: {}", stderr(&attack));
        assert!(
            report.contains(&format!("\"requests\":{},", want.len())),
            "{format}: {report}"
        );
        assert!(
            report.contains(&format!("\"status_codes\":{{\"200\":{}}}", want.len())),
            "{format}: {report}"
        );
        let mut got = server.take();
        got.sort_by(|a, b| a.path.cmp(&b.path));
        let mut want = want;
        want.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(got.len(), want.len(), "{format}: {got:?}");
        for (got, (method, path, headers, body)) in got.iter().zip(&want) {
            assert_eq!(
                (&got.method, &got.path, &got.body),
                (method, path, body),
                "{format}"
            );
            assert!(
                got.headers.contains(&format!("host: {host}")),
                "{format}: {got:?}"
            );
            for header in headers {
                assert!(
                    got.headers.contains(header),
                    "{format}: {header} in {got:?}"
                );
            }
        }
    }
}

#[test]
fn bad_ammo_is_named_by_file_and_line() {
    let dir = TempDir::new();
    let rows = [
        ("uri", "/a\n", ":1: \"/a\" needs -base-url or a Host header"),
        ("uri", "[Host: 127.0.0.1:9]\n", ": no targets"),
        (
            "uripost",
            "[Host: 127.0.0.1:9]\nfive /a\nhello\n",
            ":2: SIZE \"five\" is not a number of bytes",
        ),
        (
            "phantom",
            "\n40 tag\nGET / HTTP/1.1\r\n",
            ":2: the request of SIZE 40 bytes starting here is cut short: the input ends 24 bytes early",
        ),
    ];
    for (format, ammo, want) in rows {
        let file = dir.write(&format!("bad.{format}"), ammo.as_bytes());
        let (attack, _) = attack(format, &file, 1);
        assert!(!attack.status.success(), "{format} {ammo:?}");
        let err = stderr(&attack);
        assert!(
            err.contains(&format!("{file}{want}")),
            "{format} {ammo:?}: {err}"
        );
    }
}
