//! [`Shared`]: what every worker reads and nobody writes during a run: each attack's
//! prepared targets and options, the host table, the TLS configuration.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use workload::{DataTable, Plan, Target};

use crate::hosts::HostTable;
use crate::render::RequestTemplate;
use crate::{AttackConfig, EngineError, RunConfig, Targets, tls};

/// A target ready to send.
pub(crate) struct PreparedTarget {
    pub target: Target,
    pub request: PreparedRequest,
    pub host: usize,
    pub head_only: bool,
    /// A static request under `-trace`: its bytes with a `traceparent` slot.
    pub traced: Option<TracedBytes>,
}

/// A static request's bytes with a `traceparent` of zeros, rendered once; each
/// sampled request copies them and writes its ids at `ids_at`.
pub(crate) struct TracedBytes {
    pub bytes: Arc<[u8]>,
    pub ids_at: usize,
}

/// What a run under `-trace` adds beside each sampled request's `traceparent`: the
/// `tracestate` of `-trace-state`, if given.
#[derive(Debug, Clone, Default)]
pub(crate) struct TraceHeaders {
    pub state: Option<workload::TraceState>,
}

impl TraceHeaders {
    /// `None` for a run without `-trace`.
    pub(crate) fn of(settings: &workload::RunSettings) -> Option<TraceHeaders> {
        settings.trace.map(|_| TraceHeaders {
            state: settings.trace_state.clone(),
        })
    }
}

/// A request's bytes: rendered once, or per request from its template.
pub(crate) enum PreparedRequest {
    Static(Arc<[u8]>),
    Templated(Arc<RequestTemplate>),
    /// A target from a stream (a replayed log line, a `-lazy` file) that cannot be
    /// sent as written: its request is an `unsafe_value` error with this text.
    Refused(Arc<str>),
}

impl PreparedTarget {
    /// A target; `trace`: what the run sends beside the ids (`-trace`). One that cannot be
    /// sent as written stops a run of fixed targets; a stream's (a replayed log line, a
    /// `-lazy` file), prepared as the run goes, is counted per request instead.
    pub(crate) fn new(
        target: Target,
        keepalive: bool,
        host: usize,
        trace: Option<&TraceHeaders>,
        streamed: bool,
    ) -> Result<PreparedTarget, EngineError> {
        let state = trace.and_then(|t| t.state.as_ref());
        let template = parsed(&target, keepalive)?.with_trace_state(state);
        match refuse_unsafe(&target, &template) {
            Ok(()) => Ok(PreparedTarget::with_template(
                target,
                template,
                host,
                trace.is_some(),
            )),
            Err(EngineError::Config(text)) if streamed => Ok(PreparedTarget {
                request: PreparedRequest::Refused(format!("{text}: not sent").into()),
                host,
                head_only: false,
                traced: None,
                target,
            }),
            Err(err) => Err(err),
        }
    }

    /// A flow step: rendered per request for its user.
    fn step(
        target: Target,
        keepalive: bool,
        host: usize,
        variables: &[String],
        trace: Option<&TraceHeaders>,
    ) -> Result<PreparedTarget, EngineError> {
        let template = RequestTemplate::for_step(&target, keepalive, variables)
            .map_err(|reason| EngineError::Config(format!("{}: {reason}", target.display_url())))?
            .with_trace_state(trace.and_then(|t| t.state.as_ref()));
        refuse_unsafe(&target, &template)?;
        Ok(PreparedTarget {
            request: PreparedRequest::Templated(Arc::new(template)),
            host,
            head_only: target.method == "HEAD",
            traced: None,
            target,
        })
    }

    fn with_template(
        target: Target,
        template: RequestTemplate,
        host: usize,
        trace: bool,
    ) -> PreparedTarget {
        let (request, traced) = if template.is_templated() {
            (PreparedRequest::Templated(Arc::new(template)), None)
        } else {
            let traced =
                (trace.then(|| template.render_traced_once()).flatten()).map(|(bytes, ids_at)| {
                    TracedBytes {
                        bytes: bytes.into(),
                        ids_at,
                    }
                });
            (
                PreparedRequest::Static(template.render_once().into()),
                traced,
            )
        };
        PreparedTarget {
            request,
            host,
            head_only: target.method == "HEAD",
            traced,
            target,
        }
    }
}

/// The request of `target`, its placeholders parsed.
fn parsed(target: &Target, keepalive: bool) -> Result<RequestTemplate, EngineError> {
    RequestTemplate::new(target, keepalive)
        .map_err(|reason| EngineError::Config(format!("{}: {reason}", target.display_url())))
}

/// The error of a request that cannot be sent as written (docs/FLOWS.md, "Values
/// from outside a request"), naming the target.
fn refuse_unsafe(target: &Target, template: &RequestTemplate) -> Result<(), EngineError> {
    match template.unsafe_text() {
        Some(why) => Err(EngineError::Config(format!(
            "{} {}: {why}",
            target.method.escape_debug(),
            target.display_url()
        ))),
        None => Ok(()),
    }
}

/// One attack's read-only part.
pub(crate) struct AttackShared {
    pub plan: Plan,
    pub targets: Vec<PreparedTarget>,
    /// Record id of this attack's first fixed target (attacks share one target table).
    pub target_offset: u32,
    pub timeout_ns: u64,
    pub keepalive: bool,
    /// Redirects to follow; -1 follows none and counts 3xx as success (vegeta).
    pub redirects: i32,
    pub body_limit: u64,
    pub data: Option<Arc<DataTable>>,
    pub flow: Option<Arc<workload::Flow>>,
}

