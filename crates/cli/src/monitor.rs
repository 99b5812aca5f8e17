//! `loadlab monitor`: sampler specs -> [`monitor::MonitorConfig`] -> [`monitor::Monitor`],
//! frames written as a record file of samples (and/or served to agent clients).
//! [`AttachedMonitor`] is the same monitor inside `attack -monitor`.

use std::io::{BufWriter, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use engine::StopHandle;
use monitor::{AgentServer, ClockAnchor, Monitor, MonitorConfig, MonitorHandle, MonitorStats};
use record::{Compression, RecordError, RecordWriter, RunEnd, RunHeader, SampleFrame, StopReason};

use workload::defaults;

use crate::signals;

/// Sample the system under test: host, processes, Prometheus endpoints, PostgreSQL
///
/// Writes a record file of resource samples (no requests), on the same unix-ns time
/// axis as `loadlab attack`'s records: `loadlab report run.llr run.mon` and `loadlab
/// plot` line them up. Attached to a run, the same specs go to `attack -monitor`.
///
/// Samplers (one or more; default: host):
///
///   host                      CPU (all and per core), memory, network per interface,
///                             TCP sockets by state, listen overflows, fds, load
///   process=NAME              processes named NAME (comm or argv[0]) and their children,
///                             as one group: CPU % of one core, RSS, threads, fds vs
///                             limit, sockets
///   process=REGEX             ... whose command line matches REGEX
///   pid=N                     process N and its children
///   prom=URL[;metric=RE][;drop=RE][;label=NAME=RE][;quantiles=0.5,0.99][;timeout=DUR]
///       [;max=GAUGE=LIMIT]    a Prometheus /metrics endpoint: counters as rates,
///                             gauges as they are, histograms as quantiles; max= gives
///                             a gauge its maximum (a number or another gauge), so the
///                             diagnosis judges a queue or pool it cannot pair by name
///   postgres=URL              pg_stat_database: connections, transactions/s, and the
///                             connections busy (PostgreSQL 14 on)
///   agent=HOST:PORT           samples streamed by `loadlab monitor -serve` elsewhere
///   log=PATH[;pattern=NAME=RE]
///                             a log file followed from its end (rotated or truncated:
///                             from the top again): lines/s by pattern (too many open
///                             files, out of memory, connection refused, timeouts, 5xx,
///                             panics, and yours), the first lines of each kept
///   logcmd=COMMAND[;pattern=NAME=RE]
///                             the same over a command's output: `journalctl -f -u app`,
///                             `kubectl logs -f POD`, `docker logs -f NAME`
///   LABEL:SPEC                any of these, named LABEL in reports and charts
///                             (app:process=.*gunicorn.*, db:postgres=URL)
///
/// A process that is gone, an endpoint that is down, slow or garbled, a refused login
/// or a counter reset is recorded as a gap with its reason, never a failure. Passwords
/// in URLs never appear in output or in the file.
///
/// Examples:
///
///   loadlab monitor host process=nginx postgres=postgres://u:pw@127.0.0.1/db -output run.mon
///
///   loadlab monitor -interval 500ms -duration 1m "prom=http://127.0.0.1:9113/metrics;metric=nginx_.*" > nginx.mon
///
///   loadlab monitor -serve 127.0.0.1:7070 host process=app      # on the machine under test
///
///   loadlab attack -targets=t.txt -rate=2000 -duration=1m -monitor process=nginx -monitor nginx:log=/var/log/nginx/error.log > run.llr
///
///   loadlab report run.llr run.mon
///
/// Ctrl-C (or SIGTERM) stops it and closes the file cleanly.
#[derive(clap::Args, Debug)]
// The samplers' table keeps its lines; clap would reflow it into one paragraph.
#[command(verbatim_doc_comment)]
pub struct MonitorArgs {
    #[arg(long, value_name = "DURATION", help = format!(
        "Sampling interval (at least 100ms) [default: {}]",
        units::GoDuration(defaults::MONITOR_INTERVAL),
    ))]
    interval: Option<String>,
    /// Stop after this long; 0 = until Ctrl-C
    #[arg(long, default_value = "0", value_name = "DURATION")]
    duration: String,
    /// Output file ("stdout" or "-" for standard output; default: stdout, or none with -serve)
    #[arg(long, value_name = "FILE")]
    output: Option<String>,
    /// Agent mode: stream samples to `-monitor agent=HOST:PORT` clients (":7070" means
    /// 127.0.0.1:7070; no authentication, so bind to loopback unless the network is yours)
    #[arg(long, value_name = "HOST:PORT")]
    serve: Option<String>,
    /// Sampler specs (see above)
    #[arg(value_name = "SPEC")]
    specs: Vec<String>,
}

