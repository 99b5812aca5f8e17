//! [`ShardProxy`]: a call to one shard's server (`loadlab kube shard`: `/ready`,
//! `/records.llr`, `/stop`, `/bye`, ...) through the API server's pod proxy, so nothing
//! but the API server has to be reachable from the coordinator. The pod of an index is
//! found by the run's label and the Job's index annotation, and remembered.

use std::collections::BTreeMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ListParams};

use crate::job::{INDEX_ANNOTATION, RUN_LABEL, records_port};
use crate::{ClusterError, classify};

/// Calls paths on the shards of one run, by index.
///
/// Give it a client without kube's default retry policy ([`connect`](crate::connect)
/// makes one): that policy retries every 503 with a growing backoff, and a shard's
/// `/ready` says 503 until its records are written, so a call would block until then.
pub struct ShardProxy {
    client: Client,
    namespace: String,
    job_name: String,
    host_network: bool,
    /// Pod names by index, as last found.
    pods: Mutex<BTreeMap<u32, String>>,
}

impl ShardProxy {
    /// The shards of the run `job_name` in `namespace`; `host_network` as the run was
    /// rendered (it decides each shard's port, see [`records_port`]).
    pub fn new(client: Client, namespace: &str, job_name: &str, host_network: bool) -> Self {
        ShardProxy {
            client,
            namespace: namespace.to_owned(),
            job_name: job_name.to_owned(),
            host_network,
            pods: Mutex::new(BTreeMap::new()),
        }
    }

    /// GET `path_and_query` (`/seconds`, `records.llr`) on shard `index`: its body on a
    /// 2xx, else an error naming the URI and the status.
    pub async fn get(&self, index: u32, path_and_query: &str) -> Result<Vec<u8>, ClusterError> {
        self.call(http::Method::GET, index, path_and_query, Vec::new())
            .await
    }

    /// POST `body` to `path_and_query` (`/stop`) on shard `index`.
    pub async fn post(
        &self,
        index: u32,
        path_and_query: &str,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, ClusterError> {
        self.call(http::Method::POST, index, path_and_query, body)
            .await
    }

    /// Remembers the pod of `index`, as the caller saw it listed.
    pub(crate) fn remember(&self, index: u32, pod: &str) {
        if let Ok(mut pods) = self.pods.lock() {
            pods.insert(index, pod.to_owned());
        }
    }

    fn forget(&self, index: u32) {
        if let Ok(mut pods) = self.pods.lock() {
            pods.remove(&index);
        }
    }

    /// The pod of `index`: remembered, or the newest listed.
    async fn pod(&self, index: u32) -> Result<String, ClusterError> {
        if let Some(pod) = self.pods.lock().ok().and_then(|p| p.get(&index).cloned()) {
            return Ok(pod);
        }
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let selector = format!("{RUN_LABEL}={}", self.job_name);
        let list = pods
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| classify("list the shards' pods", &self.namespace, e, None))?;
        let newest = list
            .items
            .iter()
            .filter(|pod| {
                pod.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(INDEX_ANNOTATION))
                    .is_some_and(|i| i == &index.to_string())
            })
            .max_by_key(|pod| pod.metadata.creation_timestamp.clone().map(|t| t.0))
            .and_then(|pod| pod.metadata.name.clone());
        let pod = newest.ok_or_else(|| {
            ClusterError::Request(format!(
                "shard {index} of {}/{} has no pod",
                self.namespace, self.job_name
            ))
        })?;
        self.remember(index, &pod);
        Ok(pod)
    }

    async fn call(
        &self,
        method: http::Method,
        index: u32,
        path_and_query: &str,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, ClusterError> {
        let pod = self.pod(index).await?;
        let uri = format!(
            "/api/v1/namespaces/{}/pods/{pod}:{}/proxy/{}",
            self.namespace,
            records_port(index, self.host_network),
            path_and_query.trim_start_matches('/')
        );
        let result = send(&self.client, &self.namespace, method, &uri, body).await;
        if result.is_err() {
            // The pod may have been replaced; look it up again next time.
            self.forget(index);
        }
        result
    }
}

async fn send(
    client: &Client,
    namespace: &str,
    method: http::Method,
    uri: &str,
    body: Vec<u8>,
) -> Result<Vec<u8>, ClusterError> {
    let request = http::Request::builder()
        .method(method)
        .uri(uri)
        .body(kube::client::Body::from(body))
        .map_err(|e| ClusterError::Request(format!("{uri}: {e}")))?;
    let response = client
        .send(request)
        .await
        .map_err(|e| classify("reach a shard through the pod proxy", namespace, e, None))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect_bytes()
        .await
        .map_err(|e| ClusterError::api("read a shard's answer", e))?;
    if status == http::StatusCode::FORBIDDEN {
        // The API server's Status says who may not do what; a shard never answers 403.
        let message = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|status| status.get("message")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).trim().to_owned());
        return Err(ClusterError::Forbidden {
            what: "reach a shard through the pod proxy",
            message,
        });
    }
    if !status.is_success() {
        return Err(ClusterError::Request(format!("{uri}: HTTP {status}")));
    }
    Ok(body.to_vec())
}
