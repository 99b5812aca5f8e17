//! [`run_job`]: apply a [`ShardJob`], follow its pods, fetch each shard's records
//! through the API server's pod proxy once the shard is over, and clean up.
//!
//! Each pod runs `loadlab kube shard`: its attack, then a small server on
//! [`RECORDS_PORT`] whose `/ready` turns 200 when the records are written (the pod's
//! readiness probe), `/records.llr` serves them, `/stop` drains a running attack (as
//! Ctrl-C would) and `/bye` lets the pod exit. So nothing but the API server has to be
//! reachable from where `loadlab kube run` runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams, PropagationPolicy};

use crate::ClusterError;
use crate::job::{INDEX_ANNOTATION, RECORDS_PORT, RUN_LABEL, ShardJob};

/// How often the pods are looked at.
const POLL: Duration = Duration::from_secs(2);

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
}

/// How the run is followed and when it gives up.
pub struct Follow<'a> {
    /// Where the record files go (`shard-I.llr`).
    pub out_dir: &'a Path,
    /// The longest the whole run may take (scheduling, start, attack, gathering).
    pub deadline: Duration,
    /// True once the user asked to stop (Ctrl-C): running shards are drained.
    pub stopping: &'a (dyn Fn() -> bool + Sync),
    /// Gets one line per change of the pods' state.
    pub progress: &'a mut (dyn FnMut(&str) + Send),
    /// Leave the Job and its ConfigMap in the cluster afterwards.
    pub keep: bool,
}

/// Applies `job`, waits for its shards, gathers their records; see the module docs.
pub async fn run_job(
    client: Client,
    job: &ShardJob,
    mut follow: Follow<'_>,
) -> Result<Gathered, ClusterError> {
    let (job_object, config_map) = job.render();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &job.namespace);
    let jobs: Api<Job> = Api::namespaced(client.clone(), &job.namespace);
    if let Some(config_map) = &config_map {
        config_maps
            .create(&PostParams::default(), config_map)
            .await
            .map_err(|e| ClusterError::api("create the targets ConfigMap", e))?;
    }
    let created = jobs
        .create(&PostParams::default(), &job_object)
        .await
        .map_err(|e| ClusterError::api("create the Job", e));
    let outcome = match created {
        Ok(_) => {
            (follow.progress)(&format!(
                "job {}/{} created: {} shards starting at {}",
                job.namespace, job.name, job.shards, job.start_at
            ));
            follow_and_gather(&client, job, &mut follow).await
        }
        Err(err) => Err(err),
    };
    if !follow.keep {
        let delete = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        let _ = jobs.delete(&job.name, &delete).await;
        if config_map.is_some() {
            let _ = config_maps.delete(&job.config_map_name(), &delete).await;
        }
    }
    outcome
}

async fn follow_and_gather(
    client: &Client,
    job: &ShardJob,
    follow: &mut Follow<'_>,
) -> Result<Gathered, ClusterError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &job.namespace);
    let started = Instant::now();
    let mut last_line = String::new();
    let mut drained = false;
    let shards = loop {
        let shards = list_shards(&pods, job).await?;
        let line = state_line(&shards, job.shards);
        if line != last_line {
            (follow.progress)(&line);
            last_line = line;
        }
        if (follow.stopping)() && !drained {
            for shard in shards.values().filter(|s| !s.ready && s.phase == "Running") {
                let _ = proxy_get(client, job, &shard.pod, "stop").await;
            }
            drained = true;
        }
        let settled = (0..job.shards).all(|index| {
            shards
                .get(&index)
                .is_some_and(|s| s.ready || matches!(s.phase.as_str(), "Failed" | "Succeeded"))
        });
        if settled || started.elapsed() > follow.deadline {
            break shards;
        }
        tokio::time::sleep(POLL).await;
    };
    gather(client, job, follow.out_dir, &shards).await
}

/// Fetches every ready shard's records, then lets its pod go.
async fn gather(
    client: &Client,
    job: &ShardJob,
    out_dir: &Path,
    shards: &BTreeMap<u32, ShardPod>,
) -> Result<Gathered, ClusterError> {
    let mut gathered = Gathered::default();
    for index in 0..job.shards {
        let Some(shard) = shards.get(&index) else {
            gathered
                .missing
                .push((index, "no pod was scheduled".to_owned()));
            continue;
        };
        if !shard.ready {
            let mut why = format!("pod {} ended {} without records", shard.pod, shard.phase);
            // The pod's last words say why (a bad flag, an unreachable target).
            if let Some(last) = last_log_line(client, job, &shard.pod).await {
                why = format!("{why}: {last}");
            }
            gathered.missing.push((index, why));
            continue;
        }
        match proxy_get(client, job, &shard.pod, "records.llr").await {
            Ok(bytes) => {
                let path = out_dir.join(format!("shard-{index}.llr"));
                std::fs::write(&path, &bytes).map_err(|source| ClusterError::Io {
                    path: path.clone(),
                    source,
                })?;
                gathered.files.push((index, path));
                let _ = proxy_get(client, job, &shard.pod, "bye").await;
            }
            Err(err) => gathered
                .missing
                .push((index, format!("fetching records: {err}"))),
        }
    }
    Ok(gathered)
}

/// The last non-empty line a pod logged, if it can be read.
async fn last_log_line(client: &Client, job: &ShardJob, pod: &str) -> Option<String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &job.namespace);
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
    pods: &Api<Pod>,
    job: &ShardJob,
) -> Result<BTreeMap<u32, ShardPod>, ClusterError> {
    let selector = format!("{RUN_LABEL}={}", job.name);
    let list = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| ClusterError::api("list the shards' pods", e))?;
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
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        });
    Some((
        index,
        ShardPod {
            pod: pod.metadata.name.clone()?,
            phase: status
                .and_then(|s| s.phase.clone())
                .unwrap_or_else(|| "Pending".to_owned()),
            ready,
        },
    ))
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

/// GET `path` on a shard pod's records server, through the API server's proxy.
async fn proxy_get(
    client: &Client,
    job: &ShardJob,
    pod: &str,
    path: &str,
) -> Result<Vec<u8>, ClusterError> {
    let uri = format!(
        "/api/v1/namespaces/{}/pods/{pod}:{RECORDS_PORT}/proxy/{path}",
        job.namespace
    );
    let request = http::Request::get(&uri)
        .body(kube::client::Body::empty())
        .map_err(|e| ClusterError::Request(format!("{uri}: {e}")))?;
    let response = client
        .send(request)
        .await
        .map_err(|e| ClusterError::api("reach a shard through the pod proxy", e))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect_bytes()
        .await
        .map_err(|e| ClusterError::api("read a shard's answer", e))?;
    if !status.is_success() {
        return Err(ClusterError::Request(format!("{uri}: HTTP {status}")));
    }
    Ok(body.to_vec())
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
