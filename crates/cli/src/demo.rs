//! `loadlab demo`: the lab with no set-up, as a small plan. Starts two in-process
//! simulators modelling field report 001's two worker-pool configurations, searches
//! each for the highest rate it holds with [`lab::run_plan`] (a real plan, written as
//! TOML and read by the same parser as `loadlab run`), and prints the summary table
//! beside the simulators' ground truth.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use engine::StopHandle;
use lab::{Plan, RunOptions, RunSummary, run_plan};
use simulator::{Simulator, SimulatorOptions};

use crate::signals;

/// The lab with no set-up: a capacity search of two worker pools, compared
///
/// Starts two built-in simulators in-process, modelling the two worker-pool
/// configurations of field report 001 scaled down (100 ms of service time each):
///
///   fixed-pool: 50 workers, no queue, 500 when full (ground truth 500 req/s)
///
///   overflow-pool: 25 + 95 overflow workers, a short queue (ground truth 1200 req/s)
///
/// Then runs a search plan against both (`loadlab run` with mode = "search"): random
/// /search queries from 200 req/s doubling until a probe fails, then bisecting to the
/// precision and confirming, while /news is polled at 2 req/s beside every probe. A
/// probe passes with 99% success and a p99 within 250 ms. It prints the maximum rate
/// each pool held, the improvement and the ground truth, and leaves the run folder
/// (plan.toml, summary.md, summary.json, index.html, each probe's records and report).
/// About a minute in a release build; Ctrl-C stops after the current probe and still
/// prints what was found.
///
/// Examples:
///
///   loadlab demo
///
///   loadlab demo -output demo-run
///
///   loadlab demo -step 1s -precision 0.1 -max-probes 8
#[derive(clap::Args, Debug)]
// Verbatim: the examples keep their indentation (help.rs prints them unwrapped).
#[command(verbatim_doc_comment)]
pub struct DemoArgs {
    /// Measured time per probe, after a 500ms warm-up
    #[arg(long, default_value = "1500ms", value_name = "DURATION")]
    step: String,
    /// Stop bisecting when the lowest failing rate is within this share above the highest passing one
    #[arg(long, default_value_t = 0.05, value_name = "SHARE")]
    precision: f64,
    /// Probes per pool at most, the confirmation included
    #[arg(long, default_value_t = 12, value_name = "N")]
    max_probes: usize,
    /// The run folder [default: a new folder under the temp dir]
    #[arg(long, value_name = "DIR")]
    output: Option<PathBuf>,
}

/// One simulated pool: its name, what it models, and its recipe.
struct Pool {
    name: &'static str,
    about: &'static str,
    recipe: &'static str,
}

/// Field report 001's two configurations, at a twentieth of their size: 1024 fixed
/// workers became 50, 512 + 4096 overflow became 25 + 95. Capacities of 500 and 1200
/// req/s keep the generator far from its own limit on two cores, so the search measures
/// the pools. Every path is served, /news included, by the same pool.
const POOLS: [Pool; 2] = [
    Pool {
        name: "fixed-pool",
        about: "50 workers x 100 ms, no queue, 500 when full",
        recipe: r#"{"route": "/*", "body": "<<1kb>>",
            "stages": [{"at": 0, "status": 200, "latency": "100ms"}],
            "capacity": {"workers": 50, "overflow": 0, "queue": 0, "reject_status": 500}}"#,
    },
    Pool {
        name: "overflow-pool",
        about: "25 + 95 overflow workers x 100 ms, a queue of 50 (500 ms), 500 when full",
        recipe: r#"{"route": "/*", "body": "<<1kb>>",
            "stages": [{"at": 0, "status": 200, "latency": "100ms"}],
            "capacity": {"workers": 25, "overflow": 95, "queue": 50, "queue_timeout": "500ms",
                         "reject_status": 500}}"#,
    },
];

/// A started pool and its ground truth.
struct Running {
    pool: &'static Pool,
    simulator: Simulator,
    truth_per_sec: f64,
}

