//! From [`AttackFields`] (flags or a scenario table, as written) to checked
//! [`AttackSettings`], with the [`defaults`](crate::defaults) filled in. Every error
//! names where the value came from ([`Origin`]): `-rate: ...` for a flag,
//! `scenarios.toml:12: scenario "search": rate: ...` for a file. Reading targets and
//! data files (I/O) is the caller's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use units::{Rate, parse_duration, parse_size};
use url::Url;

use crate::{
    AttackFields, DataOrder, Header, Pacing, Plan, Schedule, Shard, WorkloadError, defaults,
};

/// Where a set of fields came from, for error messages and relative paths.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// `None` for flags; for a file, what comes before the field's name:
    /// `scenarios.toml:12: scenario "search": ` or `plan.toml:20: load.`.
    pub place: Option<String>,
    /// Relative paths in a file are relative to the file.
    pub base_dir: PathBuf,
    /// Fields written somewhere else than `place` says (a plan key on its own line, a
    /// variant's own targets): their whole label.
    pub field_labels: BTreeMap<String, String>,
    /// Fields of a file's table that a flag set over it (`attack -scenarios F
    /// -duration 10s`): named as the flag.
    pub from_flags: BTreeSet<String>,
}

/// The format of a targets file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TargetFormat {
    /// vegeta's `http` format (`GET http://...` lines).
    #[default]
    Http,
    /// vegeta's `json` format (one object per line).
    Json,
    /// Yandex.Tank's `uri` ammo: `[Name: value]` header lines, `PATH [tag]` GETs.
    TankUri,
    /// Yandex.Tank's `uripost` ammo: `SIZE PATH [tag]` and SIZE bytes of POST body.
    TankUriPost,
    /// Yandex.Tank's `phantom` ammo: `SIZE [tag]` and SIZE bytes of a raw HTTP request.
    TankPhantom,
}

/// One attack's settings, checked, with defaults filled in: all but its targets and
/// data rows, which the caller reads.
#[derive(Debug, Clone, PartialEq)]
pub struct AttackSettings {
    /// The attack's name in records and reports.
    pub name: String,
    /// Pacing and bounds.
    pub plan: Plan,
    /// Per request, connect included.
    pub timeout: Duration,
    /// Reuse connections.
    pub keepalive: bool,
    /// Redirects to follow; -1 follows none and counts 3xx as success.
    pub redirects: i32,
    /// Requests in flight at most (open model).
    pub max_in_flight: u64,
    /// Response body bytes read at most; `None` reads them all.
    pub max_body: Option<u64>,
    /// Headers added to every target (`-header`, `headers`).
    pub headers: Vec<Header>,
    /// How the targets file is written.
    pub format: TargetFormat,
    /// Which data row each request uses.
    pub data_order: DataOrder,
    /// Every target's scheme, host and port replaced by this URL's (a plan variant's
    /// `base_url`); paths, queries and headers are kept.
    pub base_url: Option<Url>,
}

impl Origin {
    /// The origin of command-line flags.
    pub fn flags() -> Origin {
        Origin::default()
    }

    /// The origin of a table in a file: `place` is what comes before each field's
    /// name (`s.toml:12: scenario "search": `), paths are relative to `base_dir`.
    pub fn file(place: String, base_dir: &Path) -> Origin {
        Origin {
            place: Some(place),
            base_dir: base_dir.to_owned(),
            field_labels: BTreeMap::new(),
            from_flags: BTreeSet::new(),
        }
    }

    /// The origin of a scenario table (`[[scenario]]`, `[[load.scenario]]`) named
    /// `name` on `line` of `file`.
    pub fn scenario(file: &str, line: u64, name: &str, base_dir: &Path) -> Origin {
        Origin::file(format!("{file}:{line}: scenario {name:?}: "), base_dir)
    }

