//! `loadlab kube`: one attack over N generator pods of a Kubernetes cluster (see the
//! `cluster` crate and docs/DISTRIBUTED.md): `render` prints the objects, `run`
//! applies them, follows the shards and reports their merged records, and `shard` is
//! what each pod runs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{CommandFactory, FromArgMatches};
use cluster::{Follow, ShardJob};
use engine::StopHandle;

use crate::signals;

/// Run one attack over N generator pods of a Kubernetes cluster
///
/// Each pod sends exactly its share of the one-machine schedule (`-shard I/N` from
/// the Indexed Job's `JOB_COMPLETION_INDEX`), all from one `-start-at`, so together
/// they send what one machine would; their records come back and merge into one
/// report. Everything after `--` is the attack's own flags.
///
/// Examples:
///
///   loadlab kube render -shards 4 -image registry.example/loadlab:0.1 -targets t.txt -- -rate 50000 -duration 5m > job.json
///
///   loadlab kube run -shards 4 -image registry.example/loadlab:0.1 -targets t.txt -- -rate 50000 -duration 5m
///
/// The cluster is the one kubectl would use (KUBECONFIG, ~/.kube/config, or the pod's
/// service account). Ctrl-C drains every shard, as Ctrl-C drains one attack, and
/// still gathers their records.
#[derive(clap::Args, Debug)]
// Verbatim: the examples keep their indentation (help.rs prints them unwrapped).
#[command(verbatim_doc_comment)]
pub struct KubeArgs {
    #[command(subcommand)]
    action: KubeAction,
}

#[derive(clap::Subcommand, Debug)]
enum KubeAction {
    /// Print the Job (and the targets' ConfigMap) as JSON, for `kubectl apply -f`.
    Render(JobArgs),
    /// Apply the Job, follow its shards, gather their records and report them.
    Run(RunArgs),
    /// What each pod runs: the attack, then its records served on -serve.
    Shard(ShardArgs),
    /// Fetch the records of a run whose `kube run` died (its shards linger, serving
    /// them), report them merged, and delete the run's Job.
    Gather(GatherArgs),
}

#[derive(clap::Args, Debug)]
struct JobArgs {
    /// Generator pods, each sending 1/N of the load
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    shards: u32,
    /// Container image with the static loadlab binary at /loadlab (see Containerfile)
    #[arg(long, value_name = "IMAGE")]
    image: String,
    /// Namespace of the Job
    #[arg(long, value_name = "NS", default_value = "default")]
    namespace: String,
    /// Name of the Job [default: loadlab-UNIX-SECONDS]
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Targets file, shipped to the pods in a ConfigMap
    #[arg(long, value_name = "FILE")]
    targets: Option<PathBuf>,
    /// Scenarios file (`attack -scenarios`), shipped to the pods in the same
    /// ConfigMap; the files it names must be in the image
    #[arg(long, value_name = "FILE")]
    scenarios: Option<PathBuf>,
    /// The shards start together this long after the Job is created (time for
    /// scheduling and pulling the image)
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::flags::duration_flag)]
    start_delay: Duration,
    /// CPU requested and allowed per pod (e.g. 1, 500m)
    #[arg(long, value_name = "CPU")]
    cpu: Option<String>,
    /// Memory requested and allowed per pod (e.g. 512Mi)
    #[arg(long, value_name = "SIZE")]
    memory: Option<String>,
    /// Pods use the node's network (hostNetwork), to reach a target on the node's
    /// loopback; shard I then serves its records on port 8099+I
    #[arg(long)]
    host_network: bool,
    /// The image pull policy: never (an image imported on the nodes), if-not-present, always
    #[arg(long, value_name = "POLICY")]
    pull: Option<PullPolicy>,
    /// The attack's flags (-rate, -duration, ...); -shard, -start-at, -output and
    /// -targets are set per pod
    #[arg(last = true, value_name = "ATTACK FLAGS")]
    attack: Vec<String>,
}

/// `imagePullPolicy`, as a flag.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum PullPolicy {
    Never,
    IfNotPresent,
    Always,
}

impl PullPolicy {
    fn kubernetes_name(self) -> &'static str {
        match self {
            PullPolicy::Never => "Never",
            PullPolicy::IfNotPresent => "IfNotPresent",
            PullPolicy::Always => "Always",
        }
    }
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    job: JobArgs,
    /// Where the shards' record files go [default: kube-NAME]
    #[arg(long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// Give up on shards not done after this long
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = crate::flags::duration_flag)]
    deadline: Duration,
    /// Give up when a shard's pod is still Pending after this long (not scheduled, or
    /// its image not there), naming the pod and the scheduler's message
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = crate::flags::duration_flag)]
    pending_timeout: Duration,
    /// Leave the Job and its ConfigMap in the cluster afterwards
    #[arg(long)]
    keep: bool,
    /// Serve the whole run's Prometheus series at ADDR/metrics while it runs: every
    /// shard's added up, plus each shard's health (see `loadlab steer`)
    #[arg(long, value_name = "ADDR")]
    prometheus_addr: Option<String>,
    /// Serve the whole run's page live at ADDR (the one `loadlab plot` draws over the
    /// shards' files, with their health under its header): the record files are
    /// pulled through the pod proxy as they are written, into -output/live/
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::dashboard::DEFAULT_ADDRESS)]
    dashboard: Option<String>,
}

