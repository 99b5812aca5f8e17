//! From what the user wrote to [`engine::AttackConfig`]s. Flags and scenario-file
//! tables are both [`workload::AttackFields`], so there is one path from either to an
//! attack, and every error names where the value came from: `-rate: ...` for a flag,
//! `scenarios.toml:12: scenario "search": rate: ...` for a file. The fields are checked
//! (and defaults filled in) by [`workload::AttackFields::settings`]; this file does the
//! I/O: targets, body and data files.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use engine::{AttackConfig, TargetIter, TargetStream, Targets};
use workload::{
    AttackFields, AttackSettings, DataTable, HttpTargetReader, JsonTargetReader, Origin, Target,
    TargetFormat,
};

/// Builds one attack: the fields are checked by [`AttackFields::settings`]; the
/// targets and data rows are read (or, lazily, opened) here.
pub fn attack_config(fields: &AttackFields, origin: &Origin) -> anyhow::Result<AttackConfig> {
    let settings = fields.settings(origin)?;
    let data = data_table(fields, &settings, origin)?;
    let targets = targets(fields, &settings, origin, data.as_deref())?;
    Ok(AttackConfig {
        name: settings.name,
        targets,
        plan: settings.plan,
        timeout: settings.timeout,
        keepalive: settings.keepalive,
        redirects: settings.redirects,
        max_in_flight: settings.max_in_flight,
        max_body: settings.max_body,
        data,
    })
}

fn data_table(
    fields: &AttackFields,
    settings: &AttackSettings,
    origin: &Origin,
) -> anyhow::Result<Option<Arc<DataTable>>> {
    let Some(file) = &fields.data else {
        return Ok(None);
    };
    let path = origin.path(file);
    let input = File::open(&path)
        .with_context(|| format!("{} {}", origin.label(fields, "data"), path.display()))?;
    Ok(Some(Arc::new(DataTable::read(
        input,
        &path.display().to_string(),
        settings.data_order,
    )?)))
}

/// A fixed list, or a stream with `-lazy`. Inline targets (scenario files) are vegeta
/// http-format text, one target per string.
fn targets(
    fields: &AttackFields,
    settings: &AttackSettings,
    origin: &Origin,
    data: Option<&DataTable>,
) -> anyhow::Result<Targets> {
    let headers = &settings.headers;
    let body = match &fields.body_file {
        Some(file) => std::fs::read(origin.path(file))
            .with_context(|| format!("{} {file}", origin.label(fields, "body_file")))?,
        None => Vec::new(),
    };
    let (input, name) = target_input(fields, origin)?;
    let input = BufReader::new(input);
    let stream: TargetIter = match settings.format {
        TargetFormat::Http => Box::new(HttpTargetReader::new(
            input,
            &name,
            headers,
            &body,
            &read_body_file,
        )),
        TargetFormat::Json => Box::new(JsonTargetReader::new(input, &name, headers, &body)),
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
}
