//! `loadlab kube shard`: what each pod of `loadlab kube run` runs. The attack runs as a
//! child process (the pod's share: `-shard`, `-start-at`, `-output` come in its flags);
//! a small server on `-serve` answers the coordinator through the API server's pod
//! proxy:
//!
//! - `/ready`: 200 once the attack is over and its records are written (the pod's
//!   readiness probe), else 503;
//! - `/records.llr`: the record file, once ready;
//! - `/stop`: drains a running attack (SIGTERM, as Ctrl-C does for one attack);
//! - `/bye`: the records were fetched; the pod exits.

use std::path::PathBuf;
use std::process::{Child, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use live::{Handler, Request, Response, Server};

/// How often the child and the `/bye` flag are looked at.
const POLL: Duration = Duration::from_millis(200);

/// What the pod's server knows.
#[derive(Default)]
struct ShardState {
    /// The attack's pid while it runs (0 once it ended).
    attack_pid: AtomicU32,
    /// The attack is over and its records are complete.
    ready: AtomicBool,
    /// The coordinator has the records.
    bye: AtomicBool,
}

pub fn run(serve: &str, linger: Duration, attack: &[String]) -> anyhow::Result<ExitCode> {
    let output = output_of(attack).context("kube shard: the attack flags need -output")?;
    let state = Arc::new(ShardState::default());
    let server = Server::start("-serve", serve, handler(&state, output.clone()))?;
    eprintln!(
        "loadlab kube shard: records will be on http://{}/records.llr",
        server.address()
    );
    let exe = std::env::current_exe().context("kube shard: this binary's path")?;
    let mut child = std::process::Command::new(exe)
        .arg("attack")
        .args(attack)
        .stdin(Stdio::null())
        .spawn()
        .context("kube shard: starting the attack")?;
    state.attack_pid.store(child.id(), Ordering::Relaxed);
    let status = wait(&mut child)?;
    state.attack_pid.store(0, Ordering::Relaxed);
    if !output.is_file() {
        bail!("kube shard: the attack ended ({status}) without records");
    }
    state.ready.store(true, Ordering::Relaxed);
    let until = Instant::now() + linger;
    while !state.bye.load(Ordering::Relaxed) && Instant::now() < until {
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

fn wait(child: &mut Child) -> anyhow::Result<std::process::ExitStatus> {
    loop {
        if let Some(status) = child
            .try_wait()
            .context("kube shard: waiting for the attack")?
        {
            return Ok(status);
        }
        std::thread::sleep(POLL);
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

fn handler(state: &Arc<ShardState>, output: PathBuf) -> Handler {
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
            "/stop" => {
                let pid = state.attack_pid.load(Ordering::Relaxed);
                if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
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
