//! Scenario files: several named attacks that run at once on one engine.
//!
//! ```toml
//! seed = 42                                  # optional: reproducible templates
//! stop_when = ["errors > 50% for 5s"]        # optional stop rules for the whole run
//!
//! [defaults]                                 # optional: any scenario key but `name`
//! timeout = "30s"
//!
//! [[scenario]]
//! name = "search"
//! targets = ["GET http://127.0.0.1:8080/search?q={{rand.lower 50}}"]
//! rate = "1000/1s"                           # or schedule = "line(1, 1000, 1m)", or concurrency = 100
//! duration = "5m"
//!
//! [[scenario]]
//! name = "news"
//! targets = ["GET http://127.0.0.1:8080/news"]
//! rate = 1
//! duration = "5m"
//! ```
//! Unknown keys are rejected with their line, so a typo never passes silently.
//! [`ScenarioFile::parse`] checks the shape; turning fields into an attack (reading
//! targets, parsing schedules) is the caller's, which names the scenario's line.

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::WorkloadError;

/// A parsed scenario file.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioFile {
    /// Seeds the templates of every scenario (`-seed` wins).
    pub seed: Option<u64>,
    /// Stop rules for the whole run (`-stop-when` adds to them).
    pub stop_when: Vec<String>,
    /// Each scenario with `[defaults]` filled in, and the line it starts on.
    pub scenarios: Vec<(u64, AttackFields)>,
}

/// One attack's settings, as written (every field optional until merged). Written
/// back as a `[[scenario]]` table by [`Serialize`] (a plan's sharded step hands its
/// shards a scenario file); absent fields are left out, `base_url` is never written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AttackFields {
    /// The attack's name in records and reports (`-name`).
    pub name: Option<String>,
    /// Targets in vegeta's http format, one string per target (headers on further lines).
    pub targets: Option<Vec<String>>,
    /// A targets file (`-targets`); `-` is stdin.
    pub targets_file: Option<String>,
    /// `http` or `json` (for `targets_file`).
    pub format: Option<String>,
    /// Read targets as they are needed (`-lazy`).
    pub lazy: Option<bool>,
    /// Requests per time unit (`-rate`); 0 is the closed model.
    pub rate: Option<TextOrNumber>,
    /// An open-model schedule (`-schedule`).
    pub schedule: Option<String>,
    /// Closed model: a user count or a schedule of counts (`-concurrency`).
    pub concurrency: Option<TextOrNumber>,
    /// Closed model: a user's pause between an answer and its next request.
    pub think_time: Option<String>,
    /// How long to send (`-duration`).
    pub duration: Option<String>,
    /// Stop after this many requests (`-max-requests`).
    pub max_requests: Option<u64>,
    /// Per-request timeout (`-timeout`).
    pub timeout: Option<String>,
    /// `Key: Value` headers for every target (`-header`).
    pub headers: Option<Vec<String>>,
    /// Body for targets without their own (`-body`).
    pub body_file: Option<String>,
    /// CSV file for `{{csv.COLUMN}}` placeholders.
    pub data: Option<String>,
    /// `sequential` or `random`.
    pub data_order: Option<String>,
    /// Reuse connections (`-keepalive`).
    pub keepalive: Option<bool>,
    /// Redirects to follow; -1 follows none (`-redirects`).
    pub redirects: Option<i32>,
    /// Requests in flight at most, at least 1 (`-max-workers`).
    pub max_workers: Option<u64>,
    /// Response body bytes read at most, like `64kb`; -1 = all (`-max-body`).
    pub max_body: Option<TextOrNumber>,
    /// A flow's steps (`[[scenario.step]]`), instead of targets (docs/FLOWS.md).
    pub step: Option<Vec<crate::StepFields>>,
    /// In a flow: a failed check makes its request a failure (default true).
    pub checks_fail_requests: Option<bool>,
    /// In a flow: each user keeps a cookie jar (default true).
    pub cookies: Option<bool>,
    /// In a flow: body bytes kept for checks and extraction, like `1mb`.
    pub check_body_limit: Option<TextOrNumber>,
    /// Replay access logs instead of targets (`-replay`; `[scenario.replay]`).
    pub replay: Option<crate::ReplayFields>,
    /// `.proto` files of the gRPC targets' services (`-proto`).
    pub proto: Option<Vec<String>>,
    /// Directories their imports are looked up in (`-import-path`).
    pub import_path: Option<Vec<String>>,
    /// gRPC calls' messages sent compressed: `gzip`, or `identity` (`-grpc-compress`).
    pub grpc_compress: Option<String>,
    /// Every target's scheme, host and port replaced by this `scheme://host:port`
    /// (a plan variant's `base_url`). Not a scenario key: set by the caller.
    #[serde(skip)]
    pub base_url: Option<String>,
}

