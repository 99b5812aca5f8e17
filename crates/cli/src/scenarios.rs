//! From what the user wrote to [`engine::AttackConfig`]s. Flags and scenario-file
//! tables are both [`workload::AttackFields`], so there is one path from either to an
//! attack, and every error names where the value came from: `-rate: ...` for a flag,
//! `scenarios.toml:12: scenario "search": rate: ...` for a file.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use engine::{AttackConfig, TargetIter, TargetStream, Targets};
use units::{Rate, parse_duration, parse_size};
use workload::{
    AttackFields, DataOrder, DataTable, Header, HttpTargetReader, JsonTargetReader, Pacing, Plan,
    Schedule, Target,
};

/// Where a set of fields came from, for error messages and relative paths.
pub struct Origin {
    /// `None` for flags; `Some("scenarios.toml:12")` for a scenario table.
    pub place: Option<String>,
    /// Relative paths in a scenario file are relative to the file.
    pub base_dir: PathBuf,
}

impl Origin {
    pub fn flags() -> Origin {
        Origin {
            place: None,
            base_dir: PathBuf::new(),
        }
    }

    /// How to name `field` in an error.
    fn label(&self, fields: &AttackFields, field: &str) -> String {
        match &self.place {
            None => {
                // The few fields whose flag is spelled differently (vegeta's names).
                let flag = match field {
                    "headers" => "header",
                    "body_file" => "body",
                    "targets_file" => "targets",
                    other => other,
                };
                format!("-{}", flag.replace('_', "-"))
            }
            Some(place) => format!(
                "{place}: scenario {:?}: {field}",
                fields.name.as_deref().unwrap_or_default()
            ),
        }
    }

    fn path(&self, text: &str) -> PathBuf {
        let path = Path::new(text);
        if path.is_absolute() || text == "-" {
            path.to_owned()
        } else {
            self.base_dir.join(path)
        }
    }
}

/// Builds one attack; the targets are read (or, lazily, opened) here.
pub fn attack_config(fields: &AttackFields, origin: &Origin) -> anyhow::Result<AttackConfig> {
    let label = |field: &str| origin.label(fields, field);
    let duration =
        optional_duration(fields.duration.as_deref()).with_context(|| label("duration"))?;
    let timeout = match fields.timeout.as_deref() {
        Some(text) => parse_duration(text).with_context(|| label("timeout"))?,
        None => Duration::from_secs(30),
    };
    if timeout.is_zero() {
        bail!("{}: must be longer than zero", label("timeout"));
    }
    let max_body = match fields
        .max_body
        .as_ref()
        .map(workload::TextOrNumber::text)
        .as_deref()
        .map(str::trim)
    {
        None | Some("-1") => None,
        Some(text) => Some(parse_size(text).with_context(|| label("max_body"))?),
    };
    if fields.max_requests == Some(0) {
        bail!("{}: must be at least 1", label("max_requests"));
    }
    let pacing = pacing(fields, origin)?;
    let plan = Plan {
        pacing,
        duration_ns: duration.map(|d| d.as_nanos() as u64),
        max_requests: fields.max_requests,
    };
    let data = data_table(fields, origin)?;
    let targets = targets(fields, origin, data.as_deref())?;
    Ok(AttackConfig {
        name: fields.name.clone().unwrap_or_default(),
        targets,
        plan,
        timeout,
        keepalive: fields.keepalive.unwrap_or(true),
        redirects: fields.redirects.unwrap_or(10),
        max_in_flight: fields.max_workers.unwrap_or(10_000).max(1),
        max_body,
        data,
    })
}

fn optional_duration(text: Option<&str>) -> anyhow::Result<Option<Duration>> {
    Ok(match text {
        None => None,
        Some(text) => Some(parse_duration(text)?).filter(|d| !d.is_zero()),
    })
}

