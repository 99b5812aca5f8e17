//! [`MonitorConfig`] and the one grammar of sampler specs, shared by `loadlab monitor`
//! and `loadlab attack -monitor`:
//!
//! ```text
//! host                                  host CPU, memory, network, TCP states, fds
//! process=NAME                          processes whose name (comm or argv[0]) is NAME,
//!                                       and their children, as one group
//! process=REGEX                         ... whose command line matches REGEX
//! pid=N                                 process N and its children
//! prom=URL[;metric=RE][;drop=RE][;label=NAME=RE][;quantiles=0.5,0.99][;timeout=DUR]
//!          [;max=GAUGE=LIMIT]           LIMIT (a number or another gauge) is GAUGE's
//!                                       maximum: a queue or pool the diagnosis judges
//! postgres=URL[;timeout=DUR]            pg_stat_database: connections, transactions/s
//! agent=HOST:PORT                       samples streamed by `loadlab monitor -serve`
//! log=PATH[;pattern=NAME=RE]            a log file followed from its end (rotation and
//!                                       truncation followed), lines/s by pattern
//! logcmd=COMMAND[;pattern=NAME=RE]      a command's output (`journalctl -f -u app`)
//! LABEL:SPEC                            any of the above, named LABEL in reports and
//!                                       charts (e.g. `app:process=.*gunicorn.*`)
//! ```

use std::time::Duration;

use crate::MonitorError;
use record::SamplerKind;
use units::redact_url;

/// Which processes form a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessMatch {
    /// `comm` or the file name of `argv[0]` equals this.
    Name(String),
    /// The command line (`argv` joined by spaces, else `comm`) matches this regex.
    Regex(String),
    /// This process.
    Pid(u32),
}

/// Which Prometheus samples to keep.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PromFilters {
    /// Keep families whose name matches one of these (anchored); all when empty.
    pub metrics: Vec<String>,
    /// Drop families whose name matches one of these (anchored).
    pub drop: Vec<String>,
    /// Keep samples whose label NAME matches RE (anchored); all must hold.
    pub labels: Vec<(String, String)>,
}

/// One Prometheus `/metrics` endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct PromSpec {
    /// The URL as given (may hold credentials: never print it; see [`SamplerSpec::name`]).
    pub url: String,
    /// Which metric families and label sets to keep.
    pub filters: PromFilters,
    /// Quantiles computed from histograms, per interval.
    pub quantiles: Vec<f64>,
    /// A scrape slower than this is a gap; default: the interval.
    pub timeout: Option<Duration>,
    /// Gauges whose maximum the user gave (`max=GAUGE=LIMIT`): a queue length, a pool
    /// whose names the diagnosis cannot pair by itself.
    pub limits: Vec<PromLimit>,
}

/// `max=GAUGE=LIMIT`: a gauge and its maximum.
#[derive(Debug, Clone, PartialEq)]
pub struct PromLimit {
    /// The gauge's name.
    pub gauge: String,
    /// Its maximum.
    pub limit: LimitOf,
}

/// Where a gauge's maximum comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum LimitOf {
    /// A constant (`max=queue_length=500`).
    Value(f64),
    /// Another gauge of the same endpoint, with the same labels or none
    /// (`max=pool_busy=pool_configured`).
    Gauge(String),
}

/// One PostgreSQL server.
#[derive(Debug, Clone, PartialEq)]
pub struct PostgresSpec {
    /// The connection URL as given (may hold a password: never print it).
    pub url: String,
    /// A query slower than this is a gap; default: the interval.
    pub timeout: Option<Duration>,
}

/// Where a log sampler's lines come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogSource {
    /// A file, followed from its end.
    File(String),
    /// `sh -c COMMAND`'s stdout and stderr.
    Command(String),
}

/// A log followed beside the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSpec {
    /// The file or command.
    pub source: LogSource,
    /// The user's patterns (name, regex), counted beside the defaults.
    pub patterns: Vec<(String, String)>,
}

