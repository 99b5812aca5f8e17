//! The admin API under `/_admin`, with origin_simulator's paths and answers, plus
//! `/metrics` (also at `/_admin/metrics`) in Prometheus text format.
//!
//! Who may use it ([`Access`]): with an admin token set, every `/_admin` request must
//! carry `authorization: Bearer <token>`, from any peer; without one, only loopback
//! peers are answered. `/metrics` stays open (Prometheus scrapes it; it reveals no
//! file and changes nothing). Posted recipes may not name files outside the
//! operator's files directory (`body_file`), and their bodies are capped (`budget`).
//!
//! `add_recipe` parses and builds off the request threads (`spawn_blocking`: an origin
//! fetch may take seconds) and swaps the new table in only if everything succeeded, so
//! a bad recipe leaves the running one in force and gets a 400 naming the field.

use std::rc::Rc;
use std::sync::Arc;

use crate::http::Method;
use crate::metrics::{current_count_json, render, snapshot};
use crate::reply::{Reply, ReplyKind};
use crate::state::{Shared, lock};
use crate::worker::Worker;

const PATHS: &str = "status, add_recipe (POST), current_recipe, routes, routes_status, restart, current_count, clear_current_count, metrics";
const NOT_SET: &str = "Not set, please POST a recipe to /_admin/add_recipe";

pub(crate) struct AdminRequest {
    path: String,
    method: Method,
    body: Vec<u8>,
    reply: Reply,
}

impl AdminRequest {
    pub fn new(path: &str, method: Method, body: &[u8], reply: Reply) -> Self {
        Self {
            path: path.to_owned(),
            method,
            body: body.to_vec(),
            reply,
        }
    }
}

/// An admin answer before rendering.
struct Answer {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
}

fn answer(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Answer {
    Answer {
        status,
        content_type,
        body: body.into(),
    }
}

fn text(status: u16, body: impl Into<Vec<u8>>) -> Answer {
    answer(status, "text/plain", body)
}

pub(crate) async fn handle(worker: Rc<Worker>, request: AdminRequest) -> Reply {
    let AdminRequest {
        path,
        method,
        body,
        mut reply,
    } = request;
    let name = path
        .strip_prefix("/_admin")
        .unwrap_or(&path)
        .trim_start_matches('/');
    let answer = route(&worker.shared, name, method, body).await;
    reply.kind = ReplyKind::Simple {
        status: answer.status,
        content_type: answer.content_type,
        body: answer.body,
        close: false,
        count: None,
    };
    reply
}

async fn route(shared: &Arc<Shared>, name: &str, method: Method, body: Vec<u8>) -> Answer {
    let read = matches!(method, Method::Get | Method::Head);
    let write = matches!(method, Method::Get | Method::Post);
    match name {
        "add_recipe" if method == Method::Post => add_recipe(shared, body).await,
        "add_recipe" => text(405, "add_recipe takes a POST with the recipe as body\n"),
        "status" if read => text(200, "ok!"),
        "current_recipe" if read => answer(200, "application/json", current_recipe(shared)),
        "routes" if read => text(200, routes(shared)),
        "routes_status" if read => text(200, routes_status(shared)),
        "restart" if write => {
            // Off the request thread: it waits for a load in progress (which may be
            // fetching an origin) so that the load cannot bring dropped routes back.
            let shared = Arc::clone(shared);
            match tokio::task::spawn_blocking(move || shared.restart()).await {
                Ok(()) => text(200, "ok!"),
                Err(e) => text(500, format!("restart failed: {e}\n")),
            }
        }
        "current_count" if read => {
            let snap = snapshot(&shared.threads);
            let json = current_count_json(&lock(&shared.registry), &snap, &lock(&shared.baseline));
            answer(200, "application/json", json)
        }
        "clear_current_count" if write => {
            *lock(&shared.baseline) = snapshot(&shared.threads).counters;
            answer(200, "application/json", r#"{"cleared": "yes"}"#)
        }
        "metrics" if read => answer(200, "text/plain; version=0.0.4", metrics(shared)),
        "status"
        | "current_recipe"
        | "routes"
        | "routes_status"
        | "restart"
        | "current_count"
        | "clear_current_count"
        | "metrics" => text(405, format!("method not allowed on /_admin/{name}\n")),
        _ => text(
            404,
            format!("unknown admin path /_admin/{name}; paths: {PATHS}\n"),
        ),
    }
}

async fn add_recipe(shared: &Arc<Shared>, body: Vec<u8>) -> Answer {
    let Ok(json) = String::from_utf8(body) else {
        return text(400, "add_recipe: the body is not utf-8 text\n");
    };
    let shared_for_load = Arc::clone(shared);
    let loaded = tokio::task::spawn_blocking(move || {
        let recipe = crate::recipe::parse_posted_recipe(&json)?;
        shared_for_load.load_recipe(&recipe)
    })
    .await;
    match loaded {
        Ok(Ok(())) => answer(201, "application/json", current_recipe(shared)),
        Ok(Err(e)) => text(400, format!("{e}\n")),
        Err(e) => text(500, format!("add_recipe: loading failed: {e}\n")),
    }
}

/// The routes in force as submitted: a JSON array, or origin_simulator's "not set" string.
fn current_recipe(shared: &Shared) -> String {
    let table = shared.current();
    if table.routes.is_empty() {
        return serde_json::Value::from(NOT_SET).to_string();
    }
    serde_json::Value::Array(table.routes.iter().map(|r| r.json.clone()).collect()).to_string()
}

fn routes(shared: &Shared) -> String {
    let table = shared.current();
    table
        .routes
        .iter()
        .map(|r| r.pattern.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// One line per route: `route status latency` for the stage in force.
fn routes_status(shared: &Shared) -> String {
    let table = shared.current();
    let elapsed_ns = table.elapsed_ns(std::time::Instant::now());
    table
        .routes
        .iter()
        .map(|route| match route.stage_at(elapsed_ns) {
            Some(stage) => format!("{} {}", route.pattern, route.stages[stage].description),
            None => format!("{} 406 0", route.pattern),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn metrics(shared: &Shared) -> String {
    let snap = snapshot(&shared.threads);
    let (pools, stages, run_seconds) = shared.route_rows();
    render(&lock(&shared.registry), &snap, &pools, &stages, run_seconds)
}
