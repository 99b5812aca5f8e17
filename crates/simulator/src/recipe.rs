//! Recipe parsing and validation: origin_simulator's JSON plus our extensions.
//!
//! Parsing is pure (no I/O): it checks every field and reports the first bad one by
//! its path (`recipe[1].stages[0].latency: bad duration "10": needs a unit ...`).
//! Fetching an `origin` and reading a `body_file` happen later, in [`crate::body`],
//! so a recipe can be checked without side effects.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::app::{Requirement, Wanted};
use crate::body::PayloadSpec;
use crate::duration_size::{duration_from_json, parse_size_range};
use crate::error::{Invalid, SimulatorError};
use crate::failure::{Failure, STATUSLESS_MODES};
use crate::grpc::GrpcSpec;
use crate::latency::Latency;
use crate::recipe_fields::{Fields, join, kind, or_top};
use crate::template::Template;

/// Route-level keys, origin_simulator's first, then ours.
const ROUTE_KEYS: &[&str] = &[
    "route",
    "origin",
    "body",
    "random_content",
    "headers",
    "stages",
    "body_file",
    "capacity",
    "requires",
    "list",
    "ids_from",
    "grpc",
    "websocket",
    "events",
];
const REQUIRES_KEYS: &[&str] = &["header", "cookie", "matches"];
const LIST_KEYS: &[&str] = &["count"];
const STAGE_KEYS: &[&str] = &["at", "status", "latency", "failure"];
const OUTCOME_KEYS: &[&str] = &["status", "weight", "latency", "failure", "body"];
const CAPACITY_KEYS: &[&str] = &[
    "workers",
    "overflow",
    "queue",
    "queue_timeout",
    "reject_status",
    "reject_latency",
    "overflow_latency",
];
/// Headers whose value the simulator must control, or framing breaks.
const RESERVED_HEADERS: &[&str] = &["content-length", "transfer-encoding", "connection"];

/// A parsed and validated recipe: one or more routes. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Recipe {
    pub(crate) routes: Vec<RouteSpec>,
    /// Where the recipe came from (file name or `add_recipe`), for build-time errors.
    pub(crate) source_name: String,
    /// Posted over the admin API by whoever can reach it, not given by the operator:
    /// its `body_file`s are confined to [`crate::SimulatorOptions::files_dir`].
    pub(crate) posted: bool,
}

impl Recipe {
    /// The route patterns, in recipe order.
    pub fn routes(&self) -> impl Iterator<Item = &str> {
        self.routes.iter().map(|r| r.route.as_str())
    }

    /// For each route with a capacity model: its pattern and the ground-truth capacity in
    /// requests per second, `(workers + overflow) / mean service time` of its first stage.
    pub fn capacity_rps(&self) -> Vec<(String, f64)> {
        self.routes
            .iter()
            .filter_map(|r| {
                let capacity = r.capacity.as_ref()?;
                let stage = r.stages.first()?;
                // A stage answered at once has no finite capacity to report.
                (stage.mean_latency_ns() > 0.0).then(|| (r.route.clone(), capacity.rps(stage)))
            })
            .collect()
    }
}

/// One route of a recipe, as written, validated.
#[derive(Debug, Clone)]
pub(crate) struct RouteSpec {
    /// Path of this route in the recipe (`recipe[2]`), for build-time errors.
    pub field: String,
    pub route: String,
    /// The name of the route's trailing `/{NAME}` segment, if it has one.
    pub param: Option<String>,
    pub payload: PayloadSpec,
    /// The route's body as a template, when it holds one (see [`crate::template`]).
    pub body_template: Option<Template>,
    /// Headers without templates, rendered into every head at load.
    pub headers: Vec<(String, String)>,
    /// Headers whose value is a template, rendered per answer.
    pub header_templates: Vec<(String, Template)>,
    pub gzip: bool,
    pub requires: Vec<Requirement>,
    /// `ids_from`: the route named, and once resolved the ids 1..=N its list holds.
    pub ids_from: Option<String>,
    pub id_count: Option<u64>,
    pub stages: Vec<StageSpec>,
    pub capacity: Option<CapacitySpec>,
    /// A gRPC route's method and answer ([`crate::grpc`]).
    pub grpc: Option<GrpcSpec>,
    /// The route as submitted, echoed by `current_recipe`.
    pub json: Value,
    /// A route that holds its connection open (`websocket`, `events`).
    pub stream: Option<crate::stream::StreamSpec>,
}

#[derive(Debug, Clone)]
pub(crate) struct StageSpec {
    pub at: Duration,
    pub outcomes: Vec<OutcomeSpec>,
}

impl StageSpec {
    /// Weighted mean latency, for the ground-truth capacity figure.
    pub fn mean_latency_ns(&self) -> f64 {
        let total: f64 = self.outcomes.iter().map(|o| o.weight).sum();
        self.outcomes
            .iter()
            .map(|o| o.weight * o.latency.mean_ns())
            .sum::<f64>()
            / total
    }
}

/// One possible answer of a stage, drawn with probability `weight / total`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OutcomeSpec {
    pub weight: f64,
    /// 0 when `failure` sends no status line.
    pub status: u16,
    pub latency: Latency,
    pub failure: Option<Failure>,
    /// Overrides the route's body for this outcome.
    pub body: Option<OutcomeBody>,
    /// A gRPC route's status code (`OK` for its 2xx outcomes).
    pub grpc_status: Option<u8>,
}

/// A mix entry's own `body`, with its path in the recipe for build-time errors.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OutcomeBody {
    pub field: String,
    pub text: String,
    pub template: Option<Template>,
}

/// A worker pool in front of the route: the system-under-test model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CapacitySpec {
    pub workers: usize,
    pub overflow: usize,
    pub queue: usize,
    pub queue_timeout: Duration,
    pub reject_status: u16,
    pub reject_latency: Latency,
    pub overflow_latency: Latency,
}

impl CapacitySpec {
    /// Ground-truth capacity while `stage` runs, in requests per second:
    /// `(workers + overflow) / mean service time` (infinite when the stage answers at once).
    pub fn rps(&self, stage: &StageSpec) -> f64 {
        (self.workers + self.overflow) as f64 / (stage.mean_latency_ns() / 1e9)
    }
}

/// Parses a recipe (one route object or an array of them). `source_name` names the
/// input in errors; a relative `body_file` is resolved against the current directory.
pub fn parse_recipe(json: &str, source_name: &str) -> Result<Recipe, SimulatorError> {
    parse_with_base(json, source_name, None)
}

/// Parses a recipe posted to `/_admin/add_recipe`: its `body_file`s stay as written,
/// to be resolved inside the operator's files directory when the recipe loads.
pub(crate) fn parse_posted_recipe(json: &str) -> Result<Recipe, SimulatorError> {
    let recipe = parse_with_base(json, "add_recipe", None)?;
    Ok(Recipe {
        posted: true,
        ..recipe
    })
}

/// Reads and parses a recipe file; a relative `body_file` is resolved against the
/// file's directory, so a recipe and its bodies can move together.
pub fn parse_recipe_file(path: &Path) -> Result<Recipe, SimulatorError> {
    let text = std::fs::read_to_string(path).map_err(|cause| SimulatorError::RecipeFile {
        path: path.to_owned(),
        cause,
    })?;
    parse_with_base(&text, &path.display().to_string(), path.parent())
}