/// One sampler, as parsed from a spec.
#[derive(Debug, Clone, PartialEq)]
pub enum SamplerSpec {
    /// The machine's CPU, memory, network and TCP counters, from `/proc`.
    Host,
    /// A group of processes matched by name, command line or pid.
    Process(ProcessMatch),
    /// A Prometheus text-format endpoint.
    Prom(PromSpec),
    /// A PostgreSQL server's statistics views.
    Postgres(PostgresSpec),
    /// `HOST:PORT` of a `loadlab monitor -serve` agent.
    Agent(String),
    /// A log file or a command's output, lines per second by pattern.
    Log(LogSpec),
}

impl SamplerSpec {
    /// The sampler's kind, as stored in the record file.
    pub fn kind(&self) -> SamplerKind {
        match self {
            SamplerSpec::Host => SamplerKind::Host,
            SamplerSpec::Process(_) => SamplerKind::Process,
            SamplerSpec::Prom(_) => SamplerKind::Prom,
            SamplerSpec::Postgres(_) => SamplerKind::Postgres,
            SamplerSpec::Agent(_) => SamplerKind::Agent,
            SamplerSpec::Log(_) => SamplerKind::Log,
        }
    }

    /// A name safe to print and store: patterns as given, URLs with passwords redacted.
    pub fn name(&self) -> String {
        match self {
            SamplerSpec::Host => "host".to_owned(),
            SamplerSpec::Process(ProcessMatch::Name(name) | ProcessMatch::Regex(name)) => {
                name.clone()
            }
            SamplerSpec::Process(ProcessMatch::Pid(pid)) => format!("pid {pid}"),
            SamplerSpec::Prom(prom) => redact_url(&prom.url),
            SamplerSpec::Postgres(pg) => redact_url(&pg.url),
            SamplerSpec::Agent(addr) => addr.clone(),
            SamplerSpec::Log(LogSpec {
                source: LogSource::File(path) | LogSource::Command(path),
                ..
            }) => path.clone(),
        }
    }
}

/// A sampler and the name it goes by in the record file: its `LABEL:` or
/// [`SamplerSpec::name`].
#[derive(Debug, Clone, PartialEq)]
pub struct NamedSampler {
    /// The name in the record file, reports and charts (secrets redacted).
    pub name: String,
    /// What to sample.
    pub spec: SamplerSpec,
}

/// What to sample and how often.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorConfig {
    /// Time between two readings of every sampler.
    pub interval: Duration,
    /// The samplers, in the order their tables appear in the file.
    pub samplers: Vec<NamedSampler>,
}

/// The shortest interval accepted: /proc and scrapes are not made for faster polling.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
const DEFAULT_QUANTILES: [f64; 3] = [0.5, 0.9, 0.99];

impl MonitorConfig {
    /// No samplers yet; fails for an interval below [`MIN_INTERVAL`].
    pub fn new(interval: Duration) -> Result<MonitorConfig, MonitorError> {
        if interval < MIN_INTERVAL {
            return Err(MonitorError::Spec {
                spec: format!("-interval {interval:?}"),
                reason: format!("the interval must be at least {MIN_INTERVAL:?}"),
            });
        }
        Ok(MonitorConfig {
            interval,
            samplers: Vec::new(),
        })
    }

    /// Parses one spec (see the module documentation), with an optional `LABEL:`
    /// in front, and adds it.
    pub fn add_spec(&mut self, text: &str) -> Result<(), MonitorError> {
        // A label is what comes before a `:` that precedes the first `=`.
        let key_end = text.find('=').unwrap_or(text.len());
        let (label, spec_text) = match text[..key_end].find(':') {
            Some(colon) => (Some(text[..colon].trim()), &text[colon + 1..]),
            None => (None, text),
        };
        let spec = MonitorConfig::parse_spec(spec_text)?;
        let name = match label {
            Some("") => {
                return Err(MonitorError::Spec {
                    spec: redact_url(text),
                    reason: "an empty label before ':'".to_owned(),
                });
            }
            Some(label) => label.to_owned(),
            None => spec.name(),
        };
        self.samplers.push(NamedSampler { name, spec });
        Ok(())
    }