/// `rate = 1000` and `rate = "1000/1s"` both work.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum TextOrNumber {
    /// A string, as in `"1000/1s"`.
    Text(String),
    /// A TOML integer, as in `1000`.
    Integer(i64),
    /// A TOML float, as in `0.5`.
    Float(f64),
}

impl TextOrNumber {
    /// The value as text, for the parser of its field.
    pub fn text(&self) -> String {
        match self {
            TextOrNumber::Text(text) => text.clone(),
            TextOrNumber::Integer(value) => value.to_string(),
            TextOrNumber::Float(value) => value.to_string(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    seed: Option<u64>,
    #[serde(default)]
    stop_when: Vec<String>,
    #[serde(default)]
    defaults: Option<Spanned<AttackFields>>,
    #[serde(default, rename = "scenario")]
    scenarios: Vec<Spanned<AttackFields>>,
}

impl ScenarioFile {
    /// Parses and checks a scenario file's text; errors name `source_name` and the line.
    pub fn parse(text: &str, source_name: &str) -> Result<ScenarioFile, WorkloadError> {
        ScenarioFile::parse_under(text, source_name, &AttackFields::default())
    }

    /// [`ScenarioFile::parse`], with `flags` (`attack`'s, given beside `-scenarios`)
    /// over every scenario ([`AttackFields::layered`]).
    pub fn parse_under(
        text: &str,
        source_name: &str,
        flags: &AttackFields,
    ) -> Result<ScenarioFile, WorkloadError> {
        let line_of =
            |offset: usize| text[..offset.min(text.len())].matches('\n').count() as u64 + 1;
        let fail = |offset: usize, reason: String| WorkloadError::Target {
            source_name: source_name.to_owned(),
            line: line_of(offset),
            reason,
        };
        let raw: RawFile = toml::from_str(text).map_err(|err| {
            let offset = err.span().map_or(0, |span| span.start);
            fail(offset, toml_reason(text, &err))
        })?;
        let defaults = raw.defaults.map(|d| (d.span().start, d.into_inner()));
        if let Some((offset, defaults)) = &defaults
            && defaults.name.is_some()
        {
            return Err(fail(*offset, "[defaults] cannot set a name".to_owned()));
        }
        if raw.scenarios.is_empty() {
            return Err(fail(0, "no [[scenario]] tables".to_owned()));
        }
        let defaults = defaults.map(|(_, d)| d).unwrap_or_default();
        let mut scenarios: Vec<(u64, AttackFields)> = Vec::new();
        let mut step_lines = step_header_lines(text).into_iter();
        for spanned in raw.scenarios {
            let offset = spanned.span().start;
            let mut fields = spanned.into_inner();
            // `[[scenario.step]]` headers come in file order, each under its scenario.
            for step in fields.step.iter_mut().flatten() {
                step.line = step_lines.next();
            }
            let fields = AttackFields::layered(&[flags, &fields, &defaults]);
            check(&fields, flags).map_err(|reason| fail(offset, reason))?;
            let name = fields.name.clone().unwrap_or_default();
            if scenarios
                .iter()
                .any(|(_, other)| other.name.as_deref() == Some(name.as_str()))
            {
                return Err(fail(
                    offset,
                    format!("scenario name {name:?} is used twice"),
                ));
            }
            scenarios.push((line_of(offset), fields));
        }
        Ok(ScenarioFile {
            seed: raw.seed,
            stop_when: raw.stop_when,
            scenarios,
        })
    }
}

/// toml's message, named by the key whose value it is about and with the value as
/// written in the file: serde quotes a float as it prints it, and `1e300` prints with
/// all its 300 digits.
fn toml_reason(text: &str, err: &toml::de::Error) -> String {
    let message = err.message();
    let Some(span) = err.span() else {
        return message.to_owned();
    };
    let line_start = text[..span.start.min(text.len())]
        .rfind('\n')
        .map_or(0, |at| at + 1);
    let key = text[line_start..span.start.min(text.len())]
        .trim_end()
        .strip_suffix('=')
        .map(str::trim)
        .filter(|key| !key.is_empty() && !key.contains(char::is_whitespace));
    let written = text.get(span).unwrap_or_default().trim();
    let message = match (message.split_once('`'), written.len() <= 40) {
        (Some((head, rest)), true) => match rest.split_once('`') {
            Some((quoted, tail)) if quoted.len() > 40 => format!("{head}`{written}`{tail}"),
            _ => message.to_owned(),
        },
        _ => message.to_owned(),
    };
    match key {
        Some(key) => format!("{key}: {message}"),
        None => message,
    }
}

/// The lines of the `[[scenario.step]]` headers, in order.
fn step_header_lines(text: &str) -> Vec<u64> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            compact.starts_with("[[scenario.step]]")
        })
        .map(|(index, _)| index as u64 + 1)
        .collect()
}