#[derive(clap::Args, Debug)]
struct GatherArgs {
    /// The run's name (its Job's, as `kube run` printed it)
    #[arg(value_name = "NAME")]
    name: String,
    /// Namespace of the Job
    #[arg(long, value_name = "NS", default_value = "default")]
    namespace: String,
    /// Where the shards' record files go [default: kube-NAME]
    #[arg(long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// The run's pods use the node's network (read from the Job when it says so)
    #[arg(long)]
    host_network: bool,
}

#[derive(clap::Args, Debug)]
struct ShardArgs {
    /// Where the records are served once the attack is over
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8099")]
    serve: String,
    /// Serve on the -serve port plus JOB_COMPLETION_INDEX (pods on the node's network)
    #[arg(long)]
    port_per_index: bool,
    /// Serve the records this long at most, waiting for `loadlab kube run` to fetch them
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = crate::flags::duration_flag)]
    linger: Duration,
    /// The attack's flags, with -output
    #[arg(last = true, value_name = "ATTACK FLAGS")]
    attack: Vec<String>,
}

pub fn run(args: KubeArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        KubeAction::Render(job) => render(&job),
        KubeAction::Run(run) => run_job(&run),
        KubeAction::Shard(shard) => {
            let index = std::env::var("JOB_COMPLETION_INDEX").ok();
            let serve = crate::kube_shard::serve_address(
                &shard.serve,
                shard.port_per_index,
                index.as_deref(),
            )?;
            crate::kube_shard::run(&serve, shard.linger, &shard.attack)
        }
        KubeAction::Gather(gather) => gather_run(&gather),
    }
}

/// The job as asked, with its attack flags checked here rather than in N pods.
fn shard_job(args: &JobArgs) -> anyhow::Result<ShardJob> {
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| format!("loadlab-{}", jiff::Timestamp::now().as_second()));
    cluster::check_name(&name).map_err(|why| anyhow::anyhow!("-name {why}"))?;
    check_attack_flags(&args.attack)?;
    let read = |flag: &str, path: &Option<PathBuf>| -> anyhow::Result<Option<String>> {
        path.as_ref()
            .map(|path| {
                std::fs::read_to_string(path).with_context(|| format!("{flag} {}", path.display()))
            })
            .transpose()
    };
    let (targets, scenarios) = (
        read("-targets", &args.targets)?,
        read("-scenarios", &args.scenarios)?,
    );
    let start_at = jiff::Timestamp::now()
        .checked_add(args.start_delay)
        .context("-start-delay is too long")?;
    Ok(ShardJob {
        name,
        namespace: args.namespace.clone(),
        image: args.image.clone(),
        shards: args.shards,
        attack_args: args.attack.clone(),
        targets,
        scenarios,
        start_at: start_at.round(jiff::Unit::Second)?.to_string(),
        cpu: args.cpu.clone(),
        memory: args.memory.clone(),
        host_network: args.host_network,
        pull_policy: args.pull.map(|p| p.kubernetes_name().to_owned()),
    })
}

/// Parses `loadlab attack FLAGS` as the pods will; the flags the job sets per pod are
/// refused, since a second value would be ambiguous.
fn check_attack_flags(flags: &[String]) -> anyhow::Result<()> {
    const SET_PER_POD: &[&str] = &["shard", "start-at", "output", "targets", "scenarios"];
    for flag in flags {
        let name = flag.trim_start_matches('-').split('=').next().unwrap_or("");
        if flag.starts_with('-') && SET_PER_POD.contains(&name) {
            bail!("-{name} after --: loadlab kube sets it for each pod");
        }
    }
    let mut line: Vec<std::ffi::OsString> = vec!["loadlab".into(), "attack".into()];
    line.extend(flags.iter().map(Into::into));
    let line = crate::flags::normalize_long_flags(&crate::Cli::command(), line)
        .map_err(|usage| anyhow::anyhow!("attack flags after --: {usage}"))?;
    crate::Cli::command()
        .try_get_matches_from(line)
        .map_err(|err| anyhow::anyhow!("attack flags after --: {}", err.kind()))?;
    Ok(())
}