    /// Parses one spec: `host`, `process=NAME_OR_REGEX`, `pid=N`, `prom=URL[;...]`,
    /// `postgres=URL`, `agent=HOST:PORT`. Errors quote the spec with any password
    /// redacted.
    pub fn parse_spec(text: &str) -> Result<SamplerSpec, MonitorError> {
        let fail = |reason: &str| MonitorError::Spec {
            spec: redact_url(text),
            reason: reason.to_owned(),
        };
        let (key, value) = text.split_once('=').unwrap_or((text, ""));
        let needs_value = |value: &str| {
            if value.is_empty() {
                Err(fail(&format!("{key}= needs a value")))
            } else {
                Ok(())
            }
        };
        match key.trim() {
            "host" if value.is_empty() => Ok(SamplerSpec::Host),
            "host" => Err(fail("host takes no value")),
            "process" => {
                needs_value(value)?;
                parse_process(value).map_err(|reason| fail(&reason))
            }
            "pid" => match value.parse::<u32>() {
                Ok(pid) if pid > 0 => Ok(SamplerSpec::Process(ProcessMatch::Pid(pid))),
                _ => Err(fail("pid= needs a process id (a positive number)")),
            },
            "prom" => {
                needs_value(value)?;
                parse_prom(value).map_err(|reason| fail(&reason))
            }
            "postgres" => {
                needs_value(value)?;
                parse_postgres(value).map_err(|reason| fail(&reason))
            }
            "agent" => {
                needs_value(value)?;
                parse_agent(value).map_err(|reason| fail(&reason))
            }
            "log" | "logcmd" => {
                needs_value(value)?;
                parse_log(key.trim(), value).map_err(|reason| fail(&reason))
            }
            _ => Err(fail(
                "unknown sampler: want host, process=NAME_OR_REGEX, pid=N, prom=URL, \
                 postgres=URL, agent=HOST:PORT, log=PATH or logcmd=COMMAND",
            )),
        }
    }
}

/// Plain names (what `ps -o comm` shows) match exactly; anything else is a regex.
fn parse_process(value: &str) -> Result<SamplerSpec, String> {
    let plain = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-.:@+".contains(c));
    if plain {
        return Ok(SamplerSpec::Process(ProcessMatch::Name(value.to_owned())));
    }
    regex::Regex::new(value).map_err(|err| format!("bad regex: {err}"))?;
    Ok(SamplerSpec::Process(ProcessMatch::Regex(value.to_owned())))
}

fn parse_prom(value: &str) -> Result<SamplerSpec, String> {
    let mut parts = value.split(';');
    let url = parts.next().unwrap_or_default().trim();
    check_http_url(url)?;
    let mut spec = PromSpec {
        url: url.to_owned(),
        filters: PromFilters::default(),
        quantiles: DEFAULT_QUANTILES.to_vec(),
        timeout: None,
        limits: Vec::new(),
    };
    for part in parts.map(str::trim).filter(|p| !p.is_empty()) {
        let (option, arg) = part
            .split_once('=')
            .ok_or_else(|| format!("option {part:?} needs NAME=VALUE"))?;
        match option {
            "metric" => spec.filters.metrics.push(checked_regex(arg)?),
            "drop" => spec.filters.drop.push(checked_regex(arg)?),
            "label" => {
                let (name, pattern) = arg
                    .split_once('=')
                    .ok_or_else(|| format!("label={arg} needs label=NAME=REGEX"))?;
                spec.filters
                    .labels
                    .push((name.to_owned(), checked_regex(pattern)?));
            }
            "quantiles" => spec.quantiles = parse_quantiles(arg)?,
            "timeout" => spec.timeout = Some(parse_timeout(arg)?),
            "max" => spec.limits.push(parse_limit(arg)?),
            _ => {
                return Err(format!(
                    "unknown option {option:?}: want metric=, drop=, label=, quantiles=, \
                     timeout= or max="
                ));
            }
        }
    }
    Ok(SamplerSpec::Prom(spec))
}

/// `GAUGE=LIMIT`: LIMIT a positive number or a metric name.
fn parse_limit(arg: &str) -> Result<PromLimit, String> {
    let (gauge, limit) = arg
        .split_once('=')
        .filter(|(gauge, limit)| !gauge.is_empty() && !limit.is_empty())
        .ok_or_else(|| format!("max={arg} needs max=GAUGE=NUMBER or max=GAUGE=OTHER_GAUGE"))?;
    let metric_name = |name: &str| {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    if !metric_name(gauge) {
        return Err(format!("max={arg}: {gauge:?} is not a metric name"));
    }
    let limit = match limit.parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 => LimitOf::Value(value),
        Ok(_) => return Err(format!("max={arg}: the maximum must be above 0")),
        Err(_) if metric_name(limit) => LimitOf::Gauge(limit.to_owned()),
        Err(_) => {
            return Err(format!(
                "max={arg}: {limit:?} is neither a number nor a metric name"
            ));
        }
    };
    Ok(PromLimit {
        gauge: gauge.to_owned(),
        limit,
    })
}

