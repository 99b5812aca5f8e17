//! [`run_job`]: apply a [`ShardJob`], follow its pods, fetch each shard's records
//! through the API server's pod proxy once the shard is over, and clean up;
//! [`gather_run`]: the fetching alone, for a run whose coordinator died.
//!
//! Each pod runs `loadlab kube shard`: its attack, then a small server on
//! [`records_port`](crate::records_port) whose `/ready` turns 200 when the records are
//! written (the pod's readiness probe, or asked through the proxy when the pods use the
//! node's network), `/records.llr` serves them, `/stop` drains a running attack (as
//! Ctrl-C would) and `/bye` lets the pod exit. So nothing but the API server has to be
//! reachable from where `loadlab kube run` runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams, PropagationPolicy};

use crate::job::{INDEX_ANNOTATION, RUN_LABEL, ShardJob};
use crate::proxy::ShardProxy;
use crate::{Cluster, ClusterError};

/// How often the pods are looked at.
const POLL: Duration = Duration::from_secs(2);
/// The kubelet's reasons for a container that will not start: every shard runs the same
/// image, so one of these stops the run at once rather than at the deadline.
/// (`ErrImagePull` alone may pass; it turns into `ImagePullBackOff` if it does not.)
const NOT_RUNNABLE: &[&str] = &[
    "ErrImageNeverPull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerError",
    "CreateContainerConfigError",
    "RunContainerError",
    "StartError",
    "ContainerCannotRun",
];
/// The pseudo-phase of a pod that was listed once and then was not.
const DELETED: &str = "Deleted";

/// What came back from a run.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Gathered {
    /// Each shard's record file, by index.
    pub files: Vec<(u32, PathBuf)>,
    /// Shards without records, with why.
    pub missing: Vec<(u32, String)>,
}

/// One shard as last seen.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ShardPod {
    pod: String,
    phase: String,
    ready: bool,
    /// Why the container does not run: the kubelet's (reason, message).
    blocked: Option<(String, String)>,
    /// The scheduler's message while the pod is not scheduled.
    unscheduled: Option<String>,
}

/// How the run is followed and when it gives up.
pub struct Follow<'a> {
    /// Where the record files go (`shard-I.llr`).
    pub out_dir: &'a Path,
    /// The longest the whole run may take (scheduling, start, attack, gathering).
    pub deadline: Duration,
    /// The longest a shard's pod may stay Pending (unscheduled, or its image not there).
    pub pending_timeout: Duration,
    /// True once the user asked to stop (Ctrl-C): running shards are drained.
    pub stopping: &'a (dyn Fn() -> bool + Sync),
    /// Gets one line per change of the pods' state.
    pub progress: &'a mut (dyn FnMut(&str) + Send),
    /// Leave the Job and its ConfigMap in the cluster afterwards.
    pub keep: bool,
}

/// Applies `job`, waits for its shards, gathers their records; see the module docs.
/// Whatever fails once something was created, what this run created is deleted (unless
/// `follow.keep`); what was there before (a run of the same name) is left alone.
pub async fn run_job(
    cluster: &Cluster,
    job: &ShardJob,
    mut follow: Follow<'_>,
) -> Result<Gathered, ClusterError> {
    let (job_object, config_map) = job.render();
    let config_maps: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), &job.namespace);
    let jobs: Api<Job> = Api::namespaced(cluster.client.clone(), &job.namespace);
    let refused = |what: &'static str, err: kube::Error| match &err {
        kube::Error::Api(status) if status.code == 409 => ClusterError::AlreadyExists {
            name: job.name.clone(),
            namespace: job.namespace.clone(),
            message: status.message.clone(),
            label: RUN_LABEL,
        },
        _ => cluster.error(what, &job.namespace, err),
    };
    if let Some(config_map) = &config_map {
        config_maps
            .create(&PostParams::default(), config_map)
            .await
            .map_err(|e| refused("create the targets ConfigMap", e))?;
    }
    let created = jobs
        .create(&PostParams::default(), &job_object)
        .await
        .map_err(|e| refused("create the Job", e));
    let job_created = created.is_ok();
    let outcome = match created {
        Ok(_) => {
            (follow.progress)(&format!(
                "job {}/{} created: {} shards starting at {}",
                job.namespace, job.name, job.shards, job.start_at
            ));
            follow_and_gather(cluster, job, &mut follow).await
        }
        Err(err) => Err(err),
    };
    if !follow.keep {
        let name = job_created.then_some(job.name.as_str());
        let config_map_name = config_map.is_some().then(|| job.config_map_name());
        delete_run(cluster, &job.namespace, name, config_map_name.as_deref()).await;
    }
    outcome
}