pub fn run(args: &MonitorArgs) -> anyhow::Result<ExitCode> {
    let config = monitor_config(args)?;
    let duration = units::parse_duration(&args.duration).context("-duration")?;
    let server = args.serve.as_deref().map(serve).transpose()?;
    let output = match (&args.output, &server) {
        (None, Some(_)) => None,
        (output, _) => Some(open_output(output.as_deref().unwrap_or("stdout"))?),
    };
    let stop = StopHandle::new();
    signals::stop_on_signals(&stop, "closing the file")?;
    let anchor = ClockAnchor::now();
    let header = RunHeader {
        tool: format!("loadlab {} monitor", env!("CARGO_PKG_VERSION")),
        start_unix_ns: anchor.unix_ns,
        ..RunHeader::default()
    };
    let mut writer = output
        .map(|out| RecordWriter::new(out, &header, Compression::Raw))
        .transpose()
        .context("writing the output")?;
    let handle = Monitor::start(config, anchor)?;
    let deadline = (!duration.is_zero()).then(|| anchor.instant + duration);
    let outcome = pump(&handle, &stop, deadline, server.as_ref(), writer.as_mut());
    let stopped = handle.stop();
    let end = RunEnd {
        at_unix_ns: anchor.unix_ns_at(Instant::now()),
        reason: if stop.is_stopping() {
            StopReason::Interrupted
        } else {
            StopReason::Completed
        },
        ..RunEnd::default()
    };
    let outcome = outcome.and_then(|()| match writer {
        Some(writer) => finish(writer, &stopped.remaining, &end),
        None => Ok(()),
    });
    eprintln!("loadlab monitor: {}", summary(&stopped.stats));
    outcome.context("writing the samples")?;
    Ok(ExitCode::SUCCESS)
}

fn monitor_config(args: &MonitorArgs) -> anyhow::Result<MonitorConfig> {
    let default = ["host".to_owned()];
    let specs = if args.specs.is_empty() {
        &default[..]
    } else {
        &args.specs
    };
    let interval = match &args.interval {
        Some(text) => units::parse_duration(text).context("-interval")?,
        None => defaults::MONITOR_INTERVAL,
    };
    config_of(specs, interval)
}

fn config_of(specs: &[String], interval: Duration) -> anyhow::Result<MonitorConfig> {
    let mut config = MonitorConfig::new(interval)?;
    for spec in specs {
        config.add_spec(spec)?;
    }
    Ok(config)
}

/// What a plan's steps sample: each step's `monitor` specs attached afresh, as
/// `attack -monitor` attaches them.
pub fn plan_monitors() -> lab::MonitorFactory {
    let make: std::sync::Arc<lab::MakeMonitor> =
        std::sync::Arc::new(|specs: &[String], interval: Duration| {
            AttachedMonitor::new(specs, interval)
                .map(|m| Box::new(m) as Box<dyn engine::SampleFeed>)
                .map_err(|e| format!("{e:#}"))
        });
    lab::MonitorFactory(make)
}

/// `attack -monitor`: specs checked before the run, sampling started at the run's
/// time zero, frames handed to the engine, which writes them beside the records.
/// A monitor that cannot start is a warning: the load run goes on without it.
pub struct AttachedMonitor {
    config: Option<MonitorConfig>,
    handle: Option<MonitorHandle>,
    stats: Option<MonitorStats>,
    /// By sampler id: its name, and whether its first reading was looked at.
    first_readings: Vec<(String, bool)>,
    /// By series id: its sampler.
    series_samplers: Vec<u32>,
}

impl AttachedMonitor {
    /// Samples nothing without specs.
    pub fn new(specs: &[String], interval: Duration) -> anyhow::Result<AttachedMonitor> {
        let config = if specs.is_empty() {
            None
        } else {
            Some(config_of(specs, interval)?)
        };
        Ok(AttachedMonitor {
            config,
            handle: None,
            stats: None,
            first_readings: Vec::new(),
            series_samplers: Vec::new(),
        })
    }

