//! `loadlab kube`: one run over N generator pods on Kubernetes, with exactly one
//! machine's load (each pod sends its `-shard I/N` of the schedule, all from one
//! `-start-at`), and one merged result.
//!
//! - [`ShardJob`] (`job.rs`) renders the objects: an Indexed Job (`completionMode:
//!   Indexed`, parallelism = completions = N, `backoffLimit: 0`, the shard from
//!   `JOB_COMPLETION_INDEX`, preferred anti-affinity so shards spread over nodes,
//!   requests = limits) and a ConfigMap with the targets file. The types are
//!   `k8s-openapi`'s, so a field Kubernetes does not know cannot be written.
//! - [`run_job`] (`gather.rs`) applies them with the `kube` client (kubeconfig or
//!   in-cluster credentials, as kubectl finds them), follows the pods, fetches each
//!   shard's records through the API server's pod proxy, and cleans up. [`Gathered`]
//!   names the record files and the shards that are missing, with why.
//!
//! Errors are [`ClusterError`].

#![warn(missing_docs)]

mod gather;
mod job;

use std::path::PathBuf;

pub use gather::{Follow, Gathered, run_job};
pub use job::{INDEX_ANNOTATION, RECORDS_PORT, RUN_LABEL, ShardJob, TARGETS_MOUNT, check_name};
pub use kube::Client;

/// What went wrong talking to the cluster or writing what came back.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// An API call failed (no rights, no such namespace, unreachable).
    #[error("cannot {what}: {cause}")]
    Api {
        /// What was being done.
        what: &'static str,
        /// The client's error (the API server's status when it answered), said in the
        /// message (not a `source`, so a chain of causes does not say it twice).
        cause: kube::Error,
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

/// A client from the kubeconfig (`KUBECONFIG`, `~/.kube/config`) or the pod's own
/// service account, as kubectl would find them.
pub async fn client() -> Result<Client, ClusterError> {
    Client::try_default()
        .await
        .map_err(|e| ClusterError::NoCluster(e.to_string()))
}