    /// How to name `field` (an [`AttackFields`] or [`crate::RunFields`] key) in an
    /// error: `-header`, `s.toml:12: scenario "search": headers`.
    pub fn label(&self, field: &str) -> String {
        if let Some(label) = self.field_labels.get(field) {
            return label.clone();
        }
        match &self.place {
            None => crate::options::flag_of(field),
            // A flag over a file's table: the flag, and the table it failed in.
            Some(place) => format!("{place}{}", self.spelled(field)),
        }
    }

    /// How to name `field` inside a message about another: `-rate` for a flag, `rate`
    /// for a key.
    pub fn spelled(&self, field: &str) -> String {
        if self.place.is_none() || self.from_flags.contains(field) {
            crate::options::flag_of(field)
        } else {
            field.to_owned()
        }
    }

    /// `field` given `value`, as the user would write it: `-rate=100`, `rate = 100`.
    pub fn written(&self, field: &str, value: &str) -> String {
        match self.spelled(field) {
            flag if flag.starts_with('-') => format!("{flag}={value}"),
            key => format!("{key} = {value}"),
        }
    }

    /// A path as written in the fields, resolved against [`Origin::base_dir`].
    pub fn path(&self, text: &str) -> PathBuf {
        let path = Path::new(text);
        if path.is_absolute() || text == "-" {
            path.to_owned()
        } else {
            self.base_dir.join(path)
        }
    }

    /// The error for a bad value of `field`.
    pub fn error(&self, field: &str, reason: impl Into<String>) -> WorkloadError {
        WorkloadError::Field {
            label: self.label(field),
            reason: reason.into(),
        }
    }
}

impl AttackSettings {
    /// An attack named `name` sending along `plan`, with every other setting at its
    /// default ([`defaults`]).
    pub fn new(name: &str, plan: Plan) -> AttackSettings {
        AttackSettings {
            name: name.to_owned(),
            plan,
            timeout: defaults::TIMEOUT,
            keepalive: defaults::KEEPALIVE,
            redirects: defaults::REDIRECTS,
            max_in_flight: defaults::MAX_IN_FLIGHT,
            max_body: None,
            headers: Vec::new(),
            format: TargetFormat::default(),
            data_order: DataOrder::default(),
            base_url: None,
        }
    }
}

impl AttackFields {
    /// Checks the fields and fills in the defaults.
    pub fn settings(&self, origin: &Origin) -> Result<AttackSettings, WorkloadError> {
        let fail = |field: &str, reason: &dyn ToString| origin.error(field, reason.to_string());
        let duration =
            optional_duration(self.duration.as_deref()).map_err(|e| fail("duration", &e))?;
        let timeout = match self.timeout.as_deref() {
            Some(text) => parse_duration(text).map_err(|e| fail("timeout", &e))?,
            None => defaults::TIMEOUT,
        };
        if timeout.is_zero() {
            return Err(fail("timeout", &"must be longer than zero"));
        }
        if self.max_requests == Some(0) {
            return Err(fail("max_requests", &"must be at least 1"));
        }
        if self.max_workers == Some(0) {
            return Err(fail(
                "max_workers",
                &format!(
                    "must be at least 1 (leave it out for the default, {} requests in flight at most)",
                    defaults::MAX_IN_FLIGHT
                ),
            ));
        }
        Ok(AttackSettings {
            name: self.name.clone().unwrap_or_default(),
            plan: Plan {
                pacing: self.pacing(origin)?,
                duration_ns: duration.map(|d| d.as_nanos() as u64),
                max_requests: self.max_requests,
                shard: Shard::WHOLE,
            },
            timeout,
            keepalive: self.keepalive.unwrap_or(defaults::KEEPALIVE),
            redirects: self.redirects.unwrap_or(defaults::REDIRECTS),
            max_in_flight: self.max_workers.unwrap_or(defaults::MAX_IN_FLIGHT),
            max_body: self.max_body(origin)?,
            headers: self.headers(origin)?,
            format: self.format(origin)?,
            data_order: self.data_order(origin)?,
            base_url: self.base_url(origin)?,
        })
    }

