//! `attack -replay`: access logs sent at their logged times, open model.
//!
//! [`Replay`] is a replay checked and surveyed: before the run its logs are read once
//! ([`Survey`]) to find every error that can be known then (an unreadable file, a
//! format that does not fit, a window with no request), the log's time zero and its
//! shape, requests per second over time. The shape is the attack's schedule, so the
//! asked rate, the live view, stop rules and `report` see the replay like any
//! schedule (`-replay-shape` sends the attack's own targets on it). During the run a
//! feeder (`replay_feed.rs`) reads the logs again and deals each request to the
//! workers with its own due time, the logged offset over `-speed`: a worker sends it
//! then, and its latency counts from then.

use std::fmt::Write;
use std::path::PathBuf;

use record::{ReplayEnd, ReplayInfo};
use url::Url;
use workload::{
    Header, LineParser, LogOptions, LogStats, LogStream, LoggedRequest, Origin, ReplayFields,
    ReplayFilter, Schedule, Target, WorkloadError,
};

use crate::EngineError;

/// A day of one-second buckets, ten times over: past this the log's span is more
/// likely a stray timestamp than a replay anyone wants to wait for.
const MAX_BUCKETS: usize = 864_000;

/// The distinct path groups a replay names in its records; later ones share one.
pub(crate) const MAX_GROUPS: usize = 10_000;

/// An error's text with its causes (`reading x.log: No such file or directory`), for
/// an error that becomes the reason of another.
fn with_causes(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(inner) = cause {
        let _ = write!(text, ": {inner}");
        cause = inner.source();
    }
    // A bad line quoted in an error may hold a logged secret.
    units::redact_url(&text)
}

/// An error in a replay field, named as the user wrote it: a flag (`-speed`,
/// `-replay-path`) or a key of a scenario's `[scenario.replay]` (`replay.speed`).
pub(crate) fn field_error(origin: &Origin, field: &str, reason: String) -> WorkloadError {
    origin.error(&format!("replay.{field}"), reason)
}

/// A replay, checked and surveyed.
#[derive(Clone)]
pub struct Replay {
    /// The logs, opened relative to where they were named.
    pub(crate) files: Vec<PathBuf>,
    /// The logs as named (for the header).
    pub(crate) names: Vec<String>,
    format: Format,
    pub(crate) options: LogOptions,
    pub(crate) filter: ReplayFilter,
    /// How much faster than logged.
    pub(crate) speed: f64,
    /// Replay again from the start until the plan ends.
    pub(crate) repeat: bool,
    /// Only the shape drives the attack (`-replay-shape`): nothing is sent from the logs.
    pub(crate) shape_only: bool,
    /// `-header`s added to every request.
    pub(crate) headers: Vec<Header>,
    /// Where requests go (`-base-url`); else each logged absolute URL.
    pub(crate) base_url: Option<Url>,
    pub(crate) keepalive: bool,
    /// What the first reading found.
    pub survey: Survey,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("files", &self.names)
            .field("speed", &self.speed)
            .finish_non_exhaustive()
    }
}

/// The format to read the logs in: a name (`auto` sniffs each file).
#[derive(Debug, Clone)]
struct Format {
    name: String,
    nginx_log_format: Option<String>,
    log_fields: Option<String>,
}

impl Format {
    /// The format as asked: `-nginx-log-format` means nginx and `-log-fields` JSON
    /// lines unless `-log-format` says otherwise.
    fn of(fields: &ReplayFields) -> Format {
        let implied = match (&fields.nginx_log_format, &fields.log_fields) {
            (Some(_), _) => "nginx",
            (None, Some(_)) => "json",
            (None, None) => "auto",
        };
        Format {
            name: fields
                .log_format
                .clone()
                .unwrap_or_else(|| implied.to_owned()),
            nginx_log_format: fields.nginx_log_format.clone(),
            log_fields: fields.log_fields.clone(),
        }
    }

    /// The named format's parser, checked before any log is opened.
    fn check(&self, origin: &Origin) -> Result<(), WorkloadError> {
        if matches!(self.name.as_str(), "auto" | "har") {
            return Ok(());
        }
        let field = match (&self.nginx_log_format, &self.log_fields) {
            _ if !workload::LOG_FORMATS.contains(&self.name.as_str()) => "log_format",
            (Some(_), _) => "nginx_log_format",
            (None, Some(_)) => "log_fields",
            (None, None) => "log_format",
        };
        self.parser().map(drop).map_err(|reason| {
            // workload knows the line formats; `auto` and `har` are the replay's own.
            let reason = if workload::LOG_FORMATS.contains(&self.name.as_str()) {
                reason
            } else {
                format!(
                    "unknown log format {:?} (want auto, har or one of {})",
                    self.name,
                    workload::LOG_FORMATS.join(", ")
                )
            };
            field_error(origin, field, reason)
        })
    }