fn render(args: &JobArgs) -> anyhow::Result<ExitCode> {
    let (job, config_map) = shard_job(args)?.render();
    let mut items = vec![serde_json::to_value(&config_map)?];
    items.retain(|item| !item.is_null());
    items.push(serde_json::to_value(&job)?);
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    println!("{}", serde_json::to_string_pretty(&list)?);
    Ok(ExitCode::SUCCESS)
}

fn run_job(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let job = shard_job(&args.job)?;
    let output = output_dir(args.output.as_ref(), &job.name)?;
    let stop = StopHandle::new();
    signals::stop_on_signals(&stop, "draining every shard")?;
    let interrupted = {
        let stop = stop.clone();
        std::sync::Arc::new(move || stop.is_stopping())
    };
    let dashboard = args.dashboard.as_deref().and_then(crate::dashboard::start);
    let page = match &dashboard {
        Some(board) => Some(live_page(board, &output, job.shards)?),
        None => None,
    };
    let steering = crate::kube_steer::start(
        &job,
        args.job.start_delay,
        args.deadline,
        args.prometheus_addr.as_deref(),
        page,
        interrupted,
    )?;
    let gathered = runtime()?.block_on(async {
        let cluster = cluster::connect().await?;
        let mut progress = |line: &str| eprintln!("loadlab kube: {line}");
        let follow = Follow {
            out_dir: &output,
            deadline: args.deadline,
            pending_timeout: args.pending_timeout,
            stopping: &|| stop.is_stopping(),
            progress: &mut progress,
            keep: args.keep,
        };
        cluster::run_job(&cluster, &job, follow).await
    })?;
    let steered = steering.finish()?;
    if let Some(dashboard) = dashboard {
        dashboard.finish(Duration::ZERO, &stop);
    }
    for line in &steered.verdict {
        eprintln!("loadlab kube: {line}");
    }
    let code = report_gathered(&gathered, job.shards, &output)?;
    Ok(match &steered.fired {
        Some(fired) => ExitCode::from(fired.rule.kind().exit_code()),
        None => code,
    })
}

/// The dashboard's page over the shards' record files, pulled live into
/// `output`/live/shard-I.llr.
fn live_page(
    dashboard: &crate::dashboard::Dashboard,
    output: &Path,
    shards: u32,
) -> anyhow::Result<(Vec<crate::dashboard::Output>, crate::dashboard::RunPage)> {
    let outs = crate::steer::record_copies(&output.join("live"), shards as usize, "-output")?;
    dashboard.watch_many(outs, "loadlab kube run")
}

fn gather_run(args: &GatherArgs) -> anyhow::Result<ExitCode> {
    let output = output_dir(args.output.as_ref(), &args.name)?;
    let gathered = runtime()?.block_on(async {
        let cluster = cluster::connect().await?;
        cluster::gather_run(
            &cluster,
            &args.namespace,
            &args.name,
            args.host_network,
            &output,
        )
        .await
    })?;
    let shards = gathered.files.len() + gathered.missing.len();
    report_gathered(
        &gathered,
        u32::try_from(shards).unwrap_or(u32::MAX),
        &output,
    )
}

/// `-output`, or `kube-NAME`, made.
fn output_dir(output: Option<&PathBuf>, name: &str) -> anyhow::Result<PathBuf> {
    let output = output
        .cloned()
        .unwrap_or_else(|| PathBuf::from(format!("kube-{name}")));
    std::fs::create_dir_all(&output).with_context(|| format!("-output {}", output.display()))?;
    Ok(output)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the Kubernetes client")
}

/// Names the missing shards, then reports the gathered ones merged.
fn report_gathered(
    gathered: &cluster::Gathered,
    shards: u32,
    output: &Path,
) -> anyhow::Result<ExitCode> {
    for (index, why) in &gathered.missing {
        eprintln!("loadlab kube: shard {index}/{shards} missing: {why}");
    }
    if gathered.files.is_empty() {
        bail!("no shard came back with records");
    }
    let files: Vec<&Path> = gathered
        .files
        .iter()
        .map(|(_, path)| path.as_path())
        .collect();
    eprintln!(
        "loadlab kube: {} shard record files in {}; the merged report:",
        files.len(),
        output.display()
    );
    report(&files)
}

/// `loadlab report FILES`, as if typed.
fn report(files: &[&Path]) -> anyhow::Result<ExitCode> {
    let mut line: Vec<std::ffi::OsString> = vec!["loadlab".into(), "report".into()];
    line.extend(files.iter().map(|path| path.as_os_str().to_owned()));
    let matches = crate::Cli::command().try_get_matches_from(line)?;
    match crate::Cli::from_arg_matches(&matches)?.command {
        crate::Command::Report(args) => crate::report::run(args),
        _ => bail!("internal: `report` parsed as another command"),
    }
}
