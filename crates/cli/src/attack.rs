//! `loadlab attack`: flags -> [`engine::AttackConfig`] -> [`engine::run_attack`].

use std::fs::File;
use std::io::{BufReader, IsTerminal, Read, Write};
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::ArgAction;
use engine::{AttackConfig, StopHandle, TargetStream, Targets, TlsOptions};
use units::{Rate, parse_duration, parse_size};
use workload::{Header, HttpTargetReader, JsonTargetReader, Pacing, Plan, Schedule};

use crate::signals;

/// Send HTTP load and stream one record per request (vegeta-compatible flags).
///
/// Targets come from -targets or stdin, in vegeta's http format (`GET http://...`
/// lines, optional headers and `@body` file) or json format. Records go to stdout
/// or -output; pipe them into `loadlab report`.
///
/// Open model (default): requests leave on a clock at -rate; latency counts from
/// the intended send time, and if the generator falls behind, the lag is recorded
/// and reported rather than hidden. Closed model: -rate=0 with -max-workers, or
/// -concurrency N: N users, each sending its next request when the last completes.
///
/// Examples:
///
///   echo "GET http://127.0.0.1:8080/" | loadlab attack -rate=500 -duration=10s | loadlab report
///
///   loadlab attack -targets=targets.txt -rate=2000/1s -duration=1m -output=run.llr
///
///   echo "GET http://127.0.0.1:8080/" | loadlab attack -concurrency=100 -duration=30s > closed.llr
///
/// Ctrl-C (or SIGTERM) stops sending, waits for requests in flight up to -timeout
/// and writes what it has; a second Ctrl-C exits at once.
#[derive(clap::Args, Debug)]
pub struct AttackArgs {
    /// Requests per time unit: N or N/duration (100, 100/1s, 5/m); 0 = closed model
    #[arg(long, default_value = "50/1s", value_name = "RATE")]
    rate: String,
    /// How long to send; 0 = until interrupted (or until -max-requests)
    #[arg(long, default_value = "0", value_name = "DURATION")]
    duration: String,
    /// Stop after this many requests
    #[arg(long, value_name = "N")]
    max_requests: Option<u64>,
    /// Closed model: this many users, each sending when its last request completes
    #[arg(long, value_name = "N")]
    concurrency: Option<u64>,
    /// Connections opened before the attack starts (vegeta's initial workers)
    #[arg(long, default_value_t = 10, value_name = "N")]
    workers: u64,
    /// Requests in flight at most (open model); the closed model's users with -rate=0
    #[arg(long, value_name = "N")]
    max_workers: Option<u64>,
    /// Open connections per target host at most
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    connections: u64,
    /// Event-loop threads (default: the CPUs this process may run on)
    #[arg(long, alias = "cpus", value_name = "N")]
    threads: Option<usize>,
    /// Per-request timeout, connect included
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    timeout: String,
    /// Reuse connections (HTTP keep-alive)
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    keepalive: bool,
    /// Redirects to follow; -1 follows none and counts 3xx as success
    #[arg(
        long,
        default_value_t = 10,
        allow_negative_numbers = true,
        value_name = "N"
    )]
    redirects: i32,
    /// Request header `Key: Value`, for every target (repeatable)
    #[arg(long, value_name = "HEADER")]
    header: Vec<String>,
    /// Request body file for targets without their own
    #[arg(long, value_name = "FILE")]
    body: Option<PathBuf>,
    /// Targets file (default: stdin)
    #[arg(long, value_name = "FILE")]
    targets: Option<PathBuf>,
    /// Targets format: http or json
    #[arg(long, default_value = "http", value_parser = ["http", "json"])]
    format: String,
    /// Read targets as they are needed (for endless generated streams)
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    lazy: bool,
    /// Read at most this many response body bytes (e.g. 64kb); -1 = no limit
    #[arg(
        long,
        default_value = "-1",
        allow_hyphen_values = true,
        value_name = "SIZE"
    )]
    max_body: String,
    /// Attack name, carried in every record
    #[arg(long, default_value = "")]
    name: String,
    /// Records output file (default: stdout)
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Skip TLS certificate verification
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    insecure: bool,
    /// Trusted root certificate files (PEM, comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "FILES")]
    root_certs: Vec<PathBuf>,
    /// TLS client certificate (PEM)
    #[arg(long, value_name = "FILE")]
    cert: Option<PathBuf>,
    /// TLS client key (PEM)
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// Local IP address to send from
    #[arg(long, value_name = "IP")]
    laddr: Option<IpAddr>,
    /// Connect to this Unix socket instead of the targets' hosts
    #[arg(long, value_name = "PATH")]
    unix_socket: Option<PathBuf>,
}