impl AttackFields {
    /// The one precedence rule of an attack's options, highest first: `attack`'s flags,
    /// a scenario's own keys, then `[defaults]` (for a plan's background scenarios,
    /// `[load]`'s request options); what no layer gives is built in
    /// ([`crate::defaults`], filled in by [`AttackFields::settings`]). The pace is one
    /// option: a layer that gives a rate, a schedule or a user count replaces the whole
    /// pace of the layers under it (and their think time, unless it gives users).
    pub fn layered(layers: &[&AttackFields]) -> AttackFields {
        layers
            .iter()
            .rev()
            .fold(AttackFields::default(), |under, over| over.over(under))
    }

    /// These fields, with `under`'s filled in where these give none.
    fn over(&self, mut under: AttackFields) -> AttackFields {
        if self.rate.is_some() || self.schedule.is_some() || self.concurrency.is_some() {
            under.rate = None;
            under.schedule = None;
            under.concurrency = None;
            if self.concurrency.is_none() {
                under.think_time = None;
            }
        }
        let o = self.clone();
        AttackFields {
            name: o.name.or(under.name),
            targets: o.targets.or(under.targets),
            targets_file: o.targets_file.or(under.targets_file),
            format: o.format.or(under.format),
            lazy: o.lazy.or(under.lazy),
            rate: o.rate.or(under.rate),
            schedule: o.schedule.or(under.schedule),
            concurrency: o.concurrency.or(under.concurrency),
            think_time: o.think_time.or(under.think_time),
            duration: o.duration.or(under.duration),
            max_requests: o.max_requests.or(under.max_requests),
            timeout: o.timeout.or(under.timeout),
            headers: o.headers.or(under.headers),
            body_file: o.body_file.or(under.body_file),
            data: o.data.or(under.data),
            data_order: o.data_order.or(under.data_order),
            keepalive: o.keepalive.or(under.keepalive),
            redirects: o.redirects.or(under.redirects),
            max_workers: o.max_workers.or(under.max_workers),
            max_body: o.max_body.or(under.max_body),
            step: o.step.or(under.step),
            checks_fail_requests: o.checks_fail_requests.or(under.checks_fail_requests),
            cookies: o.cookies.or(under.cookies),
            check_body_limit: o.check_body_limit.or(under.check_body_limit),
            replay: o.replay.or(under.replay),
            proto: o.proto.or(under.proto),
            import_path: o.import_path.or(under.import_path),
            grpc_compress: o.grpc_compress.or(under.grpc_compress),
            base_url: o.base_url.or(under.base_url),
        }
    }

