//! What a run's attacks share, from [`RunFields`] (flags or a plan's `[load]`, as
//! written) to checked [`RunSettings`], with the [`defaults`](crate::defaults) filled
//! in. Errors name the field as its [`Origin`] spells it (`-threads`,
//! `plan.toml:9: load.threads`). Reading TLS files (I/O) and bounding the threads by
//! the CPUs the process may use are the engine's.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use units::{GoDuration, parse_duration};

use crate::{Origin, StopRule, TraceSettings, TraceState, WorkloadError, defaults};

/// The run-wide fields, as written (every field optional); the keys of a plan's
/// `[load]` and the flags of `loadlab attack` that are not per attack.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFields {
    /// Event-loop threads (`-threads`).
    pub threads: Option<usize>,
    /// Connections opened before the attack starts (`-workers`).
    pub workers: Option<u64>,
    /// Open connections per target host at most (`-connections`).
    pub connections: Option<u64>,
    /// Seeds the templates (`-seed`).
    pub seed: Option<u64>,
    /// How late a worker may wake (`-precision`).
    pub precision: Option<String>,
    /// Send a W3C `traceparent` on sampled requests (`-trace`).
    pub trace: Option<bool>,
    /// The share of requests traced, in (0, 1] (`-trace-sample`; 1 by default).
    pub trace_sample: Option<f64>,
    /// A W3C `tracestate` sent beside each `traceparent` (`-trace-state`).
    pub trace_state: Option<String>,
    /// Offer HTTP/2 to https targets in ALPN (`-http2`).
    pub http2: Option<bool>,
    /// HTTP/2 to http targets with prior knowledge (`-h2c`).
    pub h2c: Option<bool>,
    /// HTTP/2 streams per connection at most (`-max-streams`).
    pub max_streams: Option<u32>,
    /// Skip TLS certificate verification (`-insecure`).
    pub insecure: Option<bool>,
    /// Trusted root certificate files (`-root-certs`).
    pub root_certs: Option<Vec<String>>,
    /// TLS client certificate (`-cert`).
    pub cert: Option<String>,
    /// TLS client key (`-key`).
    pub key: Option<String>,
    /// The name sent in SNI and checked against the certificate, in place of each
    /// target's host (`-tls-server-name`).
    pub tls_server_name: Option<String>,
    /// The local address connections leave from (`-laddr`).
    pub laddr: Option<IpAddr>,
    /// Connect every target through this Unix socket (`-unix-socket`).
    pub unix_socket: Option<String>,
    /// Rules that stop the run by themselves (`-stop-when`).
    pub stop_when: Option<Vec<String>>,
    /// Monitor specs sampled beside the records (`-monitor`).
    pub monitor: Option<Vec<String>>,
    /// How often the monitor samples (`-monitor-interval`).
    pub monitor_interval: Option<String>,
}

/// TLS settings for https targets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Skip certificate verification.
    pub insecure: bool,
    /// PEM files of trusted roots; the system's roots when empty.
    pub root_certs: Vec<PathBuf>,
    /// PEM client certificate and key, for mutual TLS.
    pub client_cert: Option<PathBuf>,
    /// The PEM key of `client_cert`.
    pub client_key: Option<PathBuf>,
    /// The name sent in SNI and checked against the server's certificate, in place of
    /// each target's host (a server reached by address whose certificate names another).
    pub server_name: Option<String>,
}