    fn base_url(&self, origin: &Origin) -> Result<Option<Url>, WorkloadError> {
        let Some(text) = self.base_url.as_deref() else {
            return Ok(None);
        };
        parse_base_url(text)
            .map(Some)
            .map_err(|reason| origin.error("base_url", reason))
    }

    fn max_body(&self, origin: &Origin) -> Result<Option<u64>, WorkloadError> {
        match self
            .max_body
            .as_ref()
            .map(crate::TextOrNumber::text)
            .as_deref()
            .map(str::trim)
        {
            None | Some("-1") => Ok(None),
            Some(text) => parse_size(text)
                .map(Some)
                .map_err(|e| origin.error("max_body", e.to_string())),
        }
    }

    fn headers(&self, origin: &Origin) -> Result<Vec<Header>, WorkloadError> {
        self.headers
            .iter()
            .flatten()
            .map(|text| Header::parse(text).map_err(|reason| origin.error("headers", reason)))
            .collect()
    }

    fn format(&self, origin: &Origin) -> Result<TargetFormat, WorkloadError> {
        match self.format.as_deref() {
            None | Some("http") => Ok(TargetFormat::Http),
            Some("json") => Ok(TargetFormat::Json),
            Some("uri") => Ok(TargetFormat::TankUri),
            Some("uripost") => Ok(TargetFormat::TankUriPost),
            Some("phantom") => Ok(TargetFormat::TankPhantom),
            Some(other) => Err(origin.error(
                "format",
                format!("unknown format {other:?} (want http, json, uri, uripost or phantom)"),
            )),
        }
    }

    fn data_order(&self, origin: &Origin) -> Result<DataOrder, WorkloadError> {
        let Some(text) = self.data_order.as_deref() else {
            return Ok(DataOrder::default());
        };
        let order = DataOrder::parse(text).map_err(|e| origin.error("data_order", e))?;
        if self.data.is_none() {
            return Err(origin.error("data_order", "needs a data file"));
        }
        Ok(order)
    }

    /// Open model (a rate or a schedule) or closed model (a user count or schedule).
    fn pacing(&self, origin: &Origin) -> Result<Pacing, WorkloadError> {
        let fail = |field: &str, reason: &dyn ToString| origin.error(field, reason.to_string());
        let think_ns = optional_duration(self.think_time.as_deref())
            .map_err(|e| fail("think_time", &e))?
            .map_or(0, |d| d.as_nanos() as u64);
        let concurrency = self.concurrency.as_ref().map(crate::TextOrNumber::text);
        if self.think_time.is_some() && concurrency.is_none() && !self.rate_is_zero() {
            return Err(fail(
                "think_time",
                &format!(
                    "the think time belongs to the closed model; give {} too",
                    origin.spelled("concurrency")
                ),
            ));
        }
        if let Some(schedule) = &self.schedule {
            if concurrency.is_some() || self.rate.is_some() {
                return Err(fail(
                    "schedule",
                    &format!(
                        "give one of {}, {} or {}",
                        origin.spelled("rate"),
                        origin.spelled("schedule"),
                        origin.spelled("concurrency")
                    ),
                ));
            }
            return Ok(Pacing::Open(
                Schedule::parse(schedule).map_err(|e| fail("schedule", &e))?,
            ));
        }
        let rate_text = self.rate.as_ref().map(crate::TextOrNumber::text);
        let rate = match rate_text.as_deref() {
            Some(text) => Rate::parse(text).map_err(|e| fail("rate", &e))?,
            None => defaults::RATE,
        };
        let given = rate_text.as_deref().map(str::trim).unwrap_or_default();
        let users = match (concurrency, rate.is_unpaced(), self.max_workers) {
            (Some(users), _, _) if self.rate.is_none() || rate.is_unpaced() => users,
            (Some(_), _, _) => {
                return Err(fail(
                    "concurrency",
                    &format!(
                        "{} runs the closed model; it cannot be combined with {}",
                        origin.spelled("concurrency"),
                        origin.written("rate", given)
                    ),
                ));
            }
            (None, true, Some(users)) if users > 0 => users.to_string(),
            (None, true, _) => return Err(fail("rate", &closed_without_users(given, origin))),
            (None, false, _) => return Ok(Pacing::Open(Schedule::constant(rate.per_sec()))),
        };
        let users = user_schedule(&users).map_err(|e| fail("concurrency", &e))?;
        Ok(Pacing::Closed { users, think_ns })
    }