    /// Says on stderr, once per sampler, why its first reading missed (`no process
    /// matches postgres`): at the run's start, not only in the report after it.
    fn say_first_misses(&mut self, frames: &[SampleFrame]) {
        for frame in frames {
            for (offset, sampler) in frame.samplers.iter().enumerate() {
                let id = frame.first_sampler as usize + offset;
                if self.first_readings.len() <= id {
                    self.first_readings.resize(id + 1, (String::new(), false));
                }
                self.first_readings[id].0 = format!("{} {}", sampler.kind, sampler.name);
            }
            self.series_samplers
                .extend(frame.series.iter().map(|series| series.sampler));
            for gap in frame.batch.gaps.iter().filter(|g| g.series.is_none()) {
                if let Some((name, false)) = self.first_readings.get(gap.sampler as usize) {
                    eprintln!(
                        "loadlab: -monitor {name}: {} at the run's start; its resources are \
                         not watched while it lasts",
                        gap.reason
                    );
                }
            }
            // Every sampler this batch read (or missed) has had its first reading.
            let values = (frame.batch.values.iter())
                .filter_map(|v| self.series_samplers.get(v.series as usize).copied());
            let samplers: Vec<u32> = values
                .chain(frame.batch.gaps.iter().map(|g| g.sampler))
                .collect();
            for sampler in samplers {
                if let Some((_, said)) = self.first_readings.get_mut(sampler as usize) {
                    *said = true;
                }
            }
        }
    }

    /// What was sampled, once the run is over.
    pub fn summary(&self) -> Option<String> {
        self.stats.as_ref().map(summary)
    }
}

impl engine::SampleFeed for AttachedMonitor {
    fn start(&mut self, clock: engine::Clock) {
        let Some(config) = self.config.take() else {
            return;
        };
        let anchor = ClockAnchor::new(clock.start_instant(), clock.start_unix_ns());
        match Monitor::start(config, anchor) {
            Ok(handle) => self.handle = Some(handle),
            Err(err) => eprintln!("loadlab: -monitor: {err}; the run goes on without it"),
        }
    }

    fn ready(&mut self, frames: &mut Vec<SampleFrame>) {
        if let Some(handle) = &self.handle {
            let before = frames.len();
            frames.extend(handle.frames().try_iter());
            self.say_first_misses(&frames[before..]);
        }
    }

    fn finish(&mut self, frames: &mut Vec<SampleFrame>) {
        if let Some(handle) = self.handle.take() {
            // Frames already received come before the ones `stop` hands back.
            let before = frames.len();
            frames.extend(handle.frames().try_iter());
            let stopped = handle.stop();
            frames.extend(stopped.remaining);
            // A run shorter than a reading's way here says its first ones now.
            self.say_first_misses(&frames[before..]);
            self.stats = Some(stopped.stats);
        }
    }
}

type Output = BufWriter<Box<dyn Write>>;

/// Frames to the file and the agent's clients until Ctrl-C, the deadline, or an
/// output error.
fn pump(
    handle: &MonitorHandle,
    stop: &StopHandle,
    deadline: Option<Instant>,
    server: Option<&AgentServer>,
    mut writer: Option<&mut RecordWriter<Output>>,
) -> Result<(), RecordError> {
    while !stop.is_stopping() && deadline.is_none_or(|d| Instant::now() < d) {
        match handle.frames().recv_timeout(Duration::from_millis(100)) {
            Ok(frame) => {
                if let Some(server) = server {
                    server.broadcast(&frame);
                }
                if let Some(writer) = writer.as_deref_mut() {
                    writer.write_samples(&frame)?;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    Ok(())
}

/// The frames that came in while stopping, then the end block.
fn finish(
    mut writer: RecordWriter<Output>,
    remaining: &[SampleFrame],
    end: &RunEnd,
) -> Result<(), RecordError> {
    for frame in remaining {
        writer.write_samples(frame)?;
    }
    writer.finish(end)?.flush().map_err(RecordError::Write)
}

fn summary(stats: &MonitorStats) -> String {
    let mut text = format!(
        "{} samples, {} values, {} gaps",
        stats.frames, stats.values, stats.gaps
    );
    if stats.dropped_frames > 0 {
        text.push_str(&format!(
            ", {} samples dropped (the output was too slow)",
            stats.dropped_frames
        ));
    }
    if stats.abandoned_threads > 0 {
        text.push_str(&format!(
            ", {} samplers still in a slow call at exit",
            stats.abandoned_threads
        ));
    }
    text
}

/// `-serve`: `:PORT` means loopback; other hosts get a warning (no authentication).
fn serve(addr: &str) -> anyhow::Result<AgentServer> {
    let resolved = crate::flags::parse_host_port(addr).map_err(|e| anyhow!("-serve {e}"))?;
    if !resolved.ip().is_loopback() {
        eprintln!("loadlab monitor: warning: serving samples on {resolved} without authentication");
    }
    let server = AgentServer::bind(&resolved.to_string())?;
    eprintln!(
        "loadlab monitor: serving samples on {}",
        server.local_addr()
    );
    Ok(server)
}

/// `report::open_output`, refusing a terminal: the samples are binary.
fn open_output(path: &str) -> anyhow::Result<Output> {
    if crate::report::is_stdout(path) && std::io::stdout().is_terminal() {
        bail!("refusing to write binary samples to a terminal: use -output FILE or a pipe");
    }
    crate::report::open_output(path)
}