fn check_http_url(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|err| format!("bad URL: {err}"))?;
    match parsed.scheme() {
        "http" if parsed.host_str().is_some() => Ok(()),
        "https" => Err("https scrapes are not supported yet; scrape over http".to_owned()),
        _ => Err("the URL must be http://HOST[:PORT]/PATH".to_owned()),
    }
}

/// Filters are anchored, as in Prometheus relabelling.
fn checked_regex(pattern: &str) -> Result<String, String> {
    regex::Regex::new(&format!("^(?:{pattern})$"))
        .map_err(|err| format!("bad regex {pattern:?}: {err}"))?;
    Ok(pattern.to_owned())
}

fn parse_quantiles(text: &str) -> Result<Vec<f64>, String> {
    text.split(',')
        .map(|q| match q.trim().parse::<f64>() {
            Ok(q) if q > 0.0 && q < 1.0 => Ok(q),
            _ => Err(format!("quantile {q:?} must be a number between 0 and 1")),
        })
        .collect()
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    match units::parse_duration(text) {
        Ok(timeout) if !timeout.is_zero() => Ok(timeout),
        Ok(_) => Err("timeout must be above 0".to_owned()),
        Err(err) => Err(err.to_string()),
    }
}

fn parse_postgres(value: &str) -> Result<SamplerSpec, String> {
    let (url, options) = match value.rsplit_once(";timeout=") {
        Some((url, timeout)) => (url, Some(parse_timeout(timeout)?)),
        None => (value, None),
    };
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err("the URL must start with postgres:// or postgresql://".to_owned());
    }
    url.parse::<postgres::Config>()
        .map_err(|err| format!("bad URL: {}", redact_url(&err.to_string())))?;
    Ok(SamplerSpec::Postgres(PostgresSpec {
        url: url.to_owned(),
        timeout: options,
    }))
}

/// `log=PATH` or `logcmd=COMMAND`, each with `;pattern=NAME=RE` options. A command's
/// own `;` would be read as an option only when followed by `pattern=`.
fn parse_log(key: &str, value: &str) -> Result<SamplerSpec, String> {
    let mut parts = value.split(";pattern=");
    let target = parts.next().unwrap_or_default().trim();
    if target.is_empty() {
        return Err(format!("{key}= needs a value"));
    }
    let mut patterns = Vec::new();
    for part in parts {
        let (name, pattern) = part
            .split_once('=')
            .filter(|(name, _)| !name.is_empty())
            .ok_or_else(|| format!("pattern={part} needs pattern=NAME=REGEX"))?;
        regex::bytes::Regex::new(pattern).map_err(|err| format!("bad regex {pattern:?}: {err}"))?;
        patterns.push((name.to_owned(), pattern.to_owned()));
    }
    let source = match key {
        "log" => LogSource::File(target.to_owned()),
        _ => LogSource::Command(target.to_owned()),
    };
    Ok(SamplerSpec::Log(LogSpec { source, patterns }))
}

