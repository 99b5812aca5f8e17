//! `cluster` against a FAKE Kubernetes API server on loopback (no cluster is reachable
//! from these machines): a tiny HTTP server that answers the calls `run_job` makes
//! (create ConfigMap and Job, list pods, the pod proxy, delete) from a script, and
//! logs them. The rendered manifests are checked against `tests/golden/*.json`
//! (`UPDATE_GOLDEN=1 cargo test -p loadlab-cluster` rewrites them; review the diff).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

use cluster::{ClusterError, Follow, ShardJob, run_job};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;

fn shard_job(shards: u32) -> ShardJob {
    ShardJob {
        name: "ramp-0123".to_owned(),
        namespace: "load".to_owned(),
        image: "registry.example/loadlab:0.1".to_owned(),
        shards,
        attack_args: ["-rate", "50000", "-duration", "60s"]
            .map(str::to_owned)
            .to_vec(),
        targets: Some("GET http://api.internal/search?q=x\n".to_owned()),
        scenarios: None,
        start_at: "2026-11-23T22:00:00Z".to_owned(),
        cpu: Some("1".to_owned()),
        memory: Some("512Mi".to_owned()),
        host_network: false,
        pull_policy: None,
    }
}

fn check_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "{}: {err}; run UPDATE_GOLDEN=1 cargo test -p loadlab-cluster",
            path.display()
        )
    });
    assert_eq!(
        expected, actual,
        "{name} differs from the golden file (UPDATE_GOLDEN=1 rewrites it; review the diff)"
    );
}

#[test]
fn the_manifests_match_the_golden_files_and_round_trip_through_the_typed_structs() {
    let (job, config_map) = shard_job(4).render();
    let job_json = serde_json::to_string_pretty(&job).expect("job json");
    let config_map = config_map.expect("targets -> a ConfigMap");
    let config_map_json = serde_json::to_string_pretty(&config_map).expect("configmap json");
    check_golden("job.json", &format!("{job_json}\n"));
    check_golden("configmap.json", &format!("{config_map_json}\n"));
    let job_back: Job = serde_json::from_str(&job_json).expect("the Job reads back");
    assert_eq!(job_back, job);
    let config_map_back: ConfigMap = serde_json::from_str(&config_map_json).expect("reads back");
    assert_eq!(config_map_back, config_map);
    let spec = job.spec.expect("spec");
    assert_eq!(
        (
            spec.completion_mode.as_deref(),
            spec.completions,
            spec.parallelism,
            spec.backoff_limit_per_index
        ),
        (Some("Indexed"), Some(4), Some(4), Some(0))
    );
    let args = spec.template.spec.expect("pod").containers[0]
        .args
        .clone()
        .expect("args");
    let shard_at = args.iter().position(|a| a == "-shard").expect("-shard");
    assert_eq!(args[shard_at + 1], "$(JOB_COMPLETION_INDEX)/4");
}

#[test]
fn without_targets_there_is_no_config_map_and_names_are_checked() {
    let job = ShardJob {
        targets: None,
        scenarios: None,
        cpu: None,
        memory: None,
        ..shard_job(2)
    };
    let (rendered, config_map) = job.render();
    assert!(config_map.is_none());
    let pod = rendered.spec.expect("spec").template.spec.expect("pod");
    assert!(pod.volumes.is_none() && pod.containers[0].resources.is_none());
    let rows = [
        ("ramp-0123", true),
        ("a", true),
        ("", false),
        ("Ramp", false),
        ("-ramp", false),
        ("ramp-", false),
        ("ramp_1", false),
        (&"x".repeat(53), false),
    ];
    for (name, ok) in rows {
        assert_eq!(cluster::check_name(name).is_ok(), ok, "{name:?}");
    }
}

/// What the fake API server answers, by request.
#[derive(Clone, Copy, PartialEq)]
enum Script {
    /// Two shards that come up and finish.
    Healthy,
    /// Shard 1's pod fails before it has records.
    OneFails,
    /// The service account may not create Jobs.
    Forbidden,
    /// The namespace does not exist.
    NoNamespace,
    /// A Job of the same name exists.
    Conflict,
    /// The pods are never scheduled.
    Unschedulable,
    /// The node does not have the image, and may not pull it.
    NoImage,
    /// The pods use the node's network: no probe, `/ready` is asked through the proxy.
    HostNetwork,
}

struct FakeApi {
    address: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl FakeApi {
    fn start(script: Script) -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("addr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let server_log = Arc::clone(&log);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = Arc::clone(&server_log);
                std::thread::spawn(move || serve(stream, script, &log));
            }
        });
        FakeApi { address, log }
    }

    fn server(&self) -> String {
        format!("http://{}", self.address)
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().expect("log").clone()
    }
}

