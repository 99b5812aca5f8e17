//! `loadlab attack`: flags (or a scenario file) -> [`engine::RunConfig`] -> [`engine::run`].

use std::fs::File;
use std::io::IsTerminal;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::ArgAction;
use engine::{AttackConfig, RunConfig, StopHandle};
use units::GoDuration;
use workload::{AttackFields, Origin, RunFields, ScenarioFile, Target, TextOrNumber, defaults};

use crate::ci::CiArgs;
use crate::dashboard::Output;
use crate::monitor::AttachedMonitor;
use crate::replay_args::ReplayArgs;
use crate::request_args::{RequestArgs, with_default};
use crate::signals;
use crate::steer_shard;
use crate::watch::{WatchArgs, Watchers};

/// What `attack --help` says after the options (the examples are printed last, as
/// written: see `help.rs`).
const AFTER_HELP: &str = "\
Placeholders: targets may hold {{rand.lower 50}}, {{rand.int 1 100}}, {{uuid}}, {{seq}},
{{pick a b c}} and {{csv.COLUMN}} (rows of -data) in the path, query, headers and body;
-seed makes them repeat exactly.

User flows (log in, take the token from the answer, list, open an item, each answer
checked, cookies kept per user) are scenarios with [[scenario.step]] tables in a
-scenarios file: see docs/FLOWS.md.

