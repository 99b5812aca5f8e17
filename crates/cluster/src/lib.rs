//! `loadlab kube`: one run over N generator pods on Kubernetes, with exactly one
//! machine's load (each pod sends its `-shard I/N` of the schedule, all from one
//! `-start-at`), and one merged result.
//!
//! - [`ShardJob`] (`job.rs`) renders the objects: an Indexed Job (`completionMode:
//!   Indexed`, parallelism = completions = N, `backoffLimitPerIndex: 0`, the shard from
//!   `JOB_COMPLETION_INDEX`, preferred anti-affinity so shards spread over nodes,
//!   requests = limits) and a ConfigMap with the targets file. The types are
//!   `k8s-openapi`'s, so a field Kubernetes does not know cannot be written.
//! - [`run_job`] (`gather.rs`) applies them with the `kube` client (kubeconfig or
//!   in-cluster credentials, as kubectl finds them: [`connect`]), follows the pods,
//!   fetches each shard's records through the API server's pod proxy, and cleans up.
//!   [`Gathered`] names the record files and the shards that are missing, with why.
//!   [`gather_run`] does the fetching for a run whose coordinator died.
//! - [`ShardProxy`] (`proxy.rs`) calls a path on one shard's server through the pod
//!   proxy, while the run goes on.
//!
//! Errors are [`ClusterError`]; the API server's refusals that a user can act on (no
//! rights, no namespace, a name taken, an image the node cannot run, a pod that is never
//! scheduled) have their own variants, with what to do.

#![warn(missing_docs)]

mod gather;
mod job;
mod proxy;

use std::path::PathBuf;

pub use gather::{Follow, Gathered, gather_run, run_job};
pub use job::{
    INDEX_ANNOTATION, RECORDS_PORT, RUN_LABEL, ShardJob, TARGETS_MOUNT, check_name, records_port,
};
pub use kube::Client;
pub use proxy::ShardProxy;

/// What went wrong talking to the cluster or writing what came back.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// An API call failed in a way without a variant of its own.
    #[error("cannot {what}: {cause}")]
    Api {
        /// What was being done.
        what: &'static str,
        /// The client's error (the API server's status when it answered), said in the
        /// message (not a `source`, so a chain of causes does not say it twice).
        cause: kube::Error,
    },
    /// Nothing answers at the kubeconfig's server (refused, no route, bad TLS).
    #[error("cannot reach the API server {server} (from {origin}) to {what}: {cause}")]
    Unreachable {
        /// The server URL the credentials name.
        server: String,
        /// Where the credentials came from (`kubeconfig PATH`, in-cluster).
        origin: String,
        /// What was being done.
        what: &'static str,
        /// The innermost cause (`Connection refused (os error 111)`).
        cause: String,
    },
    /// The API server refused (HTTP 403): the user lacks an RBAC right.
    #[error("the API server refused to {what} (RBAC): {message}")]
    Forbidden {
        /// What was being done.
        what: &'static str,
        /// The API server's words, which name the user, verb, resource and namespace.
        message: String,
    },
    /// The namespace does not exist.
    #[error(
        "namespace {namespace:?} does not exist: create it (kubectl create namespace {namespace}) or pick another -namespace"
    )]
    NoNamespace {
        /// The namespace asked for.
        namespace: String,
    },
    /// A Job or ConfigMap of this run's name is already there (HTTP 409).
    #[error(
        "a run named {name:?} already exists in namespace {namespace} ({message}); pick another -name, or remove it: kubectl delete job,configmap -n {namespace} -l {label}={name}"
    )]
    AlreadyExists {
        /// The run's name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// The API server's words.
        message: String,
        /// The label that selects the run's objects.
        label: &'static str,
    },
    /// No run of that name (`kube gather`).
    #[error(
        "no run named {name:?} in namespace {namespace} (kubectl get jobs -n {namespace} -l {RUN_LABEL})"
    )]
    NoRun {
        /// The run's name.
        name: String,
        /// Its namespace.
        namespace: String,
    },
    /// The node cannot start a shard's container (no image, a bad image, a refused
    /// container): every shard runs the same image, so the run stops at once.
    #[error("pod {pod} cannot run image {image}: {reason}: {message}")]
    NotRunnable {
        /// The pod.
        pod: String,
        /// The image it asks for.
        image: String,
        /// The kubelet's reason (`ErrImageNeverPull`, `ImagePullBackOff`, ...).
        reason: String,
        /// The kubelet's words.
        message: String,
    },
    /// A shard's pod stayed Pending past `-pending-timeout`.
    #[error("pod {pod} still Pending after {waited_s}s: {why}")]
    Pending {
        /// The pod.
        pod: String,
        /// How long it was seen Pending.
        waited_s: u64,
        /// The scheduler's message (PodScheduled condition), or what the pod waits for.
        why: String,
    },
    /// A request could not be built or was refused by a shard.
    #[error("{0}")]
    Request(String),
    /// No cluster credentials were found.
    #[error("no Kubernetes credentials (KUBECONFIG, ~/.kube/config or in-cluster): {0}")]
    NoCluster(String),
    /// A shard's record file could not be written.
    #[error("cannot write {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl ClusterError {
    fn api(what: &'static str, source: kube::Error) -> ClusterError {
        ClusterError::Api {
            what,
            cause: source,
        }
    }
}