pub fn run(args: &DemoArgs) -> anyhow::Result<ExitCode> {
    let step = units::parse_duration(&args.step).context("-step")?;
    if step.is_zero() {
        bail!("-step: must be longer than zero");
    }
    if !(args.precision > 0.0 && args.precision < 1.0) {
        bail!(
            "-precision: want a share between 0 and 1, like 0.05, got {}",
            args.precision
        );
    }
    if args.max_probes < 2 {
        bail!(
            "-max-probes: want at least 2 (a probe and its confirmation), got {}",
            args.max_probes
        );
    }
    let output = output_dir(args.output.as_deref())?;
    let running = start_pools()?;
    let plan_text = plan_text(&running, step, args);
    let plan = Plan::parse(&plan_text, "loadlab demo (built-in plan)", &output)
        .context("the demo's plan")?;
    let stop = StopHandle::new();
    signals::stop_on_signals(&stop, "finishing the current probe")?;
    let mut out = std::io::stdout().lock();
    introduce(&mut out, &running, step, args)?;
    let started = Instant::now();
    let options = RunOptions {
        output: output.clone(),
        monitor: Some(crate::monitor::plan_monitors()),
        ..RunOptions::default()
    };
    let summary = run_plan(&plan, &options, &stop, &mut Progress::new(&mut out));
    let truths: Vec<(&str, f64)> = running
        .into_iter()
        .map(|r| {
            r.simulator.stop();
            (r.pool.name, r.truth_per_sec)
        })
        .collect();
    let summary = summary.context("running the demo's plan")?;
    conclude(&mut out, &summary, &truths, &output, started.elapsed())?;
    Ok(if summary.complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(130)
    })
}

/// `-output`, which must not hold a run already, or a new folder under the temp dir.
fn output_dir(wanted: Option<&Path>) -> anyhow::Result<PathBuf> {
    let dir = match wanted {
        Some(dir) => dir.to_owned(),
        None => {
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            std::env::temp_dir().join(format!("loadlab-demo-{}-{now_ms}", std::process::id()))
        }
    };
    if dir.join("summary.json").exists() {
        bail!(
            "-output {}: holds a run already; give another folder",
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("-output {}", dir.display()))?;
    Ok(dir)
}

fn start_pools() -> anyhow::Result<Vec<Running>> {
    POOLS
        .iter()
        .map(|pool| {
            let recipe = simulator::parse_recipe(pool.recipe, pool.name)?;
            let truth_per_sec = recipe
                .capacity_rps()
                .first()
                .map_or(f64::INFINITY, |(_, rps)| *rps);
            let options = SimulatorOptions {
                threads: 1,
                ..SimulatorOptions::new(([127, 0, 0, 1], 0).into())
            };
            let simulator = Simulator::start(options, &recipe)
                .with_context(|| format!("starting the {} simulator", pool.name))?;
            Ok(Running {
                pool,
                simulator,
                truth_per_sec,
            })
        })
        .collect()
}

/// The demo as a plan file: what `loadlab run` would read, ports filled in.
fn plan_text(running: &[Running], step: Duration, args: &DemoArgs) -> String {
    let mut text = String::from(
        "# Written by `loadlab demo`: the simulators' ports were free for that run only.\n\
         name = \"demo: fixed pool vs overflow pool (field report 001)\"\n\
         mode = \"search\"\n",
    );
    for pool in running {
        text.push_str(&format!(
            "\n[[variant]]\nname = \"{}\"\nbase_url = \"http://{addr}\"\n\
             monitor = [\"pool:prom=http://{addr}/metrics;metric=loadlab_sim_pool_.*\"]\n",
            pool.pool.name,
            addr = pool.simulator.local_addr()
        ));
    }
    text.push_str(&format!(
        r#"
[load]
targets = ["GET http://pool/search?q={{{{rand.lower 12}}}}"]
step_duration = "{step_ns}ns"
warmup = "500ms"
cooldown = "250ms"
timeout = "2s"
# One event-loop thread: the pool under test has the other core.
threads = 1
seed = 1
# A probe well past the knee is over in a second.
stop_when = ["errors > 20%"]
# The host, and each pool over its /metrics (the variants'): what ran out first.
monitor = ["host"]
monitor_interval = "250ms"

[[load.scenario]]
name = "news"
targets = ["GET http://pool/news"]
rate = 2

[slo]
success = 0.99
p99 = "250ms"
max_lag = "25ms"

[search]
start = 200
precision = {precision}
max_probes = {max_probes}
"#,
        step_ns = step.as_nanos(),
        precision = args.precision,
        max_probes = args.max_probes,
    ));
    text
}

fn introduce(
    out: &mut impl Write,
    running: &[Running],
    step: Duration,
    args: &DemoArgs,
) -> std::io::Result<()> {
    writeln!(
        out,
        "loadlab demo: field report 001's question, answered by a capacity search\n"
    )?;
    for pool in running {
        writeln!(
            out,
            "  {:<15}http://{}  {}: ground truth {:.0} req/s",
            pool.pool.name,
            pool.simulator.local_addr(),
            pool.pool.about,
            pool.truth_per_sec
        )?;
    }
    writeln!(
        out,
        "  {:<15}GET /search?q=RANDOM from 200 req/s, doubling, then bisecting to {}%; {} per probe after a 500ms warm-up\n  {:<15}/news polled at 2 req/s beside every probe\n  {:<15}99% success and p99 <= 250ms (at most {} probes per pool)\n",
        "load",
        args.precision * 100.0,
        units::GoDuration(step),
        "",
        "a probe holds",
        args.max_probes
    )
}

/// `run_plan`'s progress, shortened for the demo: a line per finished probe (its
/// folder, rate, verdict and why), not the "starting" lines.
struct Progress<W: Write> {
    out: W,
    line: Vec<u8>,
}

impl<W: Write> Progress<W> {
    fn new(out: W) -> Self {
        Progress {
            out,
            line: Vec::new(),
        }
    }

    fn end_line(&mut self) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        let text = text.strip_prefix("loadlab run: ").unwrap_or(&text);
        if text.ends_with(" ...") {
            return Ok(());
        }
        writeln!(self.out, "  {text}")
    }
}