fn parse_with_base(
    json: &str,
    source_name: &str,
    base: Option<&Path>,
) -> Result<Recipe, SimulatorError> {
    let value: Value = serde_json::from_str(json).map_err(|e| SimulatorError::Json {
        source_name: source_name.to_owned(),
        detail: e.to_string(),
    })?;
    let routes = parse_routes(&value, base).map_err(|e| e.within(source_name))?;
    Ok(Recipe {
        routes,
        source_name: source_name.to_owned(),
        posted: false,
    })
}

fn parse_routes(value: &Value, base: Option<&Path>) -> Result<Vec<RouteSpec>, Invalid> {
    let mut routes = match value {
        Value::Object(_) => vec![parse_route(value, String::new(), base)?],
        Value::Array(items) if items.is_empty() => {
            return Err(Invalid::new(
                "recipe",
                "empty array: a recipe needs at least one route",
            ));
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| parse_route(item, format!("recipe[{i}]"), base))
            .collect::<Result<Vec<_>, _>>()?,
        other => {
            return Err(Invalid::new(
                "recipe",
                format!("expected an object or an array, got {}", kind(other)),
            ));
        }
    };
    for (i, route) in routes.iter().enumerate() {
        if let Some(first) = routes[..i].iter().find(|r| r.route == route.route) {
            let field = join(&route.field, "route");
            return Err(Invalid::new(
                field,
                format!(
                    "{:?} appears twice (also in {})",
                    route.route,
                    or_top(&first.field)
                ),
            ));
        }
    }
    resolve_ids_from(&mut routes)?;
    Ok(routes)
}

/// Gives each `ids_from` route the item count of the `list` route it names, which must
/// be in the same recipe (a list loaded later could change under it).
fn resolve_ids_from(routes: &mut [RouteSpec]) -> Result<(), Invalid> {
    for i in 0..routes.len() {
        let Some(name) = routes[i].ids_from.as_deref() else {
            continue;
        };
        let count = routes
            .iter()
            .find(|r| r.route == name)
            .and_then(|r| match r.payload {
                PayloadSpec::List { count } => Some(count),
                _ => None,
            });
        let Some(count) = count else {
            return Err(Invalid::new(
                join(&routes[i].field, "ids_from"),
                format!("{name:?} names no route with a \"list\" in this recipe"),
            ));
        };
        routes[i].id_count = Some(count);
    }
    Ok(())
}

fn parse_route(value: &Value, path: String, base: Option<&Path>) -> Result<RouteSpec, Invalid> {
    let fields = Fields::new(value, path, ROUTE_KEYS)?;
    let grpc = fields
        .get("grpc")
        .map(|v| crate::grpc::parse_spec(v, fields.field("grpc"), base))
        .transpose()?;
    let route = match (fields.string("route")?, &grpc) {
        (Some(route), _) => route.to_owned(),
        (None, Some(grpc)) => grpc.route(),
        (None, None) => "/*".to_owned(),
    };
    check_route(&route).map_err(|m| fields.err("route", m))?;
    let param = route_param(&route).map(str::to_owned);
    let (headers, header_templates) = parse_headers(&fields, param.as_deref())?;
    let gzip = headers
        .iter()
        .any(|(k, v)| k == "content-encoding" && v.eq_ignore_ascii_case("gzip"));
    let default_stages = Value::Array(vec![Value::Object(Map::new())]);
    // A gRPC method answers OK at once unless told otherwise; a WebSocket or event
    // stream route answers by its own key, so it needs no stage either.
    let answers_itself =
        grpc.is_some() || fields.get("websocket").is_some() || fields.get("events").is_some();
    let stages_value = match (fields.get("stages"), answers_itself) {
        (Some(stages), _) => stages,
        (None, true) => &default_stages,
        (None, false) => {
            return Err(fields.err("stages", "missing: a route needs at least one stage"));
        }
    };
    let ids_from = parse_ids_from(&fields, param.as_deref())?;
    let (payload, body_template) = match parse_payload(&fields, base, param.as_deref(), gzip)? {
        // An item route without a body of its own answers the item.
        (PayloadSpec::Empty, None) if ids_from.is_some() => {
            item_payload(&fields, param.as_deref(), gzip)?
        }
        parsed => parsed,
    };
    let mut stages = parse_stages(stages_value, fields.field("stages"))?;
    template_outcome_bodies(&mut stages, param.as_deref(), gzip)?;
    grpc_outcomes(&fields, grpc.is_some(), &payload, &mut stages)?;
    let stream = crate::stream::parse(fields.get("websocket"), fields.get("events"))
        .map_err(|(key, message)| Invalid::new(join(&fields.path, &key), message))?;
    if grpc.is_some() && stream.is_some() {
        return Err(fields.err("grpc", "a route has grpc, websocket or events, one of them"));
    }
    Ok(RouteSpec {
        payload,
        body_template,
        stages,
        capacity: fields
            .get("capacity")
            .map(|v| parse_capacity(v, fields.field("capacity")))
            .transpose()?,
        requires: parse_requires(&fields)?,
        field: fields.path.clone(),
        route,
        param,
        headers,
        header_templates,
        gzip,
        ids_from,
        id_count: None,
        grpc,
        json: value.clone(),
        stream,
    })
}

/// The NAME of a route ending in `/{NAME}` (letters, digits, `_`): its path parameter.
pub(crate) fn route_param(route: &str) -> Option<&str> {
    let (_, last) = route.rsplit_once('/')?;
    let name = last.strip_prefix('{')?.strip_suffix('}')?;
    let valid = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    valid.then_some(name)
}

/// A body's template, if it holds one: refused with gzip (compressing per answer would
/// make the simulator the bottleneck) and beside `<<size>>` placeholders.
fn body_template(text: &str, param: Option<&str>, gzip: bool) -> Result<Option<Template>, String> {
    let Some(template) = Template::parse(text, param)? else {
        return Ok(None);
    };
    if gzip {
        return Err("holds a template, rendered per answer, so it cannot be gzipped: drop content-encoding: gzip or the template".to_owned());
    }
    if crate::body::placeholders(text).next().is_some() {
        return Err(
            "holds both a template and <<size>> placeholders: use one or the other".to_owned(),
        );
    }
    Ok(Some(template))
}

fn template_outcome_bodies(
    stages: &mut [StageSpec],
    param: Option<&str>,
    gzip: bool,
) -> Result<(), Invalid> {
    for outcome in stages.iter_mut().flat_map(|s| s.outcomes.iter_mut()) {
        if let Some(body) = &mut outcome.body {
            body.template =
                body_template(&body.text, param, gzip).map_err(|m| Invalid::new(&body.field, m))?;
        }
    }
    Ok(())
}

fn parse_ids_from(fields: &Fields<'_>, param: Option<&str>) -> Result<Option<String>, Invalid> {
    let Some(name) = fields.string("ids_from")? else {
        return Ok(None);
    };
    if param.is_none() {
        return Err(fields.err(
            "ids_from",
            "needs a route ending in /{NAME}, whose last segment is the id",
        ));
    }
    Ok(Some(name.to_owned()))
}

/// The default body of an `ids_from` route: `{"id": ID, "name": "item ID"}`.
fn item_payload(
    fields: &Fields<'_>,
    param: Option<&str>,
    gzip: bool,
) -> Result<(PayloadSpec, Option<Template>), Invalid> {
    let text = crate::app::item_body(param.unwrap_or_default());
    let template = body_template(&text, param, gzip)
        .map_err(|m| fields.err("ids_from", format!("the default item body {m}")))?;
    Ok((PayloadSpec::Body(text), template))
}