/// A client of `server`; in a tokio runtime, since the client starts a task.
fn cluster_at(server: &str) -> cluster::Cluster {
    let config = kube::Config::new(server.parse().expect("uri"));
    let client = cluster::Client::try_from(config).expect("a client");
    cluster::Cluster::new(client, server, "kubeconfig /test/kubeconfig")
}

/// Answers requests on one connection until the client closes it.
fn serve(mut stream: TcpStream, script: Script, log: &Mutex<Vec<String>>) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let Some((method, path, body_len, head_len)) = parse(&buffer) else {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        if buffer.len() < head_len + body_len {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
            continue;
        }
        let body = buffer[head_len..head_len + body_len].to_vec();
        buffer.drain(..head_len + body_len);
        let line = format!("{method} {path}");
        let calls = {
            let mut log = log.lock().expect("log");
            log.push(line.clone());
            log.iter()
                .filter(|l| l.starts_with("GET /api/v1/namespaces/load/pods?"))
                .count()
        };
        let (status, answer) = answer(script, &method, &path, &body, calls);
        let head = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            answer.len()
        );
        if stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(&answer))
            .is_err()
        {
            return;
        }
    }
}

fn parse(buffer: &[u8]) -> Option<(String, String, usize, usize)> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut request = httparse::Request::new(&mut headers);
    let head_len = match request.parse(buffer).ok()? {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => return None,
    };
    let body_len = request
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .and_then(|h| std::str::from_utf8(h.value).ok()?.parse().ok())
        .unwrap_or(0);
    Some((
        request.method?.to_owned(),
        request.path?.to_owned(),
        body_len,
        head_len,
    ))
}

fn answer(
    script: Script,
    method: &str,
    path: &str,
    body: &[u8],
    pod_lists: usize,
) -> (u16, Vec<u8>) {
    let status_json = |code: u16, reason: &str, message: &str| {
        serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": message, "reason": reason, "code": code})
        .to_string()
        .into_bytes()
    };
    let creates_job = p_is(path, "/jobs");
    match (method, path) {
        ("POST", _) if creates_job && script == Script::Forbidden => (
            403,
            status_json(
                403,
                "Forbidden",
                r#"jobs.batch is forbidden: User "viewer" cannot create resource "jobs" in API group "batch" in the namespace "load""#,
            ),
        ),
        ("POST", _) if script == Script::NoNamespace => (
            404,
            status_json(404, "NotFound", r#"namespaces "load" not found"#),
        ),
        ("POST", _) if creates_job && script == Script::Conflict => (
            409,
            status_json(
                409,
                "AlreadyExists",
                r#"jobs.batch "ramp-0123" already exists"#,
            ),
        ),
        ("GET", p) if p.ends_with("/proxy/ready") => (200, b"ready".to_vec()),
        ("POST", _) => (201, body.to_vec()),
        ("DELETE", _) => (
            200,
            br#"{"kind":"Status","apiVersion":"v1","status":"Success"}"#.to_vec(),
        ),
        ("GET", p) if p.starts_with("/api/v1/namespaces/load/pods?") => {
            (200, pod_list(script, pod_lists))
        }
        ("GET", p) if p.ends_with("/proxy/records.llr") => {
            let pod = p.split('/').nth(6).unwrap_or_default();
            (200, format!("records of {pod}").into_bytes())
        }
        ("GET", p) if p.ends_with("/proxy/bye") || p.ends_with("/proxy/stop") => {
            (200, b"ok".to_vec())
        }
        _ => (404, status_json(404, "NotFound", "not found")),
    }
}

/// Whether `path`, without its query, ends with `suffix`.
fn p_is(path: &str, suffix: &str) -> bool {
    path.split('?').next().is_some_and(|p| p.ends_with(suffix))
}

/// First look: both Pending; then Running, and done (Ready) from the third look.
fn pod_list(script: Script, look: usize) -> Vec<u8> {
    let pod = |index: u32| {
        let (phase, ready) = match (look, index, script) {
            (_, _, Script::Unschedulable | Script::NoImage) | (1, _, _) => ("Pending", "False"),
            (_, 1, Script::OneFails) if look >= 3 => ("Failed", "False"),
            // With the node's network there is no probe: Ready as soon as it runs.
            (_, _, Script::HostNetwork) => ("Running", "True"),
            (2, _, _) => ("Running", "False"),
            _ => ("Running", "True"),
        };
        let scheduled = if script == Script::Unschedulable {
            serde_json::json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/1 nodes are available: 1 Insufficient cpu."})
        } else {
            serde_json::json!({"type": "PodScheduled", "status": "True"})
        };
        let containers = if script == Script::NoImage {
            serde_json::json!([{"name": "loadlab", "image": "registry.example/loadlab:0.1",
                "imageID": "", "ready": false, "restartCount": 0, "state": {"waiting": {
                "reason": "ErrImageNeverPull",
                "message": "Container image \"registry.example/loadlab:0.1\" is not present with pull policy of Never"}}}])
        } else {
            serde_json::json!([])
        };
        serde_json::json!({
            "metadata": {"name": format!("ramp-0123-{index}-x"),
                "annotations": {cluster::INDEX_ANNOTATION: index.to_string()}},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}, scheduled],
                "containerStatuses": containers}
        })
    };
    serde_json::json!({"kind": "PodList", "apiVersion": "v1", "metadata": {},
        "items": [pod(0), pod(1)]})
    .to_string()
    .into_bytes()
}