/// Deletes a run's Job (its pods go with it) and ConfigMap, as far as they exist.
async fn delete_run(
    cluster: &Cluster,
    namespace: &str,
    job: Option<&str>,
    config_map: Option<&str>,
) {
    let delete = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    if let Some(job) = job {
        let jobs: Api<Job> = Api::namespaced(cluster.client.clone(), namespace);
        let _ = jobs.delete(job, &delete).await;
    }
    if let Some(config_map) = config_map {
        let config_maps: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), namespace);
        let _ = config_maps.delete(config_map, &delete).await;
    }
}

/// What the follow loop knows between looks.
#[derive(Default)]
struct Followed {
    shards: BTreeMap<u32, ShardPod>,
    pending_since: BTreeMap<u32, Instant>,
    /// Shards whose `/ready` said yes (with the node's network there is no probe).
    ready: BTreeSet<u32>,
}

async fn follow_and_gather(
    cluster: &Cluster,
    job: &ShardJob,
    follow: &mut Follow<'_>,
) -> Result<Gathered, ClusterError> {
    let proxy = ShardProxy::new(
        cluster.client.clone(),
        &job.namespace,
        &job.name,
        job.host_network,
    );
    let started = Instant::now();
    let mut last_line = String::new();
    let mut drained = false;
    let mut followed = Followed::default();
    loop {
        let listed = list_shards(cluster, &job.namespace, &job.name).await?;
        look(&mut followed, listed, job, follow.pending_timeout)?;
        if job.host_network {
            ask_ready(&proxy, &mut followed).await;
        }
        let line = state_line(&followed.shards, job.shards);
        if line != last_line {
            (follow.progress)(&line);
            last_line = line;
        }
        if (follow.stopping)() && !drained {
            for (index, shard) in &followed.shards {
                if !shard.ready && shard.phase == "Running" {
                    proxy.remember(*index, &shard.pod);
                    let _ = proxy.post(*index, "stop", Vec::new()).await;
                }
            }
            drained = true;
        }
        let settled = (0..job.shards).all(|index| {
            followed.shards.get(&index).is_some_and(|s| {
                s.ready || matches!(s.phase.as_str(), "Failed" | "Succeeded" | DELETED)
            })
        });
        if settled || started.elapsed() > follow.deadline {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    gather(
        cluster,
        &job.namespace,
        job.shards,
        &proxy,
        follow.out_dir,
        &followed.shards,
    )
    .await
}

/// Takes in one listing: pods gone since the last look are marked deleted; a pod that
/// cannot run its image, or stays Pending too long, is an error.
fn look(
    followed: &mut Followed,
    listed: BTreeMap<u32, ShardPod>,
    job: &ShardJob,
    pending_timeout: Duration,
) -> Result<(), ClusterError> {
    for (index, shard) in &mut followed.shards {
        if !listed.contains_key(index) && !shard.ready && shard.phase != "Succeeded" {
            shard.phase = DELETED.to_owned();
        }
    }
    for (index, mut shard) in listed {
        if let Some((reason, message)) = &shard.blocked {
            return Err(ClusterError::NotRunnable {
                pod: shard.pod.clone(),
                image: job.image.clone(),
                reason: reason.clone(),
                message: message.clone(),
            });
        }
        if shard.phase == "Pending" {
            let since = *followed
                .pending_since
                .entry(index)
                .or_insert_with(Instant::now);
            if since.elapsed() > pending_timeout {
                return Err(ClusterError::Pending {
                    pod: shard.pod,
                    waited_s: since.elapsed().as_secs(),
                    why: shard.unscheduled.map_or_else(
                        || "scheduled, but its container has not started".to_owned(),
                        |message| format!("the scheduler says: {message}"),
                    ),
                });
            }
        }
        if job.host_network {
            shard.ready = followed.ready.contains(&index);
        }
        followed.shards.insert(index, shard);
    }
    Ok(())
}

/// Asks each running shard not yet known ready whether its records are written.
async fn ask_ready(proxy: &ShardProxy, followed: &mut Followed) {
    for (index, shard) in &mut followed.shards {
        if shard.ready || shard.phase != "Running" {
            continue;
        }
        proxy.remember(*index, &shard.pod);
        if proxy.get(*index, "ready").await.is_ok() {
            followed.ready.insert(*index);
            shard.ready = true;
        }
    }
}

/// Fetches the records of the run `name` whose coordinator is gone (its shards linger,
/// serving them), into `out_dir`, then deletes the run's Job and ConfigMap. The shard
/// count and the network mode are read from the Job (`host_network` forces the latter).
pub async fn gather_run(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    host_network: bool,
    out_dir: &Path,
) -> Result<Gathered, ClusterError> {
    let jobs: Api<Job> = Api::namespaced(cluster.client.clone(), namespace);
    let job = match jobs.get(name).await {
        Ok(job) => job,
        Err(kube::Error::Api(status))
            if status.code == 404 && !status.message.starts_with("namespaces") =>
        {
            return Err(ClusterError::NoRun {
                name: name.to_owned(),
                namespace: namespace.to_owned(),
            });
        }
        Err(err) => return Err(cluster.error("read the Job", namespace, err)),
    };
    let spec = job.spec.as_ref();
    let shards = spec
        .and_then(|s| s.completions)
        .unwrap_or(1)
        .max(1)
        .unsigned_abs();
    let host_network = host_network
        || spec
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|p| p.host_network)
            .unwrap_or(false);
    let proxy = ShardProxy::new(cluster.client.clone(), namespace, name, host_network);
    let mut followed = Followed {
        shards: list_shards(cluster, namespace, name).await?,
        ..Followed::default()
    };
    // Ask every running shard: a probe's Ready may lag, and there is none with the
    // node's network.
    for shard in followed.shards.values_mut() {
        shard.ready = false;
    }
    ask_ready(&proxy, &mut followed).await;
    let gathered = gather(
        cluster,
        namespace,
        shards,
        &proxy,
        out_dir,
        &followed.shards,
    )
    .await;
    let config_map = format!("{name}-targets");
    delete_run(cluster, namespace, Some(name), Some(&config_map)).await;
    gathered
}

/// Fetches every ready shard's records, then lets its pod go.
async fn gather(
    cluster: &Cluster,
    namespace: &str,
    total: u32,
    proxy: &ShardProxy,
    out_dir: &Path,
    shards: &BTreeMap<u32, ShardPod>,
) -> Result<Gathered, ClusterError> {
    let mut gathered = Gathered::default();
    for index in 0..total {
        let Some(shard) = shards.get(&index) else {
            gathered
                .missing
                .push((index, "no pod was scheduled".to_owned()));
            continue;
        };
        if !shard.ready {
            let why = unready_why(cluster, namespace, shard).await;
            gathered.missing.push((index, why));
            continue;
        }
        proxy.remember(index, &shard.pod);
        match proxy.get(index, "records.llr").await {
            Ok(bytes) => {
                let path = out_dir.join(format!("shard-{index}.llr"));
                std::fs::write(&path, &bytes).map_err(|source| ClusterError::Io {
                    path: path.clone(),
                    source,
                })?;
                gathered.files.push((index, path));
                let _ = proxy.get(index, "bye").await;
            }
            Err(err) => gathered
                .missing
                .push((index, format!("fetching records: {err}"))),
        }
    }
    Ok(gathered)
}

/// Why a shard has no records: its pod's fate and last words (a bad flag, an
/// unreachable target).
async fn unready_why(cluster: &Cluster, namespace: &str, shard: &ShardPod) -> String {
    if shard.phase == DELETED {
        return format!(
            "pod {} was deleted before its records were fetched",
            shard.pod
        );
    }
    let why = format!("pod {} ended {} without records", shard.pod, shard.phase);
    match last_log_line(cluster, namespace, &shard.pod).await {
        Some(last) => format!("{why}: {last}"),
        None => why,
    }
}

/// The last non-empty line a pod logged, if it can be read.
async fn last_log_line(cluster: &Cluster, namespace: &str, pod: &str) -> Option<String> {
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), namespace);
    let params = LogParams {
        tail_lines: Some(5),
        ..LogParams::default()
    };
    let log = pods.logs(pod, &params).await.ok()?;
    log.lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .map(str::to_owned)
}