fn parse_agent(value: &str) -> Result<SamplerSpec, String> {
    let (host, port) = value
        .rsplit_once(':')
        .ok_or_else(|| "agent= needs HOST:PORT".to_owned())?;
    if host.is_empty() || port.parse::<u16>().map_or(true, |p| p == 0) {
        return Err("agent= needs HOST:PORT with a port from 1 to 65535".to_owned());
    }
    Ok(SamplerSpec::Agent(value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prom(
        url: &str,
        filters: PromFilters,
        quantiles: &[f64],
        timeout_ms: Option<u64>,
    ) -> SamplerSpec {
        SamplerSpec::Prom(PromSpec {
            url: url.to_owned(),
            filters,
            quantiles: quantiles.to_vec(),
            timeout: timeout_ms.map(Duration::from_millis),
            limits: Vec::new(),
        })
    }

    #[test]
    fn parses_the_spec_grammar() {
        let metrics = "http://127.0.0.1:9113/metrics";
        let rows: Vec<(&str, Result<SamplerSpec, &str>)> = vec![
            ("host", Ok(SamplerSpec::Host)),
            ("host=x", Err("host takes no value")),
            (
                "process=nginx",
                Ok(SamplerSpec::Process(ProcessMatch::Name("nginx".into()))),
            ),
            (
                "process=php-fpm7.4",
                Ok(SamplerSpec::Process(ProcessMatch::Name(
                    "php-fpm7.4".into(),
                ))),
            ),
            (
                "process=ruby.*puma",
                Ok(SamplerSpec::Process(ProcessMatch::Regex(
                    "ruby.*puma".into(),
                ))),
            ),
            ("process=", Err("process= needs a value")),
            ("process=(unclosed", Err("bad regex")),
            ("pid=42", Ok(SamplerSpec::Process(ProcessMatch::Pid(42)))),
            ("pid=0", Err("positive number")),
            ("pid=abc", Err("positive number")),
            (
                "prom=http://127.0.0.1:9113/metrics",
                Ok(prom(
                    metrics,
                    PromFilters::default(),
                    &DEFAULT_QUANTILES,
                    None,
                )),
            ),
            (
                "prom=http://127.0.0.1:9113/metrics;metric=nginx_.*;drop=go_.*;label=code=5..;quantiles=0.5,0.999;timeout=250ms",
                Ok(prom(
                    metrics,
                    PromFilters {
                        metrics: vec!["nginx_.*".into()],
                        drop: vec!["go_.*".into()],
                        labels: vec![("code".into(), "5..".into())],
                    },
                    &[0.5, 0.999],
                    Some(250),
                )),
            ),
            (
                "prom=https://127.0.0.1/metrics",
                Err("https scrapes are not supported"),
            ),
            ("prom=127.0.0.1:9113", Err("bad URL")),
            ("prom=ftp://127.0.0.1/metrics", Err("http://HOST")),
            ("prom=http://127.0.0.1/m;metric=(", Err("bad regex")),
            (
                "prom=http://127.0.0.1/m;quantiles=1.5",
                Err("between 0 and 1"),
            ),
            ("prom=http://127.0.0.1/m;timeout=0s", Err("above 0")),
            (
                "prom=http://127.0.0.1/m;timeout=soon",
                Err("invalid duration"),
            ),
            (
                "prom=http://127.0.0.1/m;colour=red",
                Err("unknown option \"colour\""),
            ),
            (
                "prom=http://127.0.0.1/m;label=code",
                Err("label=NAME=REGEX"),
            ),
            (
                "prom=http://127.0.0.1:9113/metrics;max=app_queue_length=500;max=app_pool_busy=app_pool_configured",
                Ok(SamplerSpec::Prom(PromSpec {
                    limits: vec![
                        PromLimit {
                            gauge: "app_queue_length".into(),
                            limit: LimitOf::Value(500.0),
                        },
                        PromLimit {
                            gauge: "app_pool_busy".into(),
                            limit: LimitOf::Gauge("app_pool_configured".into()),
                        },
                    ],
                    ..PromSpec {
                        url: metrics.into(),
                        filters: PromFilters::default(),
                        quantiles: DEFAULT_QUANTILES.to_vec(),
                        timeout: None,
                        limits: Vec::new(),
                    }
                })),
            ),
            ("prom=http://127.0.0.1/m;max=queue", Err("max=GAUGE=NUMBER")),
            (
                "prom=http://127.0.0.1/m;max=queue=",
                Err("max=GAUGE=NUMBER"),
            ),
            ("prom=http://127.0.0.1/m;max=queue=0", Err("above 0")),
            ("prom=http://127.0.0.1/m;max=queue=-5", Err("above 0")),
            ("prom=http://127.0.0.1/m;max=9q=5", Err("not a metric name")),
            (
                "prom=http://127.0.0.1/m;max=queue=lots of",
                Err("neither a number nor a metric name"),
            ),
            (
                "postgres=postgres://u:pw@127.0.0.1:5432/db",
                Ok(SamplerSpec::Postgres(PostgresSpec {
                    url: "postgres://u:pw@127.0.0.1:5432/db".into(),
                    timeout: None,
                })),
            ),
            (
                "postgres=postgresql://u@127.0.0.1/db;timeout=2s",
                Ok(SamplerSpec::Postgres(PostgresSpec {
                    url: "postgresql://u@127.0.0.1/db".into(),
                    timeout: Some(Duration::from_secs(2)),
                })),
            ),
            (
                "postgres=mysql://u:pw@h/db",
                Err("must start with postgres://"),
            ),
            (
                "agent=127.0.0.1:7070",
                Ok(SamplerSpec::Agent("127.0.0.1:7070".into())),
            ),
            ("agent=127.0.0.1", Err("HOST:PORT")),
            ("agent=:0", Err("port from 1 to 65535")),
            (
                "log=/var/log/nginx/error.log",
                Ok(SamplerSpec::Log(LogSpec {
                    source: LogSource::File("/var/log/nginx/error.log".into()),
                    patterns: Vec::new(),
                })),
            ),
            (
                "logcmd=journalctl -f -u app; true;pattern=pool=pool exhausted",
                Ok(SamplerSpec::Log(LogSpec {
                    source: LogSource::Command("journalctl -f -u app; true".into()),
                    patterns: vec![("pool".into(), "pool exhausted".into())],
                })),
            ),
            ("log=", Err("log= needs a value")),
            ("log=app.log;pattern=x", Err("needs pattern=NAME=REGEX")),
            ("log=app.log;pattern=x=(", Err("bad regex")),
            ("disk", Err("unknown sampler")),
        ];
        for (text, want) in rows {
            match (MonitorConfig::parse_spec(text), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
                (Err(err), Err(want)) => {
                    let message = err.to_string();
                    assert!(message.contains(want), "{text}: {message}");
                }
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn errors_and_names_never_show_passwords() {
        let err = MonitorConfig::parse_spec("postgres=mysql://u:hunter2@h/db")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(err.contains("u:REDACTED@h"), "{err}");
        let spec = MonitorConfig::parse_spec("postgres=postgres://u:hunter2@h/db").unwrap();
        assert_eq!(spec.name(), "postgres://u:REDACTED@h/db");
        let spec = MonitorConfig::parse_spec("prom=http://a:hunter2@127.0.0.1/m").unwrap();
        assert_eq!(spec.name(), "http://a:REDACTED@127.0.0.1/m");
    }

    #[test]
    fn a_label_names_the_sampler() {
        // (spec, Ok((name, kind)) or Err(part of the message))
        type Want = Result<(&'static str, &'static str), &'static str>;
        let rows: &[(&str, Want)] = &[
            ("app:process=.*gunicorn.*", Ok(("app", "process"))),
            ("db:postgres=postgres://u:pw@h/db", Ok(("db", "postgres"))),
            (
                "edge: prom=http://127.0.0.1:9113/metrics",
                Ok(("edge", "prom")),
            ),
            ("box:host", Ok(("box", "host"))),
            // A colon after the first `=` belongs to the value.
            ("agent=127.0.0.1:7070", Ok(("127.0.0.1:7070", "agent"))),
            ("process=a:b", Ok(("a:b", "process"))),
            (
                "postgres=postgres://u:pw@h/db",
                Ok(("postgres://u:REDACTED@h/db", "postgres")),
            ),
            (":process=nginx", Err("an empty label")),
            ("app:disk", Err("unknown sampler")),
            ("app:", Err("unknown sampler")),
        ];
        for (text, want) in rows {
            let mut config = MonitorConfig::new(Duration::from_secs(1)).unwrap();
            let got = config.add_spec(text).map(|()| {
                let sampler = &config.samplers[0];
                (sampler.name.clone(), sampler.spec.kind().name().to_owned())
            });
            match (got, want) {
                (Ok((name, kind)), Ok((want_name, want_kind))) => {
                    assert_eq!(
                        (name.as_str(), kind.as_str()),
                        (*want_name, *want_kind),
                        "{text}"
                    );
                }
                (Err(err), Err(want)) => assert!(err.to_string().contains(want), "{text}: {err}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn the_interval_has_a_floor() {
        assert!(MonitorConfig::new(Duration::from_millis(99)).is_err());
        assert!(MonitorConfig::new(Duration::from_secs(1)).is_ok());
    }
}