fn parse_requires(fields: &Fields<'_>) -> Result<Vec<Requirement>, Invalid> {
    let Some(value) = fields.get("requires") else {
        return Ok(Vec::new());
    };
    let path = fields.field("requires");
    match value {
        Value::Array(items) if items.is_empty() => Err(Invalid::new(
            path,
            "empty array: give at least one {\"header\": NAME} or {\"cookie\": NAME}",
        )),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| parse_requirement(item, format!("{path}[{i}]")))
            .collect(),
        _ => Ok(vec![parse_requirement(value, path)?]),
    }
}

fn parse_requirement(value: &Value, path: String) -> Result<Requirement, Invalid> {
    let fields = Fields::new(value, path, REQUIRES_KEYS)?;
    let wanted = match (fields.string("header")?, fields.string("cookie")?) {
        (Some(_), Some(_)) => {
            return Err(fields.err("cookie", "give header or cookie, not both"));
        }
        (None, None) => {
            return Err(Invalid::new(
                &fields.path,
                "needs \"header\" or \"cookie\": the name the request must send",
            ));
        }
        (Some(name), None) if !name.is_empty() && name.bytes().all(is_token_byte) => {
            Wanted::Header(name.to_ascii_lowercase())
        }
        (Some(name), None) => {
            return Err(fields.err("header", format!("{name:?} is not a valid header name")));
        }
        (None, Some(name)) if !name.is_empty() && name.bytes().all(is_token_byte) => {
            Wanted::Cookie(name.to_owned())
        }
        (None, Some(name)) => {
            return Err(fields.err("cookie", format!("{name:?} is not a valid cookie name")));
        }
    };
    let pattern = fields
        .string("matches")?
        .map(|text| {
            regex::RegexBuilder::new(text)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| fields.err("matches", regex_error(text, &e)))
        })
        .transpose()?;
    Ok(Requirement { wanted, pattern })
}

/// regex's message on one line: its last line says what is wrong.
fn regex_error(text: &str, error: &regex::Error) -> String {
    let message = error.to_string();
    let last = message.lines().last().unwrap_or_default().trim();
    let last = last.strip_prefix("error: ").unwrap_or(last);
    format!("bad regular expression {text:?}: {last}")
}

fn check_route(route: &str) -> Result<(), String> {
    if !route.starts_with('/') {
        return Err(format!("{route:?} must start with /"));
    }
    if route.trim_end_matches('*').contains('*') || route.ends_with("**") {
        return Err(format!(
            "{route:?}: * is only allowed once, at the end (prefix match)"
        ));
    }
    if route.starts_with("/_admin") || route == "/metrics" {
        return Err(format!("{route:?} is reserved for the admin API"));
    }
    if route.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return Err(format!("{route:?} holds a space or control character"));
    }
    Ok(())
}

/// Fixed headers, and headers whose value is a template.
type Headers = (Vec<(String, String)>, Vec<(String, Template)>);

/// `headers`: `name: value`, or `name: [value, ...]` to send a header more than once
/// (`set-cookie`), since a JSON object cannot repeat a name.
fn parse_headers(fields: &Fields<'_>, param: Option<&str>) -> Result<Headers, Invalid> {
    let Some(value) = fields.get("headers") else {
        return Ok((Vec::new(), Vec::new()));
    };
    let Value::Object(map) = value else {
        return Err(fields.err(
            "headers",
            format!("expected an object of name: value, got {}", kind(value)),
        ));
    };
    let (mut fixed, mut templated) = (Vec::with_capacity(map.len()), Vec::new());
    for (name, value) in map {
        let field = format!("{}.{name}", fields.field("headers"));
        let lower = name.to_ascii_lowercase();
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(Invalid::new(field, "not a valid header name"));
        }
        if RESERVED_HEADERS.contains(&lower.as_str()) {
            return Err(Invalid::new(
                field,
                "set by the simulator; remove it from the recipe",
            ));
        }
        let values: Vec<(String, &Value)> = match value {
            Value::Array(items) if items.is_empty() => {
                return Err(Invalid::new(field, "empty array: give at least one value"));
            }
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("{field}[{i}]"), v))
                .collect(),
            single => vec![(field, single)],
        };
        for (field, value) in values {
            let text = header_value(&field, value)?;
            match Template::parse(text, param).map_err(|m| Invalid::new(&field, m))? {
                Some(template) => templated.push((lower.clone(), template)),
                None => fixed.push((lower.clone(), text.to_owned())),
            }
        }
    }
    Ok((fixed, templated))
}

fn header_value<'a>(field: &str, value: &'a Value) -> Result<&'a str, Invalid> {
    let Some(text) = value.as_str() else {
        return Err(Invalid::new(
            field,
            format!("expected a string value, got {}", kind(value)),
        ));
    };
    if text.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(Invalid::new(field, "value holds a line break"));
    }
    // HTTP/2 sends the same headers, and its encoder refuses control characters.
    if http::HeaderValue::from_bytes(text.as_bytes()).is_err() {
        return Err(Invalid::new(field, "value holds a control character"));
    }
    Ok(text)
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn parse_payload(
    fields: &Fields<'_>,
    base: Option<&Path>,
    param: Option<&str>,
    gzip: bool,
) -> Result<(PayloadSpec, Option<Template>), Invalid> {
    let set: Vec<&str> = ["origin", "body", "random_content", "body_file", "list"]
        .into_iter()
        .filter(|k| fields.get(k).is_some())
        .collect();
    if set.len() > 1 {
        return Err(fields.err(
            set[1],
            format!(
                "only one of origin, body, random_content, body_file, list may be set (also {})",
                set[0]
            ),
        ));
    }
    if let Some(body) = fields.string("body")? {
        crate::body::check_placeholders(body).map_err(|m| fields.err("body", m))?;
        let template = body_template(body, param, gzip).map_err(|m| fields.err("body", m))?;
        return Ok((PayloadSpec::Body(body.to_owned()), template));
    }
    if let Some(value) = fields.get("list") {
        let list = Fields::new(value, fields.field("list"), LIST_KEYS)?;
        if list.get("count").is_none() {
            return Err(list.err("count", "missing: how many items the list holds"));
        }
        let count = list.count("count", 0)? as u64;
        return Ok((PayloadSpec::List { count }, None));
    }
    Ok((parse_loaded_payload(fields, base)?, None))
}

/// The payloads read or made when the recipe loads: origin, random content, file.
fn parse_loaded_payload(fields: &Fields<'_>, base: Option<&Path>) -> Result<PayloadSpec, Invalid> {
    if let Some(url) = fields.string("origin")? {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(fields.err(
                "origin",
                format!("{url:?} is not an http:// or https:// url"),
            ));
        }
        return Ok(PayloadSpec::Origin(url.to_owned()));
    }
    if let Some(size) = fields.string("random_content")? {
        let (min_bytes, max_bytes) =
            parse_size_range(size).map_err(|m| fields.err("random_content", m))?;
        return Ok(PayloadSpec::Random {
            min_bytes,
            max_bytes,
        });
    }
    if let Some(file) = fields.string("body_file")? {
        let path = Path::new(file);
        let resolved = match base {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_owned(),
        };
        return Ok(PayloadSpec::File(resolved));
    }
    Ok(PayloadSpec::Empty)
}