    fn rate_is_zero(&self) -> bool {
        self.rate
            .as_ref()
            .is_some_and(|r| Rate::parse(&r.text()).is_ok_and(|r| r.is_unpaced()))
    }
}

/// The rate `given` (`0`, `inf`, `infinity`) asks for the closed model without users.
fn closed_without_users(given: &str, origin: &Origin) -> String {
    // vegeta spells "no pacing" as 0 or infinity; say that `inf` was read so.
    let meaning = if given.to_ascii_lowercase().starts_with("inf") {
        " (read as 0: no pacing, as in vegeta)"
    } else {
        ""
    };
    format!(
        "{given}{meaning} runs the closed model and needs a user count: give {} (or {})",
        origin.written("concurrency", "N"),
        origin.written("max_workers", "N")
    )
}

fn optional_duration(text: Option<&str>) -> Result<Option<Duration>, units::UnitsError> {
    Ok(match text {
        None => None,
        Some(text) => Some(parse_duration(text)?).filter(|d| !d.is_zero()),
    })
}

/// `100` or a schedule of user counts, `line(1, 100, 1m) const(100, 5m)`.
fn user_schedule(text: &str) -> Result<Schedule, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(users) => Ok(Schedule::constant(users as f64)),
        Err(_) => Schedule::parse(text),
    }
}