pub(crate) struct Shared {
    pub attacks: Vec<AttackShared>,
    pub hosts: HostTable,
    /// For HTTP/1.1 connections (ALPN `http/1.1`).
    pub tls: Option<Arc<ClientConfig>>,
    /// For connections that offer h2 in ALPN (`http2` on, or a gRPC host over TLS).
    pub tls_h2: Option<Arc<ClientConfig>>,
    /// Sent in SNI and checked in place of each host's name (`-tls-server-name`).
    pub tls_server_name: Option<ServerName<'static>>,
    pub local_ip: Option<IpAddr>,
    pub unix_socket: Option<PathBuf>,
    pub seed: u64,
    /// Which requests carry a `traceparent`, and their ids (`-trace`).
    pub trace: Option<workload::TraceSampler>,
    /// The `tracestate` sent beside them (`-trace-state`), for a redirect's next hop.
    pub trace_state: Option<workload::TraceState>,
    pub http2: bool,
    pub h2c: bool,
    pub max_streams: u32,
}

impl Shared {
    pub(crate) fn prepare(config: &RunConfig) -> Result<Shared, EngineError> {
        let mut hosts = HostTable::default();
        let mut attacks = Vec::with_capacity(config.attacks.len());
        let mut target_offset = 0u32;
        for attack in &config.attacks {
            let shared = prepare_attack(
                attack,
                &mut hosts,
                config.settings.unix_socket.as_ref(),
                target_offset,
                TraceHeaders::of(&config.settings).as_ref(),
            )?;
            target_offset += shared.targets.len() as u32;
            attacks.push(shared);
        }
        // A lazy stream may bring https targets later, so it always gets a TLS config.
        let lazy = config
            .attacks
            .iter()
            .any(|a| matches!(a.targets, Targets::Stream(_) | Targets::Replay(_)));
        let needs_tls = lazy || hosts.hosts.iter().any(|host| host.tls_name.is_some());
        // A flow's checks read HTTP/1.1 answers (heads and bodies as the parser keeps
        // them): a run with a flow speaks HTTP/1.1 to every host but its gRPC steps'
        // (whose answers are their messages, kept from the DATA frames).
        let flows = config.attacks.iter().any(|a| a.flow.is_some());
        if flows && config.settings.h2c {
            return Err(EngineError::Config(
                "-h2c: flows speak HTTP/1.1 (their checks read HTTP/1.1 answers); leave -h2c out"
                    .to_owned(),
            ));
        }
        let http2 = config.settings.http2 && !flows;
        // gRPC over TLS offers h2 whatever -http2 says (a flow's gRPC steps too).
        let grpc_tls = (hosts.hosts.iter()).any(|host| host.grpc && host.tls_name.is_some());
        let (tls, tls_h2) = if needs_tls {
            let h2 = (http2 || grpc_tls)
                .then(|| tls::client_config(&config.settings.tls, true))
                .transpose()?;
            (Some(tls::client_config(&config.settings.tls, false)?), h2)
        } else {
            (None, None)
        };
        Ok(Shared {
            attacks,
            hosts,
            tls,
            tls_h2,
            tls_server_name: tls::server_name(&config.settings.tls)?,
            local_ip: config.settings.local_addr,
            unix_socket: config.settings.unix_socket.clone(),
            seed: config.settings.seed,
            trace: (config.settings.trace)
                .map(|trace| workload::TraceSampler::new(trace, config.settings.seed)),
            trace_state: config.settings.trace_state.clone(),
            http2,
            h2c: config.settings.h2c,
            max_streams: config.settings.max_streams,
        })
    }

    /// All fixed targets of all attacks, in record-id order.
    pub(crate) fn fixed_targets(&self) -> impl Iterator<Item = &PreparedTarget> {
        self.attacks.iter().flat_map(|a| a.targets.iter())
    }
}

fn prepare_attack(
    attack: &AttackConfig,
    hosts: &mut HostTable,
    unix_socket: Option<&PathBuf>,
    target_offset: u32,
    trace: Option<&TraceHeaders>,
) -> Result<AttackShared, EngineError> {
    let list = match &attack.targets {
        Targets::List(list) => list.as_slice(),
        Targets::Stream(_) | Targets::Replay(_) => &[],
    };
    let targets = list
        .iter()
        .map(|target| {
            let host = hosts.resolve_target(target, unix_socket)?;
            match &attack.flow {
                Some(flow) => PreparedTarget::step(
                    target.clone(),
                    attack.settings.keepalive,
                    host,
                    &flow.variables,
                    trace,
                ),
                None => PreparedTarget::new(
                    target.clone(),
                    attack.settings.keepalive,
                    host,
                    trace,
                    false,
                ),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(AttackShared {
        plan: attack.settings.plan.clone(),
        targets,
        target_offset,
        timeout_ns: u64::try_from(attack.settings.timeout.as_nanos()).unwrap_or(u64::MAX),
        keepalive: attack.settings.keepalive,
        redirects: attack.settings.redirects,
        body_limit: attack.settings.max_body.unwrap_or(u64::MAX),
        data: attack.data.clone(),
        flow: attack.flow.clone(),
    })
}
