//! The running form of a recipe: routes with their stages, pre-rendered answers and
//! pools, plus the run clock. Built once per load (bodies, heads and metric slots are
//! all resolved here), then only read by the request path.
//!
//! Stages are not driven by timers. The stage in force is a pure function of the run
//! clock (`now - started_at`), so replacing the table is all it takes to reload a
//! recipe: the old stages cannot fire later, because nothing was scheduled.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use rand::Rng;
use serde_json::Value;

use crate::app::AppRules;
use crate::body::{Body, content_type_of, expand_charged, load_payload};
use crate::body_file::FileAccess;
use crate::budget::Budget;
use crate::error::{Invalid, SimulatorError};
use crate::failure::Failure;
use crate::grpc::{GrpcAnswer, GrpcRoute};
use crate::latency::Latency;
use crate::metrics::Registry;
use crate::pool::Pool;
use crate::recipe::{OutcomeSpec, Recipe, RouteSpec};
use crate::template::Template;

/// All routes in force, and when the run clock started.
pub(crate) struct Table {
    pub routes: Vec<Arc<Route>>,
    exact: HashMap<String, usize>,
    /// Routes with a path parameter (`/items/{id}` as `/items/`), longest first.
    params: Vec<(String, usize)>,
    /// Prefix routes (`/news*` as `/news`), longest first: the nearest wildcard wins.
    wildcards: Vec<(String, usize)>,
    pub started_at: Instant,
}

pub(crate) struct Route {
    pub pattern: String,
    pub label: usize,
    pub stages: Vec<Stage>,
    /// Every answer this route can give; stages and the pool index into it.
    pub outcomes: Vec<Outcome>,
    /// The 406 answered before the first stage starts (origin_simulator's default state).
    pub before_start: usize,
    pub capacity: Option<Capacity>,
    /// Headers whose value is a template, rendered per answer after the fixed ones.
    pub header_templates: Vec<(String, Template)>,
    /// Where a `/{NAME}` route's parameter starts in the path.
    pub param_at: Option<usize>,
    /// `requires` and `ids_from`, when the route has either.
    pub rules: Option<AppRules>,
    pub json: Value,
    /// Memory charged for this route's bodies, against the recipe memory cap.
    pub held_bytes: u64,
    /// A route that holds its connection open (HTTP/1.1 only).
    pub stream: Option<crate::stream::StreamSpec>,
    /// A gRPC route's `.proto` files, which reflection sends.
    pub grpc_pool: Option<prost_reflect::DescriptorPool>,
}

pub(crate) struct Capacity {
    pub pool: Pool,
    /// Outcome index of the answer given when no worker is available.
    pub reject: usize,
    pub overflow_latency: Latency,
    /// Ground truth: `(workers + overflow) / mean service time` of each stage.
    pub capacity_rps: Vec<f64>,
}

pub(crate) struct Stage {
    pub at_ns: u64,
    first: usize,
    /// Running sums of the outcome weights, for one uniform draw per request.
    cumulative: Vec<f64>,
    /// `routes_status` text: status (or mix) and latency.
    pub description: String,
}

/// One answer, ready to send over either protocol.
pub(crate) struct Outcome {
    /// 0 for failure modes that send no status line. HTTP/1.1's wire form is in
    /// `head_prefix`; HTTP/2 sends this with `h2_headers`.
    pub status: u16,
    pub latency: Latency,
    pub failure: Option<Failure>,
    /// HTTP/1.1: status line and fixed headers; see [`crate::http::finish_head`].
    pub head_prefix: Vec<u8>,
    /// HTTP/2: the same fixed headers (server, content type, the recipe's), less the
    /// connection-specific ones HTTP/2 forbids; date and length are added per answer.
    pub h2_headers: http::HeaderMap,
    pub body: Arc<Body>,
    /// Renders this outcome's body per answer instead of `body`.
    pub body_template: Option<Template>,
    /// Metrics counter slot for (route, status).
    pub slot: usize,
    /// A gRPC route's answer: its code, stream shape and trailers.
    pub grpc: Option<GrpcAnswer>,
}