    /// The keys these fields give, as a scenario table writes them (`replay` for a
    /// replay), and `base_url`.
    pub fn given_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.written().into_iter().map(|(key, _)| key).collect();
        if self.base_url.is_some() {
            keys.push("base_url".to_owned());
        }
        keys
    }

    /// Each key these fields give with its value as TOML writes it (`timeout`,
    /// `"5s"`), for a plan's text; `base_url` is not a scenario key.
    pub fn written(&self) -> Vec<(String, String)> {
        toml::Table::try_from(self)
            .map(|table| {
                table
                    .into_iter()
                    .map(|(key, value)| (key, value.to_string()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Combinations that cannot mean anything; a key that `flags` gave is named as its flag.
fn check(fields: &AttackFields, flags: &AttackFields) -> Result<(), String> {
    let given = flags.given_keys();
    let spell = |key: &str| match given.iter().any(|k| k == key) {
        true => crate::options::flag_of(key),
        false => key.to_owned(),
    };
    let name = fields.name.as_deref().ok_or("a scenario needs a name")?;
    let named = |reason: &str| format!("scenario {name:?}: {reason}");
    if name.trim().is_empty() {
        return Err("a scenario needs a non-empty name".to_owned());
    }
    match (&fields.targets, &fields.targets_file, &fields.step) {
        (_, _, Some(steps)) if steps.is_empty() => return Err(named("step is empty")),
        (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => {
            return Err(named(
                "give targets (or targets_file) or [[scenario.step]] tables (a flow), not both",
            ));
        }
        (Some(_), Some(_), None) => return Err(named("give targets or targets_file, not both")),
        // A replay sends the logged requests (the engine checks the rest).
        (None, None, None)
            if fields
                .replay
                .as_ref()
                .is_some_and(|r| r.shape_only != Some(true)) => {}
        (None, None, None) => {
            return Err(named(
                "needs targets, targets_file or [[scenario.step]] tables (a flow)",
            ));
        }
        (Some(targets), None, None) if targets.is_empty() => {
            return Err(named("targets is empty"));
        }
        _ => {}
    }
    let flow_only = [
        (
            "checks_fail_requests",
            fields.checks_fail_requests.is_some(),
        ),
        ("cookies", fields.cookies.is_some()),
        ("check_body_limit", fields.check_body_limit.is_some()),
    ];
    if fields.step.is_none()
        && let Some((key, _)) = flow_only.iter().find(|(_, set)| *set)
    {
        return Err(named(&format!(
            "{key} is for flows: it needs [[scenario.step]] tables"
        )));
    }
    let pacings = [
        fields.rate.is_some(),
        fields.schedule.is_some(),
        fields.concurrency.is_some(),
    ];
    if pacings.iter().filter(|&&set| set).count() > 1 {
        return Err(named("give one of rate, schedule or concurrency"));
    }
    if fields.think_time.is_some() && fields.concurrency.is_none() {
        return Err(named(&format!(
            "{} needs concurrency (the closed model)",
            spell("think_time")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const INCIDENT: &str = r#"
seed = 7
stop_when = ["errors > 50% for 5s"]

[defaults]
timeout = "30s"
duration = "5m"

[[scenario]]
name = "search"
targets = ["GET http://127.0.0.1:8080/search?q={{rand.lower 50}}"]
rate = "1000/1s"

[[scenario]]
name = "news"
targets = ["GET http://127.0.0.1:8080/news"]
rate = 1
timeout = "2s"
"#;

    #[test]
    fn reads_scenarios_with_defaults() {
        let file = ScenarioFile::parse(INCIDENT, "incident.toml").unwrap();
        assert_eq!(
            (file.seed, file.stop_when.len(), file.scenarios.len()),
            (Some(7), 1, 2)
        );
        let (line, search) = &file.scenarios[0];
        assert_eq!(*line, 9, "the line of the scenario's [[scenario]] header");
        assert_eq!(
            search.rate.as_ref().map(TextOrNumber::text).as_deref(),
            Some("1000/1s")
        );
        assert_eq!(search.timeout.as_deref(), Some("30s"));
        let news = &file.scenarios[1].1;
        assert_eq!(
            (
                news.rate.as_ref().map(TextOrNumber::text).as_deref(),
                news.timeout.as_deref(),
                news.duration.as_deref()
            ),
            (Some("1"), Some("2s"), Some("5m"))
        );
    }

    /// The one precedence rule, row by row: flag > scenario > `[defaults]` > built-in,
    /// the pace taken whole from the highest layer that gives one.
    #[test]
    fn flags_over_scenario_over_defaults_over_built_in() {
        use crate::{Origin, Pacing, Schedule, defaults};
        let open = |per_sec: f64| Pacing::Open(Schedule::constant(per_sec));
        let closed = |users: f64, think_ms: u64| Pacing::Closed {
            users: Schedule::constant(users),
            think_ns: think_ms * 1_000_000,
        };
        // (flags, the scenario's keys, [defaults]' keys, the timeout and pace wanted)
        let rows: &[(&str, &str, &str, Duration, Pacing)] = &[
            (
                "",
                "",
                "",
                defaults::TIMEOUT,
                open(defaults::RATE.per_sec()),
            ),
            ("", "", "timeout = \"3s\"", secs(3), open(50.0)),
            (
                "",
                "timeout = \"2s\"",
                "timeout = \"3s\"",
                secs(2),
                open(50.0),
            ),
            (
                "timeout = \"1s\"",
                "timeout = \"2s\"",
                "timeout = \"3s\"",
                secs(1),
                open(50.0),
            ),
            (
                "timeout = \"1s\"",
                "",
                "timeout = \"3s\"",
                secs(1),
                open(50.0),
            ),
            ("", "", "rate = 7", defaults::TIMEOUT, open(7.0)),
            ("", "rate = 8", "rate = 7", defaults::TIMEOUT, open(8.0)),
            (
                "rate = 9",
                "rate = 8",
                "rate = 7",
                defaults::TIMEOUT,
                open(9.0),
            ),
            // A layer's pace replaces the whole pace under it.
            (
                "",
                "concurrency = 3",
                "rate = 7",
                defaults::TIMEOUT,
                closed(3.0, 0),
            ),
            (
                "rate = 9",
                "concurrency = 3\nthink_time = \"1s\"",
                "",
                defaults::TIMEOUT,
                open(9.0),
            ),
            (
                "concurrency = 2",
                "concurrency = 3\nthink_time = \"1s\"",
                "",
                defaults::TIMEOUT,
                closed(2.0, 1000),
            ),
            (
                "think_time = \"2s\"",
                "concurrency = 3\nthink_time = \"1s\"",
                "",
                defaults::TIMEOUT,
                closed(3.0, 2000),
            ),
        ];
        for (flags, scenario, defaults, timeout, pacing) in rows {
            let text = format!(
                "[defaults]\n{defaults}\n[[scenario]]\nname = \"a\"\ntargets = [\"GET http://h/\"]\n{scenario}\n"
            );
            let flags: AttackFields = toml::from_str(flags).unwrap();
            let file = ScenarioFile::parse_under(&text, "s.toml", &flags).unwrap();
            let settings = file.scenarios[0].1.settings(&Origin::flags()).unwrap();
            let row = (flags, scenario, defaults);
            assert_eq!(settings.timeout, *timeout, "{row:?}");
            assert_eq!(settings.plan.pacing, *pacing, "{row:?}");
        }
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    /// A file's mistake that a flag made is named as the flag.
    #[test]
    fn names_a_flag_given_over_the_file_as_the_flag() {
        let text = "[[scenario]]\nname = \"a\"\ntargets = [\"GET http://h/\"]\nrate = 5\n";
        let flags = AttackFields {
            think_time: Some("1s".to_owned()),
            ..AttackFields::default()
        };
        let err = ScenarioFile::parse_under(text, "s.toml", &flags).unwrap_err();
        assert_eq!(
            err.to_string(),
            "s.toml:1: scenario \"a\": -think-time needs concurrency (the closed model)"
        );
    }

    /// Written back as `[[scenario]]` tables (a plan's sharded step does), the fields
    /// read as they were: absent ones stay absent, numbers stay numbers.
    #[test]
    fn scenario_fields_write_back_as_they_read() {
        let file = ScenarioFile::parse(INCIDENT, "incident.toml").unwrap();
        let fields: Vec<AttackFields> = file.scenarios.into_iter().map(|(_, f)| f).collect();
        let tables: Vec<toml::Value> = fields
            .iter()
            .map(|f| toml::Value::try_from(f).unwrap())
            .collect();
        let text = toml::to_string(&toml::Table::from_iter([(
            "scenario".to_owned(),
            toml::Value::Array(tables),
        )]))
        .unwrap();
        assert!(!text.contains("base_url"), "{text}");
        assert!(text.contains("rate = 1\n"), "an integer stays one: {text}");
        let again = ScenarioFile::parse(&text, "again.toml").unwrap();
        let read: Vec<AttackFields> = again.scenarios.into_iter().map(|(_, f)| f).collect();
        assert_eq!(read, fields, "{text}");
    }

    #[test]
    fn names_the_line_of_mistakes() {
        let rows: &[(&str, &str)] = &[
            (
                "[[scenario]]\nname = \"a\"\ntargets = [\"GET http://x/\"]\nrat = 5\n",
                "incident.toml:4: unknown field `rat`",
            ),
            (
                "[[scenario]]\ntargets = [\"GET http://x/\"]\n",
                "incident.toml:1: a scenario needs a name",
            ),
            ("seed = 1\n", "no [[scenario]] tables"),
            (
                "[[scenario]]\nname = \"a\"\n",
                "scenario \"a\": needs targets, targets_file or [[scenario.step]] tables",
            ),
            (
                "[[scenario]]\nname = \"a\"\ntargets = [\"x\"]\ncookies = false\n",
                "cookies is for flows",
            ),
            (
                "[[scenario]]\nname = \"a\"\ntargets = [\"x\"]\n[[scenario.step]]\nrequest = \"GET http://h/\"\n",
                "not both",
            ),
            (
                "[[scenario]]\nname = \"a\"\n[[scenario.step]]\nrequst = \"GET http://h/\"\n",
                "incident.toml:4: unknown field `requst`",
            ),
            // The field is named, and its value shown as written (issue 41).
            (
                "[[scenario]]\nname = \"a\"\n[[scenario.step]]\nrequest = \"GET http://h/\"\nrepeat = 9223372036854775807\n",
                "incident.toml:5: repeat: invalid value: integer `9223372036854775807`, expected u32",
            ),
            (
                "[[scenario]]\nname = \"a\"\n[[scenario.step]]\nrequest = \"GET http://h/\"\nrepeat = 1e300\n",
                "incident.toml:5: repeat: invalid type: floating point `1e300`, expected u32",
            ),
            (
                "[[scenario]]\nname = \"a\"\n[[scenario.step]]\nrequest = \"GET http://h/\"\nrepeat   =   -1e-300 # r\n",
                "incident.toml:5: repeat: invalid type: floating point `-1e-300`, expected u32",
            ),
            (
                "[[scenario]]\nname = \"a\"\ntargets = []\n",
                "targets is empty",
            ),
            (
                "[[scenario]]\nname = \"a\"\ntargets = [\"x\"]\ntargets_file = \"t\"\n",
                "not both",
            ),
            (
                "[[scenario]]\nname = \"a\"\ntargets = [\"x\"]\nrate = 5\nconcurrency = 3\n",
                "one of rate, schedule or concurrency",
            ),
            (
                "[[scenario]]\nname = \"a\"\ntargets = [\"x\"]\nthink_time = \"1s\"\n",
                "think_time needs concurrency",
            ),
            (
                "[[scenario]]\nname = \"a\"\ntargets = [\"x\"]\n\n[[scenario]]\nname = \"a\"\ntargets = [\"y\"]\n",
                "incident.toml:5: scenario name \"a\" is used twice",
            ),
            (
                "[defaults]\nname = \"x\"\n[[scenario]]\nname = \"a\"\ntargets = [\"x\"]\n",
                "cannot set a name",
            ),
            ("[[scenario]\nname = 1\n", "incident.toml:1:"),
            (
                "[[scenario]]\nname = \"a\"\ntargets = [\"x\"]\nmax_requests = -1\n",
                "incident.toml:4:",
            ),
        ];
        for (text, want) in rows {
            let err = ScenarioFile::parse(text, "incident.toml")
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
