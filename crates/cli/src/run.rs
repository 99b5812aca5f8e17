//! `loadlab run PLAN`: a plan file -> [`lab::Plan`] -> [`lab::run_plan`].

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use engine::StopHandle;
use lab::{MakeWatch, Plan, RunOptions, WatchFactory, run_plan};

use crate::ci::CiArgs;
use crate::request_args::RequestArgs;
use crate::signals;
use crate::watch::{WatchArgs, Watchers};

/// What `run --help` says after the options (examples last, as written).
const AFTER_HELP: &str = "\
The run folder is the write-up: plan.toml (secrets REDACTED), log.txt (a line per
step), summary.json, summary.md (tables ready to paste), index.html (charts against the
offered rate, the tables, links to every step) and steps/NNN-VARIANT-RATE/ with each
step's records.llr, report.txt, plot.html and hooks.txt. -junit and -summary-md write
the verdicts for a CI job (docs/CI.md).

Each step is watched as `loadlab attack` watches its run: the live view on stderr
(-quiet for none), -dashboard (the step running, at one address for the whole plan),
-prometheus-addr and -prometheus-remote-write (the step running's series).

Ctrl-C stops the current step and leaves a summary marked incomplete; -resume then
continues without redoing the finished steps.

With trace = true in [load] and a trace store (the plan's trace_store, or
-trace-store URL), each step's report.txt says where its slow traced requests' time
went, and summary.md, summary.json and index.html list it per step (docs/TRACES.md).

Before each step sends, one TCP connect goes to each distinct host:port of its targets
(2 s at most): when one does not answer, the plan stops at once, naming it (\"nothing
listened at 127.0.0.1:18199: connection refused\"). -no-check-targets (or
`check_targets = false` in [load]) skips the check.

Exit status: 0 when the plan ran (whatever the verdicts); 1 on a bad plan, an I/O error
or targets that did not answer; 130 when interrupted.

Examples:
  loadlab run examples/plans/step_sweep_000.toml
  loadlab run examples/plans/capacity_search_003.toml -output runs/search
  loadlab run plan.toml -output runs/night -resume
  loadlab run plan.toml -dashboard=:8088 -prometheus-addr=127.0.0.1:8880
  loadlab run plan.toml -trace-store http://127.0.0.1:16686
  loadlab run plan.toml -output runs/ci -junit=junit.xml -summary-md=\"$GITHUB_STEP_SUMMARY\"";

/// Run an experiment plan: a sweep, a capacity search or a matrix (see docs/PLANS.md).
///
/// A plan (TOML) names the systems compared ([[variant]]: targets, setup/ready/teardown
/// hooks), the load steps ([load]: rates or users, step duration, warm-up, cool-down),
/// and the SLO that judges each step ([slo]). Each step is a normal attack whose record
/// file is kept; its verdict comes from its own window (the warm-up is sent but not
/// judged) and always checks the generator's own health, so a step the generator could
/// not deliver is "inconclusive", never "the server failed".
///
/// Modes: sweep (every variant at every step), search (per variant, the highest rate
/// that meets the SLO: exponential growth, bisection to a precision, a confirmation
/// run), matrix (every combination of named axes, repeated).
#[derive(clap::Args, Debug)]
#[command(after_long_help = AFTER_HELP)]
pub struct RunArgs {
    /// The run folder [default: runs/PLAN-NAME]
    #[arg(help_heading = "Output", long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// Continue the run in -output, skipping the steps its summary.json holds
    #[arg(help_heading = "Output", long)]
    resume: bool,
    /// Do not connect to each step's targets before it sends (as `check_targets = false`
    /// in the plan's [load])
    #[arg(help_heading = "Targets", long)]
    no_check_targets: bool,
    // Over the plan's [load] and every [[load.scenario]]; the folder's plan.toml says so.
    #[command(flatten)]
    request: RequestArgs,
    #[command(flatten)]
    watch: WatchArgs,
    #[command(flatten)]
    ci: CiArgs,
    // Over the plan's `trace_store`: each step's report says where its slow traced
    // requests' time went.
    #[command(flatten)]
    trace_store: crate::report::TraceStoreArg,
    /// The plan file (TOML)
    #[arg(value_name = "PLAN")]
    plan: PathBuf,
}

pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let mut plan = Plan::read(&args.plan)?;
    if args.no_check_targets {
        plan.load.check_targets = false;
    }
    plan.apply_flags(&args.request.fields(), &args.request.words())?;
    let label = format!("plan {}", args.plan.display());
    let output = args.output.clone();
    let store = args.trace_store.parse()?;
    if store.is_some() && plan.load.settings.trace.is_none() {
        anyhow::bail!(
            "-trace-store: reads back the traces of the steps' traced requests: give trace = true in the plan's [load]"
        );
    }
    let how = (output, args.resume, store);
    run_checked(plan, how, &args.watch, &args.ci, &label)
}

