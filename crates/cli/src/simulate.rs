//! `loadlab simulate`: serve an origin_simulator recipe until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use simulator::{Recipe, Simulator, SimulatorOptions, Tls};

/// Serve an origin / downstream / system-under-test simulator.
#[derive(clap::Args)]
// main.rs's variant doc comment is the `about` line, so the longer text goes in after_help.
#[command(after_help = "\
Reads a BBC origin_simulator recipe (one JSON object, or an array with one object per route) \
and serves it over HTTP/1.1 and HTTP/2 until SIGINT or SIGTERM: in cleartext, HTTP/1.1 and h2c \
with prior knowledge share the port; with -tls, ALPN picks h2 or http/1.1. Recipes can be replaced while running: \
POST one to /_admin/add_recipe. Prometheus metrics are at /metrics. loadlab's extensions \
(latency distributions, weighted status mixes, failure modes, capacity models) are described \
in docs/SIMULATOR.md.

Safety: the admin API (/_admin) answers loopback clients only, unless -admin-token is set; then \
every /_admin request from anywhere must send `authorization: Bearer TOKEN`. Recipes posted \
to /_admin/add_recipe may not name a body_file, unless -files DIR is given (then only files \
inside DIR). The recipe file given here may name any file, relative to its own directory. \
Bodies are capped (-max-body-size each, -max-recipe-memory in all). Binding beyond loopback \
(-addr 0.0.0.0:8080) prints a warning: anyone who can reach the port can use the simulator.

TLS: -tls generates a self-signed certificate for localhost, 127.0.0.1 and ::1 at start \
(trusted by no one): attack it with -insecure, or write it out with -tls-cert-out=PATH and \
attack with -root-certs=PATH. -tls-cert and -tls-key serve your own PEM files instead.

Examples:
  loadlab simulate examples/recipes/stage_100ms.json
  loadlab simulate -addr 127.0.0.1:9000 examples/recipes/flaky_downstream.json
  loadlab simulate -check examples/recipes/capacity_model.json
  loadlab simulate            # no recipe yet: every path answers 406 until one is posted
  loadlab simulate -tls -tls-cert-out=sim.pem examples/recipes/failure_modes.json
  loadlab simulate -max-streams=1 examples/recipes/stage_100ms.json
  curl --data-binary @recipe.json http://127.0.0.1:8080/_admin/add_recipe
  curl http://127.0.0.1:8080/_admin/routes_status
  curl http://127.0.0.1:8080/metrics
  curl --http2-prior-knowledge http://127.0.0.1:8080/     # h2c
  curl --cacert sim.pem https://localhost:8080/          # with -tls -tls-cert-out=sim.pem")]
pub struct SimulateArgs {
    /// Recipe file (origin_simulator JSON, with loadlab's extensions).
    #[arg(value_name = "RECIPE.json")]
    recipe: Option<PathBuf>,

    /// Address to listen on. Loopback by default; `:9000` means 127.0.0.1:9000.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8080", value_parser = crate::flags::parse_host_port)]
    addr: SocketAddr,

    /// Server threads, each with its own listener [default: one per core].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,

    /// Seed the random draws (latencies, status mixes, bodies) for a repeatable run.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,

    /// Check the recipe (including body files and origins) and exit without serving.
    #[arg(long)]
    check: bool,

    /// Require `authorization: Bearer TOKEN` on every /_admin request, from any peer
    /// [default: no token; /_admin answers loopback clients only].
    #[arg(long, value_name = "TOKEN")]
    admin_token: Option<String>,

    /// Directory whose files recipes posted to /_admin/add_recipe may serve as body_file
    /// [default: posted recipes may not name files].
    #[arg(long, value_name = "DIR")]
    files: Option<PathBuf>,

    /// Largest body one route (or status-mix entry) may hold.
    #[arg(long, value_name = "SIZE", default_value = "64mb", value_parser = parse_size_flag)]
    max_body_size: u64,