/// What every attack of a run shares, checked, with defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSettings {
    /// Event-loop threads; `None`: one per CPU the process may run on.
    pub threads: Option<usize>,
    /// Connections opened before time zero (vegeta's `-workers`).
    pub initial_connections: u64,
    /// Open connections per target host at most (vegeta's `-connections`).
    pub connections_per_host: u64,
    /// How https targets are verified and whom we present as.
    pub tls: TlsOptions,
    /// The local address connections leave from (vegeta's `-laddr`).
    pub local_addr: Option<IpAddr>,
    /// Connect every target through this Unix socket (vegeta's `-unix-socket`).
    pub unix_socket: Option<PathBuf>,
    /// Seeds the templates; the same seed sends the same requests.
    pub seed: u64,
    /// Rules that stop the run by themselves.
    pub stop_rules: Vec<StopRule>,
    /// Time zero at this wall-clock instant (unix ns, `-start-at`) instead of as soon
    /// as the workers are warm; shards started with the same instant share a time axis.
    pub start_at_unix_ns: Option<u64>,
    /// How late a worker may wake (`-precision`, 0: exactly when each request is due
    /// and each answer arrives).
    pub precision_ns: u64,
    /// Offer HTTP/2 to https servers in ALPN (vegeta's `-http2`, on by default).
    pub http2: bool,
    /// Speak HTTP/2 to http servers without asking (prior knowledge, `-h2c`).
    pub h2c: bool,
    /// HTTP/2 streams per connection at most (`-max-streams`; 0: the server's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`).
    pub max_streams: u32,
    /// Which requests carry a `traceparent` (`-trace`); `None`: none.
    pub trace: Option<TraceSettings>,
    /// The `tracestate` sent beside each `traceparent` (`-trace-state`); only with
    /// [`Self::trace`].
    pub trace_state: Option<TraceState>,
    /// Monitor specs sampled beside the records; the caller starts the samplers.
    pub monitor: Vec<String>,
    /// How often the monitor samples.
    pub monitor_interval: Duration,
}

impl Default for RunSettings {
    /// One thread per CPU, nothing but the [`defaults`].
    fn default() -> RunSettings {
        RunSettings {
            threads: None,
            initial_connections: defaults::INITIAL_CONNECTIONS,
            connections_per_host: defaults::CONNECTIONS_PER_HOST,
            tls: TlsOptions::default(),
            local_addr: None,
            unix_socket: None,
            seed: 0,
            stop_rules: Vec::new(),
            start_at_unix_ns: None,
            precision_ns: defaults::PRECISION.as_nanos() as u64,
            http2: defaults::HTTP2,
            h2c: false,
            max_streams: 0,
            trace: None,
            trace_state: None,
            monitor: Vec::new(),
            monitor_interval: defaults::MONITOR_INTERVAL,
        }
    }
}

impl RunFields {
    /// Checks the fields and fills in the defaults.
    pub fn settings(&self, origin: &Origin) -> Result<RunSettings, WorkloadError> {
        for (field, value) in [
            ("threads", self.threads.map(|n| n as u64)),
            ("connections", self.connections),
        ] {
            if value == Some(0) {
                return Err(origin.error(field, "must be at least 1"));
            }
        }
        if self.max_streams == Some(0) {
            return Err(origin.error("max_streams", "0 streams would send nothing; at least 1"));
        }
        Ok(RunSettings {
            threads: self.threads,
            initial_connections: self.workers.unwrap_or(defaults::INITIAL_CONNECTIONS),
            connections_per_host: self.connections.unwrap_or(defaults::CONNECTIONS_PER_HOST),
            tls: self.tls(origin)?,
            local_addr: self.laddr,
            unix_socket: self.unix_socket.as_deref().map(|path| origin.path(path)),
            seed: self.seed.unwrap_or(0),
            stop_rules: self.stop_rules(origin)?,
            start_at_unix_ns: None,
            precision_ns: self.precision_ns(origin)?,
            http2: self.http2.unwrap_or(defaults::HTTP2),
            h2c: self.h2c.unwrap_or(false),
            max_streams: self.max_streams.unwrap_or(0),
            trace: self.trace(origin)?,
            trace_state: self.trace_state(origin)?,
            monitor: self.monitor.clone().unwrap_or_default(),
            monitor_interval: self.monitor_interval(origin)?,
        })
    }

    fn tls(&self, origin: &Origin) -> Result<TlsOptions, WorkloadError> {
        if self.cert.is_some() != self.key.is_some() {
            return Err(match origin.place {
                None => WorkloadError::Plan("-cert and -key go together".to_owned()),
                Some(_) => origin.error("cert", "cert and key go together"),
            });
        }
        let path = |text: &String| origin.path(text);
        Ok(TlsOptions {
            insecure: self.insecure.unwrap_or(false),
            root_certs: self.root_certs.iter().flatten().map(path).collect(),
            client_cert: self.cert.as_ref().map(path),
            client_key: self.key.as_ref().map(path),
            server_name: self.tls_server_name.clone(),
        })
    }