/// Open model (a rate or a schedule) or closed model (a user count or schedule).
fn pacing(fields: &AttackFields, origin: &Origin) -> anyhow::Result<Pacing> {
    let label = |field: &str| origin.label(fields, field);
    let think_ns = optional_duration(fields.think_time.as_deref())
        .with_context(|| label("think_time"))?
        .map_or(0, |d| d.as_nanos() as u64);
    let concurrency = fields
        .concurrency
        .as_ref()
        .map(workload::TextOrNumber::text);
    if fields.think_time.is_some() && concurrency.is_none() && !rate_is_zero(fields) {
        bail!(
            "{}: the think time belongs to the closed model; give -concurrency too",
            label("think_time")
        );
    }
    if let Some(schedule) = &fields.schedule {
        if concurrency.is_some() || fields.rate.is_some() {
            bail!(
                "{}: give one of -rate, -schedule or -concurrency",
                label("schedule")
            );
        }
        return Ok(Pacing::Open(
            Schedule::parse(schedule).map_err(|e| anyhow!("{}: {e}", label("schedule")))?,
        ));
    }
    let rate = match &fields.rate {
        Some(rate) => Rate::parse(&rate.text()).with_context(|| label("rate"))?,
        None => Rate {
            count: 50.0,
            per: Duration::from_secs(1),
        },
    };
    let users = match (concurrency, rate.is_unpaced(), fields.max_workers) {
        (Some(users), _, _) if fields.rate.is_none() || rate.is_unpaced() => users,
        (Some(_), _, _) => bail!(
            "{}: -concurrency runs the closed model; it cannot be combined with -rate={}",
            label("concurrency"),
            rate
        ),
        (None, true, Some(users)) if users > 0 => users.to_string(),
        (None, true, _) => bail!(
            "{}: 0 runs the closed model and needs a user count: give -concurrency=N (or -max-workers=N)",
            label("rate")
        ),
        (None, false, _) => return Ok(Pacing::Open(Schedule::constant(rate.per_sec()))),
    };
    let users = user_schedule(&users).map_err(|e| anyhow!("{}: {e}", label("concurrency")))?;
    Ok(Pacing::Closed { users, think_ns })
}

fn rate_is_zero(fields: &AttackFields) -> bool {
    fields
        .rate
        .as_ref()
        .is_some_and(|r| Rate::parse(&r.text()).is_ok_and(|r| r.is_unpaced()))
}

/// `100` or a schedule of user counts, `line(1, 100, 1m) const(100, 5m)`.
fn user_schedule(text: &str) -> Result<Schedule, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(users) => Ok(Schedule::constant(users as f64)),
        Err(_) => Schedule::parse(text),
    }
}

fn data_table(fields: &AttackFields, origin: &Origin) -> anyhow::Result<Option<Arc<DataTable>>> {
    let order = match fields.data_order.as_deref() {
        None => DataOrder::Sequential,
        Some(text) => DataOrder::parse(text)
            .map_err(|e| anyhow!("{}: {e}", origin.label(fields, "data_order")))?,
    };
    let Some(file) = &fields.data else {
        if fields.data_order.is_some() {
            bail!("{}: needs a data file", origin.label(fields, "data_order"));
        }
        return Ok(None);
    };
    let path = origin.path(file);
    let input = File::open(&path)
        .with_context(|| format!("{} {}", origin.label(fields, "data"), path.display()))?;
    Ok(Some(Arc::new(DataTable::read(
        input,
        &path.display().to_string(),
        order,
    )?)))
}