/// A base URL (`-base-url`, a variant's `base_url`, a replay's): `scheme://host:port`
/// and nothing more.
pub fn parse_base_url(text: &str) -> Result<Url, String> {
    let text = text.trim_end_matches('/');
    let url = Url::parse(text).ok().filter(|url| {
        let bare = url.path() == "/" && url.query().is_none() && url.fragment().is_none();
        matches!(url.scheme(), "http" | "https") && url.has_host() && bare
    });
    url.ok_or_else(|| format!("{text:?}: want scheme://host:port, like http://127.0.0.1:8080"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TextOrNumber;

    fn text(value: &str) -> Option<TextOrNumber> {
        Some(TextOrNumber::Text(value.to_owned()))
    }

    #[test]
    fn fills_in_the_defaults() {
        let settings = AttackFields::default().settings(&Origin::flags()).unwrap();
        assert_eq!(
            settings.plan.pacing,
            Pacing::Open(Schedule::constant(defaults::RATE.per_sec()))
        );
        assert_eq!(
            (
                settings.timeout,
                settings.keepalive,
                settings.redirects,
                settings.max_in_flight
            ),
            (
                defaults::TIMEOUT,
                defaults::KEEPALIVE,
                defaults::REDIRECTS,
                defaults::MAX_IN_FLIGHT
            )
        );
    }

    #[test]
    fn reads_the_five_target_formats() {
        let rows: &[(Option<&str>, Result<TargetFormat, &str>)] = &[
            (None, Ok(TargetFormat::Http)),
            (Some("http"), Ok(TargetFormat::Http)),
            (Some("json"), Ok(TargetFormat::Json)),
            (Some("uri"), Ok(TargetFormat::TankUri)),
            (Some("uripost"), Ok(TargetFormat::TankUriPost)),
            (Some("phantom"), Ok(TargetFormat::TankPhantom)),
            (
                Some("ammo"),
                Err("-format: unknown format \"ammo\" (want http, json, uri, uripost or phantom)"),
            ),
        ];
        for (text, want) in rows {
            let fields = AttackFields {
                format: text.map(str::to_owned),
                ..AttackFields::default()
            };
            match (fields.settings(&Origin::flags()), want) {
                (Ok(settings), Ok(want)) => assert_eq!(settings.format, *want, "{text:?}"),
                (Err(err), Err(want)) => assert_eq!(err.to_string(), *want, "{text:?}"),
                (got, want) => panic!("{text:?}: got {:?}, want {want:?}", got.map(|s| s.format)),
            }
        }
    }

    #[test]
    fn checks_rates_and_in_flight_caps() {
        let rows: Vec<(AttackFields, Result<&str, &str>)> = vec![
            (
                AttackFields {
                    max_workers: Some(1),
                    ..AttackFields::default()
                },
                Ok("open"),
            ),
            (
                AttackFields {
                    rate: text("0"),
                    max_workers: Some(5),
                    ..AttackFields::default()
                },
                Ok("closed"),
            ),
            (
                AttackFields {
                    rate: text("inf"),
                    concurrency: text("5"),
                    ..AttackFields::default()
                },
                Ok("closed"),
            ),
            (
                AttackFields {
                    max_workers: Some(0),
                    ..AttackFields::default()
                },
                Err("-max-workers: must be at least 1 (leave it out for the default, 10000"),
            ),
            (
                AttackFields {
                    rate: text("0"),
                    max_workers: Some(0),
                    ..AttackFields::default()
                },
                Err("-max-workers: must be at least 1"),
            ),
            (
                AttackFields {
                    rate: text("0"),
                    ..AttackFields::default()
                },
                Err("-rate: 0 runs the closed model and needs a user count"),
            ),
            (
                AttackFields {
                    rate: text("inf"),
                    ..AttackFields::default()
                },
                Err("-rate: inf (read as 0: no pacing, as in vegeta) runs the closed model"),
            ),
            (
                AttackFields {
                    rate: text("inf"),
                    concurrency: text("5"),
                    ..AttackFields::default()
                }
                .clone_with_rate("100"),
                Err("cannot be combined with -rate=100"),
            ),
        ];
        for (fields, want) in rows {
            let got = fields
                .settings(&Origin::flags())
                .map(|s| match s.plan.pacing {
                    Pacing::Open(_) => "open",
                    Pacing::Closed { .. } => "closed",
                });
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{fields:?}"),
                (Err(err), Err(want)) => {
                    assert!(err.to_string().contains(want), "{fields:?}: {err}");
                }
                (got, want) => panic!("{fields:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    impl AttackFields {
        fn clone_with_rate(&self, rate: &str) -> AttackFields {
            AttackFields {
                rate: text(rate),
                ..self.clone()
            }
        }
    }

    #[test]
    fn flags_and_files_name_their_fields_differently() {
        let file = Origin::scenario("s.toml", 3, "search", Path::new(""));
        assert_eq!(Origin::flags().label("headers"), "-header");
        assert_eq!(Origin::flags().label("max_workers"), "-max-workers");
        assert_eq!(
            file.label("headers"),
            "s.toml:3: scenario \"search\": headers"
        );
        let mut plan = Origin::file("plan.toml:20: load.".to_owned(), Path::new(""));
        plan.field_labels.insert(
            "timeout".to_owned(),
            "plan.toml:24: load.timeout".to_owned(),
        );
        assert_eq!(plan.label("headers"), "plan.toml:20: load.headers");
        // A flag given over a file's table: the flag, in the table it failed in.
        let mut over = Origin::scenario("s.toml", 3, "search", Path::new(""));
        over.from_flags.insert("rate".to_owned());
        assert_eq!(over.label("rate"), "s.toml:3: scenario \"search\": -rate");
        assert_eq!(
            (over.written("rate", "5"), over.written("concurrency", "N")),
            ("-rate=5".to_owned(), "concurrency = N".to_owned())
        );
        assert_eq!(plan.label("timeout"), "plan.toml:24: load.timeout");
    }
}