gRPC: a `GRPC HOST:PORT pkg.Service/Method` target calls a method with -proto FILE
(or the server's reflection), its message a JSON line; a client or bidirectional
stream's messages are its JSON lines, `every 20ms` paces them and `repeat 50` sends
them 50 times over (docs/GRPC.md). chat.txt in the examples:
  GRPC 127.0.0.1:50051 routeguide.RouteGuide/RouteChat
  every 20ms
  repeat 50
  {\"location\": {\"latitude\": 1, \"longitude\": 2}, \"message\": \"hi\"}

HTTP/2: https targets are offered h2 in ALPN, as vegeta does (-http2=false keeps to
HTTP/1.1); -h2c speaks it to http targets without asking. Streams share one connection
per host until it is at the server's SETTINGS_MAX_CONCURRENT_STREAMS (or -max-streams);
then another opens, up to -connections.

vegeta flags loadlab lacks (-chunked, -connect-to, -dns-ttl, -resolvers,
-session-tickets, -max-connections, -proxy-header) are refused by name with what to use
instead; -chunked=false and -dns-ttl=0 ask for what loadlab does and are accepted.

Watching: a live view on stderr (on a terminal, redrawn lines where p pauses the view
and q stops the run; otherwise a progress line every 5 s; -quiet for none).
-prometheus-addr serves the run's metrics (vegeta's names, plus loadlab_*);
-prometheus-remote-write pushes them; -otlp-endpoint pushes them as OTLP metrics to an
OpenTelemetry Collector. -dashboard serves the run page `loadlab plot`
draws, redrawn every second (a taken port is a warning; -dashboard-linger keeps the
final page up).

Ctrl-C (or SIGTERM) stops sending, waits for requests in flight up to -timeout and
writes what it has; a second Ctrl-C exits at once.

Exit status: 0 when the run completed or was interrupted (whatever the server
answered); 1 on bad input or an I/O error; 2 on a usage error; when a -stop-when rule
stopped the run: 3 errors, 4 latency (p50..max, mean), 5 throughput, 6 lag, 7 streams
(connections_open, messages_*_per_sec, message_p50..message_max).

Examples:
  echo \"GET http://127.0.0.1:8080/\" | loadlab attack -rate=500 -duration=10s | loadlab report
  loadlab attack -targets=targets.txt -schedule=\"line(1, 50000, 10m) const(50000, 5m)\" -output=ramp.llr
  loadlab attack -targets=targets.txt -schedule=\"step(8, 4096, x2, 50s)\" -stop-when=\"errors > 50% for 5s\"
  echo \"GET http://127.0.0.1:8080/search?q={{rand.lower 50}}\" | loadlab attack -rate=1000 -duration=5m > search.llr
  echo \"GET http://127.0.0.1:8080/\" | loadlab attack -concurrency=\"line(1, 100, 1m) const(100, 5m)\" > closed.llr
  loadlab attack -scenarios=examples/scenarios/shop_flow.toml -output=shop.llr   # a user flow
  loadlab attack -replay=access.log.gz -base-url=http://127.0.0.1:8080 -speed=2 -output=x2.llr
  loadlab attack -replay=access.log -replay-path='^/search' -from=+5m -to=+20m -header='Authorization: Bearer T' -base-url=http://127.0.0.1:8080 > r.llr
  loadlab attack -targets=synthetic.txt -replay-shape=access.log.gz > shape.llr
  loadlab attack -targets=t.txt -rate=5000 -duration=1m -monitor process=nginx -monitor postgres=postgres://u:pw@127.0.0.1/db > run.llr
  for i in 0 1 2 3; do loadlab attack -targets=t.txt -rate=4000 -duration=1m -shard=$i/4 -start-at=+10s -output=s$i.llr & done; wait; loadlab report s*.llr
  loadlab attack -targets=t.txt -rate=20000 -duration=1m -h2c -max-streams=100 > h2c.llr
  loadlab attack -targets=chat.txt -proto=route_guide.proto -rate=10 -duration=10s | loadlab report
  loadlab attack -targets=t.txt -rate=1000 -duration=10m -prometheus-addr=127.0.0.1:8880 > run.llr
  loadlab attack -targets=t.txt -rate=1000 -duration=10m -run-id=ramp-1 -prometheus-remote-write=http://127.0.0.1:9090/api/v1/write > run.llr
  loadlab attack -targets=t.txt -rate=200 -duration=1m -dashboard=127.0.0.1:8088 > run.llr
  loadlab attack -targets=t.txt -rate=200 -duration=1m -stop-when='p99 > 200ms for 5s' -junit=attack.xml > run.llr";

/// Send HTTP load and stream one record per request (vegeta-compatible flags).
///
/// Targets come from -targets or stdin: vegeta's http format (`GET http://...` lines,
/// optional headers and an `@body` file) or json format, or Yandex.Tank's ammo (-format
/// uri, uripost, phantom). Records go to stdout or -output; pipe them into `loadlab
/// report`. -replay LOG sends an access log's requests at their logged times instead
/// (docs/REPLAY.md).
///
/// Open model (default): requests leave on a clock, at -rate or along a -schedule;
/// latency counts from the intended send time, and a generator that falls behind is
/// recorded and reported, never hidden. Closed model: -concurrency N users, each sending
/// its next request -think-time after its last answer.
#[derive(clap::Args, Debug)]
#[command(after_long_help = AFTER_HELP)]
pub struct AttackArgs {
    #[arg(help_heading = "Load model", long, value_name = "RATE", help = with_default(
        "Requests per time unit: N or N/duration (100, 100/1s, 5/m); 0 (or infinity) = closed model",
        defaults::RATE,
    ))]
    rate: Option<String>,
    /// Open-model schedule, e.g. "line(1, 1000, 1m) const(1000, 5m)", "step(8, 4096, x2, 50s)", "8,16,32@50s"
    #[arg(help_heading = "Load model", long, value_name = "SCHEDULE")]
    schedule: Option<String>,
    /// Closed model: N users, or a schedule of user counts like "line(1, 100, 1m) const(100, 5m)"
    #[arg(help_heading = "Load model", long, value_name = "USERS")]
    concurrency: Option<String>,
    /// Closed model: how long a user waits after an answer before its next request
    #[arg(help_heading = "Load model", long, value_name = "DURATION")]
    think_time: Option<String>,
    /// How long to send [default: until interrupted, -max-requests or the schedule's end]
    #[arg(help_heading = "Load model", long, value_name = "DURATION")]
    duration: Option<String>,
    /// Stop after this many requests
    #[arg(help_heading = "Load model", long, value_name = "N")]
    max_requests: Option<u64>,
    /// Run the named scenarios of a TOML file at once, plain targets or user flows (see docs/FLOWS.md and examples/scenarios)
    #[arg(help_heading = "Flows", long, value_name = "FILE")]
    scenarios: Option<PathBuf>,
    /// Stop the run when a rule holds, e.g. "errors > 50% for 5s", "p99 > 2s for 10s", "connections_open < 900 for 5s" (repeatable)
    #[arg(help_heading = "Load model", long, value_name = "RULE")]
    stop_when: Vec<String>,
    /// Sample the system under test beside the records, on the run's clock: host,
    /// process=NAME, pid=N, prom=URL, postgres=URL, agent=HOST:PORT, log=PATH,
    /// logcmd=COMMAND (repeatable; see `loadlab monitor --help`). `report` then says what
    /// ran out first (docs/DIAGNOSIS.md)
    #[arg(help_heading = "Monitoring", long, value_name = "SPEC")]
    monitor: Vec<String>,
    #[arg(help_heading = "Monitoring", long, value_name = "DURATION", help = with_default(
        "How often -monitor samples",
        GoDuration(defaults::MONITOR_INTERVAL),
    ))]
    monitor_interval: Option<String>,
    /// Seed for template placeholders and trace ids: the same seed sends the same
    /// requests
    #[arg(help_heading = "Targets", long, value_name = "N")]
    seed: Option<u64>,
    /// Send a W3C traceparent on sampled requests (ids from -seed), and keep the
    /// slowest and failed traced requests' ids in the record for `report -trace-link`
    /// (docs/TRACES.md); a traceparent a target sets itself is sent as written
    #[arg(help_heading = "Monitoring", long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    trace: Option<bool>,
    /// The share of requests -trace sends a traceparent on, above 0 and at most 1
    /// [default: 1]
    #[arg(help_heading = "Monitoring", long, value_name = "SHARE")]
    trace_sample: Option<f64>,
    /// A W3C tracestate sent beside each traceparent -trace writes, checked first
    /// (key=value list-members, at most 32), e.g. -trace-state='vendor=abc,tenant@sys=1';
    /// a tracestate a target sets itself is sent as written
    #[arg(help_heading = "Monitoring", long, value_name = "LIST")]
    trace_state: Option<String>,
    /// CSV file (with a header row) for {{csv.COLUMN}} placeholders
    #[arg(help_heading = "Targets", long, value_name = "FILE")]
    data: Option<String>,
    /// Which -data row each request uses: sequential or random [default: sequential]
    #[arg(help_heading = "Targets", long, value_name = "ORDER")]
    data_order: Option<String>,
    #[arg(help_heading = "Load model", long, value_name = "N", help = with_default(
        "Connections opened before the attack starts (vegeta's initial workers)",
        defaults::INITIAL_CONNECTIONS,
    ))]
    workers: Option<u64>,
    #[arg(help_heading = "Protocols", long, value_name = "N", help = with_default(
        "Open connections per target host at most",
        defaults::CONNECTIONS_PER_HOST,
    ))]
    connections: Option<u64>,
    #[arg(help_heading = "Load model", long, alias = "cpus", value_name = "N", help = format!(
        "Event-loop threads, from 1 to {} x the CPUs this process may run on \
         [default: the CPUs this process may run on]",
        defaults::MAX_THREADS_PER_CPU,
    ))]
    threads: Option<usize>,
    #[arg(help_heading = "Load model", long, value_name = "DURATION", help = format!(
        "How late a worker may wake to send the requests due and read the answers \
         arrived, so that one wake-up serves several: requests leave at most this late \
         (the send lag says by how much) and answers are read at most this plus one \
         request interval late, timed by their arrival all the same (the kernel's \
         receive stamp); a worker that is behind never waits on it; the session loop of \
         ws/sse steps drives the sessions due within it in one wake-up the same way, \
         their messages and events timed by arrival too; \
         0 wakes exactly for each, at a higher CPU cost; at most {} \
         [default: {}]",
        GoDuration(defaults::MAX_PRECISION),
        GoDuration(defaults::PRECISION),
    ))]
    precision: Option<String>,
    #[command(flatten)]
    request: RequestArgs,
    /// Request body file for targets without their own
    #[arg(help_heading = "Targets", long, value_name = "FILE")]
    body: Option<String>,
    #[arg(help_heading = "Targets", long, value_name = "FILE", help = format!(
        "Targets file (default: stdin); a line (and a target's request line and headers) \
         may take {} MiB at most: bodies belong in @file lines or -body",
        workload::MAX_TARGET_BYTES >> 20,
    ))]
    targets: Option<String>,
    /// Targets format: http or json (vegeta's), or Yandex.Tank's ammo: uri, uripost or
    /// phantom (requests go to the base URL when one is set, else to http:// and their
    /// Host header; ammo tags are read and dropped) [default: http]
    #[arg(help_heading = "Targets", long, value_parser = ["http", "json", "uri", "uripost", "phantom"])]
    format: Option<String>,
    /// Read targets as they are needed (for endless generated streams)
    #[arg(help_heading = "Targets", long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    lazy: Option<bool>,
    /// Attack name, carried in every record
    #[arg(help_heading = "Output", long)]
    name: Option<String>,
    /// Records output file (default: stdout)
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Skip TLS certificate verification
    #[arg(help_heading = "Protocols", long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    insecure: bool,
    /// Trusted root certificate files (PEM, comma-separated)
    #[arg(
        help_heading = "Protocols",
        long,
        value_delimiter = ',',
        value_name = "FILES"
    )]
    root_certs: Vec<PathBuf>,
    /// TLS client certificate (PEM)
    #[arg(help_heading = "Protocols", long, value_name = "FILE")]
    cert: Option<PathBuf>,
    /// TLS client key (PEM)
    #[arg(help_heading = "Protocols", long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// The name to send in TLS SNI and check the server's certificate against, in place
    /// of each target's host (a server reached by address whose certificate names another)
    #[arg(help_heading = "Protocols", long, value_name = "NAME")]
    tls_server_name: Option<String>,
    /// Offer HTTP/2 to https targets (TLS ALPN); false speaks HTTP/1.1 only
    #[arg(help_heading = "Protocols", long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    http2: bool,
    /// Speak HTTP/2 to http targets without asking (cleartext, prior knowledge)
    #[arg(help_heading = "Protocols", long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    h2c: bool,
    /// HTTP/2 streams per connection at most, at least 1 [default: the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS]
    #[arg(help_heading = "Protocols", long, value_name = "N")]
    max_streams: Option<u32>,
    /// Local IP address to send from
    #[arg(help_heading = "Protocols", long, value_name = "IP")]
    laddr: Option<IpAddr>,
    /// Connect to this Unix socket instead of the targets' hosts
    #[arg(help_heading = "Protocols", long, value_name = "PATH")]
    unix_socket: Option<PathBuf>,
    /// Send shard I of N (0-based): exactly the requests k with k mod N == I of the
    /// whole run (closed model: the users u with u mod N == I), at the whole run's
    /// times; run N processes with 0/N .. N-1/N and merge their files with `report`
    /// (see docs/DISTRIBUTED.md)
    #[arg(help_heading = "Distributed", long, value_name = "I/N")]
    shard: Option<String>,
    /// Start at this wall-clock instant (RFC 3339, e.g. 2026-11-23T22:00:00Z, or +30s
    /// from now), so shards on several machines share one time zero
    #[arg(help_heading = "Distributed", long, value_name = "TIME")]
    start_at: Option<String>,
    /// Send every request to this scheme://host:port instead of the one it names
    /// (targets, a replay's logged requests, Tank ammo)
    #[arg(help_heading = "Targets", long, value_name = "URL")]
    base_url: Option<String>,
    /// Let a coordinator (`loadlab steer`, `kube run`) steer this shard: its settled
    /// seconds are served at ADDR (HOST:PORT, :PORT for loopback) for the coordinator
    /// to merge; while it polls, the stop rules are judged on every shard's figures
    /// there, and its stop reaches this run; silent for 3 s, this run judges its own
    #[arg(help_heading = "Distributed", long, value_name = "ADDR")]
    steer: Option<String>,
    #[command(flatten)]
    watch: WatchArgs,
    #[command(flatten)]
    ci: CiArgs,
    // Last: its help heading holds for the flags after it.
    #[command(flatten)]
    replay: ReplayArgs,
}