fn run(
    script: Script,
) -> (
    Result<cluster::Gathered, ClusterError>,
    Vec<String>,
    Vec<String>,
    tempfile::TempDir,
) {
    let job = ShardJob {
        host_network: script == Script::HostNetwork,
        ..shard_job(2)
    };
    let api = FakeApi::start(script);
    let (result, lines, dir) = run_against(&api.server(), &job);
    (result, api.log(), lines, dir)
}

fn run_against(
    server: &str,
    job: &ShardJob,
) -> (
    Result<cluster::Gathered, ClusterError>,
    Vec<String>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut lines = Vec::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let result = runtime.block_on(async {
        let mut progress = |line: &str| lines.push(line.to_owned());
        let follow = Follow {
            out_dir: dir.path(),
            deadline: std::time::Duration::from_secs(30),
            pending_timeout: std::time::Duration::from_secs(1),
            stopping: &|| false,
            progress: &mut progress,
            keep: false,
        };
        run_job(&cluster_at(server), job, follow).await
    });
    (result, lines, dir)
}

#[test]
fn a_run_creates_the_objects_follows_the_pods_gathers_and_cleans_up() {
    let (result, log, lines, dir) = run(Script::Healthy);
    let gathered = result.expect("the run gathers");
    assert!(gathered.missing.is_empty(), "{gathered:?}");
    let files: Vec<u32> = gathered.files.iter().map(|(i, _)| *i).collect();
    assert_eq!(files, [0, 1]);
    for (index, path) in &gathered.files {
        assert_eq!(path, &dir.path().join(format!("shard-{index}.llr")));
        let bytes = std::fs::read_to_string(path).expect("file");
        assert_eq!(bytes, format!("records of ramp-0123-{index}-x:8099"));
    }
    let calls: Vec<&str> = log
        .iter()
        .map(|l| l.split('?').next().unwrap_or(l))
        .collect();
    assert_eq!(calls[0], "POST /api/v1/namespaces/load/configmaps");
    assert_eq!(calls[1], "POST /apis/batch/v1/namespaces/load/jobs");
    assert!(
        calls.contains(&"GET /api/v1/namespaces/load/pods/ramp-0123-1-x:8099/proxy/records.llr")
    );
    assert!(calls.contains(&"GET /api/v1/namespaces/load/pods/ramp-0123-0-x:8099/proxy/bye"));
    assert!(calls.contains(&"DELETE /apis/batch/v1/namespaces/load/jobs/ramp-0123"));
    assert!(calls.contains(&"DELETE /api/v1/namespaces/load/configmaps/ramp-0123-targets"));
    assert_eq!(
        lines[1..],
        [
            "2 shards: 2 Pending (0 done)",
            "2 shards: 2 Running (0 done)",
            "2 shards: 2 Running (2 done)"
        ]
    );
}

#[test]
fn a_failed_shard_is_named_missing_and_the_others_are_kept() {
    let (result, _, _, _) = run(Script::OneFails);
    let gathered = result.expect("the run gathers what it can");
    assert_eq!(gathered.files.len(), 1);
    assert_eq!(gathered.files[0].0, 0);
    assert_eq!(gathered.missing.len(), 1);
    let (index, why) = &gathered.missing[0];
    assert_eq!(*index, 1);
    assert!(
        why.contains("ramp-0123-1-x") && why.contains("Failed"),
        "{why}"
    );
}