impl Table {
    pub fn empty() -> Self {
        Self::new(Vec::new())
    }

    fn new(routes: Vec<Arc<Route>>) -> Self {
        let mut exact = HashMap::new();
        let (mut params, mut wildcards) = (Vec::new(), Vec::new());
        for (i, route) in routes.iter().enumerate() {
            match (route.pattern.strip_suffix('*'), route.param_at) {
                (Some(prefix), _) => wildcards.push((prefix.to_owned(), i)),
                (None, Some(at)) => params.push((route.pattern[..at].to_owned(), i)),
                (None, None) => {
                    exact.insert(route.pattern.clone(), i);
                }
            }
        }
        params.sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));
        wildcards.sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));
        Self {
            routes,
            exact,
            params,
            wildcards,
            started_at: Instant::now(),
        }
    }

    /// This table with `added` routes replacing same-pattern ones (kept in place) or
    /// appended; the run clock restarts, so every route's stages start again at 0.
    pub fn merged(&self, added: Vec<Arc<Route>>) -> Self {
        let mut routes = self.routes.clone();
        for route in added {
            match routes.iter().position(|r| r.pattern == route.pattern) {
                Some(at) => routes[at] = route,
                None => routes.push(route),
            }
        }
        Self::new(routes)
    }

    /// The route serving `path`: an exact match, else a `/{NAME}` route whose prefix
    /// leaves one non-empty segment, else the longest matching prefix.
    pub fn find(&self, path: &str) -> Option<usize> {
        if let Some(&i) = self.exact.get(path) {
            return Some(i);
        }
        let param = self.params.iter().find(|(prefix, _)| {
            path.strip_prefix(prefix.as_str())
                .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'))
        });
        if let Some((_, i)) = param {
            return Some(*i);
        }
        self.wildcards
            .iter()
            .find(|(prefix, _)| path.starts_with(prefix.as_str()))
            .map(|(_, i)| *i)
    }

    pub fn elapsed_ns(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.started_at).as_nanos() as u64
    }
}

impl Route {
    /// Index of the stage in force after `elapsed_ns` on the run clock.
    pub fn stage_at(&self, elapsed_ns: u64) -> Option<usize> {
        self.stages.iter().rposition(|s| s.at_ns <= elapsed_ns)
    }
}

impl Stage {
    /// Draws an outcome index (into [`Route::outcomes`]) by weight.
    pub fn pick(&self, rng: &mut impl Rng) -> usize {
        if self.cumulative.len() == 1 {
            return self.first;
        }
        let total = self.cumulative.last().copied().unwrap_or(0.0);
        let draw = rng.random::<f64>() * total;
        let offset = self
            .cumulative
            .iter()
            .position(|c| *c > draw)
            .unwrap_or(self.cumulative.len() - 1);
        self.first + offset
    }
}

/// Builds every route of `recipe`: loads bodies (file and origin I/O happen here,
/// within `budget` and as `access` allows), renders heads, makes pools and interns
/// metric labels.
pub(crate) fn build_routes(
    recipe: &Recipe,
    registry: &std::sync::Mutex<Registry>,
    access: FileAccess<'_>,
    budget: &mut Budget,
    rng: &mut impl Rng,
) -> Result<Vec<Arc<Route>>, SimulatorError> {
    let within = |e: Invalid| e.within(&recipe.source_name);
    let mut routes = Vec::with_capacity(recipe.routes.len());
    for spec in &recipe.routes {
        let start = budget.clone();
        // The route as submitted is kept for `current_recipe`: its literal text counts.
        let field = if spec.field.is_empty() {
            "recipe"
        } else {
            &spec.field
        };
        let json_bytes = spec.json.to_string().len() as u64;
        budget.charge(field, 0, json_bytes).map_err(within)?;
        let (body, content_type) =
            load_payload(&spec.payload, spec.gzip, &spec.field, access, budget, rng)
                .map_err(within)?;
        let grpc = spec
            .grpc
            .as_ref()
            .map(|g| crate::grpc::load(g, access))
            .transpose()
            .map_err(within)?;
        let payload = Payload {
            body: Arc::new(body),
            content_type,
            grpc,
        };
        let mut registry = registry.lock().unwrap_or_else(PoisonError::into_inner);
        let mut route = build_route(spec, &payload, &mut registry, budget, rng).map_err(within)?;
        route.held_bytes = budget.spent_since(&start);
        routes.push(Arc::new(route));
    }
    Ok(routes)
}

