//! Sharded steps (`[load] shards = N`): a step run as N shards of one run, so a plan
//! can ask for more than one machine sends. [`run_shards`] writes the step's attacks
//! as a scenarios file (`render`), starts every shard with one time zero (`command`:
//! N local `loadlab attack -shard I/N -start-at T` children, a command template per
//! shard, or one `loadlab kube run`), waits for them within the step's length and a
//! margin, and says which shard did not deliver its share ([`Sharded`]). The step then
//! reads the shards' record files together, as `loadlab report shard-*.llr` does.
//!
//! Each shard judges its own stop rules (its share of the load, as `attack -shard`
//! does). Ctrl-C, or a shard still running past the deadline, sends SIGTERM to every
//! shard's process group (an attack drains and keeps its records), then SIGKILL after
//! a grace period.

mod command;
mod render;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use engine::StopHandle;

pub use command::PLACEHOLDERS;
use command::{ShardJob, fill_template, kube_args, local_args};
pub use render::run_flags;

use crate::cells::Cell;
use crate::plan::{Plan, Via};

/// Past the step's start delay and length: a shard still running then is stopped.
const MARGIN: Duration = Duration::from_secs(60);
/// `kube run` schedules pods, pulls images and gathers files: more room.
const KUBE_MARGIN: Duration = Duration::from_secs(600);
/// After SIGTERM, how long a shard may take to drain before SIGKILL.
const GRACE: Duration = Duration::from_secs(15);
/// `kube run` drains every pod and still gathers their records.
const KUBE_GRACE: Duration = Duration::from_secs(120);
/// How often the shards are checked for their end, the deadline and Ctrl-C.
const POLL: Duration = Duration::from_millis(50);
/// The longest line of a shard's output quoted in the step's row.
const MAX_LINE: usize = 300;

/// What a sharded step's shards left.
#[derive(Debug, Default, PartialEq)]
pub struct Sharded {
    /// The record files the shards wrote, in shard order.
    pub files: Vec<PathBuf>,
    /// One sentence per shard that did not deliver its share (which shard, its exit
    /// status, its last line of output); empty when every shard did, or on Ctrl-C.
    pub failures: Vec<String>,
}

/// A started shard (or `kube run` for all of them).
struct Running {
    child: Child,
    /// Its stdout and stderr.
    log: PathBuf,
    status: Option<ExitStatus>,
}

/// Runs the cell's step as the plan's shards, in `dir` (`scenarios.toml`,
/// `shard-I.llr`, each shard's output in `shard-I.txt`, or `kube.txt`).
pub fn run_shards(
    plan: &Plan,
    cell: &Cell,
    dir: &Path,
    stop: &StopHandle,
) -> Result<Sharded, String> {
    let sharding = plan
        .load
        .shards
        .as_ref()
        .ok_or("internal: the step is not sharded")?;
    let dir = std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    clear_old_shards(&dir)?;
    let scenarios = dir.join("scenarios.toml");
    let step = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    let title = format!(
        "plan {:?}, step {}: its {} shards' attacks (written by loadlab run)",
        plan.name,
        step.unwrap_or_default(),
        sharding.count
    );
    let text = render::scenarios_toml(plan, cell, &title)?;
    std::fs::write(&scenarios, text)
        .map_err(|e| format!("cannot write {}: {e}", scenarios.display()))?;
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this binary to start the shards: {e}"))?;
    let length = plan.load.warmup + crate::step_fields::measured(plan, cell);
    let start_at_ns = (engine::unix_now_ns() + sharding.start_delay.as_nanos() as u64)
        .div_ceil(1_000_000)
        * 1_000_000;
    let jobs: Vec<ShardJob> = (0..sharding.count)
        .map(|index| ShardJob {
            index,
            count: sharding.count,
            start_at: record::format_timestamp(start_at_ns),
            scenarios: scenarios.clone(),
            output: dir.join(format!("shard-{index}.llr")),
            exe: exe.clone(),
            flags: run_flags(&plan.load.run, &plan.load.attack_origin),
        })
        .collect();
    let kube = matches!(sharding.via, Via::Kube(_));
    let deadline = sharding.start_delay + length + if kube { KUBE_MARGIN } else { MARGIN };
    let mut running = start(plan, &sharding.via, &jobs, &dir, deadline)?;
    let timed_out = wait_all(
        &mut running,
        deadline,
        if kube { KUBE_GRACE } else { GRACE },
        stop,
    );
    let files: Vec<PathBuf> = jobs
        .iter()
        .map(|job| job.output.clone())
        .filter(|path| std::fs::metadata(path).is_ok_and(|m| m.len() > 0))
        .collect();
    let failures = if stop.is_stopping() {
        Vec::new()
    } else {
        failures(&jobs, &running, &files, timed_out.then_some(deadline))
    };
    Ok(Sharded { files, failures })
}