pub fn run(args: &AttackArgs) -> anyhow::Result<ExitCode> {
    let config = build_config(args)?;
    let stop = StopHandle::new();
    signals::stop_on_signals(&stop)?;
    let out: Box<dyn Write + Send> = match &args.output {
        Some(path) => {
            Box::new(File::create(path).with_context(|| format!("-output {}", path.display()))?)
        }
        None => {
            let stdout = std::io::stdout();
            if stdout.is_terminal() {
                eprintln!(
                    "loadlab: writing binary records to a terminal; pipe them into `loadlab report` or use -output"
                );
            }
            Box::new(stdout)
        }
    };
    let (_, outcome) =
        engine::run_attack(&config, out, &stop).map_err(|err| match err.io_error() {
            Some(io) if io.kind() == std::io::ErrorKind::BrokenPipe => {
                anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            }
            _ => anyhow::Error::new(err),
        })?;
    if outcome.unsent > 0 {
        eprintln!(
            "loadlab: the generator fell behind: {} requests were due but never sent; `loadlab report` shows the lag",
            outcome.unsent
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn build_config(args: &AttackArgs) -> anyhow::Result<AttackConfig> {
    let rate = Rate::parse(&args.rate).context("-rate")?;
    let duration = parse_duration(&args.duration).context("-duration")?;
    let timeout = parse_duration(&args.timeout).context("-timeout")?;
    if timeout.is_zero() {
        bail!("-timeout: must be longer than zero");
    }
    let max_body = match args.max_body.trim() {
        "-1" => None,
        text => Some(parse_size(text).context("-max-body")?),
    };
    if args.cert.is_some() != args.key.is_some() {
        bail!("-cert and -key go together");
    }
    let pacing = pacing(args, &rate)?;
    let plan = Plan {
        pacing,
        duration_ns: (!duration.is_zero()).then_some(duration.as_nanos() as u64),
        max_requests: args.max_requests,
    };
    if args.max_requests == Some(0) {
        bail!("-max-requests: must be at least 1");
    }
    Ok(AttackConfig {
        name: args.name.clone(),
        targets: read_targets(args)?,
        plan,
        timeout,
        keepalive: args.keepalive,
        redirects: args.redirects,
        max_in_flight: args.max_workers.unwrap_or(10_000).max(1),
        initial_connections: args.workers,
        connections_per_host: args.connections,
        threads: args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)),
        max_body,
        tls: TlsOptions {
            insecure: args.insecure,
            root_certs: args.root_certs.clone(),
            client_cert: args.cert.clone(),
            client_key: args.key.clone(),
        },
        local_addr: args.laddr,
        unix_socket: args.unix_socket.clone(),
    })
}

fn pacing(args: &AttackArgs, rate: &Rate) -> anyhow::Result<Pacing> {
    match (args.concurrency, rate.is_unpaced()) {
        (Some(0), _) => bail!("-concurrency: must be at least 1"),
        (Some(users), true) => Ok(Pacing::Closed { users }),
        (Some(_), false) if args.rate != "50/1s" => bail!(
            "-concurrency runs the closed model; it cannot be combined with -rate={}",
            args.rate
        ),
        (Some(users), false) => Ok(Pacing::Closed { users }),
        (None, true) => match args.max_workers {
            Some(0) | None => bail!(
                "-rate=0 runs the closed model and needs a user count: give -max-workers=N or -concurrency=N"
            ),
            Some(users) => Ok(Pacing::Closed { users }),
        },
        (None, false) => Ok(Pacing::Open(Schedule::constant(rate.per_sec()))),
    }
}

fn read_targets(args: &AttackArgs) -> anyhow::Result<Targets> {
    let headers = args
        .header
        .iter()
        .map(|text| Header::parse(text).map_err(|reason| anyhow::anyhow!("-header: {reason}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let body = match &args.body {
        Some(path) => std::fs::read(path).with_context(|| format!("-body {}", path.display()))?,
        None => Vec::new(),
    };
    let (input, name): (Box<dyn Read + Send>, String) = match &args.targets {
        Some(path) => (
            Box::new(File::open(path).with_context(|| format!("-targets {}", path.display()))?),
            path.display().to_string(),
        ),
        None => (Box::new(std::io::stdin()), "stdin".to_owned()),
    };
    let input = BufReader::new(input);
    let targets: engine::TargetIter = match args.format.as_str() {
        "json" => Box::new(JsonTargetReader::new(input, &name, &headers, &body)),
        _ => Box::new(HttpTargetReader::new(
            input,
            &name,
            &headers,
            &body,
            &read_body_file,
        )),
    };
    if args.lazy {
        return Ok(Targets::Stream(TargetStream::new(targets)));
    }
    let list = targets.collect::<Result<Vec<_>, _>>()?;
    if list.is_empty() {
        bail!("{name}: no targets");
    }
    Ok(Targets::List(list))
}

/// `@path` body lines are read relative to the working directory, as in vegeta.
fn read_body_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    std::fs::read(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: AttackArgs,
    }

    fn config_error(flags: &[&str]) -> String {
        let args = Wrapper::try_parse_from(std::iter::once("attack").chain(flags.iter().copied()))
            .unwrap()
            .args;
        build_config(&args).unwrap_err().to_string()
    }

    #[test]
    fn rejects_bad_flags_naming_them() {
        let rows: &[(&[&str], &str)] = &[
            (&["--rate=abc"], "-rate"),
            (&["--rate=-5"], "-rate"),
            (
                &["--rate=0"],
                "-rate=0 runs the closed model and needs a user count",
            ),
            (&["--duration=10"], "-duration"),
            (&["--duration=-1s"], "-duration"),
            (&["--timeout=0s"], "-timeout: must be longer than zero"),
            (&["--max-body=lots"], "-max-body"),
            (&["--cert=a.pem"], "-cert and -key go together"),
            (&["--concurrency=0"], "-concurrency: must be at least 1"),
            (
                &["--concurrency=5", "--rate=100"],
                "cannot be combined with -rate=100",
            ),
            (&["--max-requests=0"], "-max-requests"),
        ];
        for (flags, want) in rows {
            let err = config_error(flags);
            assert!(err.contains(want), "{flags:?}: {err}");
        }
    }
}