impl<W: Write> Write for Progress<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        for &byte in buf {
            if byte == b'\n' {
                self.end_line()?;
            } else {
                self.line.push(byte);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The table the demo is for: per pool, the rate held against the ground truth.
fn conclude(
    out: &mut impl Write,
    summary: &RunSummary,
    truths: &[(&str, f64)],
    dir: &Path,
    took: Duration,
) -> std::io::Result<()> {
    let baseline = summary.variants.first().and_then(|v| v.max_rate_held);
    writeln!(
        out,
        "\n  {:<15}{:>15}{:>13}{:>14}{:>13}{:>8}{:>9}",
        "pool", "max req/s held", "improvement", "ground truth", "found/truth", "probes", "time"
    )?;
    for result in &summary.variants {
        let truth = truths
            .iter()
            .find(|(name, _)| *name == result.variant)
            .map_or(f64::NAN, |(_, truth)| *truth);
        let held = result.max_rate_held;
        let ratio = |a: Option<f64>, b: Option<f64>, unit: &str| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}{unit}", a / b),
            _ => "-".to_owned(),
        };
        writeln!(
            out,
            "  {:<15}{:>15}{:>13}{:>14.0}{:>13}{:>8}{:>9}",
            result.variant,
            held.map_or("none".to_owned(), |h| format!("{h:.0}")),
            ratio(held, baseline, "x"),
            truth,
            held.map_or("-".to_owned(), |h| format!("{:.1}%", h / truth * 100.0)),
            result.probes.map_or("-".to_owned(), |p| p.to_string()),
            result
                .seconds
                .map_or("-".to_owned(), |s| format!("{s:.1}s")),
        )?;
        writeln!(out, "  {:<15}{}", "", result.how)?;
    }
    let ran_out = summary.ran_out_first();
    if !ran_out.is_empty() {
        writeln!(
            out,
            "\n  What ran out first, at each pool's first probe that failed:"
        )?;
        for (variant, step) in ran_out {
            let lines = &step.diagnosis;
            let headline = lines.first().map_or("", String::as_str);
            writeln!(out, "  {variant} (probe {}): {headline}", step.step)?;
            // What followed; the headroom of the rest is in the probe's report.txt.
            for line in lines.iter().filter(|l| l.starts_with("then: ")) {
                writeln!(out, "    {line}")?;
            }
        }
    }
    writeln!(
        out,
        "\n  (A pool without a queue serves 1-2% under its ground truth: a freed worker idles until\n  the next arrival. See docs/SIMULATOR.md.)"
    )?;
    if !summary.complete {
        writeln!(
            out,
            "\n  Interrupted: the table holds what was found so far."
        )?;
    }
    writeln!(
        out,
        "\n  Took {}. The run folder is the write-up:\n    {}\n    {}   (tables: per pool, and per probe with the /news poll)\n    {}   (charts)",
        units::GoDuration(units::round_for_report(took)),
        dir.display(),
        dir.join("summary.md").display(),
        dir.join("index.html").display(),
    )?;
    if let Some(records) = summary.steps.first().and_then(|s| s.records.as_deref()) {
        writeln!(
            out,
            "  A probe, /search and /news apart: loadlab report -by=attack {}",
            dir.join(records).display()
        )?;
    }
    Ok(())
}