pub fn run(args: &AttackArgs) -> anyhow::Result<ExitCode> {
    // Flags are checked before any target is read (from a file or stdin).
    let watch_flags = args.watch.check()?;
    args.ci.check()?;
    if args.replay.fields().is_none()
        && let Some(flag) = args.replay.stray_flags().first()
    {
        bail!("{flag} is for replays: it needs -replay FILE or -replay-shape FILE");
    }
    let (config, shard) = build_config(args)?;
    let settings = &config.settings;
    let mut monitor = AttachedMonitor::new(&settings.monitor, settings.monitor_interval)?;
    let config = add_attacks(args, config, shard)?;
    let stop = StopHandle::new();
    signals::stop_on_signals(&stop, "waiting for requests in flight")?;
    let (out, name): (Output, String) = match &args.output {
        Some(path) => {
            let file = File::create(path).with_context(|| format!("-output {}", path.display()))?;
            (Box::new(file), path.display().to_string())
        }
        None => {
            let stdout = std::io::stdout();
            if stdout.is_terminal() {
                eprintln!(
                    "loadlab: writing binary records to a terminal; pipe them into `loadlab report` or use -output"
                );
            }
            (Box::new(stdout), "stdout".to_owned())
        }
    };
    let watchers = Watchers::start(&args.watch, watch_flags, "loadlab attack: ");
    let (out, mut watch) = watchers.watch(&config, &stop, out, &name);
    let steered = match &args.steer {
        Some(address) => Some(steer_shard::serve(
            address,
            &config,
            args.output.as_deref(),
            &stop,
            &mut watch.observers,
        )?),
        None => None,
    };
    let started = std::time::Instant::now();
    let result = engine::run_with_observer(&config, out, &stop, &mut monitor, &mut watch.observers);
    let seconds = started.elapsed().as_secs_f64();
    if let Some(steered) = steered {
        steered.finish();
    }
    // Whatever attack has to say goes to stderr before its output closes.
    watch.finish_view(result.is_ok());
    if let Some(summary) = monitor.summary() {
        eprintln!("loadlab: monitor: {summary}");
    }
    if let Ok((_, outcome)) = &result {
        say_how_it_ended(outcome);
    }
    // The output is dropped here, so the dashboard reads the end of the run.
    let result = result.map(|(_, outcome)| outcome);
    watch.finish_page();
    watchers.finish(&stop);
    // A closed output pipe surfaces as an io::Error in the chain; main treats it as success.
    let outcome = result?;
    let suite_name = args.name.as_deref().unwrap_or("attack");
    args.ci
        .write_attack(suite_name, &config.settings.stop_rules, &outcome, seconds)?;
    Ok(match outcome.fired {
        Some(fired) => ExitCode::from(fired.rule.kind().exit_code()),
        None => ExitCode::SUCCESS,
    })
}