    fn trace_state(&self, origin: &Origin) -> Result<Option<TraceState>, WorkloadError> {
        let Some(text) = &self.trace_state else {
            return Ok(None);
        };
        if self.trace != Some(true) {
            return Err(origin.error(
                "trace_state",
                format!(
                    "goes beside the traceparent: give {} too",
                    origin.spelled("trace")
                ),
            ));
        }
        TraceState::parse(text)
            .map(Some)
            .map_err(|why| origin.error("trace_state", why))
    }

    fn trace(&self, origin: &Origin) -> Result<Option<TraceSettings>, WorkloadError> {
        let sample = self.trace_sample.unwrap_or(1.0);
        if !(sample > 0.0 && sample <= 1.0) {
            return Err(origin.error(
                "trace_sample",
                format!("want a share above 0 and at most 1, like 0.01, got {sample}"),
            ));
        }
        match self.trace {
            Some(true) => Ok(Some(TraceSettings { sample })),
            _ if self.trace_sample.is_some() => Err(origin.error(
                "trace_sample",
                format!(
                    "samples the traced requests: give {} too",
                    origin.spelled("trace")
                ),
            )),
            _ => Ok(None),
        }
    }

    fn stop_rules(&self, origin: &Origin) -> Result<Vec<StopRule>, WorkloadError> {
        self.stop_when
            .iter()
            .flatten()
            .map(|rule| StopRule::parse(rule).map_err(|reason| origin.error("stop_when", reason)))
            .collect()
    }

    fn precision_ns(&self, origin: &Origin) -> Result<u64, WorkloadError> {
        let Some(given) = self.precision.as_deref() else {
            return Ok(defaults::PRECISION.as_nanos() as u64);
        };
        let precision =
            parse_duration(given).map_err(|err| origin.error("precision", err.to_string()))?;
        if precision > defaults::MAX_PRECISION {
            return Err(origin.error(
                "precision",
                format!(
                    "{given} is coarser than {}: answers read that late would blur the latencies measured",
                    GoDuration(defaults::MAX_PRECISION)
                ),
            ));
        }
        Ok(precision.as_nanos() as u64)
    }