    /// Largest total of bodies held by all routes in force.
    #[arg(long, value_name = "SIZE", default_value = "512mb", value_parser = parse_size_flag)]
    max_recipe_memory: u64,

    /// Serve TLS only, with ALPN h2 and http/1.1, under a self-signed certificate
    /// generated at start for localhost, 127.0.0.1 and ::1 [default: cleartext
    /// HTTP/1.1 and h2c].
    #[arg(long)]
    tls: bool,

    /// Serve TLS with this certificate chain (PEM, leaf first) instead of a generated
    /// one; needs -tls-key.
    #[arg(long, value_name = "FILE")]
    tls_cert: Option<PathBuf>,

    /// The private key (PEM) of -tls-cert.
    #[arg(long, value_name = "FILE")]
    tls_key: Option<PathBuf>,

    /// Write the served certificate (PEM) to FILE, for `attack -root-certs=FILE`.
    #[arg(long, value_name = "FILE")]
    tls_cert_out: Option<PathBuf>,

    /// HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS per connection (1 tests a client
    /// against the strictest server).
    #[arg(long, value_name = "N", default_value_t = simulator::DEFAULT_MAX_CONCURRENT_STREAMS,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(i32::MAX)))]
    max_streams: u32,
}

fn parse_size_flag(text: &str) -> Result<u64, String> {
    units::parse_size(text).map_err(|e| e.to_string())
}

pub fn run(args: SimulateArgs) -> anyhow::Result<ExitCode> {
    let options = options(&args)?;
    let SimulateArgs {
        recipe: path,
        check,
        tls_cert_out,
        ..
    } = args;
    let recipe = match &path {
        Some(path) => simulator::parse_recipe_file(path)?,
        None if check => anyhow::bail!("simulate -check needs a RECIPE.json"),
        None => Recipe::default(),
    };
    if check {
        simulator::check_recipe(&recipe, &options)?;
        let routes = recipe.routes().count();
        eprintln!(
            "loadlab simulate: {} is valid ({routes} routes)",
            display(&path)
        );
        return Ok(ExitCode::SUCCESS);
    }
    // Installed before the server starts, so an early Ctrl-C still stops it cleanly.
    let mut signals = Signals::new([SIGINT, SIGTERM]).context("cannot install signal handlers")?;
    let threads = options.threads;
    let exposed = !options.addr.ip().to_canonical().is_loopback();
    let token = options.admin_token.is_some();
    let served = Served {
        streams: options.max_concurrent_streams,
        self_signed: options.tls == Some(Tls::SelfSigned),
        cert_out: tls_cert_out.clone(),
    };
    let sim = Simulator::start(options, &recipe)?;
    if let (Some(out), Some(pem)) = (&tls_cert_out, sim.certificate_pem()) {
        std::fs::write(out, pem)
            .with_context(|| format!("cannot write the certificate to {}", out.display()))?;
    }
    announce(&sim, &recipe, &path, threads);
    announce_protocols(&sim, &served);
    if exposed {
        warn_exposed(sim.local_addr(), token);
    }
    let signal = signals.forever().next();
    sim.stop();
    let how = signal
        .map(|s| format!(" on signal {s}"))
        .unwrap_or_default();
    eprintln!("loadlab simulate: stopped{how}");
    Ok(ExitCode::SUCCESS)
}

fn options(args: &SimulateArgs) -> anyhow::Result<SimulatorOptions> {
    let mut options = SimulatorOptions::new(args.addr);
    options.tls = tls(args)?;
    options.max_concurrent_streams = args.max_streams;
    if let Some(threads) = args.threads {
        options.threads = usize::from(threads);
    }
    options.seed = args.seed;
    options.admin_token.clone_from(&args.admin_token);
    options.files_dir.clone_from(&args.files);
    options.max_body_bytes = args.max_body_size;
    options.max_recipe_memory_bytes = args.max_recipe_memory;
    Ok(options)
}

