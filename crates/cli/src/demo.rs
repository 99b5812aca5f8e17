//! `loadlab demo`: the lab with no set-up. Starts the built-in simulator with a system
//! under test of known capacity, steps the rate across its knee, and shows where the
//! knee is next to the simulator's ground truth.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use engine::{AttackConfig, RunConfig, StopHandle};
use record::{Inputs, RecordSource};
use report::{Extras, Metrics, Report, RunFacts, Scope};
use simulator::{DEMO_CAPACITY_RPS, Simulator, SimulatorOptions};
use units::GoDuration;
use workload::{Plan, Target};

use crate::signals;

/// The whole lab against the built-in simulator, no set-up.
///
/// Starts `loadlab simulate` in-process with a system under test of known capacity
/// (100 workers, 100 ms service time: 1000 req/s), attacks it at rates below and above
/// that knee, and prints what each step saw, the knee it found, and the full report of
/// the last step. The records stay on disk for `loadlab report`.
///
/// Examples:
///
///   loadlab demo
///
///   loadlab demo -rates=400,800,1000,1200,1600 -step=3s -output-dir=demo-run
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Rates to step through, in requests per second
    #[arg(
        long,
        default_value = "500,800,1200,1500",
        value_delimiter = ',',
        value_name = "RATES"
    )]
    rates: Vec<f64>,
    /// How long each step lasts
    #[arg(long, default_value = "2.5s", value_name = "DURATION")]
    step: String,
    /// Where to keep the record files (default: a new directory under the temp dir)
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
}

/// What one step saw.
struct Step {
    rate_per_sec: f64,
    report: Report,
    path: PathBuf,
}

pub fn run(args: &DemoArgs) -> anyhow::Result<ExitCode> {
    let step = units::parse_duration(&args.step).context("-step")?;
    if step.is_zero() {
        bail!("-step: must be longer than zero");
    }
    if args.rates.is_empty() || args.rates.iter().any(|r| !r.is_finite() || *r <= 0.0) {
        bail!("-rates: want positive numbers, like 500,800,1200");
    }
    let dir = output_dir(args.output_dir.as_deref())?;
    let options = SimulatorOptions {
        threads: 1,
        ..SimulatorOptions::new(([127, 0, 0, 1], 0).into())
    };
    let simulator =
        Simulator::start(options, &simulator::demo_recipe()).context("starting the simulator")?;
    let url = format!("http://{}/demo", simulator.local_addr());
    let stop = StopHandle::new();
    signals::stop_on_signals(&stop, "waiting for requests in flight")?;
    let mut out = std::io::stdout().lock();
    introduce(&mut out, &url, &args.rates, step)?;
    let mut steps = Vec::new();
    for &rate in &args.rates {
        if stop.is_stopping() {
            break;
        }
        let step = run_step(&url, rate, step, &dir, &stop)?;
        print_step(&mut out, &step)?;
        steps.push(step);
    }
    simulator.stop();
    conclude(&mut out, &steps, &dir)?;
    Ok(ExitCode::SUCCESS)
}