/// The shards' pods by index (the newest pod of an index wins).
async fn list_shards(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<BTreeMap<u32, ShardPod>, ClusterError> {
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), namespace);
    let selector = format!("{RUN_LABEL}={name}");
    let mut list = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| cluster.error("list the shards' pods", namespace, e))?;
    list.items
        .sort_by_key(|pod| pod.metadata.creation_timestamp.clone().map(|t| t.0));
    Ok(list.items.iter().filter_map(shard_of).collect())
}

fn shard_of(pod: &Pod) -> Option<(u32, ShardPod)> {
    let index = pod
        .metadata
        .annotations
        .as_ref()?
        .get(INDEX_ANNOTATION)?
        .parse()
        .ok()?;
    let status = pod.status.as_ref();
    let condition = |type_: &str| {
        status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|conditions| conditions.iter().find(|c| c.type_ == type_))
    };
    let ready = condition("Ready").is_some_and(|c| c.status == "True");
    let unscheduled = condition("PodScheduled")
        .filter(|c| c.status == "False")
        .map(|c| {
            c.message
                .clone()
                .unwrap_or_else(|| c.reason.clone().unwrap_or_default())
        });
    Some((
        index,
        ShardPod {
            pod: pod.metadata.name.clone()?,
            phase: status
                .and_then(|s| s.phase.clone())
                .unwrap_or_else(|| "Pending".to_owned()),
            ready,
            blocked: blocked(pod),
            unscheduled,
        },
    ))
}