/// Requests left unsent and the stop rule that ended the run, if any.
fn say_how_it_ended(outcome: &engine::RunOutcome) {
    if outcome.unsent > 0 {
        let why = if outcome.capped {
            " (connections held the rate back: every one it may use was busy while requests \
             were due; at the server's latency the rate asked needs more than -max-workers \
             in flight or -connections per host allow)"
        } else {
            ""
        };
        eprintln!(
            "loadlab: the generator fell behind: {} requests were due but never sent{why}; `loadlab report` shows the lag",
            outcome.unsent
        );
    }
    if let Some(fired) = &outcome.fired {
        eprintln!("loadlab: stop rule {}", fired.describe());
    }
}

/// The run without its attacks: every run-wide flag checked, before any target is
/// read (from a file or stdin).
fn build_config(args: &AttackArgs) -> anyhow::Result<(RunConfig, workload::Shard)> {
    let shard = shard(args.shard.as_deref())?;
    let start_at_unix_ns = args
        .start_at
        .as_deref()
        .map(|text| parse_start_at(text, engine::unix_now_ns()))
        .transpose()
        .map_err(|reason| anyhow::anyhow!("-start-at: {reason}"))?;
    let mut config = RunConfig::from_fields(Vec::new(), &run_fields(args), &Origin::flags())?;
    config.settings.start_at_unix_ns = start_at_unix_ns;
    Ok((config, shard))
}

