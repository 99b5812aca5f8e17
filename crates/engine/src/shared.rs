//! [`Shared`]: what every worker reads and nobody writes during a run: rendered
//! request bytes, the host table, the TLS configuration and the per-request options.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::ClientConfig;
use workload::Target;

use crate::hosts::HostTable;
use crate::render::render_request;
use crate::{AttackConfig, EngineError, tls};

pub(crate) struct PreparedTarget {
    pub target: Target,
    pub bytes: Arc<[u8]>,
    pub host: usize,
    pub head_only: bool,
}

pub(crate) struct Shared {
    pub targets: Vec<PreparedTarget>,
    pub hosts: HostTable,
    pub tls: Option<Arc<ClientConfig>>,
    pub timeout_ns: u64,
    pub keepalive: bool,
    /// Redirects to follow; -1 follows none and counts 3xx as success (vegeta).
    pub redirects: i32,
    pub body_limit: u64,
    pub local_ip: Option<IpAddr>,
    pub unix_socket: Option<PathBuf>,
    pub attack_id: u16,
}

impl Shared {
    pub(crate) fn prepare(config: &AttackConfig) -> Result<Shared, EngineError> {
        let mut hosts = HostTable::default();
        let unix_socket: Option<&PathBuf> = config.unix_socket.as_ref();
        let list = match &config.targets {
            crate::Targets::List(list) => list.as_slice(),
            crate::Targets::Stream(_) => &[],
        };
        let targets = list
            .iter()
            .map(|target| prepare_target(target, config.keepalive, &mut hosts, unix_socket))
            .collect::<Result<Vec<_>, _>>()?;
        // A lazy stream may bring https targets later, so it always gets a TLS config.
        let lazy = matches!(config.targets, crate::Targets::Stream(_));
        let needs_tls = lazy || hosts.hosts.iter().any(|host| host.tls_name.is_some());
        let tls = if needs_tls {
            Some(tls::client_config(&config.tls)?)
        } else {
            None
        };
        Ok(Shared {
            targets,
            hosts,
            tls,
            timeout_ns: config.timeout.as_nanos().min(u128::from(u64::MAX)) as u64,
            keepalive: config.keepalive,
            redirects: config.redirects,
            body_limit: config.max_body.unwrap_or(u64::MAX),
            local_ip: config.local_addr,
            unix_socket: config.unix_socket.clone(),
            attack_id: 0,
        })
    }
}

fn prepare_target(
    target: &Target,
    keepalive: bool,
    hosts: &mut HostTable,
    unix_socket: Option<&PathBuf>,
) -> Result<PreparedTarget, EngineError> {
    Ok(PreparedTarget {
        target: target.clone(),
        bytes: render_request(target, keepalive).into(),
        host: hosts.resolve(&target.url, unix_socket)?,
        head_only: target.method == "HEAD",
    })
}