/// A fixed list, or a stream with `-lazy`. Inline targets (scenario files) are vegeta
/// http-format text, one target per string.
fn targets(
    fields: &AttackFields,
    origin: &Origin,
    data: Option<&DataTable>,
) -> anyhow::Result<Targets> {
    let headers = fields
        .headers
        .iter()
        .flatten()
        .map(|text| {
            Header::parse(text)
                .map_err(|reason| anyhow!("{}: {reason}", origin.label(fields, "headers")))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let body = match &fields.body_file {
        Some(file) => std::fs::read(origin.path(file))
            .with_context(|| format!("{} {file}", origin.label(fields, "body_file")))?,
        None => Vec::new(),
    };
    let (input, name) = target_input(fields, origin)?;
    let input = BufReader::new(input);
    let stream: TargetIter = match fields.format.as_deref().unwrap_or("http") {
        "http" => Box::new(HttpTargetReader::new(
            input,
            &name,
            &headers,
            &body,
            &read_body_file,
        )),
        "json" => Box::new(JsonTargetReader::new(input, &name, &headers, &body)),
        other => bail!(
            "{}: unknown format {other:?} (want http or json)",
            origin.label(fields, "format")
        ),
    };
    if fields.lazy == Some(true) {
        return Ok(Targets::Stream(TargetStream::new(stream)));
    }
    let list = stream.collect::<Result<Vec<_>, _>>()?;
    if list.is_empty() {
        bail!("{name}: no targets");
    }
    check_columns(&list, data, &name)?;
    Ok(Targets::List(list))
}

/// The reader and name of the targets: inline text, a file, or stdin.
fn target_input(
    fields: &AttackFields,
    origin: &Origin,
) -> anyhow::Result<(Box<dyn Read + Send>, String)> {
    if let Some(inline) = &fields.targets {
        let name = origin.label(fields, "targets");
        return Ok((Box::new(std::io::Cursor::new(inline.join("\n\n"))), name));
    }
    match fields.targets_file.as_deref() {
        None | Some("-") => Ok((Box::new(std::io::stdin()), "stdin".to_owned())),
        Some(file) => {
            let path = origin.path(file);
            let file = File::open(&path).with_context(|| {
                format!(
                    "{} {}",
                    origin.label(fields, "targets_file"),
                    path.display()
                )
            })?;
            Ok((Box::new(file), path.display().to_string()))
        }
    }
}

/// Every `{{csv.COLUMN}}` must name a column of the data file.
fn check_columns(targets: &[Target], data: Option<&DataTable>, source: &str) -> anyhow::Result<()> {
    let columns: Vec<String> = targets.iter().flat_map(Target::template_columns).collect();
    match (columns.first(), data) {
        (None, _) => Ok(()),
        (Some(column), None) => {
            bail!("{source}: a target reads {{{{csv.{column}}}}} but no -data file was given")
        }
        (Some(_), Some(data)) => Ok(data.check_columns(columns.iter().map(String::as_str))?),
    }
}

/// `@path` body lines are read relative to the working directory, as in vegeta.
fn read_body_file(path: &Path) -> std::io::Result<Vec<u8>> {
    std::fs::read(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::ScenarioFile;

    #[test]
    fn every_shipped_scenario_file_builds() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let file = ScenarioFile::parse(&text, &path.display().to_string())
                .unwrap_or_else(|e| panic!("{e}"));
            for rule in &file.stop_when {
                workload::StopRule::parse(rule)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            }
            for (line, fields) in &file.scenarios {
                let origin = Origin {
                    place: Some(format!("{}:{line}", path.display())),
                    base_dir: dir.clone(),
                };
                attack_config(fields, &origin).unwrap_or_else(|e| panic!("{e:#}"));
            }
            files += 1;
        }
        assert!(
            files >= 4,
            "the four field reports' shapes ship as scenario files"
        );
    }

    #[test]
    fn flags_and_files_name_their_fields_differently() {
        let fields = AttackFields {
            name: Some("search".to_owned()),
            ..AttackFields::default()
        };
        let file = Origin {
            place: Some("s.toml:3".to_owned()),
            base_dir: PathBuf::new(),
        };
        assert_eq!(Origin::flags().label(&fields, "headers"), "-header");
        assert_eq!(
            Origin::flags().label(&fields, "max_workers"),
            "-max-workers"
        );
        assert_eq!(
            file.label(&fields, "headers"),
            "s.toml:3: scenario \"search\": headers"
        );
    }
}