/// The attacks, from the flags or a scenario file; then the seed and the shard.
fn add_attacks(
    args: &AttackArgs,
    mut config: RunConfig,
    shard: workload::Shard,
) -> anyhow::Result<RunConfig> {
    let file_seed = match &args.scenarios {
        Some(path) => load_scenarios(path, args, &mut config)?,
        None => {
            let fields = fields_from_flags(args);
            config.attacks = vec![AttackConfig::from_fields(
                &fields,
                &Origin::flags(),
                &config.settings.tls,
            )?];
            None
        }
    };
    config.settings.seed = args
        .seed
        .or(file_seed)
        .unwrap_or_else(|| announce_seed(&config, shard));
    if config.settings.trace.is_some() {
        announce_own_traceparents(&config.attacks, config.settings.trace_state.is_some());
    }
    Ok(config.with_shard(shard))
}

/// The run-wide flags, in the same shape as a plan's `[load]` keys.
fn run_fields(args: &AttackArgs) -> RunFields {
    let paths = |paths: &[PathBuf]| paths.iter().map(|p| p.display().to_string()).collect();
    RunFields {
        threads: args.threads,
        workers: args.workers,
        connections: args.connections,
        seed: args.seed,
        trace: args.trace,
        trace_sample: args.trace_sample,
        trace_state: args.trace_state.clone(),
        precision: args.precision.clone(),
        http2: Some(args.http2),
        h2c: Some(args.h2c),
        max_streams: args.max_streams,
        insecure: Some(args.insecure),
        root_certs: Some(paths(&args.root_certs)),
        cert: args.cert.as_ref().map(|p| p.display().to_string()),
        key: args.key.as_ref().map(|p| p.display().to_string()),
        tls_server_name: args.tls_server_name.clone(),
        laddr: args.laddr,
        unix_socket: args.unix_socket.as_ref().map(|p| p.display().to_string()),
        stop_when: Some(args.stop_when.clone()),
        monitor: Some(args.monitor.clone()),
        monitor_interval: args.monitor_interval.clone(),
    }
}

