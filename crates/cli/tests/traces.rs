//! `attack -trace` end to end (docs/TRACES.md): the real binary sends a W3C
//! `traceparent` to a loopback server of the test's own, which records what arrived;
//! the ids it saw are the ids the record keeps and `report` lists and links. A seed
//! repeats them, a share samples them, a target's own header wins, and bad flags are
//! named.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

fn run(args: &[&str]) -> Output {
    loadlab().args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// (path, traceparent) of each request, in arrival order.
type Arrivals = Vec<(String, Option<String>)>;

/// A keep-alive HTTP/1.1 server on a loopback port of its own that records each
/// request's path and `traceparent` and answers 200; `/slow` after 30 ms.
struct Server {
    port: u16,
    arrived: Arc<Mutex<Arrivals>>,
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

    fn take(&self) -> Arrivals {
        std::mem::take(&mut *self.arrived.lock().unwrap())
    }
}

fn serve(stream: TcpStream, log: &Mutex<Arrivals>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split(' ').nth(1).unwrap_or_default().to_owned();
        let mut traceparent = None;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("traceparent")
            {
                traceparent = Some(value.trim().to_owned());
            }
        }
        if path == "/slow" {
            std::thread::sleep(Duration::from_millis(30));
        }
        log.lock().unwrap().push((path, traceparent));
        let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        if writer.write_all(answer).is_err() {
            return;
        }
    }
}

