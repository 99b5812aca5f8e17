//! From what the user wrote to a run: the one way to build one, for `attack`'s flags,
//! scenario files and plans alike. [`AttackConfig::from_fields`] checks an attack's
//! fields ([`workload::AttackFields::settings`]) and reads what they name: the
//! targets (a file, stdin, inline text; http, json or Tank ammo format; all at once or, with
//! `lazy`, as they are needed), the body file and the data file.
//! [`RunConfig::from_fields`] checks the run-wide fields and what only this machine
//! can say (the TLS files exist, the threads fit the CPUs). Every error names the
//! field as its [`Origin`] spells it.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use workload::{
    AttackFields, AttackSettings, DataTable, Flow, FlowOptions, HttpTargetReader, JsonTargetReader,
    Origin, Pacing, ProtoSet, Reflector, ReplayFields, RunFields, StepFields, Target, TargetFormat,
    TlsOptions, TypeSource, WorkloadError, defaults,
};

use crate::grpc_reflect::H2Reflector;
use crate::replay::{self, Replay};
use crate::{AttackConfig, EngineError, RunConfig, TargetIter, TargetStream, Targets};

impl AttackConfig {
    /// One attack from its fields: checked, defaults filled in, targets and data read
    /// (or, with `lazy`, opened). `tls` (the run's) is how gRPC targets without `.proto`
    /// files ask an `https://` server's reflection for their types.
    pub fn from_fields(
        fields: &AttackFields,
        origin: &Origin,
        tls: &TlsOptions,
    ) -> Result<AttackConfig, EngineError> {
        let mut settings = fields.settings(origin).map_err(EngineError::Targets)?;
        let replay = match &fields.replay {
            Some(replay) => Some(replay_pace(fields, replay, &mut settings, origin)?),
            None => None,
        };
        if let Some(replay) = replay.filter(|r| !r.shape_only) {
            return Ok(AttackConfig {
                settings,
                targets: Targets::Replay(Arc::new(replay.replay)),
                data: None,
                flow: None,
            });
        }
        let data = data_table(fields, &settings, origin)?;
        let reflector: Arc<dyn Reflector> = Arc::new(H2Reflector { tls: tls.clone() });
        if let Some(steps) = &fields.step {
            let flow = flow(fields, steps, &settings, origin, data.as_deref(), reflector)?;
            return Ok(AttackConfig {
                targets: Targets::List(flow_targets(&flow)),
                settings,
                data,
                flow: Some(Arc::new(flow)),
            });
        }
        let targets = targets(fields, &settings, origin, data.as_deref(), reflector)?;
        Ok(AttackConfig {
            settings,
            targets,
            data,
            flow: None,
        })
    }
}

/// A replay surveyed, and whether only its shape is used.
struct Paced {
    replay: Replay,
    shape_only: bool,
}

/// Reads a replay's logs once and makes their shape the attack's schedule. The logs
/// set the pace, so no other pacing may be given; a replay of the requests themselves
/// takes no targets.
fn replay_pace(
    fields: &AttackFields,
    replay: &ReplayFields,
    settings: &mut AttackSettings,
    origin: &Origin,
) -> Result<Paced, EngineError> {
    let fail = |field: &str, reason: String| Err(EngineError::Targets(origin.error(field, reason)));
    let shape_only = replay.shape_only == Some(true);
    let pacing = [
        ("rate", fields.rate.is_some()),
        ("schedule", fields.schedule.is_some()),
        ("concurrency", fields.concurrency.is_some()),
    ];
    if let Some((field, _)) = pacing.iter().find(|(_, set)| *set) {
        return fail(
            field,
            format!(
                "a replay takes its pace from the logs: leave it out ({} changes the pace)",
                origin.spelled("replay.speed")
            ),
        );
    }
    if !shape_only
        && (fields.targets.is_some() || fields.targets_file.is_some() || fields.step.is_some())
    {
        let shape = match origin.place {
            None => "-replay-shape",
            Some(_) => "replay.shape_only = true",
        };
        return fail(
            "targets",
            format!(
                "a replay sends the logged requests: give no targets ({shape} drives targets or a flow with the logs' shape)"
            ),
        );
    }
    if replay.repeat == Some(true) && settings.plan.duration_ns.is_none() {
        let reason = "needs a duration (how long to keep replaying)".to_owned();
        return Err(EngineError::Targets(replay::field_error(
            origin, "loop", reason,
        )));
    }
    let surveyed = Replay::survey(
        replay,
        &settings.headers,
        settings.base_url.as_ref(),
        settings.keepalive,
        origin,
    )?;
    let schedule = surveyed
        .schedule(settings.plan.duration_ns)
        .map_err(|reason| EngineError::Targets(replay::field_error(origin, "files", reason)))?;
    settings.plan.pacing = Pacing::Open(schedule);
    Ok(Paced {
        replay: surveyed,
        shape_only,
    })
}