    fn monitor_interval(&self, origin: &Origin) -> Result<Duration, WorkloadError> {
        let Some(given) = self.monitor_interval.as_deref() else {
            return Ok(defaults::MONITOR_INTERVAL);
        };
        parse_duration(given).map_err(|err| origin.error("monitor_interval", err.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn fills_in_the_defaults() {
        let settings = RunFields::default().settings(&Origin::flags()).unwrap();
        assert_eq!(settings, RunSettings::default());
        assert_eq!(settings.precision_ns, 100_000);
        assert_eq!(settings.monitor_interval, Duration::from_secs(1));
    }

    #[test]
    fn checks_each_field_naming_it_as_written() {
        let plan = Origin::file("plan.toml:9: load.".to_owned(), Path::new("/p"));
        let rows: Vec<(RunFields, Result<&str, &str>)> = vec![
            (
                RunFields {
                    threads: Some(0),
                    ..RunFields::default()
                },
                Err("-threads: must be at least 1"),
            ),
            (
                RunFields {
                    connections: Some(0),
                    ..RunFields::default()
                },
                Err("-connections: must be at least 1"),
            ),
            (
                RunFields {
                    max_streams: Some(0),
                    ..RunFields::default()
                },
                Err("-max-streams: 0 streams would send nothing; at least 1"),
            ),
            (
                RunFields {
                    precision: Some("10.001ms".to_owned()),
                    ..RunFields::default()
                },
                Err("-precision: 10.001ms is coarser than 10ms"),
            ),
            (
                RunFields {
                    precision: Some("soon".to_owned()),
                    ..RunFields::default()
                },
                Err("-precision: "),
            ),
            (
                RunFields {
                    cert: Some("a.pem".to_owned()),
                    ..RunFields::default()
                },
                Err("-cert and -key go together"),
            ),
            (
                RunFields {
                    stop_when: Some(vec!["p99 > 2".to_owned()]),
                    ..RunFields::default()
                },
                Err("-stop-when: invalid stop rule \"p99 > 2\""),
            ),
            (
                RunFields {
                    monitor_interval: Some("often".to_owned()),
                    ..RunFields::default()
                },
                Err("-monitor-interval: "),
            ),
            (
                RunFields {
                    trace: Some(true),
                    trace_sample: Some(0.0),
                    ..RunFields::default()
                },
                Err("-trace-sample: want a share above 0 and at most 1, like 0.01, got 0"),
            ),
            (
                RunFields {
                    trace: Some(true),
                    trace_sample: Some(1.5),
                    ..RunFields::default()
                },
                Err("-trace-sample: want a share above 0 and at most 1"),
            ),
            (
                RunFields {
                    trace_sample: Some(0.5),
                    ..RunFields::default()
                },
                Err("-trace-sample: samples the traced requests: give -trace too"),
            ),
            (
                RunFields {
                    trace_state: Some("vendor=1".to_owned()),
                    ..RunFields::default()
                },
                Err("-trace-state: goes beside the traceparent: give -trace too"),
            ),
            (
                RunFields {
                    trace: Some(true),
                    trace_state: Some("vendor=1,Bad=2".to_owned()),
                    ..RunFields::default()
                },
                Err("-trace-state: member \"Bad=2\": the key is not"),
            ),
            (
                RunFields {
                    precision: Some("0".to_owned()),
                    max_streams: Some(100),
                    ..RunFields::default()
                },
                Ok("precision 0, 100 streams"),
            ),
        ];
        for (fields, want) in rows {
            let got = fields
                .settings(&Origin::flags())
                .map(|s| format!("precision {}, {} streams", s.precision_ns, s.max_streams));
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{fields:?}"),
                (Err(err), Err(want)) => {
                    assert!(err.to_string().starts_with(want), "{fields:?}: {err}");
                }
                (got, want) => panic!("{fields:?}: got {got:?}, want {want:?}"),
            }
        }
        let traced = RunFields {
            trace: Some(true),
            trace_sample: Some(0.01),
            ..RunFields::default()
        };
        let settings = traced.settings(&Origin::flags()).unwrap();
        assert_eq!(settings.trace, Some(TraceSettings { sample: 0.01 }));
        let every = RunFields {
            trace: Some(true),
            ..RunFields::default()
        };
        let settings = every.settings(&Origin::flags()).unwrap();
        assert_eq!(settings.trace, Some(TraceSettings { sample: 1.0 }));
        assert_eq!(settings.trace_state, None);
        let stated = RunFields {
            trace: Some(true),
            trace_state: Some("tenant@system=a1 ".to_owned()),
            ..RunFields::default()
        };
        let settings = stated.settings(&Origin::flags()).unwrap();
        assert_eq!(settings.trace_state.unwrap().value(), "tenant@system=a1");
        let bad = RunFields {
            threads: Some(0),
            ..RunFields::default()
        };
        let err = bad.settings(&plan).unwrap_err().to_string();
        assert_eq!(err, "plan.toml:9: load.threads: must be at least 1");
    }

    #[test]
    fn paths_are_relative_to_the_file() {
        let fields = RunFields {
            cert: Some("c.pem".to_owned()),
            key: Some("/abs/k.pem".to_owned()),
            unix_socket: Some("s.sock".to_owned()),
            ..RunFields::default()
        };
        let plan = Origin::file("plan.toml:9: load.".to_owned(), Path::new("/p"));
        let settings = fields.settings(&plan).unwrap();
        assert_eq!(settings.tls.client_cert, Some(PathBuf::from("/p/c.pem")));
        assert_eq!(settings.tls.client_key, Some(PathBuf::from("/abs/k.pem")));
        assert_eq!(settings.unix_socket, Some(PathBuf::from("/p/s.sock")));
    }
}
