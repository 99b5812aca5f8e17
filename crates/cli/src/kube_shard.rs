//! `loadlab kube shard`: what each pod of `loadlab kube run` runs. The attack runs as a
//! child process (the pod's share: `-shard`, `-start-at`, `-output` come in its flags);
//! a small server on `-serve` answers the coordinator through the API server's pod
//! proxy:
//!
//! - `/ready`: 200 once the attack is over and its records are written (the pod's
//!   readiness probe), else 503;
//! - `/records.llr`: the record file, once ready;
//! - `/seconds?from=N` and `/stop?why=...`: the attack's steering feed (`attack
//!   -steer` on a loopback port of the pod), passed through for `kube run`'s
//!   coordinator. `/stop` drains the attack through the feed, saying why, else with
//!   SIGTERM (as Ctrl-C does for one attack). Once the attack is over, `/seconds`
//!   answers its last report, marked finished, so a coordinator that polls late still
//!   learns how the shard ended; `/metrics`, its Prometheus series, likewise;
//! - `/records?from=BYTE`: the record file as written so far, for a live dashboard;
//! - `/bye`: the records were fetched; the pod exits.

use std::path::PathBuf;
use std::process::{Child, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use live::steer::{HttpLink, ShardLink, ShardReport, ShardState};
use live::{Handler, Request, Response, Server};

/// How often the child and the `/bye` flag are looked at.
const POLL: Duration = Duration::from_millis(200);

/// What the pod's server knows.
#[derive(Default)]
struct PodState {
    /// The attack's pid while it runs (0 once it ended).
    attack_pid: AtomicU32,
    /// The attack is over and its records are complete.
    ready: AtomicBool,
    /// The coordinator has the records.
    bye: AtomicBool,
    /// The attack's steering feed, on the pod's loopback.
    steer: Mutex<Option<HttpLink>>,
    /// The feed's last answer, for after the attack is over.
    last_report: Mutex<Option<ShardReport>>,
}

pub fn run(serve: &str, linger: Duration, attack: &[String]) -> anyhow::Result<ExitCode> {
    let output = output_of(attack).context("kube shard: the attack flags need -output")?;
    let state = Arc::new(PodState::default());
    let steer_address = free_loopback_address()?;
    *lock(&state.steer) = HttpLink::new(&steer_address).ok();
    let server = Server::start("-serve", serve, handler(&state, output.clone()))?;
    eprintln!(
        "loadlab kube shard: records will be on http://{}/records.llr",
        server.address()
    );
    let exe = std::env::current_exe().context("kube shard: this binary's path")?;
    let mut child = std::process::Command::new(exe)
        .arg("attack")
        .args(attack)
        .args(["-steer", &steer_address])
        .stdin(Stdio::null())
        .spawn()
        .context("kube shard: starting the attack")?;
    state.attack_pid.store(child.id(), Ordering::Relaxed);
    // As the pod's PID 1 this process gets the kubelet's SIGTERM (the pod deleted):
    // the attack drains as for Ctrl-C, its records complete, within the grace period.
    let stop = engine::StopHandle::new();
    crate::signals::stop_on_signals(&stop, "draining the attack")?;
    let status = wait(&mut child, &stop)?;
    state.attack_pid.store(0, Ordering::Relaxed);
    if !output.is_file() {
        bail!("kube shard: the attack ended ({status}) without records");
    }
    state.ready.store(true, Ordering::Relaxed);
    let until = Instant::now() + linger;
    // Until the records are fetched, or the pod is deleted (SIGTERM), or the linger ends.
    while !state.bye.load(Ordering::Relaxed) && !stop.is_stopping() && Instant::now() < until {
        std::thread::sleep(POLL);
    }
    server.stop();
    Ok(ExitCode::SUCCESS)
}

/// Where the server listens: `serve`, with `port_per_index` its port plus the pod's
/// `JOB_COMPLETION_INDEX` (shards sharing a node's network need distinct ports).
pub fn serve_address(
    serve: &str,
    port_per_index: bool,
    index: Option<&str>,
) -> anyhow::Result<String> {
    if !port_per_index {
        return Ok(serve.to_owned());
    }
    let Some(index) = index else {
        bail!(
            "kube shard: -port-per-index needs JOB_COMPLETION_INDEX (set in an Indexed Job's pods)"
        );
    };
    let index: u16 = index.parse().map_err(|_| {
        anyhow::anyhow!("kube shard: JOB_COMPLETION_INDEX {index:?} is not an index")
    })?;
    let address: std::net::SocketAddr = serve.parse().map_err(|_| {
        anyhow::anyhow!("kube shard: -serve {serve:?} is not an IP:PORT (with -port-per-index)")
    })?;
    let port = address
        .port()
        .checked_add(index)
        .filter(|_| address.port() != 0)
        .ok_or_else(|| {
            anyhow::anyhow!("kube shard: -serve {serve} plus index {index} is no port")
        })?;
    Ok(std::net::SocketAddr::new(address.ip(), port).to_string())
}

fn wait(child: &mut Child, stop: &engine::StopHandle) -> anyhow::Result<std::process::ExitStatus> {
    let mut told = false;
    loop {
        if let Some(status) = child
            .try_wait()
            .context("kube shard: waiting for the attack")?
        {
            return Ok(status);
        }
        if stop.is_stopping() && !told {
            told = true;
            terminate(child.id());
        }
        std::thread::sleep(POLL);
    }
}

/// SIGTERM to the attack: it drains as for Ctrl-C.
fn terminate(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
}

/// The value of `-output`/`--output` in the attack's flags.
fn output_of(attack: &[String]) -> Option<PathBuf> {
    attack.iter().enumerate().find_map(|(index, flag)| {
        let name = flag.trim_start_matches('-');
        if !flag.starts_with('-') {
            return None;
        }
        match name.split_once('=') {
            Some(("output", value)) => Some(PathBuf::from(value)),
            None if name == "output" => attack.get(index + 1).map(PathBuf::from),
            _ => None,
        }
    })
}

fn handler(state: &Arc<PodState>, output: PathBuf) -> Handler {
    let state = Arc::clone(state);
    Arc::new(move |request: &Request| {
        let ready = state.ready.load(Ordering::Relaxed);
        match request.path.as_str() {
            "/ready" if ready => Response::ok("text/plain", "ready\n"),
            "/ready" | "/records.llr" if !ready => not_yet(),
            "/records.llr" => match std::fs::read(&output) {
                Ok(bytes) => Response::ok("application/octet-stream", bytes),
                Err(err) => Response {
                    status: 500,
                    content_type: "text/plain",
                    body: format!("{}: {err}\n", output.display()).into(),
                },
            },
            "/seconds" => seconds(&state, request),
            "/records" => match live::steer::records_answer(request, Some(&output)) {
                Ok(bytes) => Response::ok("application/octet-stream", bytes),
                Err(why) => Response::bad_request(&why),
            },
            "/metrics" => match lock(&state.steer).as_mut().map(|feed| feed.get("/metrics")) {
                Some(Ok(body)) => Response::ok(live::PROMETHEUS_CONTENT_TYPE, body),
                _ => not_yet(),
            },
            "/stop" => {
                let path = format!("/stop?{}", request.query.as_deref().unwrap_or(""));
                let told = lock(&state.steer).as_mut().map(|feed| feed.get(&path));
                if !matches!(told, Some(Ok(_))) {
                    terminate(state.attack_pid.load(Ordering::Relaxed));
                }
                Response::ok("text/plain", "stopping\n")
            }
            "/bye" => {
                state.bye.store(true, Ordering::Relaxed);
                Response::ok("text/plain", "bye\n")
            }
            path => Response::not_found(path),
        }
    })
}

/// The attack's feed answer, passed through and kept; once the attack is over, the
/// last one kept, marked finished.
fn seconds(state: &PodState, request: &Request) -> Response {
    let path = format!("/seconds?{}", request.query.as_deref().unwrap_or(""));
    let from: u64 = (request.param("from"))
        .and_then(|from| from.parse().ok())
        .unwrap_or(0);
    let running = state.attack_pid.load(Ordering::Relaxed) != 0;
    let fresh = running
        .then(|| lock(&state.steer).as_mut().map(|feed| feed.get(&path)))
        .flatten();
    let mut last = lock(&state.last_report);
    match fresh {
        Some(Ok(body)) => {
            if let Ok(report) = serde_json::from_slice::<ShardReport>(&body) {
                *last = Some(report);
            }
            Response::ok("application/json", body)
        }
        _ if running => not_yet(),
        _ => match last.as_mut() {
            Some(report) => {
                report.state = ShardState::Finished;
                report.records_complete = true;
                report.seconds.retain(|second| second.second >= from);
                Response::ok(
                    "application/json",
                    serde_json::to_vec(report).unwrap_or_default(),
                )
            }
            None => not_yet(),
        },
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A loopback port free now, for the attack's feed (nothing else binds in the pod).
fn free_loopback_address() -> anyhow::Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .context("kube shard: a loopback port for the attack's steering feed")?;
    Ok(listener.local_addr()?.to_string())
}

fn not_yet() -> Response {
    Response {
        status: 503,
        content_type: "text/plain",
        body: "the attack is still running\n".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// -serve, -port-per-index, JOB_COMPLETION_INDEX, and the address or the error.
    type PortRow<'a> = (&'a str, bool, Option<&'a str>, Result<&'a str, &'a str>);

    #[test]
    fn the_port_follows_the_index_when_asked() {
        let rows: [PortRow<'_>; 7] = [
            ("0.0.0.0:8099", false, None, Ok("0.0.0.0:8099")),
            ("0.0.0.0:8099", false, Some("3"), Ok("0.0.0.0:8099")),
            ("0.0.0.0:8099", true, Some("0"), Ok("0.0.0.0:8099")),
            ("0.0.0.0:8099", true, Some("3"), Ok("0.0.0.0:8102")),
            (
                "0.0.0.0:8099",
                true,
                None,
                Err("needs JOB_COMPLETION_INDEX"),
            ),
            (
                "0.0.0.0:8099",
                true,
                Some("x"),
                Err("JOB_COMPLETION_INDEX \"x\""),
            ),
            (
                "0.0.0.0:65535",
                true,
                Some("1"),
                Err("-serve 0.0.0.0:65535 plus index 1"),
            ),
        ];
        for (serve, per_index, index, want) in rows {
            let got = serve_address(serve, per_index, index).map_err(|e| e.to_string());
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{serve} {index:?}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{got} lacks {want}"),
                (got, want) => panic!("{serve} {index:?}: {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn output_is_found_in_every_spelling() {
        let rows: [(&[&str], Option<&str>); 5] = [
            (
                &["-rate", "10", "-output", "/tmp/a.llr"],
                Some("/tmp/a.llr"),
            ),
            (&["--output=/tmp/b.llr"], Some("/tmp/b.llr")),
            (&["-output=/tmp/c.llr", "-quiet"], Some("/tmp/c.llr")),
            (&["-rate", "10"], None),
            (&["-output"], None),
        ];
        for (flags, want) in rows {
            let flags: Vec<String> = flags.iter().map(|f| (*f).to_owned()).collect();
            assert_eq!(output_of(&flags), want.map(PathBuf::from), "{flags:?}");
        }
    }
}