    fn parser(&self) -> Result<Box<dyn LineParser>, String> {
        workload::line_parser(
            &self.name,
            self.nginx_log_format.as_deref(),
            self.log_fields.as_deref(),
        )
    }

    /// The parser of one file: the named format's, or what its first lines look like.
    fn parser_for(&self, file: &str, lines: &[&str]) -> Result<Box<dyn LineParser>, WorkloadError> {
        let fail = |reason: String| WorkloadError::Log {
            source_name: file.to_owned(),
            reason,
        };
        let looks_like_har = || {
            let head = lines.concat();
            head.trim_start().starts_with('{') && head.contains("\"log\"")
        };
        match self.name.as_str() {
            "har" => Ok(Box::new(workload::HarFormat)),
            "auto" if looks_like_har() => Ok(Box::new(workload::HarFormat)),
            "auto" => workload::sniff(lines).ok_or_else(|| {
                fail(format!(
                    "the log format could not be guessed from its first lines; name it with -log-format ({}, har)",
                    workload::LOG_FORMATS.join(", ")
                ))
            }),
            _ => self.parser().map_err(fail),
        }
    }
}

/// What reading the logs once found.
#[derive(Debug, Clone, Default)]
pub struct Survey {
    /// The log's first request (what `-from=+5m` counts from), unix ns.
    pub first_unix_ns: u64,
    /// The first request replayed: the replay's time zero, unix ns.
    pub zero_unix_ns: u64,
    /// The last request replayed, unix ns.
    pub last_unix_ns: u64,
    /// Requests replayed (one pass over the logs).
    pub requests: u64,
    /// Requests left out by the window's start or a filter.
    pub filtered: u64,
    /// Lines past the window's end (`-to`): requests read ahead, and the rest of the
    /// logs, counted but not read as requests.
    pub past_window: u64,
    /// The latest time of a request read, unix ns (the logs' span in errors).
    pub last_read_unix_ns: u64,
    /// The reader's counts (lines, bad lines, reordering).
    pub stats: LogStats,
    /// Requests per second of log time, from `zero_unix_ns`.
    pub counts_per_s: Vec<u32>,
    /// The format the logs were read in (what `auto` found).
    pub format: String,
}

impl Replay {
    /// A replay from its fields: checked, and its logs read once. `headers` and
    /// `base_url` are the attack's.
    pub(crate) fn survey(
        fields: &ReplayFields,
        headers: &[Header],
        base_url: Option<&Url>,
        keepalive: bool,
        origin: &Origin,
    ) -> Result<Replay, EngineError> {
        let fail =
            |field: &str, reason: String| EngineError::Targets(field_error(origin, field, reason));
        if fields.files.is_empty() {
            return Err(fail("files", "names no log file".to_owned()));
        }
        if fields.files.iter().any(|f| f == "-") {
            return Err(fail(
                "files",
                "a replay reads its logs twice (once for their shape, once to send): give a file, not stdin".to_owned(),
            ));
        }
        let speed = fields.speed.unwrap_or(1.0);
        if !(speed.is_finite() && speed > 0.0 && speed <= 1000.0) {
            return Err(fail(
                "speed",
                format!(
                    "{speed} is not a speed: want a number above 0, at most 1000 (2 = twice as fast)"
                ),
            ));
        }
        let window = match fields.reorder_window.as_deref() {
            Some(text) => {
                units::parse_duration(text).map_err(|e| fail("reorder_window", e.to_string()))?
            }
            None => std::time::Duration::from_secs(10),
        };
        let base_url = match &fields.base_url {
            Some(text) => {
                Some(workload::parse_base_url(text).map_err(|reason| fail("base_url", reason))?)
            }
            None => base_url.cloned(),
        };
        let format = Format::of(fields);
        format.check(origin).map_err(EngineError::Targets)?;
        let filter = ReplayFilter::parse(
            fields.from.as_deref(),
            fields.to.as_deref(),
            fields.path.as_deref(),
            &fields.methods,
            &fields.statuses,
            &fields.hosts,
        )
        .map_err(EngineError::Targets)?;
        let mut replay = Replay {
            files: fields.files.iter().map(|f| origin.path(f)).collect(),
            names: fields.files.clone(),
            format,
            options: LogOptions {
                reorder_window_ns: u64::try_from(window.as_nanos()).unwrap_or(u64::MAX),
                spread: true,
            },
            filter,
            speed,
            repeat: fields.repeat.unwrap_or(false),
            shape_only: fields.shape_only == Some(true),
            headers: headers.to_vec(),
            base_url,
            keepalive,
            survey: Survey::default(),
        };
        replay.survey = replay.read_once(origin)?;
        Ok(replay)
    }