struct Payload {
    body: Arc<Body>,
    content_type: &'static str,
    grpc: Option<GrpcRoute>,
}

/// Builds outcomes for one route; shares the route's body and headers.
struct OutcomeMaker<'a> {
    spec: &'a RouteSpec,
    payload: &'a Payload,
    label: usize,
    has_content_type: bool,
}

fn build_route(
    spec: &RouteSpec,
    payload: &Payload,
    registry: &mut Registry,
    budget: &mut Budget,
    rng: &mut impl Rng,
) -> Result<Route, Invalid> {
    let label = registry.route_label(&spec.route);
    let has_content_type = spec.headers.iter().any(|(name, _)| name == "content-type")
        || spec
            .header_templates
            .iter()
            .any(|(name, _)| name == "content-type");
    let maker = OutcomeMaker {
        spec,
        payload,
        label,
        has_content_type,
    };
    let mut outcomes = Vec::new();
    let mut stages = Vec::with_capacity(spec.stages.len());
    for stage in &spec.stages {
        let first = outcomes.len();
        let mut running = 0.0;
        let mut cumulative = Vec::with_capacity(stage.outcomes.len());
        for outcome in &stage.outcomes {
            running += outcome.weight;
            cumulative.push(running);
            outcomes.push(maker.make(outcome, registry, budget, rng)?);
        }
        let description = describe(&stage.outcomes);
        stages.push(Stage {
            at_ns: stage.at.as_nanos() as u64,
            first,
            cumulative,
            description,
        });
    }
    let before_start = outcomes.len();
    outcomes.push(maker.make(&plain(406, Latency::ZERO), registry, budget, rng)?);
    let capacity = match &spec.capacity {
        None => None,
        Some(c) => {
            let reject = plain(c.reject_status, c.reject_latency.clone());
            outcomes.push(maker.make(&reject, registry, budget, rng)?);
            Some(Capacity {
                pool: Pool::new(c.workers, c.overflow, c.queue, c.queue_timeout),
                reject: outcomes.len() - 1,
                overflow_latency: c.overflow_latency.clone(),
                capacity_rps: spec.stages.iter().map(|s| c.rps(s)).collect(),
            })
        }
    };
    Ok(Route {
        pattern: spec.route.clone(),
        label,
        stages,
        outcomes,
        before_start,
        capacity,
        header_templates: spec.header_templates.clone(),
        param_at: spec
            .param
            .as_ref()
            .map(|name| spec.route.len() - name.len() - 2),
        rules: app_rules(spec, label, registry),
        json: spec.json.clone(),
        held_bytes: 0,
        stream: spec.stream.clone(),
        grpc_pool: payload.grpc.as_ref().map(|g| g.pool.clone()),
    })
}

fn app_rules(spec: &RouteSpec, label: usize, registry: &mut Registry) -> Option<AppRules> {
    if spec.requires.is_empty() && spec.id_count.is_none() {
        return None;
    }
    Some(AppRules {
        requires: spec.requires.clone(),
        id_count: spec.id_count,
        unauthorized_slot: registry.counter_slot(label, "401"),
        not_found_slot: registry.counter_slot(label, "404"),
    })
}