/// `/fast` and `/slow` on the server, and a loopback port nobody listens on.
fn targets(dir: &Path, server: &Server, own_traceparent: Option<&str>) -> String {
    let port = server.port;
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let own = own_traceparent.map_or_else(String::new, |value| format!("traceparent: {value}\n"));
    let body = format!(
        "GET http://127.0.0.1:{port}/fast\n{own}\nGET http://127.0.0.1:{port}/slow\n\nGET http://127.0.0.1:{closed}/refused\n"
    );
    let path = dir.join("targets.txt");
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

/// `attack` at 60 requests a second for a second with `extra` flags, into `out`.
fn attack(targets: &str, out: &Path, extra: &[&str]) -> Output {
    let out = format!("-output={}", out.display());
    let targets = format!("-targets={targets}");
    let mut args = vec![
        "attack",
        &targets,
        "-rate=60",
        "-duration=1s",
        "-timeout=2s",
        &out,
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// The trace ids of the `traceparent`s that arrived, checking each one's shape.
fn trace_ids(arrived: &[(String, Option<String>)]) -> BTreeSet<String> {
    arrived
        .iter()
        .filter_map(|(_, traceparent)| traceparent.as_deref())
        .map(|value| {
            let parts: Vec<&str> = value.split('-').collect();
            assert_eq!(parts.len(), 4, "{value}");
            assert_eq!((parts[0], parts[3]), ("00", "01"), "{value}");
            assert_eq!((parts[1].len(), parts[2].len()), (32, 16), "{value}");
            let hex = |s: &str| {
                s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            };
            assert!(hex(parts[1]) && hex(parts[2]), "{value}");
            parts[1].to_owned()
        })
        .collect()
}

#[test]
fn the_ids_sent_are_the_ids_the_record_keeps_and_the_report_links() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let targets = targets(dir.path(), &server, None);
    let first = dir.path().join("a.llr");
    let output = attack(&targets, &first, &["-trace", "-seed=11"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let arrived = server.take();
    let sent = trace_ids(&arrived);
    assert_eq!(
        sent.len(),
        arrived.len(),
        "every request traced, each its own id"
    );
    assert!(arrived.len() >= 30, "{}", arrived.len());

    let link = "http://127.0.0.1:16686/trace/{trace_id}";
    let report = run(&[
        "report",
        "-type=json",
        &format!("-trace-link={link}"),
        first.to_str().unwrap(),
    ]);
    assert!(report.status.success(), "{}", text(&report.stderr));
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let traces = &json["loadlab"]["traces"];
    assert_eq!(traces["sample"], 1.0, "{traces}");
    let slowest = traces["slowest"].as_array().unwrap();
    assert!(!slowest.is_empty(), "{traces}");
    for request in slowest {
        let id = request["trace_id"].as_str().unwrap();
        assert!(sent.contains(id), "{id} was never sent");
        assert_eq!(request["link"], link.replace("{trace_id}", id));
    }
    assert!(
        slowest[0]["target"].as_str().unwrap().ends_with("/slow"),
        "{traces}"
    );
    assert!(
        slowest[0]["latency"].as_u64().unwrap() >= 30_000_000,
        "{traces}"
    );
    // The refused requests never reached a server, but their ids are kept all the same.
    let failed = &traces["failures"][0];
    assert!(
        failed["target"].as_str().unwrap().ends_with("/refused"),
        "{traces}"
    );
    assert_eq!(failed["trace_id"].as_str().unwrap().len(), 32, "{traces}");

    let report = run(&["report", first.to_str().unwrap()]);
    let words = text(&report.stdout);
    assert!(
        words.contains("Traced requests (-trace, 100% sampled)"),
        "{words}"
    );
    let slowest_id = slowest[0]["trace_id"].as_str().unwrap();
    assert!(words.contains(&format!("trace {slowest_id}")), "{words}");

    // The same seed sends the same ids.
    let again = dir.path().join("b.llr");
    let output = attack(&targets, &again, &["-trace", "-seed=11"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(trace_ids(&server.take()), sent);
}

#[test]
fn a_share_is_sampled_and_an_untraced_run_sends_none() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let targets = targets(dir.path(), &server, None);
    let out = dir.path().join("a.llr");
    let output = attack(&targets, &out, &["-trace", "-trace-sample=0.25", "-seed=3"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let arrived = server.take();
    let traced = trace_ids(&arrived).len();
    assert!(
        (3..=arrived.len() / 2).contains(&traced),
        "{traced} of {}",
        arrived.len()
    );
    let report = run(&["report", out.to_str().unwrap()]);
    assert!(
        text(&report.stdout).contains("(-trace, 25% sampled)"),
        "{}",
        text(&report.stdout)
    );

    let output = attack(&targets, &out, &["-seed=3"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        server
            .take()
            .iter()
            .all(|(_, traceparent)| traceparent.is_none())
    );
    let report = run(&["report", out.to_str().unwrap()]);
    assert!(
        !text(&report.stdout).contains("Traced requests"),
        "{}",
        text(&report.stdout)
    );
    // A link asked of a run that was not traced is answered, not guessed.
    let report = run(&[
        "report",
        "-trace-link=http://j/{trace_id}",
        out.to_str().unwrap(),
    ]);
    assert!(
        text(&report.stdout).contains("Traced requests: not judged"),
        "{}",
        text(&report.stdout)
    );
}

#[test]
fn a_traceparent_the_target_sets_wins_and_is_said_once() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let theirs = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let targets = targets(dir.path(), &server, Some(theirs));
    let out = dir.path().join("a.llr");
    let output = attack(&targets, &out, &["-trace", "-seed=5"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert_eq!(
        stderr.matches("set their own traceparent").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("/fast"), "{stderr}");
    for (path, traceparent) in server.take() {
        let traceparent = traceparent.unwrap();
        assert_eq!(
            traceparent == theirs,
            path == "/fast",
            "{path}: {traceparent}"
        );
    }
}

#[test]
fn bad_trace_flags_are_named_and_fail() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("none.llr");
    // (arguments, what stderr must say)
    let rows: [(&[&str], &str); 4] = [
        (
            &[
                "report",
                "-trace-link=http://127.0.0.1:16686/trace/",
                "x.llr",
            ],
            "-trace-link: \"http://127.0.0.1:16686/trace/\" has no {trace_id}",
        ),
        (
            &["attack", "-trace", "-trace-sample=0", "-duration=1s"],
            "-trace-sample: want a share above 0 and at most 1",
        ),
        (
            &["attack", "-trace", "-trace-sample=2", "-duration=1s"],
            "-trace-sample: want a share above 0 and at most 1",
        ),
        (
            &["attack", "-trace-sample=0.5", "-duration=1s"],
            "-trace-sample: samples the traced requests: give -trace too",
        ),
    ];
    for (args, want) in rows {
        let output = loadlab()
            .args(args)
            .arg(format!("-output={}", record.display()))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