    /// Opens the logs as one time-ordered stream; with the format each file is read
    /// in (what `auto` found).
    pub(crate) fn open(&self) -> Result<(LogStream, Vec<String>), WorkloadError> {
        let mut found = Vec::new();
        let mut parser_for = |file: &str, lines: &[&str]| {
            let parser = self.format.parser_for(file, lines)?;
            found.push(parser.name());
            Ok(parser)
        };
        let stream = LogStream::open(&self.files, self.options, &mut parser_for)?;
        Ok((stream, found))
    }

    /// Reads the logs once: time zero, shape, counts, and every error a reading finds.
    fn read_once(&self, origin: &Origin) -> Result<Survey, EngineError> {
        let fail = |reason: String| EngineError::Targets(field_error(origin, "files", reason));
        let (mut stream, formats) = self.open().map_err(|e| fail(with_causes(&e)))?;
        let mut survey = Survey::default();
        let mut first = None;
        while let Some(request) = stream.next() {
            let request = request.map_err(|e| fail(with_causes(&e)))?;
            let first_unix_ns = *first.get_or_insert(request.time_unix_ns);
            survey.last_read_unix_ns = survey.last_read_unix_ns.max(request.time_unix_ns);
            if self.filter.past_end(&request, first_unix_ns) {
                survey.past_window = 1 + stream.skip_rest().map_err(|e| fail(with_causes(&e)))?;
                break;
            }
            if !self.filter.keeps(&request, first_unix_ns) {
                survey.filtered += 1;
                continue;
            }
            let place = || format!("{}:{}", stream.last_file_name(), request.line);
            if survey.requests == 0 {
                survey.zero_unix_ns = request.time_unix_ns;
                if !self.shape_only {
                    self.target_of(&request)
                        .map_err(|reason| fail(format!("{}: {reason}", place())))?;
                }
            }
            survey.requests += 1;
            survey.last_unix_ns = request.time_unix_ns;
            let second = ((request.time_unix_ns - survey.zero_unix_ns) / 1_000_000_000) as usize;
            if second >= MAX_BUCKETS {
                return Err(fail(format!(
                    "{}: {second} s after the first request replayed ({}): the logs span more \
                     than {} days; narrow them with -from and -to",
                    place(),
                    workload::log_time_text(survey.zero_unix_ns),
                    MAX_BUCKETS / 86_400,
                )));
            }
            if survey.counts_per_s.len() <= second {
                survey.counts_per_s.resize(second + 1, 0);
            }
            survey.counts_per_s[second] += 1;
        }
        survey.stats = stream.stats();
        survey.first_unix_ns = first.unwrap_or_default();
        survey.format = formats.join(", ");
        if survey.requests == 0 {
            return Err(fail(self.nothing_to_replay(&survey, first.is_some())));
        }
        Ok(survey)
    }

    /// Why a survey found no request to replay, naming the logs and their span.
    fn nothing_to_replay(&self, survey: &Survey, any: bool) -> String {
        let files = self.names.join(", ");
        if !any {
            return format!("{files}: the logs hold no request");
        }
        format!(
            "{files}: no request of the logs (from {} to {}) is in the window and past the \
             filters ({} left out by the window's start or a filter, {} lines past its end)",
            workload::log_time_text(survey.first_unix_ns),
            workload::log_time_text(survey.last_read_unix_ns),
            survey.filtered,
            survey.past_window,
        )
    }