fn parse_stages(value: &Value, path: String) -> Result<Vec<StageSpec>, Invalid> {
    let Value::Array(items) = value else {
        return Err(Invalid::new(
            path,
            format!("expected an array of stages, got {}", kind(value)),
        ));
    };
    if items.is_empty() {
        return Err(Invalid::new(
            path,
            "empty: a route needs at least one stage",
        ));
    }
    let mut stages = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let stage = parse_stage(item, format!("{path}[{i}]"))?;
        if let Some(previous) = stages.last().map(|s: &StageSpec| s.at)
            && stage.at <= previous
        {
            return Err(Invalid::new(
                format!("{path}[{i}].at"),
                "stages must be in increasing order of \"at\"",
            ));
        }
        stages.push(stage);
    }
    Ok(stages)
}

fn parse_stage(value: &Value, path: String) -> Result<StageSpec, Invalid> {
    let fields = Fields::new(value, path, STAGE_KEYS)?;
    let at = fields
        .parsed("at", duration_from_json)?
        .unwrap_or(Duration::ZERO);
    let latency = fields
        .parsed("latency", Latency::from_json)?
        .unwrap_or(Latency::ZERO);
    let failure = fields.parsed("failure", Failure::from_json)?;
    let outcomes = match fields.get("status") {
        None => vec![single_outcome(&fields, 200, latency, failure)?],
        Some(Value::Number(_)) => {
            let status = status_code(fields.get("status")).map_err(|m| fields.err("status", m))?;
            vec![single_outcome(&fields, status, latency, failure)?]
        }
        Some(mix @ (Value::Object(_) | Value::Array(_))) => {
            parse_mix(mix, &fields.field("status"), &latency, failure.as_ref())?
        }
        Some(Value::String(name)) => {
            let code = grpc_code(name).map_err(|m| fields.err("status", m))?;
            let mut outcome = single_outcome(&fields, 200, latency, failure)?;
            outcome.grpc_status = Some(code);
            vec![outcome]
        }
        Some(other) => {
            return Err(fields.err(
                "status",
                format!(
                    "expected a status code or a weighted mix, got {}",
                    kind(other)
                ),
            ));
        }
    };
    Ok(StageSpec { at, outcomes })
}

fn single_outcome(
    fields: &Fields<'_>,
    status: u16,
    latency: Latency,
    failure: Option<Failure>,
) -> Result<OutcomeSpec, Invalid> {
    let status = match &failure {
        Some(f) if !f.sends_status() => {
            if fields.get("status").is_some() {
                return Err(fields.err(
                    "failure",
                    format!(
                        "{:?} sends no status; drop \"status\" or use a mix",
                        f.label()
                    ),
                ));
            }
            0
        }
        _ => status,
    };
    Ok(OutcomeSpec {
        weight: 1.0,
        status,
        latency,
        failure,
        body: None,
        grpc_status: None,
    })
}

fn status_code(value: Option<&Value>) -> Result<u16, String> {
    let value = value.unwrap_or(&Value::Null);
    match value.as_u64() {
        Some(code @ 200..=599) => Ok(code as u16),
        _ => Err(format!("{value} is not a final HTTP status (200 to 599)")),
    }
}

/// A weighted mix: `{"200": 83, "500": {"weight": 6, "latency": "10ms"}, "reset": 1}`
/// or the array form `[{"status": 200, "weight": 83}, ...]`, which can repeat a status.
fn parse_mix(
    value: &Value,
    path: &str,
    latency: &Latency,
    failure: Option<&Failure>,
) -> Result<Vec<OutcomeSpec>, Invalid> {
    let entries: Vec<(String, Option<&str>, &Value)> = match value {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (format!("{path}.{k}"), Some(k.as_str()), v))
            .collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{path}[{i}]"), None, v))
            .collect(),
        _ => Vec::new(),
    };
    if entries.is_empty() {
        return Err(Invalid::new(
            path,
            "empty mix: give at least one status with a weight",
        ));
    }
    let outcomes = entries
        .into_iter()
        .map(|(field, key, entry)| parse_mix_entry(&field, key, entry, latency, failure))
        .collect::<Result<Vec<_>, _>>()?;
    if outcomes.iter().map(|o| o.weight).sum::<f64>() <= 0.0 {
        return Err(Invalid::new(path, "weights add up to 0"));
    }
    Ok(outcomes)
}

fn parse_mix_entry(
    field: &str,
    key: Option<&str>,
    entry: &Value,
    latency: &Latency,
    failure: Option<&Failure>,
) -> Result<OutcomeSpec, Invalid> {
    let (weight_value, fields) = match entry {
        Value::Object(_) => {
            let fields = Fields::new(entry, field.to_owned(), OUTCOME_KEYS)?;
            (
                fields
                    .get("weight")
                    .ok_or_else(|| fields.err("weight", "missing"))?,
                Some(fields),
            )
        }
        _ => (entry, None),
    };
    let weight = weight_value
        .as_f64()
        .filter(|w| w.is_finite() && *w >= 0.0)
        .ok_or_else(|| {
            Invalid::new(
                weight_field(field, fields.is_some()),
                format!("weight {weight_value} is not a number >= 0"),
            )
        })?;
    let own_latency = fields
        .as_ref()
        .map(|f| f.parsed("latency", Latency::from_json))
        .transpose()?
        .flatten();
    let own_failure = fields
        .as_ref()
        .map(|f| f.parsed("failure", Failure::from_json))
        .transpose()?
        .flatten();
    let body = fields
        .as_ref()
        .map(|f| f.string("body"))
        .transpose()?
        .flatten()
        .map(|text| OutcomeBody {
            field: format!("{field}.body"),
            text: text.to_owned(),
            // Parsed in `parse_route`, which knows the route's parameter.
            template: None,
        });
    if let Some(body) = &body {
        crate::body::check_placeholders(&body.text).map_err(|m| Invalid::new(&body.field, m))?;
    }
    let status_value = fields.as_ref().and_then(|f| f.get("status"));
    let (status, key_failure, grpc_status) = mix_status(field, key, status_value)?;
    let failure = key_failure.or(own_failure).or_else(|| failure.cloned());
    let status = if failure.as_ref().is_some_and(|f| !f.sends_status()) {
        0
    } else {
        status
    };
    Ok(OutcomeSpec {
        weight,
        status,
        latency: own_latency.unwrap_or_else(|| latency.clone()),
        failure,
        body,
        grpc_status,
    })
}

fn weight_field(field: &str, object: bool) -> String {
    if object {
        format!("{field}.weight")
    } else {
        field.to_owned()
    }
}

/// The status of a mix entry: its key (`"503"`, `"reset"`, `"UNAVAILABLE"`) or, in the
/// array form, its `status` field (a code, a mode name or a gRPC status name).
fn mix_status(
    field: &str,
    key: Option<&str>,
    status: Option<&Value>,
) -> Result<(u16, Option<Failure>, Option<u8>), Invalid> {
    let name = match (key, status) {
        (Some(key), None) => key.to_owned(),
        (Some(_), Some(_)) => {
            return Err(Invalid::new(
                format!("{field}.status"),
                "the key already names the status",
            ));
        }
        (None, Some(Value::String(s))) => s.clone(),
        (None, Some(v)) => v.to_string(),
        (None, None) => return Err(Invalid::new(format!("{field}.status"), "missing")),
    };
    if STATUSLESS_MODES.contains(&name.as_str()) {
        let failure =
            Failure::from_json(&Value::String(name)).map_err(|m| Invalid::new(field, m))?;
        return Ok((0, Some(failure), None));
    }
    if let Some(code) = crate::grpc::code_of(&name) {
        return Ok((200, None, Some(code)));
    }
    let code = name.parse::<u64>().ok().map(Value::from);
    let status = status_code(code.as_ref()).map_err(|_| {
        Invalid::new(
            field,
            format!(
                "{name:?} is neither a status (200 to 599), one of {}, nor a gRPC status name (OK, UNAVAILABLE, ...)",
                STATUSLESS_MODES.join(", ")
            ),
        )
    })?;
    Ok((status, None, None))
}