/// The kubelet's reason and message when the container cannot run, if that is the case.
fn blocked(pod: &Pod) -> Option<(String, String)> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    statuses.iter().find_map(|status| {
        let state = status.state.as_ref()?;
        let (reason, message) = match (&state.waiting, &state.terminated) {
            (Some(waiting), _) => (waiting.reason.clone()?, waiting.message.clone()),
            (None, Some(terminated)) => (terminated.reason.clone()?, terminated.message.clone()),
            (None, None) => return None,
        };
        NOT_RUNNABLE
            .contains(&reason.as_str())
            .then(|| (reason, message.unwrap_or_default()))
    })
}

/// `3 shards: 1 Pending, 2 Running (1 done)`.
fn state_line(shards: &BTreeMap<u32, ShardPod>, total: u32) -> String {
    let mut phases: BTreeMap<&str, u32> = BTreeMap::new();
    for shard in shards.values() {
        *phases.entry(shard.phase.as_str()).or_default() += 1;
    }
    let done = shards.values().filter(|s| s.ready).count();
    let phases: Vec<String> = phases.iter().map(|(p, n)| format!("{n} {p}")).collect();
    format!(
        "{total} shards: {} ({done} done)",
        if phases.is_empty() {
            "no pods yet".to_owned()
        } else {
            phases.join(", ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, index: Option<&str>, phase: Option<&str>, ready: Option<&str>) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": name,
                "annotations": index.map(|i| serde_json::json!({INDEX_ANNOTATION: i})),
            },
            "status": {
                "phase": phase,
                "conditions": ready.map(|r| vec![serde_json::json!({"type": "Ready", "status": r})]),
            },
        }))
        .expect("a pod")
    }

    #[test]
    fn shards_are_read_from_pods() {
        let rows = [
            (
                pod("a", Some("2"), Some("Running"), Some("True")),
                Some((2, "Running", true)),
            ),
            (
                pod("b", Some("0"), Some("Running"), Some("False")),
                Some((0, "Running", false)),
            ),
            (pod("c", Some("1"), None, None), Some((1, "Pending", false))),
            (pod("d", None, Some("Running"), Some("True")), None),
            (pod("e", Some("x"), Some("Running"), Some("True")), None),
        ];
        for (pod, want) in rows {
            let got = shard_of(&pod).map(|(i, s)| (i, s.phase, s.ready));
            let want = want.map(|(i, p, r)| (i, p.to_owned(), r));
            assert_eq!(got, want, "{:?}", pod.metadata.name);
        }
    }

    #[test]
    fn the_state_line_counts_phases() {
        let shards: BTreeMap<u32, ShardPod> = [
            (0, "Running", true),
            (1, "Running", false),
            (2, "Pending", false),
        ]
        .into_iter()
        .map(|(i, phase, ready)| {
            let pod = ShardPod {
                pod: format!("p{i}"),
                phase: phase.to_owned(),
                ready,
                blocked: None,
                unscheduled: None,
            };
            (i, pod)
        })
        .collect();
        assert_eq!(
            state_line(&shards, 4),
            "4 shards: 1 Pending, 2 Running (1 done)"
        );
        assert_eq!(
            state_line(&BTreeMap::new(), 2),
            "2 shards: no pods yet (0 done)"
        );
    }
}