/// The TLS flags, checked together: a certificate needs its key and the other way
/// round, and -tls-cert-out needs something to write.
fn tls(args: &SimulateArgs) -> anyhow::Result<Option<Tls>> {
    match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Ok(Some(Tls::PemFiles {
            cert: cert.clone(),
            key: key.clone(),
        })),
        (Some(_), None) => {
            anyhow::bail!("simulate -tls-cert needs -tls-key (the certificate's private key)")
        }
        (None, Some(_)) => {
            anyhow::bail!("simulate -tls-key needs -tls-cert (the certificate of that key)")
        }
        (None, None) if args.tls => Ok(Some(Tls::SelfSigned)),
        (None, None) if args.tls_cert_out.is_some() => {
            anyhow::bail!(
                "simulate -tls-cert-out needs -tls (or -tls-cert and -tls-key): there is no certificate in cleartext"
            )
        }
        (None, None) => Ok(None),
    }
}

/// Said loudly: a simulator bound beyond loopback serves anyone who can reach the port.
fn warn_exposed(addr: SocketAddr, token: bool) {
    let admin = if token {
        "the admin API needs the -admin-token from every client"
    } else {
        "the admin API answers loopback clients only (set -admin-token to allow others)"
    };
    eprintln!("loadlab simulate: WARNING: listening on {addr}, beyond loopback:");
    eprintln!("  anyone who can reach this port can load it and read its answers;");
    eprintln!("  {admin}.");
}

/// What `announce_protocols` tells about the options, once they went to the simulator.
struct Served {
    streams: u32,
    self_signed: bool,
    cert_out: Option<PathBuf>,
}

/// Which protocols are served, and with TLS how a client comes to trust the certificate.
fn announce_protocols(sim: &Simulator, served: &Served) {
    let streams = served.streams;
    let cert_out = served.cert_out.as_deref();
    if sim.certificate_pem().is_none() {
        eprintln!(
            "  http/2:  h2c with prior knowledge on the same port (attack -h2c); {streams} concurrent streams per connection"
        );
        return;
    }
    eprintln!("  http/2:  h2 or http/1.1 by ALPN; {streams} concurrent streams per connection");
    let trust = match cert_out {
        Some(path) => format!(
            "written to {0}: attack with -root-certs={0} (or -insecure)",
            path.display()
        ),
        None => "attack with -insecure, or write it with -tls-cert-out=PATH and attack with -root-certs=PATH".to_owned(),
    };
    if served.self_signed {
        eprintln!(
            "  tls:     self-signed certificate for localhost, 127.0.0.1 and ::1, trusted by no one;"
        );
        eprintln!("           {trust}");
    } else if let Some(path) = cert_out {
        eprintln!("  tls:     certificate written to {}", path.display());
    }
}

fn display(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map_or_else(|| "no recipe".to_owned(), |p| p.display().to_string())
}

fn announce(sim: &Simulator, recipe: &Recipe, path: &Option<PathBuf>, threads: usize) {
    let addr = sim.local_addr();
    let routes: Vec<&str> = recipe.routes().collect();
    let what = if routes.is_empty() {
        "no recipe yet (every path answers 406 until one is posted)".to_owned()
    } else {
        format!("{} (routes: {})", display(path), routes.join(" "))
    };
    let plural = if threads == 1 { "" } else { "s" };
    let scheme = if sim.certificate_pem().is_some() {
        "https"
    } else {
        "http"
    };
    eprintln!(
        "loadlab simulate: serving {what} on {scheme}://{addr} with {threads} thread{plural}"
    );
    eprintln!(
        "  admin:   {scheme}://{addr}/_admin/status  (add_recipe, routes_status, current_count, ...)"
    );
    eprintln!("  metrics: {scheme}://{addr}/metrics");
    for (route, rps) in recipe.capacity_rps() {
        eprintln!(
            "  {route}: capacity model, ground truth {rps:.1} req/s (workers / mean service time)"
        );
    }
}
