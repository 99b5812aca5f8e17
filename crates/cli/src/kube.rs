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

/// Run one attack over N generator pods of a Kubernetes cluster.
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
    /// The shards start together this long after the Job is created (time for
    /// scheduling and pulling the image)
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = duration_flag)]
    start_delay: Duration,
    /// CPU requested and allowed per pod (e.g. 1, 500m)
    #[arg(long, value_name = "CPU")]
    cpu: Option<String>,
    /// Memory requested and allowed per pod (e.g. 512Mi)
    #[arg(long, value_name = "SIZE")]
    memory: Option<String>,
    /// The attack's flags (-rate, -duration, ...); -shard, -start-at, -output and
    /// -targets are set per pod
    #[arg(last = true, value_name = "ATTACK FLAGS")]
    attack: Vec<String>,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    job: JobArgs,
    /// Where the shards' record files go [default: kube-NAME]
    #[arg(long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// Give up on shards not done after this long
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = duration_flag)]
    deadline: Duration,
    /// Leave the Job and its ConfigMap in the cluster afterwards
    #[arg(long)]
    keep: bool,
}

#[derive(clap::Args, Debug)]
struct ShardArgs {
    /// Where the records are served once the attack is over
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8099")]
    serve: String,
    /// Serve the records this long at most, waiting for `loadlab kube run` to fetch them
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = duration_flag)]
    linger: Duration,
    /// The attack's flags, with -output
    #[arg(last = true, value_name = "ATTACK FLAGS")]
    attack: Vec<String>,
}

/// A duration flag (`90s`, `1h30m`), as every duration flag reads.
fn duration_flag(text: &str) -> Result<Duration, String> {
    units::parse_duration(text).map_err(|err| err.to_string())
}

pub fn run(args: KubeArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        KubeAction::Render(job) => render(&job),
        KubeAction::Run(run) => run_job(&run),
        KubeAction::Shard(shard) => {
            crate::kube_shard::run(&shard.serve, shard.linger, &shard.attack)
        }
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
    let targets = match &args.targets {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("-targets {}", path.display()))?,
        ),
        None => None,
    };
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
        start_at: start_at.round(jiff::Unit::Second)?.to_string(),
        cpu: args.cpu.clone(),
        memory: args.memory.clone(),
    })
}

/// Parses `loadlab attack FLAGS` as the pods will; the flags the job sets per pod are
/// refused, since a second value would be ambiguous.
fn check_attack_flags(flags: &[String]) -> anyhow::Result<()> {
    const SET_PER_POD: &[&str] = &["shard", "start-at", "output", "targets"];
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
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("kube-{}", job.name)));
    std::fs::create_dir_all(&output).with_context(|| format!("-output {}", output.display()))?;
    let stop = StopHandle::new();
    signals::stop_on_signals(&stop, "draining every shard")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the Kubernetes client")?;
    let gathered = runtime.block_on(async {
        let client = cluster::client().await?;
        let mut progress = |line: &str| eprintln!("loadlab kube: {line}");
        let follow = Follow {
            out_dir: &output,
            deadline: args.deadline,
            stopping: &|| stop.is_stopping(),
            progress: &mut progress,
            keep: args.keep,
        };
        cluster::run_job(client, &job, follow).await
    })?;
    for (index, why) in &gathered.missing {
        eprintln!("loadlab kube: shard {index}/{} missing: {why}", job.shards);
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