/// `-shard I/N`, or the whole run.
fn shard(text: Option<&str>) -> anyhow::Result<workload::Shard> {
    let Some(text) = text else {
        return Ok(workload::Shard::WHOLE);
    };
    workload::Shard::parse(text).map_err(|reason| anyhow::anyhow!("-shard: {reason}"))
}

/// `-start-at`: an RFC 3339 instant or `+DURATION` from `now_unix_ns`, as unix ns; an
/// instant more than [`engine::START_AT_TOLERANCE`] in the past is refused.
fn parse_start_at(text: &str, now_unix_ns: u64) -> Result<u64, String> {
    let text = text.trim();
    let at_ns = if let Some(after) = text.strip_prefix('+') {
        let delay = units::parse_duration(after).map_err(|err| err.to_string())?;
        now_unix_ns.saturating_add(u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX))
    } else {
        let instant: jiff::Timestamp = text.parse().map_err(|err: jiff::Error| {
            format!("{text:?} is not an RFC 3339 time like 2026-11-23T22:00:00Z or +30s ({err})")
        })?;
        u64::try_from(instant.as_nanosecond()).map_err(|_| format!("{text:?} is before 1970"))?
    };
    let late_ns = now_unix_ns.saturating_sub(at_ns);
    if late_ns > u64::try_from(engine::START_AT_TOLERANCE.as_nanos()).unwrap_or(u64::MAX) {
        return Err(format!(
            "{text} is {} in the past (now is {}): give every shard the same future instant",
            GoDuration(std::time::Duration::from_nanos(late_ns)),
            record::format_timestamp(now_unix_ns)
        ));
    }
    Ok(at_ns)
}

/// The flags of one attack, in the same shape as a scenario-file table.
fn fields_from_flags(args: &AttackArgs) -> AttackFields {
    let replay = args.replay.fields();
    AttackFields {
        name: Some(args.name.clone().unwrap_or_default()),
        targets: None,
        // A replay reads no targets: stdin is left alone.
        targets_file: match &replay {
            Some(replay) if replay.shape_only != Some(true) => args.targets.clone(),
            _ => Some(args.targets.clone().unwrap_or_else(|| "-".to_owned())),
        },
        format: args.format.clone(),
        lazy: args.lazy,
        rate: args.rate.clone().map(TextOrNumber::Text),
        schedule: args.schedule.clone(),
        concurrency: args.concurrency.clone().map(TextOrNumber::Text),
        think_time: args.think_time.clone(),
        duration: args.duration.clone(),
        max_requests: args.max_requests,
        body_file: args.body.clone(),
        data: args.data.clone(),
        data_order: args.data_order.clone(),
        base_url: args.base_url.clone(),
        replay,
        ..args.request.fields()
    }
}

