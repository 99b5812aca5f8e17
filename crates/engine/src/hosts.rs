//! [`HostTable`]: the distinct hosts a run talks to, resolved once before the run.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use rustls::pki_types::ServerName;

use crate::EngineError;

/// Where a host's connections go.
#[derive(Debug, Clone)]
pub(crate) enum Address {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

#[derive(Debug, Clone)]
pub(crate) struct Host {
    pub address: Address,
    /// Set for https: the name to send in SNI and check the certificate against.
    pub tls_name: Option<ServerName<'static>>,
    /// gRPC calls go here: HTTP/2 whatever `-h2c` and `-http2` say (with prior
    /// knowledge in cleartext, h2 in ALPN over TLS).
    pub grpc: bool,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct HostTable {
    pub hosts: Vec<Host>,
    /// By scheme (https or not), host, port, and whether gRPC calls go there.
    index: HashMap<(bool, String, u16, bool), usize>,
}

impl HostTable {
    /// Adds a host resolved elsewhere (by the lazy feeder); returns its local id.
    pub(crate) fn insert(&mut self, host: Host) -> usize {
        self.hosts.push(host);
        self.hosts.len() - 1
    }

    /// The id of the host `target` goes to ([`HostTable::resolve`]). gRPC calls go to
    /// a host of their own, which speaks HTTP/2 (h2c in cleartext), so the same
    /// address's HTTP targets (a flow's login beside its calls) keep their protocol.
    pub(crate) fn resolve_target(
        &mut self,
        target: &workload::Target,
        unix_socket: Option<&PathBuf>,
    ) -> Result<usize, EngineError> {
        let grpc = target.is_grpc();
        let id = self.resolve_as(&target.url, unix_socket, grpc)?;
        self.hosts[id].grpc |= grpc;
        Ok(id)
    }

    /// The id of the host for `url`, resolving it on first sight. `unix_socket` sends
    /// every connection to that socket whatever the URL says (vegeta's `-unix-socket`).
    pub(crate) fn resolve(
        &mut self,
        url: &url::Url,
        unix_socket: Option<&PathBuf>,
    ) -> Result<usize, EngineError> {
        self.resolve_as(url, unix_socket, false)
    }

    fn resolve_as(
        &mut self,
        url: &url::Url,
        unix_socket: Option<&PathBuf>,
        grpc: bool,
    ) -> Result<usize, EngineError> {
        let tls = url.scheme() == "https";
        let host = url.host_str().unwrap_or_default().to_owned();
        let port = url.port_or_known_default().unwrap_or(80);
        let key = (tls, host.clone(), port, grpc);
        if let Some(&id) = self.index.get(&key) {
            return Ok(id);
        }
        let label = format!("{host}:{port}");
        let address = match unix_socket {
            Some(path) => Address::Unix(path.clone()),
            None => {
                let bare = host.trim_start_matches('[').trim_end_matches(']');
                let mut addrs =
                    (bare, port)
                        .to_socket_addrs()
                        .map_err(|err| EngineError::Resolve {
                            host: label.clone(),
                            reason: err.to_string(),
                        })?;
                Address::Tcp(addrs.next().ok_or_else(|| EngineError::Resolve {
                    host: label.clone(),
                    reason: "no addresses".to_owned(),
                })?)
            }
        };
        let tls_name = if tls {
            let name = host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            Some(
                ServerName::try_from(name).map_err(|err| EngineError::Resolve {
                    host: label.clone(),
                    reason: err.to_string(),
                })?,
            )
        } else {
            None
        };
        self.hosts.push(Host {
            address,
            tls_name,
            grpc: false,
        });
        self.index.insert(key, self.hosts.len() - 1);
        Ok(self.hosts.len() - 1)
    }
}
