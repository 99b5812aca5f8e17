//! Hooks: `setup`, `ready` and `teardown` shell commands (`sh -c`), each with a timeout.
//! Their output goes to the cell's `hooks.txt`, so a failed cell keeps what its hook
//! said; a hook that hangs is killed at its timeout and fails the cell, and the plan
//! goes on.

use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use engine::StopHandle;

use crate::plan::{Ready, ReadyProbe};

/// How often a running hook is checked for its end, its timeout and Ctrl-C.
const POLL: Duration = Duration::from_millis(20);

/// Runs `command` with `sh -c`, appending its output to `log`. `Err` says why the
/// cell fails: an exit status, a timeout, an interruption.
pub fn run_hook(
    what: &str,
    command: &str,
    timeout: Duration,
    cwd: &Path,
    log: &Path,
    stop: &StopHandle,
) -> Result<(), String> {
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("{what}: cannot write {}: {e}", log.display()))?;
    let _ = writeln!(out, "$ {command}    # {what}");
    let err_out = out.try_clone().map_err(|e| format!("{what}: {e}"))?;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(if cwd.as_os_str().is_empty() {
            Path::new(".")
        } else {
            cwd
        })
        .stdin(Stdio::null())
        .stdout(Stdio::from(
            out.try_clone().map_err(|e| format!("{what}: {e}"))?,
        ))
        .stderr(Stdio::from(err_out))
        .spawn()
        .map_err(|e| format!("{what}: cannot start sh: {e}"))?;
    let started = Instant::now();
    let outcome = loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break Ok(()),
            Ok(Some(status)) => {
                break Err(format!(
                    "{what} failed ({status}); its output is in hooks.txt"
                ));
            }
            Ok(None) if started.elapsed() >= timeout => {
                break Err(format!(
                    "{what} still running after {}; killed (output in hooks.txt)",
                    units::GoDuration(timeout)
                ));
            }
            Ok(None) if stop.is_stopping() => break Err(format!("{what} interrupted")),
            Ok(None) => std::thread::sleep(POLL),
            Err(e) => break Err(format!("{what}: {e}")),
        }
    };
    if outcome.is_err() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = writeln!(
        out,
        "# {what}: {}",
        outcome.as_ref().err().map_or("ok", String::as_str)
    );
    outcome
}

/// Polls until the variant answers, or its ready timeout passes.
pub fn wait_ready(
    ready: &Ready,
    values: &[(String, String)],
    cwd: &Path,
    log: &Path,
    stop: &StopHandle,
) -> Result<(), String> {
    let started = Instant::now();
    let mut last = String::new();
    while started.elapsed() < ready.timeout {
        if stop.is_stopping() {
            return Err("ready: interrupted".to_owned());
        }
        let left = ready.timeout.saturating_sub(started.elapsed());
        let attempt = match &ready.probe {
            ReadyProbe::Url(url) => http_ok(
                &crate::cells::substitute(url, values),
                left.min(Duration::from_secs(2)),
            ),
            ReadyProbe::Command(command) => run_hook(
                "ready",
                &crate::cells::substitute(command, values),
                left,
                cwd,
                log,
                stop,
            ),
        };
        match attempt {
            Ok(()) => return Ok(()),
            Err(why) => last = why,
        }
        std::thread::sleep(
            ready
                .interval
                .min(ready.timeout.saturating_sub(started.elapsed())),
        );
    }
    Err(format!(
        "not ready after {}: {last}",
        units::GoDuration(ready.timeout)
    ))
}

/// A plain HTTP/1.1 GET: any 2xx or 3xx answer is ready.
fn http_ok(url: &str, timeout: Duration) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: want http://"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let addr = std::net::ToSocketAddrs::to_socket_addrs(authority)
        .map_err(|e| format!("{url}: {e}"))?
        .next()
        .ok_or_else(|| format!("{url}: no address"))?;
    let timeout = timeout.max(Duration::from_millis(10));
    let mut stream =
        TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("{url}: {e}"))?;
    let _ = stream.set_read_timeout(Some(timeout));
    let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("{url}: {e}"))?;
    let mut head = [0u8; 12];
    stream
        .read_exact(&mut head)
        .map_err(|e| format!("{url}: {e}"))?;
    match &head[9..10] {
        b"2" | b"3" => Ok(()),
        _ => Err(format!(
            "{url} answered {}",
            String::from_utf8_lossy(&head[9..12])
        )),
    }
}

/// Appends a line to a cell's hook log (creating it).
pub fn note(log: &Path, line: &str) {
    if let Ok(mut file) = File::options().create(true).append(true).open(log) {
        let _ = writeln!(file, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_pass_fail_and_time_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("hooks.txt");
        let stop = StopHandle::new();
        let second = Duration::from_secs(5);
        let rows: [(&str, Duration, Result<(), &str>); 3] = [
            ("echo hello", second, Ok(())),
            (
                "echo oops >&2; exit 3",
                second,
                Err("setup failed (exit status: 3)"),
            ),
            (
                "sleep 30",
                Duration::from_millis(200),
                Err("setup still running after 200ms"),
            ),
        ];
        for (command, timeout, want) in rows {
            let started = Instant::now();
            let got = run_hook("setup", command, timeout, Path::new(""), &log, &stop);
            match want {
                Ok(()) => assert_eq!(got, Ok(()), "{command}"),
                Err(prefix) => assert!(
                    got.as_ref().is_err_and(|e| e.starts_with(prefix)),
                    "{command}: {got:?}"
                ),
            }
            assert!(started.elapsed() < Duration::from_secs(5), "{command}");
        }
        let output = std::fs::read_to_string(&log).expect("log");
        assert!(
            output.contains("hello") && output.contains("oops"),
            "{output}"
        );
    }
}