    /// The request to send for a logged one: its method, path and query on
    /// `-base-url` (or its own absolute URL), the logged `User-Agent`, the `-header`s.
    pub(crate) fn target_of(&self, request: &LoggedRequest) -> Result<Target, String> {
        // A path goes onto -base-url; an absolute URL is rebased onto it when given.
        let text = match (&self.base_url, request.target.starts_with('/')) {
            (Some(base), true) => {
                format!("{}{}", base.as_str().trim_end_matches('/'), request.target)
            }
            (_, false) => request.target.clone(),
            (None, true) => {
                return Err(format!(
                    "the log names no host for {:?}; give -base-url (a scenario's replay.base_url): where to send the replay",
                    units::redact_url(&request.target)
                ));
            }
        };
        let url = Url::parse(&text)
            .map_err(|e| format!("{:?} is not a URL: {e}", units::redact_url(&text)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "{:?} is not an http(s) URL",
                units::redact_url(&text)
            ));
        }
        let mut target = Target::get(&request.method, url);
        if let Some(base) = &self.base_url {
            target = target.rebased(base);
        }
        target.headers = self.headers.clone();
        let has_agent = |h: &Header| h.name.eq_ignore_ascii_case("user-agent");
        if let Some(agent) = &request.user_agent
            && !self.headers.iter().any(has_agent)
            // A logged agent is sent as it was, never read as a template.
            && !agent.contains("{{")
        {
            target.headers.push(Header {
                name: "User-Agent".to_owned(),
                value: agent.clone(),
            });
        }
        Ok(target)
    }

    /// One pass over the logs on the replay's timeline, nanoseconds: the last
    /// request's offset rounded up to the next second of log time, over the speed.
    pub(crate) fn period_ns(&self) -> u64 {
        self.offset_ns(
            self.survey.zero_unix_ns + self.survey.counts_per_s.len() as u64 * 1_000_000_000,
        )
    }

    /// From the first request asked to the last, for a run that asked until `end_ns`:
    /// whole passes, then the last request of the pass cut short.
    pub(crate) fn asked_span_ns(&self, end_ns: u64) -> u64 {
        let last_ns = self.offset_ns(self.survey.last_unix_ns);
        if !self.repeat {
            return last_ns.min(end_ns);
        }
        let period_ns = self.period_ns().max(1);
        let whole_ns = end_ns / period_ns * period_ns;
        whole_ns + last_ns.min(end_ns - whole_ns)
    }

    /// When a request logged at `time_unix_ns` is due in the first pass.
    pub(crate) fn offset_ns(&self, time_unix_ns: u64) -> u64 {
        let logged_ns = time_unix_ns.saturating_sub(self.survey.zero_unix_ns);
        (logged_ns as f64 / self.speed) as u64
    }

    /// The shape as a schedule: requests per second in buckets of one second of log
    /// time (shorter at a higher speed), passes repeated to cover `duration_ns`.
    pub fn schedule(&self, duration_ns: Option<u64>) -> Result<Schedule, String> {
        let passes = match (self.repeat, duration_ns) {
            (true, Some(duration)) => duration.div_ceil(self.period_ns().max(1)).max(1),
            _ => 1,
        };
        let counts = &self.survey.counts_per_s;
        let buckets = (passes as usize).saturating_mul(counts.len());
        if buckets > MAX_BUCKETS {
            return Err(format!(
                "looping {passes} times over {} s of log makes a shape of {buckets} buckets (one per second of log), more than {MAX_BUCKETS}: shorten the duration or lower -speed",
                counts.len()
            ));
        }
        let rates: Vec<f64> = (0..passes)
            .flat_map(|_| counts.iter().map(|&n| f64::from(n) * self.speed))
            .collect();
        let bucket_ns = ((1e9 / self.speed) as u64).max(1);
        let label = format!(
            "replay({}{})",
            self.names.join(", "),
            if self.speed == 1.0 {
                String::new()
            } else {
                format!(", x{}", self.speed)
            }
        );
        Schedule::from_rates(&rates, bucket_ns, &label)
    }

    /// The header's description of this replay.
    pub(crate) fn info(&self) -> ReplayInfo {
        ReplayInfo {
            files: self.names.clone(),
            format: self.survey.format.clone(),
            speed: self.speed,
            log_start_unix_ns: self.survey.zero_unix_ns,
        }
    }

    /// How the reading went, for the run's end block: every line of the logs is a
    /// request dealt out in the first pass, a bad line, a filtered one or a skipped
    /// one (docs/REPLAY.md, "What is recorded").
    pub(crate) fn end(&self, attack: u16, loops: u64, pass: PassCounts) -> ReplayEnd {
        let stats = &self.survey.stats;
        let not_reached = self
            .survey
            .requests
            .saturating_sub(pass.dealt + pass.other_shards);
        let skipped = stats.no_request + self.survey.past_window + pass.other_shards + not_reached;
        let end = ReplayEnd {
            attack,
            lines: stats.lines,
            requests: pass.dealt,
            bad_lines: stats.bad_lines,
            bad_examples: stats
                .bad_examples
                .iter()
                .map(|line| units::redact_url(line))
                .collect(),
            filtered: self.survey.filtered,
            reordered: pass.reordered,
            max_reorder_ns: pass.max_reorder_ns,
            loops,
        };
        // The record keeps no `skipped`: a reader takes it as the rest of the lines,
        // which these counts must leave.
        debug_assert_eq!(end.skipped(), skipped, "{end:?}");
        end
    }
}
/// What a replay's first pass over its logs dealt out, for the end block's account
/// of every line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PassCounts {
    /// Requests handed to the workers to be sent at their logged time.
    pub dealt: u64,
    /// Requests left to the other shards (`-shard I/N`).
    pub other_shards: u64,
    /// Of those dealt, the ones logged out of order and put back.
    pub reordered: u64,
    /// The furthest one of them was put back, nanoseconds.
    pub max_reorder_ns: u64,
}