fn output_dir(wanted: Option<&Path>) -> anyhow::Result<PathBuf> {
    let dir = match wanted {
        Some(dir) => dir.to_owned(),
        None => std::env::temp_dir().join(format!("loadlab-demo-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("-output-dir {}", dir.display()))?;
    Ok(dir)
}

fn introduce(
    out: &mut impl Write,
    url: &str,
    rates: &[f64],
    step: Duration,
) -> std::io::Result<()> {
    let rates: Vec<String> = rates.iter().map(|r| format!("{r}")).collect();
    writeln!(
        out,
        "loadlab demo: a capacity run against the built-in simulator\n"
    )?;
    writeln!(out, "  system under test  {url}")?;
    writeln!(
        out,
        "                     100 workers x 100 ms service time, queue of 100, 503 when full"
    )?;
    writeln!(
        out,
        "  load               open model, {} req/s, {} each\n",
        rates.join(", "),
        GoDuration(step)
    )?;
    writeln!(
        out,
        "  {:<10}{:>10}{:>10}{:>10}{:>10}{:>11}{:>11}  errors",
        "step", "asked/s", "sent/s", "ok/s", "success", "p50", "p99"
    )
}

fn run_step(
    url: &str,
    rate_per_sec: f64,
    step: Duration,
    dir: &Path,
    stop: &StopHandle,
) -> anyhow::Result<Step> {
    let name = format!("{rate_per_sec}/s");
    let path = dir.join(format!("step-{rate_per_sec}.llr"));
    let target = Target::get("GET", url::Url::parse(url)?);
    let plan = Plan {
        duration_ns: Some(step.as_nanos() as u64),
        ..Plan::constant_rate(rate_per_sec)
    };
    let mut attack = AttackConfig::new(&name, vec![target], plan);
    attack.timeout = Duration::from_secs(5);
    let config = RunConfig::single(attack);
    let file = BufWriter::new(
        File::create(&path).with_context(|| format!("creating {}", path.display()))?,
    );
    engine::run(&config, file, stop)?;
    Ok(Step {
        rate_per_sec,
        report: summarize(&path)?,
        path,
    })
}

fn summarize(path: &Path) -> anyhow::Result<Report> {
    let source: Box<dyn RecordSource> = record::open_input(&path.display().to_string())?;
    let mut inputs = Inputs::from_sources(vec![source]);
    let mut metrics = Metrics::new(None);
    let mut batch = Vec::new();
    while inputs.next_batch(&mut batch)? {
        metrics.add_all(&batch);
    }
    let mut report = metrics.close(inputs.tables());
    let summaries: Vec<_> = inputs.summaries().cloned().collect();
    let facts = RunFacts::from_inputs(&summaries, inputs.tables());
    report.extras = Extras::build(&report, &facts, Scope::Run);
    Ok(report)
}

fn print_step(out: &mut impl Write, step: &Step) -> std::io::Result<()> {
    let report = &step.report;
    let ok_per_sec = report.successes as f64 / (report.duration_ns.max(1) as f64 / 1e9);
    let errors = if report.errors.is_empty() {
        "-".to_owned()
    } else {
        report.errors.join("; ")
    };
    writeln!(
        out,
        "  {:<10}{:>10.1}{:>10.1}{:>10.1}{:>9.2}%{:>11}{:>11}  {errors}",
        format!("{}/s", step.rate_per_sec),
        step.rate_per_sec,
        report.rate_per_sec,
        ok_per_sec,
        report.success_ratio * 100.0,
        GoDuration(units::round_for_report(Duration::from_nanos(
            report.latencies.p50_ns
        )))
        .to_string(),
        GoDuration(units::round_for_report(Duration::from_nanos(
            report.latencies.p99_ns
        )))
        .to_string(),
    )
}

/// Names the knee: the first step whose successful rate fell short of what was asked.
fn conclude(out: &mut impl Write, steps: &[Step], dir: &Path) -> anyhow::Result<()> {
    let ok_rate = |s: &Step| s.report.successes as f64 / (s.report.duration_ns.max(1) as f64 / 1e9);
    let knee = steps
        .iter()
        .position(|s| ok_rate(s) < 0.95 * s.rate_per_sec);
    writeln!(out)?;
    match knee {
        Some(index) => {
            let capacity = steps[index..].iter().map(ok_rate).fold(0.0, f64::max);
            let below = index
                .checked_sub(1)
                .map_or("the first step".to_owned(), |i| {
                    format!("{}/s", steps[i].rate_per_sec)
                });
            writeln!(
                out,
                "  The knee: up to {below} every request succeeded; at {}/s only {capacity:.0} req/s succeeded and the rest were refused.\n  Measured capacity ~{capacity:.0} req/s; the simulator's ground truth is {DEMO_CAPACITY_RPS:.0} req/s (100 workers / 100 ms).",
                steps[index].rate_per_sec
            )?;
        }
        None => writeln!(
            out,
            "  No knee in these steps: every rate was served (capacity {DEMO_CAPACITY_RPS:.0} req/s); try higher -rates."
        )?,
    }
    if let Some(last) = steps.last() {
        writeln!(
            out,
            "\nThe last step in vegeta's layout, with loadlab's extra rows:\n"
        )?;
        let mut text = String::new();
        report::write_text(&mut text, &last.report);
        write!(out, "{text}")?;
        writeln!(
            out,
            "\nRecords: {}\n  loadlab report -every=500ms {}\n  loadlab report -by=attack {}/*.llr",
            dir.display(),
            last.path.display(),
            dir.display()
        )?;
    }
    Ok(())
}