/// Runs a checked plan into its folder (`output`, else runs/PLAN-NAME) and prints its
/// summary: `loadlab run`'s whole job once the plan is read, and `loadlab search`'s.
/// `label` names the plan in errors; `ci` says what to write for a CI job; a `store`
/// given goes over the plan's `trace_store`.
pub fn run_checked(
    mut plan: Plan,
    (output, resume, store): (Option<PathBuf>, bool, Option<report::TraceStoreHandle>),
    watch: &WatchArgs,
    ci: &CiArgs,
    label: &str,
) -> anyhow::Result<ExitCode> {
    let watch_flags = watch.check()?;
    ci.check()?;
    // Plans start their stand-ins with `{{loadlab}} simulate ...`: this very binary.
    if let Ok(exe) = std::env::current_exe() {
        plan.hook_values
            .push(("loadlab".to_owned(), exe.display().to_string()));
    }
    let output = output.unwrap_or_else(|| PathBuf::from("runs").join(folder_name(&plan.name)));
    // Monitor specs are checked before anything runs, then started afresh for each step.
    let settings = &plan.load.settings;
    crate::monitor::AttachedMonitor::new(&settings.monitor, settings.monitor_interval)
        .with_context(|| format!("{}:{}: load.monitor", plan.source_name, plan.load.line))?;
    for variant in plan.variants.iter().filter(|v| !v.monitor.is_empty()) {
        crate::monitor::AttachedMonitor::new(&variant.monitor, settings.monitor_interval)
            .with_context(|| format!("{}:{}: variant.monitor", plan.source_name, variant.line))?;
    }
    let trace_store = match (store, &plan.trace_store) {
        (None, Some(key)) => Some(
            crate::report::jaeger(&key.url)
                .with_context(|| format!("{}:{}: trace_store", plan.source_name, key.line))?,
        ),
        (store, _) => store,
    };
    let stop = StopHandle::new();
    signals::stop_on_signals(&stop, "finishing the current step")?;
    let watchers = Arc::new(Watchers::start(watch, watch_flags, "loadlab run: "));
    let options = RunOptions {
        output: output.clone(),
        resume,
        monitor: Some(crate::monitor::plan_monitors()),
        watch: Some(step_watch(Arc::clone(&watchers))),
        trace_store,
    };
    let summary =
        run_plan(&plan, &options, &stop, &mut std::io::stderr()).with_context(|| label.to_owned());
    drop(options);
    if let Some(watchers) = Arc::into_inner(watchers) {
        watchers.finish(&stop);
    }
    let summary = summary?;
    ci.write_plan(&plan, &summary)?;
    print!("{}", summary.markdown());
    eprintln!("loadlab run: the run folder is {}", output.display());
    if summary.complete {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "loadlab run: interrupted; continue with -resume -output {}",
            output.display()
        );
        Ok(ExitCode::from(130))
    }
}

/// A plan name fit for a folder.
pub fn folder_name(name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    if name.is_empty() {
        "plan".to_owned()
    } else {
        name
    }
}

/// What watches each step: the live view, Prometheus and the dashboard, as `attack`'s.
fn step_watch(watchers: Arc<Watchers>) -> WatchFactory {
    let make: Arc<MakeWatch> = Arc::new(move |config, stop, out, name| {
        let (out, watch) = watchers.watch(config, stop, out, name);
        (out, Some(watch.into_step_watch()))
    });
    WatchFactory(make)
}