fn plain(status: u16, latency: Latency) -> OutcomeSpec {
    OutcomeSpec {
        weight: 1.0,
        status,
        latency,
        failure: None,
        body: None,
        grpc_status: None,
    }
}

impl OutcomeMaker<'_> {
    fn make(
        &self,
        spec: &OutcomeSpec,
        registry: &mut Registry,
        budget: &mut Budget,
        rng: &mut impl Rng,
    ) -> Result<Outcome, Invalid> {
        if let (Some(code), Some(grpc)) = (spec.grpc_status, &self.payload.grpc) {
            return Ok(self.grpc_outcome(spec, code, grpc, registry));
        }
        let status_label = match (&spec.failure, spec.status) {
            (Some(failure), 0) => failure.label().to_owned(),
            (_, status) => status.to_string(),
        };
        let (body, content_type) = self.body_for(spec, budget, rng)?;
        let content_type = (!self.has_content_type).then_some(content_type);
        let head_prefix = if spec.status == 0 {
            Vec::new()
        } else {
            crate::http::head_prefix(spec.status, content_type, &self.spec.headers)
        };
        let h2_headers = h2_headers(content_type, &self.spec.headers);
        let body_template = match (&spec.body, spec.status) {
            (Some(own), _) => own.template.clone(),
            (None, 0 | 204 | 304) => None,
            (None, 200..=299) => self.spec.body_template.clone(),
            (None, _) => None,
        };
        Ok(Outcome {
            status: spec.status,
            latency: spec.latency.clone(),
            failure: spec.failure.clone(),
            head_prefix,
            h2_headers,
            body,
            body_template,
            slot: registry.counter_slot(self.label, &status_label),
            grpc: None,
        })
    }

    /// A gRPC call's answer: HTTP 200, `application/grpc`, the method's message for
    /// `OK` (none for other codes), counted under the code's name.
    fn grpc_outcome(
        &self,
        spec: &OutcomeSpec,
        code: u8,
        grpc: &GrpcRoute,
        registry: &mut Registry,
    ) -> Outcome {
        let content_type = (!self.has_content_type).then_some(crate::grpc::CONTENT_TYPE);
        let body = if code == 0 {
            grpc.message.clone()
        } else {
            bytes::Bytes::new()
        };
        Outcome {
            status: spec.status,
            latency: spec.latency.clone(),
            failure: spec.failure.clone(),
            head_prefix: crate::http::head_prefix(spec.status, content_type, &self.spec.headers),
            h2_headers: h2_headers(content_type, &self.spec.headers),
            body: Arc::new(Body::Fixed(body)),
            body_template: None,
            slot: registry.counter_slot(self.label, crate::grpc::name_of(code)),
            grpc: Some(GrpcAnswer::new(code, grpc.stream)),
        }
    }

    /// The route's payload for 2xx, origin_simulator's short texts for other statuses,
    /// or the outcome's own `body` (charged to `budget`; the short texts are not).
    fn body_for(
        &self,
        spec: &OutcomeSpec,
        budget: &mut Budget,
        rng: &mut impl Rng,
    ) -> Result<(Arc<Body>, &'static str), Invalid> {
        let gzip = self.spec.gzip;
        if let Some(own) = &spec.body {
            let bytes = expand_charged(&own.text, &own.field, budget, rng)?;
            let content_type = content_type_of(&bytes);
            return Ok((Arc::new(Body::fixed(bytes, gzip)), content_type));
        }
        Ok(match spec.status {
            0 | 204 | 304 => (Arc::new(Body::Fixed(bytes::Bytes::new())), "text/html"),
            200..=299 => (Arc::clone(&self.payload.body), self.payload.content_type),
            404 => (
                Arc::new(Body::fixed(b"Not found".to_vec(), gzip)),
                "text/html",
            ),
            406 => {
                let text = format!(
                    "Recipe not set at {}, please POST a recipe for this route to /_admin/add_recipe",
                    self.spec.route
                );
                (Arc::new(Body::fixed(text.into_bytes(), gzip)), "text/html")
            }
            status => (
                Arc::new(Body::fixed(format!("Error {status}").into_bytes(), gzip)),
                "text/html",
            ),
        })
    }
}