/// A step run again (`-resume` after Ctrl-C) starts from no shard files.
fn clear_old_shards(dir: &Path) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let old = name.starts_with("shard-") && (name.ends_with(".llr") || name.ends_with(".txt"));
        if old || name == "kube.txt" {
            std::fs::remove_file(entry.path())
                .map_err(|e| format!("cannot remove {}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Starts every shard; if one cannot start, those started are stopped.
fn start(
    plan: &Plan,
    via: &Via,
    jobs: &[ShardJob],
    dir: &Path,
    deadline: Duration,
) -> Result<Vec<Running>, String> {
    let commands: Vec<(Command, PathBuf)> = match via {
        Via::Local => jobs
            .iter()
            .map(|job| {
                let mut command = Command::new(&job.exe);
                command.args(local_args(job));
                (command, dir.join(format!("shard-{}.txt", job.index)))
            })
            .collect(),
        Via::Template(template) => jobs
            .iter()
            .map(|job| {
                let mut command = Command::new("sh");
                command.arg("-c").arg(fill_template(template, job));
                // As hooks: in the plan's folder.
                if !plan.base_dir.as_os_str().is_empty() {
                    command.current_dir(&plan.base_dir);
                }
                (command, dir.join(format!("shard-{}.txt", job.index)))
            })
            .collect(),
        Via::Kube(kube) => {
            let first = jobs.first().ok_or("internal: no shards")?;
            let mut command = Command::new(&first.exe);
            let count = first.count;
            command.args(kube_args(
                kube,
                count,
                &first.scenarios,
                dir,
                deadline,
                &first.flags,
            ));
            vec![(command, dir.join("kube.txt"))]
        }
    };
    let mut running = Vec::new();
    for (mut command, log) in commands {
        match spawn(&mut command, &log) {
            Ok(child) => running.push(Running {
                child,
                log,
                status: None,
            }),
            Err(why) => {
                let stop = StopHandle::new();
                stop.drain();
                wait_all(&mut running, Duration::ZERO, GRACE, &stop);
                return Err(why);
            }
        }
    }
    Ok(running)
}

/// Starts `command` in a process group of its own (a signal then reaches what a
/// template's `sh` started too, and the terminal's Ctrl-C reaches only this process,
/// which drains the shards itself), its output into `log`.
fn spawn(command: &mut Command, log: &Path) -> Result<Child, String> {
    let out =
        std::fs::File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start a shard ({:?}): {e}", command.get_program()))
}

/// Waits for every child; past `deadline`, or on Ctrl-C, SIGTERM to each, then
/// SIGKILL after `grace`. Returns whether the deadline passed.
fn wait_all(
    running: &mut [Running],
    deadline: Duration,
    grace: Duration,
    stop: &StopHandle,
) -> bool {
    let started = Instant::now();
    let mut terminated: Option<Instant> = None;
    let mut killed = false;
    let mut timed_out = false;
    loop {
        for shard in running.iter_mut().filter(|s| s.status.is_none()) {
            if let Ok(Some(status)) = shard.child.try_wait() {
                shard.status = Some(status);
            }
        }
        let left: Vec<&Running> = running.iter().filter(|s| s.status.is_none()).collect();
        if left.is_empty() {
            return timed_out;
        }
        match terminated {
            None if stop.is_stopping() || started.elapsed() >= deadline => {
                timed_out = !stop.is_stopping();
                left.iter()
                    .for_each(|s| signal(&s.child, rustix::process::Signal::TERM));
                terminated = Some(Instant::now());
            }
            Some(at) if !killed && at.elapsed() >= grace => {
                left.iter()
                    .for_each(|s| signal(&s.child, rustix::process::Signal::KILL));
                killed = true;
            }
            _ => {}
        }
        std::thread::sleep(POLL);
    }
}

/// `signal` to the child's process group (it leads it).
fn signal(child: &Child, signal: rustix::process::Signal) {
    // Gone already: nothing to stop.
    let _ = rustix::process::kill_process_group(rustix::process::Pid::from_child(child), signal);
}

/// Why each shard that did not deliver did not: its exit status, a missing file, the
/// deadline; with the last line it wrote.
fn failures(
    jobs: &[ShardJob],
    running: &[Running],
    files: &[PathBuf],
    timed_out: Option<Duration>,
) -> Vec<String> {
    let one_command = running.len() == 1 && jobs.len() > 1;
    jobs.iter()
        .enumerate()
        .filter_map(|(i, job)| {
            let shard = running.get(if one_command { 0 } else { i })?;
            let has_file = files.contains(&job.output);
            let status = shard.status;
            // A stop rule's exit status (3 to 6) is the shard's own verdict, not a failure.
            let status_ok = status.is_some_and(|s| s.success() || matches!(s.code(), Some(3..=6)));
            if has_file && (status_ok || one_command) && timed_out.is_none() {
                return None;
            }
            let name = format!("shard {}/{}", job.index, job.count);
            let what = match (timed_out, status) {
                (Some(limit), _) => {
                    format!("still running after {}; stopped", units::GoDuration(limit))
                }
                (None, Some(status)) if one_command => {
                    format!("no record file (kube run: {status})")
                }
                (None, Some(status)) if has_file => format!("failed ({status})"),
                (None, Some(status)) => format!("failed ({status}; no record file)"),
                (None, None) => "failed (no exit status)".to_owned(),
            };
            Some(format!("{name} {what}: {}", last_line(&shard.log)))
        })
        .collect()
}

/// The last line a shard wrote, or that it wrote none.
fn last_line(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let line = text.lines().rev().map(str::trim).find(|l| !l.is_empty());
    match line {
        Some(line) if line.len() > MAX_LINE => {
            let mut end = MAX_LINE;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}...", &line[..end])
        }
        Some(line) => line.to_owned(),
        None => format!("it wrote nothing ({})", log.display()),
    }
}