/// A flow's targets: its steps', then its stream steps' actions and events (each the
/// request of its step, never sent: records name them).
fn flow_targets(flow: &Flow) -> Vec<Target> {
    let steps = flow.steps.iter().map(|s| s.target.clone());
    let streams = flow
        .stream_targets
        .iter()
        .map(|t| flow.steps[t.step].target.clone());
    steps.chain(streams).collect()
}

/// A flow scenario's steps, checked: their templates, their data columns, and one
/// data row per closed-model user. gRPC steps read their types from the scenario's
/// `.proto` files, or from their servers' reflection.
fn flow(
    fields: &AttackFields,
    steps: &[StepFields],
    settings: &AttackSettings,
    origin: &Origin,
    data: Option<&DataTable>,
    reflector: Arc<dyn Reflector>,
) -> Result<Flow, EngineError> {
    let mut types = TypeSource::new(protos(fields, origin)?, Some(reflector))
        .with_gzip(grpc_gzip(fields, origin)?);
    flow_steps(fields, steps, settings, origin, data, &mut types).map_err(EngineError::Targets)
}

fn flow_steps(
    fields: &AttackFields,
    steps: &[StepFields],
    settings: &AttackSettings,
    origin: &Origin,
    data: Option<&DataTable>,
    types: &mut TypeSource,
) -> Result<Flow, WorkloadError> {
    let check_body_limit = match &fields.check_body_limit {
        Some(text) => units::parse_size(&text.text())
            .map_err(|e| origin.error("check_body_limit", e.to_string()))?,
        None => workload::DEFAULT_CHECK_BODY_LIMIT,
    };
    let options = FlowOptions {
        checks_fail_requests: fields.checks_fail_requests.unwrap_or(true),
        cookies: fields.cookies.unwrap_or(true),
        check_body_limit,
    };
    let read = |path: &Path| std::fs::read(path);
    let mut flow = Flow::compile_with(steps, options, &settings.headers, origin, &read, types)?;
    if let Some(base) = &settings.base_url {
        for step in &mut flow.steps {
            step.target = step.target.clone().rebased(base);
        }
    }
    let columns = flow.columns();
    match (columns.first(), data) {
        (None, _) => {}
        (Some(column), None) => {
            return Err(origin.error(
                "data",
                format!("a step reads {{{{csv.{column}}}}} but the scenario gives no data file"),
            ));
        }
        (Some(_), Some(data)) => data.check_columns(columns.iter().map(String::as_str))?,
    }
    if let (Some(data), Pacing::Closed { .. }) = (data, &settings.plan.pacing) {
        let users = settings.plan.max_users();
        if users > data.rows() as u64 {
            return Err(origin.error(
                "data",
                format!(
                    "{} rows for {users} users: each user of a flow takes its own row (user N logs in as row N); add rows or use fewer users",
                    data.rows()
                ),
            ));
        }
    }
    Ok(flow)
}

impl RunConfig {
    /// A run of `attacks` with the run-wide `fields` checked and defaults filled in.
    pub fn from_fields(
        attacks: Vec<AttackConfig>,
        fields: &RunFields,
        origin: &Origin,
    ) -> Result<RunConfig, EngineError> {
        let settings = fields.settings(origin).map_err(EngineError::Targets)?;
        if let Some(threads) = settings.threads {
            check_threads(threads, available_cpus())
                .map_err(|reason| EngineError::Targets(origin.error("threads", reason)))?;
        }
        // Read at start, whatever the targets' schemes, so a wrong path shows before any
        // request rather than at the first https target.
        let tls = &settings.tls;
        let files = (tls.root_certs.iter().map(|path| ("root_certs", path)))
            .chain(tls.client_cert.iter().map(|path| ("cert", path)))
            .chain(tls.client_key.iter().map(|path| ("key", path)));
        for (field, path) in files {
            File::open(path).map_err(|source| EngineError::Read {
                what: format!("{} {}", origin.label(field), path.display()),
                source,
            })?;
        }
        Ok(RunConfig { attacks, settings })
    }
}