#[test]
fn no_rights_to_create_the_job_is_a_clear_error() {
    let (result, log, _, _) = run(Script::Forbidden);
    let error = result.expect_err("refused");
    let text = error.to_string();
    assert!(
        text.starts_with("the API server refused to create the Job (RBAC): ")
            && text.contains(r#"User "viewer" cannot create resource "jobs""#),
        "{text}"
    );
    // The ConfigMap it created first is still removed.
    assert!(
        log.iter()
            .any(|l| l.starts_with("DELETE /api/v1/namespaces/load/configmaps/")),
        "{log:?}"
    );
}

/// Runs `script`; the error's message, and the DELETEs the run made.
fn refusal(script: Script) -> (String, Vec<String>) {
    let (result, log, _, _) = run(script);
    let error = result.expect_err("the run fails");
    let deletes = log
        .into_iter()
        .filter(|l| l.starts_with("DELETE "))
        .map(|l| l.split('?').next().unwrap_or_default().to_owned())
        .collect();
    (error.to_string(), deletes)
}

#[test]
fn refusals_say_what_to_do_and_clean_up_only_what_the_run_created() {
    let job = "DELETE /apis/batch/v1/namespaces/load/jobs/ramp-0123";
    let config_map = "DELETE /api/v1/namespaces/load/configmaps/ramp-0123-targets";
    let rows: [(Script, &[&str], &[&str]); 4] = [
        (
            Script::NoNamespace,
            &[
                r#"namespace "load" does not exist"#,
                "kubectl create namespace load",
            ],
            &[],
        ),
        (
            // The other run's Job stays; this run's ConfigMap goes.
            Script::Conflict,
            &[
                r#"a run named "ramp-0123" already exists in namespace load"#,
                "kubectl delete job,configmap -n load -l loadlab.dev/run=ramp-0123",
            ],
            &[config_map],
        ),
        (
            Script::Unschedulable,
            &[
                "pod ramp-0123-0-x still Pending after ",
                "the scheduler says: 0/1 nodes are available: 1 Insufficient cpu.",
            ],
            &[job, config_map],
        ),
        (
            Script::NoImage,
            &[
                "pod ramp-0123-0-x cannot run image registry.example/loadlab:0.1: ErrImageNeverPull: ",
                "is not present with pull policy of Never",
            ],
            &[job, config_map],
        ),
    ];
    for (script, wants, deletes) in rows {
        let (text, deleted) = refusal(script);
        for want in wants {
            assert!(text.contains(want), "{text:?} lacks {want:?}");
        }
        assert_eq!(deleted, *deletes, "{text}");
    }
}

#[test]
fn an_api_server_that_is_not_there_is_named_with_the_kubeconfig() {
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let server = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let (result, _, _) = run_against(&server, &shard_job(2));
    let text = result.expect_err("nothing answers").to_string();
    assert!(
        text.starts_with(&format!(
            "cannot reach the API server {server} (from kubeconfig /test/kubeconfig) to create the targets ConfigMap: "
        )) && text.to_lowercase().contains("refused"),
        "{text}"
    );
}

#[test]
fn with_the_node_network_each_shard_is_asked_on_its_own_port() {
    let (result, log, _, _) = run(Script::HostNetwork);
    let gathered = result.expect("the run gathers");
    assert_eq!(gathered.files.len(), 2, "{gathered:?}");
    for want in [
        "GET /api/v1/namespaces/load/pods/ramp-0123-0-x:8099/proxy/ready",
        "GET /api/v1/namespaces/load/pods/ramp-0123-1-x:8100/proxy/ready",
        "GET /api/v1/namespaces/load/pods/ramp-0123-1-x:8100/proxy/records.llr",
    ] {
        assert!(log.iter().any(|l| l == want), "{want} not in {log:?}");
    }
    let (job, _) = ShardJob {
        host_network: true,
        pull_policy: Some("Never".to_owned()),
        ..shard_job(2)
    }
    .render();
    let pod = job.spec.expect("spec").template.spec.expect("pod");
    let container = &pod.containers[0];
    assert_eq!(
        (
            pod.host_network,
            pod.dns_policy.as_deref(),
            container.image_pull_policy.as_deref(),
            container.readiness_probe.is_some(),
            container.ports.is_some(),
        ),
        (
            Some(true),
            Some("ClusterFirstWithHostNet"),
            Some("Never"),
            false,
            false
        )
    );
    let args = container.args.clone().expect("args");
    assert!(args.contains(&"-port-per-index".to_owned()), "{args:?}");
}

#[test]
fn a_scenarios_file_ships_beside_the_targets_and_is_passed_to_every_shard() {
    let job = ShardJob {
        scenarios: Some("[[scenario]]\nname = \"a\"\nrate = 10\n".to_owned()),
        ..shard_job(2)
    };
    let (job, config_map) = job.render();
    let files = config_map.and_then(|map| map.data).expect("a ConfigMap");
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["scenarios.toml", "targets.txt"]
    );
    let pod = job.spec.expect("spec").template.spec.expect("pod");
    let args = pod.containers[0].args.clone().expect("args");
    let at = args
        .iter()
        .position(|arg| arg == "-scenarios")
        .expect("-scenarios");
    assert_eq!(args[at + 1], "/etc/loadlab/scenarios.toml");
    let alone = ShardJob {
        targets: None,
        scenarios: Some("x".to_owned()),
        ..shard_job(1)
    };
    let files = alone
        .render()
        .1
        .and_then(|map| map.data)
        .expect("a ConfigMap");
    assert_eq!(files.keys().collect::<Vec<_>>(), ["scenarios.toml"]);
}