/// A client and where it points, for messages that name the server and the kubeconfig.
#[derive(Clone)]
pub struct Cluster {
    /// The client.
    pub client: Client,
    /// The API server's URL.
    pub server: String,
    /// Where the credentials came from: `kubeconfig PATH` or `in-cluster service account`.
    pub origin: String,
}

impl Cluster {
    /// A cluster from an existing client (tests, a client configured by hand).
    pub fn new(client: Client, server: &str, origin: &str) -> Cluster {
        Cluster {
            client,
            server: server.to_owned(),
            origin: origin.to_owned(),
        }
    }

    /// `err`, from doing `what` in `namespace`, as the variant a user can act on.
    pub(crate) fn error(
        &self,
        what: &'static str,
        namespace: &str,
        err: kube::Error,
    ) -> ClusterError {
        classify(what, namespace, err, Some(self))
    }
}

/// Sorts an API error into the variants above; `cluster` names the server when the
/// API server could not be reached.
pub(crate) fn classify(
    what: &'static str,
    namespace: &str,
    err: kube::Error,
    cluster: Option<&Cluster>,
) -> ClusterError {
    match &err {
        kube::Error::Api(status) if status.code == 403 => ClusterError::Forbidden {
            what,
            message: status.message.clone(),
        },
        kube::Error::Api(status)
            if status.code == 404
                && status
                    .message
                    .starts_with(&format!("namespaces \"{namespace}\"")) =>
        {
            ClusterError::NoNamespace {
                namespace: namespace.to_owned(),
            }
        }
        kube::Error::HyperError(_) | kube::Error::Service(_) => ClusterError::Unreachable {
            server: cluster.map_or_else(|| "(unknown)".to_owned(), |c| c.server.clone()),
            origin: cluster.map_or_else(|| "the client".to_owned(), |c| c.origin.clone()),
            what,
            cause: innermost(&err),
        },
        _ => ClusterError::api(what, err),
    }
}

/// The last cause in an error's chain: the one that says what happened.
fn innermost(err: &(dyn std::error::Error + 'static)) -> String {
    let mut last: &(dyn std::error::Error + 'static) = err;
    while let Some(source) = last.source() {
        last = source;
    }
    last.to_string()
}

/// A client from the kubeconfig (`KUBECONFIG`, `~/.kube/config`) or the pod's own
/// service account, as kubectl would find them; without kube's retries of 503s (see
/// [`ShardProxy`]).
pub async fn connect() -> Result<Cluster, ClusterError> {
    let mut config = kube::Config::infer()
        .await
        .map_err(|e| ClusterError::NoCluster(e.to_string()))?;
    // kube's default policy retries a 503 with a backoff that grows to minutes; a shard
    // answers 503 to `/ready` until its records are written, and the follow loop polls
    // on its own clock, so a 503 must come back at once.
    config.default_retry = false;
    let server = config.cluster_url.to_string();
    let origin = match std::env::var("KUBECONFIG") {
        Ok(path) if !path.is_empty() => format!("kubeconfig {path}"),
        _ => {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            match home.map(|h| h.join(".kube/config")) {
                Some(path) if path.is_file() => format!("kubeconfig {}", path.display()),
                _ => "in-cluster service account".to_owned(),
            }
        }
    };
    let client = Client::try_from(config).map_err(|e| ClusterError::NoCluster(e.to_string()))?;
    Ok(Cluster {
        client,
        server,
        origin,
    })
}