/// The CPUs this process may run on (its affinity and quota), at least 1.
pub(crate) fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Event-loop threads may be at most [`defaults::MAX_THREADS_PER_CPU`] per CPU.
fn check_threads(threads: usize, cpus: usize) -> Result<(), String> {
    let most = cpus * defaults::MAX_THREADS_PER_CPU;
    if threads > most {
        return Err(format!(
            "{threads} is more than this machine can use: at most {most} ({} x the {cpus} CPUs this process may run on)",
            defaults::MAX_THREADS_PER_CPU
        ));
    }
    Ok(())
}

fn data_table(
    fields: &AttackFields,
    settings: &AttackSettings,
    origin: &Origin,
) -> Result<Option<Arc<DataTable>>, EngineError> {
    let Some(file) = &fields.data else {
        return Ok(None);
    };
    let path = origin.path(file);
    let input = File::open(&path).map_err(|source| EngineError::Read {
        what: format!("{} {}", origin.label("data"), path.display()),
        source,
    })?;
    let table = DataTable::read(input, &path.display().to_string(), settings.data_order)
        .map_err(EngineError::Targets)?;
    Ok(Some(Arc::new(table)))
}

/// A fixed list, or a stream with `lazy`. Inline targets (scenario files, plans) are
/// vegeta http-format text, one target per string.
fn targets(
    fields: &AttackFields,
    settings: &AttackSettings,
    origin: &Origin,
    data: Option<&DataTable>,
    reflector: Arc<dyn Reflector>,
) -> Result<Targets, EngineError> {
    let body = match &fields.body_file {
        Some(file) => std::fs::read(origin.path(file)).map_err(|source| EngineError::Read {
            what: format!("{} {file}", origin.label("body_file")),
            source,
        })?,
        None => Vec::new(),
    };
    let protos = protos(fields, origin)?;
    let (input, name) = target_input(fields, origin)?;
    let input = BufReader::new(input);
    let headers = &settings.headers;
    let stream: TargetIter = match settings.format {
        TargetFormat::Http => Box::new(
            HttpTargetReader::new(input, &name, headers, &body, &read_body_file)
                .with_protos(protos)
                .with_reflector(Some(reflector))
                .with_grpc_gzip(grpc_gzip(fields, origin)?),
        ),
        TargetFormat::Json => Box::new(JsonTargetReader::new(input, &name, headers, &body)),
        TargetFormat::TankUri => Box::new(workload::TankAmmoReader::new(
            input,
            &name,
            workload::TankAmmo::Uri,
            headers,
            &body,
            settings.base_url.as_ref(),
        )),
        TargetFormat::TankUriPost => Box::new(workload::TankAmmoReader::new(
            input,
            &name,
            workload::TankAmmo::UriPost,
            headers,
            &body,
            settings.base_url.as_ref(),
        )),
        TargetFormat::TankPhantom => Box::new(workload::TankAmmoReader::new(
            input,
            &name,
            workload::TankAmmo::Phantom,
            headers,
            &body,
            settings.base_url.as_ref(),
        )),
    };
    let stream: TargetIter = match settings.base_url.clone() {
        Some(base) => Box::new(stream.map(move |target| Ok(target?.rebased(&base)))),
        None => stream,
    };
    if fields.lazy == Some(true) {
        return Ok(Targets::Stream(TargetStream::new(stream)));
    }
    let list = stream
        .collect::<Result<Vec<_>, _>>()
        .map_err(EngineError::Targets)?;
    if list.is_empty() {
        return Err(EngineError::Targets(WorkloadError::NoTargets {
            source_name: name,
        }));
    }
    check_columns(&list, data, &name).map_err(EngineError::Targets)?;
    Ok(Targets::List(list))
}