/// The attacks of a scenario file into `config`, with the attack flags given over
/// every scenario; the file's stop rules before the flags'. Returns its seed.
fn load_scenarios(
    path: &std::path::Path,
    args: &AttackArgs,
    config: &mut RunConfig,
) -> anyhow::Result<Option<u64>> {
    let flags = flags_over_scenarios(args)?;
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).with_context(|| format!("-scenarios {name}"))?;
    let file = ScenarioFile::parse_under(&text, &name, &flags)?;
    let base_dir = path.parent().unwrap_or(std::path::Path::new(""));
    let file_rules = RunFields {
        stop_when: Some(file.stop_when.clone()),
        ..RunFields::default()
    }
    .settings(&Origin::file(format!("{name}: "), base_dir))?
    .stop_rules;
    config.settings.stop_rules.splice(0..0, file_rules);
    let from_flags: std::collections::BTreeSet<String> = flags.given_keys().into_iter().collect();
    config.attacks = file
        .scenarios
        .iter()
        .map(|(line, fields)| {
            let name_of = fields.name.as_deref().unwrap_or_default();
            let mut origin = Origin::scenario(&name, *line, name_of, base_dir);
            origin.from_flags.clone_from(&from_flags);
            AttackConfig::from_fields(fields, &origin, &config.settings.tls)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(file.seed)
}

/// The attack flags given beside -scenarios, for every scenario; a flag that cannot
/// apply to every scenario (its declaration says why) is refused.
fn flags_over_scenarios(args: &AttackArgs) -> anyhow::Result<AttackFields> {
    let mut fields = given_attack_fields(args);
    for key in fields.given_keys() {
        if let Some((flag, why)) = workload::options::refused_with_scenarios(&key) {
            bail!("{flag} cannot be combined with -scenarios: {why}");
        }
    }
    // A file's paths are relative to the file; a flag's, to where it was typed.
    if let Some(data) = &fields.data {
        let path = std::path::absolute(data).with_context(|| format!("-data {data}"))?;
        fields.data = Some(path.display().to_string());
    }
    Ok(fields)
}

/// The attack flags given, and only those (no stdin, no empty name).
fn given_attack_fields(args: &AttackArgs) -> AttackFields {
    AttackFields {
        name: args.name.clone(),
        targets_file: args.targets.clone(),
        ..fields_from_flags(args)
    }
}

/// Without -seed, templates get a fresh seed; say it so the run can be repeated. A
/// shard cannot pick its own: the shards must render one run's requests.
fn announce_seed(config: &RunConfig, shard: workload::Shard) -> u64 {
    if !shard.is_whole() {
        return 0;
    }
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ u64::from(std::process::id());
    let templated = config.attacks.iter().any(|a| matches!(&a.targets, engine::Targets::List(list) if list.iter().any(Target::is_templated)));
    let seeded = match (templated, config.settings.trace.is_some()) {
        (true, true) => "templates and trace ids are",
        (true, false) => "templates are",
        (false, true) => "trace ids are",
        (false, false) => return seed,
    };
    eprintln!(
        "loadlab: {seeded} seeded with {seed}; add -seed={seed} to send the same requests again"
    );
    seed
}

/// Under `-trace`, says once which targets set their own `traceparent` (theirs is
/// sent as written, so those requests carry no loadlab trace ids) and, under
/// `-trace-state`, which set their own `tracestate` (sent in place of the flag's).
fn announce_own_traceparents(attacks: &[AttackConfig], trace_state: bool) {
    announce_own(
        attacks,
        workload::TRACEPARENT,
        "-trace",
        "without loadlab's trace ids",
    );
    if trace_state {
        announce_own(
            attacks,
            workload::TRACESTATE,
            "-trace-state",
            "in place of the flag's",
        );
    }
}

/// Says once which fixed targets set header `name` themselves.
fn announce_own(attacks: &[AttackConfig], name: &str, flag: &str, instead: &str) {
    let own: Vec<String> = attacks
        .iter()
        .filter_map(|attack| match &attack.targets {
            engine::Targets::List(list) => Some(list),
            _ => None,
        })
        .flatten()
        .filter(|target| (target.headers.iter()).any(|h| h.name.eq_ignore_ascii_case(name)))
        .map(|target| format!("{} {}", target.method, target.display_url()))
        .collect();
    if let Some(first) = own.first() {
        let more = match own.len() {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        eprintln!(
            "loadlab: {flag}: {first}{more} set their own {name}: it is sent as written, {instead}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use clap::Parser;

    #[test]
    fn start_at_reads_instants_and_offsets() {
        let now_ns = 1_795_000_000_000_000_000;
        assert_eq!(parse_start_at("+30s", now_ns), Ok(now_ns + 30_000_000_000));
        assert_eq!(
            parse_start_at("2026-11-23T22:00:00Z", now_ns),
            Ok(1_795_471_200_000_000_000)
        );
        let past = parse_start_at("2026-11-18T08:00:00Z", now_ns).unwrap_err();
        assert!(past.contains("in the past"), "{past}");
        // Within the tolerance, a moment ago is still now.
        assert_eq!(parse_start_at("+0s", now_ns), Ok(now_ns));
    }

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: AttackArgs,
    }

    fn config_error(flags: &[&str]) -> String {
        let args = Wrapper::try_parse_from(std::iter::once("attack").chain(flags.iter().copied()))
            .unwrap()
            .args;
        build_config(&args)
            .and_then(|(config, shard)| add_attacks(&args, config, shard))
            .unwrap_err()
            .to_string()
    }

    /// The flags and the declarations of `workload::options` name the same options,
    /// and each attack flag lands on its declared key: they cannot drift apart.
    #[test]
    fn every_flag_is_declared_once_in_the_options_table() {
        use clap::CommandFactory;
        use workload::options::{OPTIONS, Scope};
        let command = Wrapper::command();
        let flags: Vec<&str> = command
            .get_arguments()
            .filter_map(clap::Arg::get_long)
            .collect();
        for flag in &flags {
            assert!(
                workload::options::by_flag(flag).is_some(),
                "-{flag} has no row in workload::options::OPTIONS"
            );
        }
        for option in OPTIONS.iter().filter(|o| o.flag.is_some()) {
            let flag = option.flag.unwrap_or_default();
            assert!(flags.contains(&flag), "{option:?} is no attack flag");
            let Some(key) = option.key.filter(|_| option.scope != Scope::Run) else {
                continue;
            };
            let args = ["=1", "=true", "=http", ""]
                .iter()
                .find_map(|value| {
                    let given = format!("--{flag}{value}");
                    Wrapper::try_parse_from(["attack", given.as_str()]).ok()
                })
                .unwrap_or_else(|| panic!("-{flag} takes none of the sample values"))
                .args;
            let given = given_attack_fields(&args).given_keys();
            let top = key.split('.').next().unwrap_or_default();
            // A replay's own flags mean nothing without -replay: they fill its table.
            if option.scope == Scope::Replay && args.replay.fields().is_none() {
                assert!(!args.replay.stray_flags().is_empty(), "-{flag}");
                continue;
            }
            assert!(
                given.iter().any(|k| k == top),
                "-{flag} gives {given:?}, not {key}"
            );
        }
    }

    /// Every option of attack, run and search prints under a heading.
    #[test]
    fn every_option_has_a_help_heading() {
        use clap::CommandFactory;
        #[derive(Parser)]
        struct Run {
            #[command(flatten)]
            args: crate::run::RunArgs,
        }
        #[derive(Parser)]
        struct Search {
            #[command(flatten)]
            args: crate::search::SearchArgs,
        }
        for command in [Wrapper::command(), Run::command(), Search::command()] {
            for arg in command.get_arguments().filter(|a| !a.is_positional()) {
                assert!(
                    arg.get_help_heading().is_some(),
                    "{}: -{} has no heading",
                    command.get_name(),
                    arg.get_id()
                );
            }
        }
    }

    #[test]
    fn rejects_bad_flags_naming_them() {
        let rows: &[(&[&str], &str)] = &[
            (&["--rate=abc"], "-rate"),
            (&["--rate=-5"], "-rate"),
            (
                &["--rate=0"],
                "-rate: 0 runs the closed model and needs a user count",
            ),
            (
                &["--schedule=line(1,)"],
                "-schedule: invalid schedule \"line(1,)\"",
            ),
            (
                &["--schedule=const(5, 1s)", "--rate=5"],
                "give one of -rate, -schedule or -concurrency",
            ),
            (
                &["--think-time=1s"],
                "-think-time: the think time belongs to the closed model",
            ),
            (
                &["--concurrency=line(1, 10)"],
                "-concurrency: invalid schedule",
            ),
            (
                &["--stop-when=p99 > 2"],
                "-stop-when: invalid stop rule \"p99 > 2\"",
            ),
            (
                &["--scenarios=x.toml", "--body=b.json"],
                "-body cannot be combined with -scenarios: what a scenario sends is the file's",
            ),
            (&["--scenarios=x.toml", "--rate=5"], "-scenarios x.toml"),
            (&["--scenarios=/no/such.toml"], "-scenarios /no/such.toml"),
            (
                &["--data-order=shuffled"],
                "-data-order: unknown data order",
            ),
            (&["--data-order=random"], "-data-order: needs a data file"),
            (
                &["--precision=20ms"],
                "-precision: 20ms is coarser than 10ms",
            ),
            (&["--precision=fast"], "-precision: "),
            (&["--data=/no/such.csv"], "-data /no/such.csv"),
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
            (
                &["--shard=3/3"],
                "-shard: shard 3/3: the index counts from 0",
            ),
            (
                &["--shard=0/0"],
                "-shard: the shard count must be at least 1",
            ),
            (
                &["--shard=a/b"],
                "-shard: \"a/b\" is not a shard: write I/N",
            ),
            (
                &["--start-at=yesterday"],
                "-start-at: \"yesterday\" is not an RFC 3339 time",
            ),
            (
                &["--start-at=2001-01-01T00:00:00Z"],
                "-start-at: 2001-01-01T00:00:00Z is ",
            ),
            (&["--start-at=+x"], "-start-at: "),
        ];
        for (flags, want) in rows {
            let err = config_error(flags);
            assert!(err.contains(want), "{flags:?}: {err}");
        }
    }
}