/// A stage's `status` written as a string: a gRPC status name.
fn grpc_code(name: &str) -> Result<u8, String> {
    crate::grpc::code_of(name).ok_or_else(|| {
        format!("expected a status code, a weighted mix or a gRPC status name, got {name:?}")
    })
}

/// A gRPC route's 2xx outcomes answer `OK` unless their status names a gRPC code; its
/// answer is `grpc.answer`, so it takes no body. Other routes take no gRPC codes.
fn grpc_outcomes(
    fields: &Fields<'_>,
    is_grpc: bool,
    payload: &PayloadSpec,
    stages: &mut [StageSpec],
) -> Result<(), Invalid> {
    let outcomes = stages.iter_mut().flat_map(|s| s.outcomes.iter_mut());
    if !is_grpc {
        if outcomes.into_iter().any(|o| o.grpc_status.is_some()) {
            return Err(fields.err(
                "stages",
                "gRPC status names are for routes with a \"grpc\" method",
            ));
        }
        return Ok(());
    }
    if *payload != PayloadSpec::Empty {
        return Err(fields.err(
            "grpc",
            "a gRPC route answers grpc.answer: drop its body, origin, random_content, body_file or list",
        ));
    }
    for outcome in outcomes {
        if outcome.grpc_status.is_none() && (200..300).contains(&outcome.status) {
            outcome.grpc_status = Some(0);
        }
        if let Some(body) = outcome
            .body
            .as_ref()
            .filter(|_| outcome.grpc_status.is_some())
        {
            return Err(Invalid::new(
                &body.field,
                "a gRPC answer is grpc.answer, not a body",
            ));
        }
    }
    Ok(())
}