/// The `.proto` files of gRPC targets, compiled once (none when `proto` is not given).
fn protos(fields: &AttackFields, origin: &Origin) -> Result<Option<Arc<ProtoSet>>, EngineError> {
    let Some(files) = &fields.proto else {
        if fields.import_path.is_some() {
            let reason = "is where a .proto's imports are looked up: give the .proto too (-proto)";
            return Err(EngineError::Targets(origin.error("import_path", reason)));
        }
        return Ok(None);
    };
    let paths = |list: &[String]| list.iter().map(|f| origin.path(f)).collect::<Vec<_>>();
    let imports = paths(fields.import_path.as_deref().unwrap_or_default());
    let set = ProtoSet::compile(&paths(files), &imports).map_err(EngineError::Targets)?;
    Ok(Some(Arc::new(set)))
}

/// Whether gRPC calls' messages go gzipped (`grpc_compress`).
fn grpc_gzip(fields: &AttackFields, origin: &Origin) -> Result<bool, EngineError> {
    match fields.grpc_compress.as_deref() {
        None | Some("identity") => Ok(false),
        Some("gzip") => Ok(true),
        Some(other) => Err(EngineError::Targets(origin.error(
            "grpc_compress",
            format!("{other:?}: want gzip or identity (none)"),
        ))),
    }
}

/// The reader and name of the targets: inline text, a file, or stdin.
fn target_input(
    fields: &AttackFields,
    origin: &Origin,
) -> Result<(Box<dyn Read + Send>, String), EngineError> {
    if let Some(inline) = &fields.targets {
        let name = origin.label("targets");
        return Ok((Box::new(std::io::Cursor::new(inline.join("\n\n"))), name));
    }
    match fields.targets_file.as_deref() {
        None | Some("-") => Ok((Box::new(std::io::stdin()), "stdin".to_owned())),
        Some(file) => {
            let path = origin.path(file);
            let file = File::open(&path).map_err(|source| EngineError::Read {
                what: format!("{} {}", origin.label("targets_file"), path.display()),
                source,
            })?;
            Ok((Box::new(file), path.display().to_string()))
        }
    }
}

/// Every `{{csv.COLUMN}}` must name a column of the data file.
fn check_columns(
    targets: &[Target],
    data: Option<&DataTable>,
    source: &str,
) -> Result<(), WorkloadError> {
    let columns: Vec<String> = targets.iter().flat_map(Target::template_columns).collect();
    match (columns.first(), data) {
        (None, _) => Ok(()),
        (Some(column), None) => Err(WorkloadError::Plan(format!(
            "{source}: a target reads {{{{csv.{column}}}}} but no -data file was given"
        ))),
        (Some(_), Some(data)) => data.check_columns(columns.iter().map(String::as_str)),
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
            let name = path.display().to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            let file = ScenarioFile::parse(&text, &name).unwrap_or_else(|e| panic!("{e}"));
            let run = RunFields {
                stop_when: Some(file.stop_when.clone()),
                ..RunFields::default()
            };
            let attacks = file
                .scenarios
                .iter()
                .map(|(line, fields)| {
                    let scenario = fields.name.as_deref().unwrap_or_default();
                    let origin = Origin::scenario(&name, *line, scenario, &dir);
                    AttackConfig::from_fields(fields, &origin, &TlsOptions::default())
                })
                .collect::<Result<Vec<_>, _>>()
                .unwrap_or_else(|e| panic!("{e}"));
            RunConfig::from_fields(attacks, &run, &Origin::file(format!("{name}: "), &dir))
                .unwrap_or_else(|e| panic!("{e}"));
            files += 1;
        }
        assert!(
            files >= 4,
            "the four field reports' shapes ship as scenario files"
        );
    }

    #[test]
    fn threads_fit_the_cpus() {
        let rows = [
            (1, 1, Ok(())),
            (4, 1, Ok(())),
            (
                5,
                1,
                Err("5 is more than this machine can use: at most 4 (4 x the 1 CPUs"),
            ),
            (8, 2, Ok(())),
            (9, 2, Err("9 is more than this machine can use: at most 8")),
        ];
        for (threads, cpus, want) in rows {
            match (check_threads(threads, cpus), want) {
                (Ok(()), Ok(())) => {}
                (Err(err), Err(want)) => assert!(err.starts_with(want), "{threads}/{cpus}: {err}"),
                (got, want) => panic!("{threads}/{cpus}: got {got:?}, want {want:?}"),
            }
        }
    }
}