/// Headers HTTP/2 forbids (RFC 9113 8.2.2); the recipe may set them for HTTP/1.1.
pub(crate) const CONNECTION_SPECIFIC: &[&str] =
    &["keep-alive", "proxy-connection", "upgrade", "te"];

/// The fixed response headers of an outcome, for HTTP/2. The recipe's names and values
/// were checked when it was parsed (`recipe::parse_headers`).
pub(crate) fn h2_headers(
    content_type: Option<&str>,
    headers: &[(String, String)],
) -> http::HeaderMap {
    let mut map = http::HeaderMap::with_capacity(headers.len() + 2);
    map.insert(
        http::header::SERVER,
        http::HeaderValue::from_static("loadlab-simulate"),
    );
    if let Some(Ok(value)) = content_type.map(http::HeaderValue::from_str) {
        map.insert(http::header::CONTENT_TYPE, value);
    }
    for (name, value) in headers {
        if CONNECTION_SPECIFIC.contains(&name.as_str()) {
            continue;
        }
        let name = http::HeaderName::from_bytes(name.as_bytes());
        let value = http::HeaderValue::from_bytes(value.as_bytes());
        if let (Ok(name), Ok(value)) = (name, value) {
            map.append(name, value);
        }
    }
    map
}

/// `200 100ms`, or for a mix `200:83,500:6,reset:1 0..600ms`.
fn describe(outcomes: &[OutcomeSpec]) -> String {
    let label = |o: &OutcomeSpec| match (&o.failure, o.status) {
        (Some(f), 0) => f.label().to_owned(),
        (Some(f), status) => format!("{status}/{}", f.label()),
        (None, status) => status.to_string(),
    };
    let latency = |o: &OutcomeSpec| o.latency.describe();
    match outcomes {
        [only] => format!("{} {}", label(only), latency(only)),
        _ => {
            let mix: Vec<String> = outcomes
                .iter()
                .map(|o| format!("{}:{}", label(o), o.weight))
                .collect();
            let same = outcomes.windows(2).all(|w| w[0].latency == w[1].latency);
            let latency = if same {
                latency(&outcomes[0])
            } else {
                "mixed".to_owned()
            };
            format!("{} {latency}", mix.join(","))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::parse_recipe;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    fn roomy() -> Budget {
        Budget::new(1 << 30, 1 << 30, 0)
    }

    fn build(
        json: &str,
        registry: &std::sync::Mutex<Registry>,
        rng: &mut SmallRng,
    ) -> Vec<Arc<Route>> {
        let recipe = parse_recipe(json, "t").unwrap();
        build_routes(&recipe, registry, FileAccess::Operator, &mut roomy(), rng).unwrap()
    }

    fn table(json: &str) -> Table {
        let registry = std::sync::Mutex::new(Registry::new());
        Table::empty().merged(build(json, &registry, &mut SmallRng::seed_from_u64(1)))
    }

    #[test]
    fn every_body_of_a_route_is_charged() {
        let json = r#"{"route": "/a", "body": "<<1kb>>", "stages": [{"status": {"200": 1, "500": {"weight": 1, "body": "<<2kb>>"}}}]}"#;
        let t = table(json);
        let json_bytes = serde_json::from_str::<Value>(json)
            .unwrap()
            .to_string()
            .len() as u64;
        assert_eq!(t.routes[0].held_bytes, 3 * 1024 + json_bytes);
        let registry = std::sync::Mutex::new(Registry::new());
        let recipe = parse_recipe(json, "t").unwrap();
        let mut tight = Budget::new(1 << 20, 2048, 0);
        let err = build_routes(
            &recipe,
            &registry,
            FileAccess::Operator,
            &mut tight,
            &mut SmallRng::seed_from_u64(1),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.starts_with(
                "t: stages[0].status.500.body: the routes in force would hold more than 2kb"
            ),
            "{err}"
        );
    }

    #[test]
    fn routing_prefers_exact_then_longest_prefix() {
        let t = table(
            r#"[{"route": "/*", "stages": [{"status": 200}]},
                {"route": "/news*", "stages": [{"status": 201}]},
                {"route": "/news/politics*", "stages": [{"status": 202}]},
                {"route": "/news", "stages": [{"status": 203}]}]"#,
        );
        let rows = [
            ("/", "/*"),
            ("/sport", "/*"),
            ("/news", "/news"),
            ("/newsroom", "/news*"),
            ("/news/x", "/news*"),
            ("/news/politics/1", "/news/politics*"),
        ];
        for (path, want) in rows {
            let got = t.find(path).map(|i| t.routes[i].pattern.as_str());
            assert_eq!(got, Some(want), "path {path}");
        }
        let only_news = table(r#"{"route": "/news", "stages": [{"status": 200}]}"#);
        assert_eq!(only_news.find("/other"), None);
    }

    #[test]
    fn parameter_routes_sit_between_exact_and_prefix_routes() {
        let t = table(
            r#"[{"route": "/*", "stages": [{"status": 200}]},
                {"route": "/items/{id}", "stages": [{"status": 200}]},
                {"route": "/items/new", "stages": [{"status": 200}]},
                {"route": "/items/7*", "stages": [{"status": 200}]}]"#,
        );
        let rows = [
            ("/items/3", "/items/{id}"),
            ("/items/new", "/items/new"),
            ("/items/77", "/items/{id}"),
            ("/items/", "/*"),
            ("/items/3/x", "/*"),
            ("/items/7/parts/9", "/items/7*"),
        ];
        for (path, want) in rows {
            let got = t.find(path).map(|i| t.routes[i].pattern.as_str());
            assert_eq!(got, Some(want), "path {path}");
        }
        let route = &t.routes[t.find("/items/3").unwrap()];
        assert_eq!(route.param_at, Some("/items/".len()));
    }

    #[test]
    fn templates_are_rendered_only_where_written() {
        let t = table(
            r#"[{"route": "/a", "body": "hi {{request.path}}", "headers": {"x-id": "{{id}}", "x-fixed": "1"},
                 "stages": [{"status": {"200": 1, "503": 1, "404": {"weight": 1, "body": "no {{request.query.q}}"}}}]},
                {"route": "/b", "body": "plain {{b}}", "stages": [{"status": 200}]},
                {"route": "/c", "list": {"count": 2}, "requires": {"cookie": "s"}, "stages": [{"status": 200}]}]"#,
        );
        let templated = |route: &Route, status: u16| {
            let outcome = route.outcomes.iter().find(|o| o.status == status).unwrap();
            outcome.body_template.is_some()
        };
        let a = &t.routes[0];
        assert!(templated(a, 200) && templated(a, 404));
        assert!(!templated(a, 503) && !templated(a, 406));
        assert_eq!(a.header_templates.len(), 1);
        let head = String::from_utf8(a.outcomes[0].head_prefix.clone()).unwrap();
        assert!(
            head.contains("x-fixed: 1\r\n") && !head.contains("x-id"),
            "{head}"
        );
        let b = &t.routes[1];
        assert!(!templated(b, 200) && b.header_templates.is_empty() && b.rules.is_none());
        let c = &t.routes[2];
        assert!(c.rules.is_some());
        let body = c.outcomes[0]
            .body
            .pick(&mut SmallRng::seed_from_u64(1))
            .to_vec();
        assert_eq!(body, crate::app::list_body(2));
        assert!(
            String::from_utf8(c.outcomes[0].head_prefix.clone())
                .unwrap()
                .contains("application/json")
        );
    }

    #[test]
    fn stages_follow_the_run_clock() {
        let t = table(
            r#"{"stages": [{"at": "1s", "status": 503}, {"at": "4s", "status": 200, "latency": "100ms"}]}"#,
        );
        let route = &t.routes[0];
        let s = 1_000_000_000;
        assert_eq!(route.stage_at(0), None, "406 before the first stage");
        assert_eq!(route.stage_at(s), Some(0));
        assert_eq!(route.stage_at(4 * s - 1), Some(0));
        assert_eq!(route.stage_at(400 * s), Some(1), "the last stage holds");
        assert_eq!(route.outcomes[route.before_start].status, 406);
        assert_eq!(route.stages[1].description, "200 100ms");
    }

    #[test]
    fn mixes_draw_by_weight() {
        let t = table(r#"{"stages": [{"status": {"200": 80, "500": 15, "reset": 5, "503": 0}}]}"#);
        let route = &t.routes[0];
        let mut rng = SmallRng::seed_from_u64(9);
        let mut counts: HashMap<u16, usize> = HashMap::new();
        for _ in 0..100_000 {
            *counts
                .entry(route.outcomes[route.stages[0].pick(&mut rng)].status)
                .or_default() += 1;
        }
        let share = |status| counts.get(&status).copied().unwrap_or(0) as f64 / 100_000.0;
        assert!((share(200) - 0.80).abs() < 0.01, "{counts:?}");
        assert!((share(500) - 0.15).abs() < 0.01, "{counts:?}");
        assert!((share(0) - 0.05).abs() < 0.01, "{counts:?}");
        assert_eq!(share(503), 0.0);
    }

    #[test]
    fn reloading_replaces_one_route_and_restarts_the_clock() {
        let registry = std::sync::Mutex::new(Registry::new());
        let mut rng = SmallRng::seed_from_u64(1);
        let build = |json: &str, rng: &mut SmallRng| build(json, &registry, rng);
        let first = Table::empty().merged(build(r#"[{"route": "/a", "stages": [{"status": 200}]}, {"route": "/b", "stages": [{"status": 200}]}]"#, &mut rng));
        let second = first.merged(build(
            r#"{"route": "/a", "stages": [{"status": 500}]}"#,
            &mut rng,
        ));
        let patterns: Vec<&str> = second.routes.iter().map(|r| r.pattern.as_str()).collect();
        assert_eq!(patterns, ["/a", "/b"]);
        assert_eq!(second.routes[0].outcomes[0].status, 500);
        assert!(
            Arc::ptr_eq(&first.routes[1], &second.routes[1]),
            "untouched routes are shared"
        );
        assert!(second.started_at >= first.started_at);
    }

    #[test]
    fn bodies_follow_status() {
        let t = table(
            r#"{"body": "{\"ok\":1}", "headers": {"x-a": "1"}, "stages": [{"status": {"200": 1, "503": 1, "404": 1, "204": 1}}]}"#,
        );
        let route = &t.routes[0];
        let mut rng = SmallRng::seed_from_u64(1);
        let mut body = |status: u16| {
            let o = route.outcomes.iter().find(|o| o.status == status).unwrap();
            (
                String::from_utf8(o.body.pick(&mut rng).to_vec()).unwrap(),
                String::from_utf8(o.head_prefix.clone()).unwrap(),
            )
        };
        let (ok, head) = body(200);
        assert_eq!(ok, "{\"ok\":1}");
        assert!(
            head.contains("content-type: application/json\r\nx-a: 1\r\n"),
            "{head}"
        );
        assert_eq!(body(503).0, "Error 503");
        assert_eq!(body(404).0, "Not found");
        assert_eq!(body(204).0, "");
    }
}