fn parse_capacity(value: &Value, path: String) -> Result<CapacitySpec, Invalid> {
    let fields = Fields::new(value, path, CAPACITY_KEYS)?;
    let workers = fields.count("workers", 0)?;
    if workers == 0 {
        return Err(fields.err(
            "workers",
            "missing or 0: the pool needs at least one worker",
        ));
    }
    let reject_status = match fields.get("reject_status") {
        None => 503,
        some => status_code(some).map_err(|m| fields.err("reject_status", m))?,
    };
    Ok(CapacitySpec {
        workers,
        overflow: fields.count("overflow", 0)?,
        queue: fields.count("queue", 0)?,
        queue_timeout: fields
            .parsed("queue_timeout", duration_from_json)?
            .unwrap_or(Duration::from_secs(5)),
        reject_status,
        reject_latency: fields
            .parsed("reject_latency", Latency::from_json)?
            .unwrap_or(Latency::ZERO),
        overflow_latency: fields
            .parsed("overflow_latency", Latency::from_json)?
            .unwrap_or(Latency::ZERO),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Recipe, String> {
        parse_recipe(json, "r.json").map_err(|e| e.to_string())
    }

    /// origin_simulator's README and examples, byte for byte in shape.
    #[test]
    fn accepts_origin_simulator_recipes() {
        let rows = [
            r#"{"origin": "https://www.bbc.co.uk/news", "stages": [
                {"at": 0, "status": 404, "latency": "50ms"},
                {"at": "4s", "status": 503, "latency": "2s"},
                {"at": "6s", "status": 200, "latency": "100ms"}]}"#,
            r#"{"random_content": "428kb", "stages": [{"at": 0, "status": 200, "latency": 0}]}"#,
            r#"[{"stages": [{"status": 200, "latency": 0, "at": 0}], "route": "/*",
                 "random_content": "300kb..400kb", "headers": {"content-encoding": "gzip"}}]"#,
            r#"{"body": "Hello <<256kb>> world", "stages": [{"at": 0, "status": 200, "latency": "100ms..200ms"}]}"#,
            r#"[{"stages": [{"status": 200, "latency": "1s", "at": 0}], "route": "/*", "random_content": null,
                 "origin": "https://www.bbc.co.uk/search", "body": null,
                 "headers": {"content-encoding": "gzip", "cache-control": "private, max-age=0, no-cache"}}]"#,
            r#"[{"route": "/example/endpoint", "body": "Example body", "stages": [{"at": 0, "latency": "400ms", "status": 200}]},
                {"route": "/news", "origin": "http://127.0.0.1:1/news", "stages": [{"at": 0, "status": 404, "latency": "50ms"}]},
                {"route": "/*", "body": "Error - not defined", "stages": [{"at": 0, "status": 406, "latency": "0ms"}]}]"#,
        ];
        for json in rows {
            if let Err(e) = parse(json) {
                panic!("{e}\nfor {json}");
            }
        }
        let recipe = parse(rows[2]).unwrap();
        let route = &recipe.routes[0];
        assert!(route.gzip);
        assert_eq!(
            route.payload,
            PayloadSpec::Random {
                min_bytes: 300 * 1024,
                max_bytes: 400 * 1024
            }
        );
        assert_eq!(
            parse(rows[0]).unwrap().routes[0].route,
            "/*",
            "route defaults to /*"
        );
    }

    #[test]
    fn stream_routes_need_no_stages_and_other_routes_do() {
        // (recipe, whether it parses)
        let rows = [
            (r#"{"route": "/chat", "websocket": "echo"}"#, true),
            (r#"{"route": "/ticks", "events": {"count": 3}}"#, true),
            (r#"{"route": "/page"}"#, false),
        ];
        for (text, parses) in rows {
            match parse(text) {
                Ok(recipe) => {
                    assert!(parses, "{text}");
                    assert!(recipe.routes[0].stream.is_some(), "{text}");
                }
                Err(err) => {
                    assert!(!parses, "{text}: {err}");
                    assert!(err.contains("stages: missing"), "{text}: {err}");
                }
            }
        }
    }

    #[test]
    fn accepts_extensions() {
        let recipe = parse(
            r#"{"route": "/api*", "body_file": "page.html", "stages": [
                {"at": 0, "latency": {"dist": "lognormal", "p50": "80ms", "p99": "400ms"},
                 "status": {"200": 83, "500": {"weight": 6, "latency": "10ms"}, "reset": 1}},
                {"at": "30s", "status": [{"status": 200, "weight": 9}, {"status": 200, "weight": 1, "failure": "trickle"}]},
                {"at": "60s", "failure": {"mode": "stall", "for": "5s"}}],
              "capacity": {"workers": 8, "overflow": 4, "queue": 16, "queue_timeout": "2s",
                           "reject_status": 500, "reject_latency": "5ms", "overflow_latency": "20ms"}}"#,
        )
        .unwrap();
        let route = &recipe.routes[0];
        assert_eq!(route.payload, PayloadSpec::File("page.html".into()));
        let mix = &route.stages[0].outcomes;
        assert_eq!(mix.len(), 3);
        let reset = mix
            .iter()
            .find(|o| o.failure == Some(Failure::Reset))
            .unwrap();
        assert_eq!((reset.status, reset.weight), (0, 1.0));
        let five_hundred = mix.iter().find(|o| o.status == 500).unwrap();
        assert_eq!(five_hundred.latency, Latency::Fixed { ns: 10_000_000 });
        assert!(matches!(
            mix.iter().find(|o| o.status == 200).unwrap().latency,
            Latency::LogNormal { .. }
        ));
        assert_eq!(
            route.stages[1].outcomes[1].failure,
            Some(Failure::Trickle {
                chunk_bytes: 1024,
                every: Duration::from_millis(100)
            })
        );
        assert_eq!(route.stages[2].outcomes[0].status, 0);
        let capacity = route.capacity.as_ref().unwrap();
        assert_eq!(
            (
                capacity.workers,
                capacity.overflow,
                capacity.queue,
                capacity.reject_status
            ),
            (8, 4, 16, 500)
        );
    }

    #[test]
    fn relative_body_files_follow_the_recipe_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(
            &path,
            r#"{"body_file": "b.txt", "stages": [{"status": 200}]}"#,
        )
        .unwrap();
        let recipe = parse_recipe_file(&path).unwrap();
        assert_eq!(
            recipe.routes[0].payload,
            PayloadSpec::File(dir.path().join("b.txt"))
        );
        let missing = parse_recipe_file(&dir.path().join("nope.json"))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("nope.json"), "{missing}");
    }

    /// Every rejection names the source and the field.
    #[test]
    fn rejects_with_the_field_named() {
        let stage = r#""stages": [{"at": 0, "status": 200, "latency": "1s"}]"#;
        let rows: Vec<(String, &str)> = vec![
            ("{".into(), "r.json: not valid json: EOF while parsing"),
            ("42".into(), "r.json: recipe: expected an object or an array, got a number"),
            ("[]".into(), "r.json: recipe: empty array"),
            ("[42]".into(), "r.json: recipe[0]: expected an object, got a number"),
            (r#"{"stages": [{"at": 0, "status": 200, "latency": "10"}]}"#.into(), "r.json: stages[0].latency: bad duration \"10\": needs a unit"),
            (r#"{"stages": [{"at": 0, "status": 200, "latency": 50}]}"#.into(), "r.json: stages[0].latency: bad duration 50: needs a unit, e.g. \"50ms\""),
            (r#"{"stages": [{"at": "4 seconds", "status": 200}]}"#.into(), "stages[0].at: bad duration \"4 seconds\""),
            (r#"[{"route": "/a", "stages": []}]"#.into(), "r.json: recipe[0].stages: empty"),
            (r#"{"route": "/a"}"#.into(), "r.json: stages: missing"),
            (format!(r#"{{"colour": "red", {stage}}}"#), "r.json: colour: unknown field (expected one of route, origin"),
            (r#"{"stages": [{"at": 0, "status": 200, "delay": "1s"}]}"#.into(), "stages[0].delay: unknown field"),
            (format!(r#"{{"random_content": "428", {stage}}}"#), "random_content: bad size \"428\": needs a unit"),
            (format!(r#"{{"random_content": "2gb", {stage}}}"#), "random_content: bad size \"2gb\": unknown unit"),
            (format!(r#"{{"random_content": 428, {stage}}}"#), "random_content: expected a string, got a number"),
            (format!(r#"{{"body": "<<lots>>", {stage}}}"#), "body: placeholder <<lots>>"),
            (format!(r#"{{"body": "x", "random_content": "1kb", {stage}}}"#), "random_content: only one of origin, body, random_content, body_file"),
            (format!(r#"{{"origin": "ftp://x/y", {stage}}}"#), "origin: \"ftp://x/y\" is not an http"),
            (format!(r#"{{"route": "news", {stage}}}"#), "route: \"news\" must start with /"),
            (format!(r#"{{"route": "/a*b", {stage}}}"#), "route: \"/a*b\": * is only allowed once, at the end"),
            (format!(r#"{{"route": "/_admin/x", {stage}}}"#), "route: \"/_admin/x\" is reserved"),
            (format!(r#"[{{"route": "/a", {stage}}}, {{"route": "/a", {stage}}}]"#), "recipe[1].route: \"/a\" appears twice (also in recipe[0])"),
            (format!(r#"{{"headers": {{"content-length": "5"}}, {stage}}}"#), "headers.content-length: set by the simulator"),
            (format!(r#"{{"headers": {{"x-a": "1\r\nx-b: 2"}}, {stage}}}"#), "headers.x-a: value holds a line break"),
            (format!(r#"{{"headers": {{"x-a": "1\u0007"}}, {stage}}}"#), "headers.x-a: value holds a control character"),
            (format!(r#"{{"headers": {{"bad name": "1"}}, {stage}}}"#), "headers.bad name: not a valid header name"),
            (format!(r#"{{"headers": {{"x-n": 5}}, {stage}}}"#), "headers.x-n: expected a string value, got a number"),
            (format!(r#"{{"headers": ["x"], {stage}}}"#), "headers: expected an object"),
            (r#"{"stages": [{"at": 0, "status": 700}]}"#.into(), "stages[0].status: 700 is not a final HTTP status"),
            (r#"{"stages": [{"at": 0, "status": "200"}]}"#.into(), "stages[0].status: expected a status code, a weighted mix or a gRPC status name, got \"200\""),
            (r#"{"stages": [{"status": "UNAVAILABLE"}]}"#.into(), "stages: gRPC status names are for routes with a \"grpc\" method"),
            (r#"{"stages": [{"status": {"OK": 1, "500": 1}}]}"#.into(), "stages: gRPC status names are for routes with a \"grpc\" method"),
            (r#"{"grpc": {"proto": "g.proto", "method": "p.S/M"}, "body": "x"}"#.into(), "grpc: a gRPC route answers grpc.answer: drop its body"),
            (r#"{"grpc": {"proto": "g.proto", "method": "p.S/M"}, "stages": [{"status": {"OK": {"weight": 1, "body": "x"}}}]}"#.into(), "stages[0].status.OK.body: a gRPC answer is grpc.answer, not a body"),
            (r#"{"stages": [{"at": 0, "status": {"200": "lots"}}]}"#.into(), "stages[0].status.200: weight \"lots\" is not a number >= 0"),
            (r#"{"stages": [{"at": 0, "status": {"200": -1}}]}"#.into(), "stages[0].status.200: weight -1 is not a number >= 0"),
            (r#"{"stages": [{"at": 0, "status": {"200": 0, "500": 0}}]}"#.into(), "stages[0].status: weights add up to 0"),
            (r#"{"stages": [{"at": 0, "status": {}}]}"#.into(), "stages[0].status: empty mix"),
            (r#"{"stages": [{"at": 0, "status": {"ok": 1}}]}"#.into(), "stages[0].status.ok: \"ok\" is neither a status (200 to 599), one of reset, close, stall, malformed, rst_stream, nor a gRPC status name"),
            (r#"{"stages": [{"at": 0, "status": {"500": {"latency": "1s"}}}]}"#.into(), "stages[0].status.500.weight: missing"),
            (r#"{"stages": [{"at": 0, "status": {"500": {"weight": 1, "latency": "fast"}}}]}"#.into(), "stages[0].status.500.latency: bad duration \"fast\""),
            (r#"{"stages": [{"at": 0, "status": [{"weight": 1}]}]}"#.into(), "stages[0].status[0].status: missing"),
            (r#"{"stages": [{"at": 0, "status": 200, "failure": "reset"}]}"#.into(), "stages[0].failure: \"reset\" sends no status"),
            (r#"{"stages": [{"at": 0, "failure": "explode"}]}"#.into(), "stages[0].failure: unknown failure mode \"explode\""),
            (r#"{"stages": [{"at": "2s", "status": 200}, {"at": "1s", "status": 500}]}"#.into(), "stages[1].at: stages must be in increasing order"),
            (r#"{"stages": [{"at": 0, "latency": {"dist": "normal", "p50": "1s", "p99": "10ms"}}]}"#.into(), "stages[0].latency: p99: below p50"),
            (format!(r#"{{"capacity": {{"workers": 0}}, {stage}}}"#), "capacity.workers: missing or 0"),
            (format!(r#"{{"capacity": {{"workers": -3}}, {stage}}}"#), "capacity.workers: expected a whole number"),
            (format!(r#"{{"capacity": {{"workers": 4, "queue_timeout": 5}}, {stage}}}"#), "capacity.queue_timeout: bad duration 5"),
            (format!(r#"{{"capacity": {{"workers": 4, "reject_status": 99}}, {stage}}}"#), "capacity.reject_status: 99 is not a final HTTP status"),
            (format!(r#"{{"capacity": {{"workers": 4, "pool": 2}}, {stage}}}"#), "capacity.pool: unknown field"),
            (format!(r#"{{"websocket": "chorus", {stage}}}"#), "websocket: \"chorus\": want \"echo\", \"silent\" or \"broadcast\""),
            (format!(r#"{{"websocket": {{"mode": "echo", "every": "1s"}}, {stage}}}"#), "websocket.mode: \"echo\": every and data go with \"broadcast\""),
            (format!(r#"{{"websocket": {{"mode": "broadcast", "every": "0s"}}, {stage}}}"#), "websocket.every: must be above 0"),
            (format!(r#"{{"websocket": {{"mode": "broadcast", "rate": 5}}, {stage}}}"#), "websocket.rate: unknown field"),
            (format!(r#"{{"websocket": {{"subprotocol": "a, b"}}, {stage}}}"#), "websocket.subprotocol: \"a, b\": want one name"),
            (format!(r#"{{"websocket": {{"limit": 0}}, {stage}}}"#), "websocket.limit: 0: want a whole number above 0"),
            (format!(r#"{{"websocket": {{"limit": "many"}}, {stage}}}"#), "websocket.limit: \"many\": want a whole number above 0"),
            (format!(r#"{{"websocket": "echo", "events": {{"count": 1}}, {stage}}}"#), "events: a route has websocket or events, not both"),
            (format!(r#"{{"events": {{"count": 0}}, {stage}}}"#), "events.count: missing or not a whole number above 0"),
            (format!(r#"{{"events": {{"count": 2, "every": "soon"}}, {stage}}}"#), "events.every: bad duration \"soon\""),
            (format!(r#"{{"events": {{"count": 2, "data": "a\nb"}}, {stage}}}"#), "events.data: \"a\\nb\": want one line of text"),
            (format!(r#"{{"events": {{"count": 2, "rate": 5}}, {stage}}}"#), "events.rate: unknown field"),
            (format!(r#"{{"events": 5, {stage}}}"#), "events: 5: want"),
            (format!(r#"{{"events": {{"count": 2, "format": "json"}}, {stage}}}"#), "events.format: \"json\": want \"sse\" or \"text\""),
            (format!(r#"{{"events": {{"count": 2, "format": "text", "retry": "1s"}}, {stage}}}"#), "events.format: \"text\" has no retry or event"),
            (format!(r#"{{"events": {{"count": 2, "first": "later"}}, {stage}}}"#), "events.first: bad duration"),
            (r#"{"grpc": {"proto": "g.proto", "method": "p.S/M"}, "websocket": "echo"}"#.into(), "grpc: a route has grpc, websocket or events, one of them"),
        ];
        for (json, want) in rows {
            match parse(&json) {
                Ok(_) => panic!("accepted {json}"),
                Err(got) => assert!(got.contains(want), "for {json}\n got: {got}\nwant: {want}"),
            }
        }
    }

    #[test]
    fn grpc_routes_read_status_names_from_their_stages() {
        let recipe = parse(
            r#"[{"grpc": {"proto": "g.proto", "method": "p.S/M", "answer": {"a": 1}},
                 "stages": [{"status": {"OK": 9, "UNAVAILABLE": {"weight": 1, "latency": "1ms"}, "503": 1, "reset": 1}},
                            {"at": "1s", "status": "DEADLINE_EXCEEDED", "latency": "2s"}]},
                {"route": "/other", "grpc": {"proto": "g.proto", "method": "p.S.N"}}]"#,
        )
        .unwrap();
        let [mixed, plain] = &recipe.routes[..] else {
            panic!("two routes");
        };
        assert_eq!(mixed.route, "/p.S/M");
        let codes: Vec<(u16, Option<u8>)> = mixed
            .stages
            .iter()
            .flat_map(|s| s.outcomes.iter().map(|o| (o.status, o.grpc_status)))
            .collect();
        assert_eq!(
            codes,
            // A mix object's keys come sorted.
            [
                (503, None),
                (200, Some(0)),
                (200, Some(14)),
                (0, None),
                (200, Some(4))
            ]
        );
        assert_eq!(plain.route, "/other");
        assert_eq!(
            plain.stages[0].outcomes[0].grpc_status,
            Some(0),
            "no stages: OK at once"
        );
    }

    #[test]
    fn accepts_application_extensions() {
        let recipe = parse(
            r#"[{"route": "/login", "body": "{\"token\": \"{{id}}\", \"user\": \"{{request.query.user}}\"}",
                 "headers": {"set-cookie": ["session={{id}}; Path=/; HttpOnly", "seen=1"], "x-path": "{{request.path}}"},
                 "stages": [{"status": {"200": 1, "500": {"weight": 1, "body": "no {{request.header.X-User}}"}}}]},
                {"route": "/items", "list": {"count": 3}, "requires": {"cookie": "session"}, "stages": [{"status": 200}]},
                {"route": "/items/{id}", "ids_from": "/items", "stages": [{"status": 200}],
                 "requires": [{"header": "Authorization", "matches": "^Bearer .+"}, {"cookie": "session"}]},
                {"route": "/echo/{name}", "body": "hi {{request.param.name}} {{mustache}}", "stages": [{"status": 200}]}]"#,
        )
        .unwrap();
        let [login, list, item, echo] = &recipe.routes[..] else {
            panic!("four routes")
        };
        assert!(login.body_template.is_some());
        assert_eq!(
            login.headers,
            [("set-cookie".to_owned(), "seen=1".to_owned())]
        );
        let templated: Vec<&str> = login
            .header_templates
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(templated, ["set-cookie", "x-path"]);
        let own = login.stages[0].outcomes[1].body.as_ref().unwrap();
        assert!(own.template.is_some());
        assert_eq!(list.payload, PayloadSpec::List { count: 3 });
        assert_eq!(list.requires[0].wanted, Wanted::Cookie("session".into()));
        assert_eq!(
            (item.param.as_deref(), item.id_count),
            (Some("id"), Some(3))
        );
        assert!(
            item.body_template.is_some(),
            "an item route answers the item"
        );
        assert_eq!(
            item.requires[0].wanted,
            Wanted::Header("authorization".into())
        );
        assert!(
            item.requires[0]
                .pattern
                .as_ref()
                .unwrap()
                .is_match("Bearer x")
        );
        assert_eq!(echo.param.as_deref(), Some("name"));
        let plain =
            parse(r#"{"body": "{{mustache}} {\"a\": {}}", "stages": [{"status": 200}]}"#).unwrap();
        assert!(
            plain.routes[0].body_template.is_none(),
            "only {{request. and {{id}} are templates"
        );
    }

    /// The application extensions' rejections name the route and the field.
    #[test]
    fn rejects_application_fields_with_the_field_named() {
        let stage = r#""stages": [{"status": 200}]"#;
        let list = r#"{"route": "/items", "list": {"count": 2}, "stages": [{"status": 200}]}"#;
        let rows: Vec<(String, &str)> = vec![
            (
                format!(r#"[{{"route": "/a", "body": "{{{{request.nope}}}}", {stage}}}]"#),
                "r.json: recipe[0].body: unknown template {{request.nope}}",
            ),
            (
                format!(r#"{{"body": "{{{{id", {stage}}}"#),
                "body: template at byte 0 has no closing }}",
            ),
            (
                format!(r#"{{"body": "{{{{id}}}} <<1kb>>", {stage}}}"#),
                "body: holds both a template and <<size>> placeholders",
            ),
            (
                format!(
                    r#"{{"body": "{{{{id}}}}", "headers": {{"content-encoding": "gzip"}}, {stage}}}"#
                ),
                "body: holds a template, rendered per answer, so it cannot be gzipped",
            ),
            (
                format!(r#"{{"body": "{{{{request.param.id}}}}", {stage}}}"#),
                "body: template {{request.param.id}}: the route has no /{id} parameter",
            ),
            (
                format!(r#"{{"headers": {{"x-a": "{{{{request.cookie.}}}}"}}, {stage}}}"#),
                "headers.x-a: template {{request.cookie.}}: bad name",
            ),
            (
                format!(
                    r#"{{"headers": {{"set-cookie": ["a=1", "{{{{request.x}}}}"]}}, {stage}}}"#
                ),
                "headers.set-cookie[1]: unknown template",
            ),
            (
                format!(r#"{{"headers": {{"set-cookie": ["a=1", 2]}}, {stage}}}"#),
                "headers.set-cookie[1]: expected a string value, got a number",
            ),
            (
                format!(r#"{{"headers": {{"set-cookie": []}}, {stage}}}"#),
                "headers.set-cookie: empty array",
            ),
            (
                format!(r#"{{"headers": {{"set-cookie": ["a\n"]}}, {stage}}}"#),
                "headers.set-cookie[0]: value holds a line break",
            ),
            (
                r#"{"stages": [{"status": {"500": {"weight": 1, "body": "{{request.q}}"}}}]}"#
                    .into(),
                "stages[0].status.500.body: unknown template {{request.q}}",
            ),
            (
                format!(r#"{{"requires": "authorization", {stage}}}"#),
                "requires: expected an object, got a string",
            ),
            (
                format!(r#"{{"requires": [], {stage}}}"#),
                "requires: empty array",
            ),
            (
                format!(r#"{{"requires": {{}}, {stage}}}"#),
                r#"requires: needs "header" or "cookie""#,
            ),
            (
                format!(
                    r#"[{{"route": "/a", "requires": [{{"header": "x"}}, {{"cookie": "s", "header": "y"}}], {stage}}}]"#
                ),
                "recipe[0].requires[1].cookie: give header or cookie, not both",
            ),
            (
                format!(r#"{{"requires": {{"header": "bad name"}}, {stage}}}"#),
                r#"requires.header: "bad name" is not a valid header name"#,
            ),
            (
                format!(r#"{{"requires": {{"cookie": "a=b"}}, {stage}}}"#),
                r#"requires.cookie: "a=b" is not a valid cookie name"#,
            ),
            (
                format!(r#"{{"requires": {{"header": 5}}, {stage}}}"#),
                "requires.header: expected a string, got a number",
            ),
            (
                format!(r#"{{"requires": {{"header": "x", "matches": "(a"}}, {stage}}}"#),
                r#"requires.matches: bad regular expression "(a": unclosed group"#,
            ),
            (
                format!(r#"{{"requires": {{"header": "x", "match": "a"}}, {stage}}}"#),
                "requires.match: unknown field",
            ),
            (
                format!(r#"{{"list": 5, {stage}}}"#),
                "list: expected an object, got a number",
            ),
            (
                format!(r#"{{"list": {{}}, {stage}}}"#),
                "list.count: missing",
            ),
            (
                format!(r#"{{"list": {{"count": -1}}, {stage}}}"#),
                "list.count: expected a whole number",
            ),
            (
                format!(r#"{{"list": {{"count": 2, "size": 1}}, {stage}}}"#),
                "list.size: unknown field",
            ),
            (
                format!(r#"{{"list": {{"count": 2}}, "body": "x", {stage}}}"#),
                "list: only one of origin, body, random_content, body_file, list",
            ),
            (
                format!(r#"[{list}, {{"route": "/items/x", "ids_from": "/items", {stage}}}]"#),
                "recipe[1].ids_from: needs a route ending in /{NAME}",
            ),
            (
                format!(
                    r#"[{list}, {{"route": "/items/{{id}}", "ids_from": "/things", {stage}}}]"#
                ),
                r#"recipe[1].ids_from: "/things" names no route with a "list""#,
            ),
            (
                format!(
                    r#"[{{"route": "/items", {stage}}}, {{"route": "/items/{{id}}", "ids_from": "/items", {stage}}}]"#
                ),
                r#"recipe[1].ids_from: "/items" names no route with a "list""#,
            ),
            (
                format!(r#"[{list}, {{"route": "/items/{{id}}", "ids_from": 3, {stage}}}]"#),
                "recipe[1].ids_from: expected a string, got a number",
            ),
            (
                format!(
                    r#"[{list}, {{"route": "/items/{{id}}", "ids_from": "/items", "headers": {{"content-encoding": "gzip"}}, {stage}}}]"#
                ),
                "recipe[1].ids_from: the default item body holds a template",
            ),
        ];
        for (json, want) in rows {
            match parse(&json) {
                Ok(_) => panic!("accepted {json}"),
                Err(got) => assert!(got.contains(want), "for {json}\n got: {got}\nwant: {want}"),
            }
        }
    }

    #[test]
    fn route_parameters() {
        let rows = [
            ("/items/{id}", Some("id")),
            ("/a/b/{item_2}", Some("item_2")),
            ("/{x}", Some("x")),
            ("/items/{}", None),
            ("/items/{id}*", None),
            ("/items/{a-b}", None),
            ("/items/{id}/x", None),
            ("/items/id}", None),
        ];
        for (route, want) in rows {
            assert_eq!(route_param(route), want, "{route}");
        }
    }

    #[test]
    fn ground_truth_capacity() {
        let recipe = parse(
            r#"[{"route": "/a", "stages": [{"latency": "100ms"}], "capacity": {"workers": 50, "overflow": 10}},
                {"route": "/b", "stages": [{"latency": "0..200ms"}], "capacity": {"workers": 10}},
                {"route": "/c", "stages": [{"latency": "1s"}]}]"#,
        )
        .unwrap();
        let capacity = recipe.capacity_rps();
        assert_eq!(capacity.len(), 2);
        assert!((capacity[0].1 - 600.0).abs() < 1e-9, "{capacity:?}");
        assert!((capacity[1].1 - 100.0).abs() < 1e-9, "{capacity:?}");
    }
}
