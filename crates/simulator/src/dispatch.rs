//! From a parsed request to the answer it gets: route, stage on the run clock,
//! outcome drawn by weight, latency drawn from its distribution, and the wait through
//! the capacity pool. The synchronous part ([`dispatch`]) allocates nothing for a
//! simulated route (a templated one renders into a buffer its thread reuses); the
//! waiting part ([`wait`]) only sleeps and takes a worker.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::http::{Incoming, Method};
use crate::reply::{InFlight, Rendered, Reply, ReplyKind, RouteAnswer};
use crate::table::{Outcome, Route, Table};
use crate::template::{AnswerId, RequestParts};
use crate::worker::Worker;

/// What to do next with a request.
pub(crate) enum Step {
    Ready(Reply),
    /// Sleep and/or queue for a worker, then answer: see [`wait`].
    Wait(Waiting),
    Admin(crate::admin::AdminRequest),
    /// A streaming route: served on its HTTP/1.1 connection, which it then keeps;
    /// over HTTP/2 the reply (501) is sent instead.
    Stream(crate::stream::StreamStart, Reply),
}

pub(crate) struct Waiting {
    reply: Reply,
    latency_ns: u64,
}

/// Routes a request: the one decision both protocols share.
pub(crate) fn dispatch(worker: &Rc<Worker>, request: &Incoming<'_>) -> Step {
    let in_flight = InFlight::new(worker);
    let reply = |kind| Reply {
        kind,
        arrival: request.arrival,
        head_only: request.method == Method::Head,
        keep_alive: request.keep_alive,
        _in_flight: in_flight,
    };
    let Ok(path) = std::str::from_utf8(request.path) else {
        return Step::Ready(reply(refusal(worker, 400, "path is not utf-8")));
    };
    let refused = path.starts_with("/_admin").then(|| {
        worker
            .shared
            .access
            .refusal(request.peer_is_loopback, request.authorization)
    });
    if let Some(Some((status, text))) = refused {
        return Step::Ready(reply(ReplyKind::Simple {
            status,
            content_type: "text/plain",
            body: format!("{text}\n").into_bytes(),
            close: false,
            count: None,
        }));
    }
    if path.starts_with("/_admin") || path == "/metrics" {
        return Step::Admin(crate::admin::AdminRequest::new(
            path,
            request.method,
            request.body,
            reply(ReplyKind::empty()),
        ));
    }
    let table = worker.view.table(&worker.shared);
    let Some(route_index) = table.find(path) else {
        return Step::Ready(reply(not_set(worker, &table, path)));
    };
    let route = &table.routes[route_index];
    let parts = RequestParts {
        path: request.path,
        query: request.query,
        headers: request.headers,
        param: route
            .param_at
            .and_then(|at| request.path.get(at..))
            .unwrap_or_default(),
    };
    if let Some(refused) = app_refusal(route, &parts) {
        return Step::Ready(reply(refused));
    }
    if let Some(spec) = &route.stream {
        return match crate::stream::StreamStart::new(spec, &request.headers) {
            Ok(start) => {
                let why = "streaming routes are served over HTTP/1.1 only";
                Step::Stream(start, reply(refusal(worker, 501, why)))
            }
            Err(why) => Step::Ready(reply(refusal(worker, 400, &why))),
        };
    }
    let mut rng = worker.rng.borrow_mut();
    let outcome = match route.stage_at(table.elapsed_ns(request.arrival)) {
        Some(stage) => route.stages[stage].pick(&mut *rng),
        None => route.before_start,
    };
    let latency_ns = route.outcomes[outcome].latency.sample_ns(&mut *rng);
    let queued = route.capacity.is_some();
    drop(rng);
    let rendered = render(worker, route, &route.outcomes[outcome], &parts);
    let reply = reply(ReplyKind::Outcome(RouteAnswer {
        table,
        route: route_index,
        outcome,
        rendered,
    }));
    if latency_ns == 0 && !queued {
        Step::Ready(reply)
    } else {
        Step::Wait(Waiting { reply, latency_ns })
    }
}

/// Takes a request from routing to the reply to send: waits out its latency (and the
/// capacity pool), or runs the admin API.
pub(crate) async fn run_step(worker: Rc<Worker>, step: Step) -> Reply {
    match step {
        Step::Ready(reply) => reply,
        Step::Wait(waiting) => wait(worker, waiting).await,
        Step::Admin(request) => crate::admin::handle(worker, request).await,
        Step::Stream(_, fallback) => fallback,
    }
}

/// Waits out the latency, holding a pool worker for it when the route has a capacity
/// model. Service time starts once a worker is held, so queueing adds to latency.
async fn wait(worker: Rc<Worker>, waiting: Waiting) -> Reply {
    let Waiting {
        mut reply,
        latency_ns,
    } = waiting;
    let ReplyKind::Outcome(answer) = &reply.kind else {
        return reply;
    };
    let (table, route_index) = (Rc::clone(&answer.table), answer.route);
    let route = &table.routes[route_index];
    let Some(capacity) = &route.capacity else {
        sleep_until_aimed(reply.arrival, latency_ns).await;
        return reply;
    };
    match capacity.pool.acquire().await {
        Ok(permit) => {
            let extra_ns = if permit.overflow {
                capacity
                    .overflow_latency
                    .sample_ns(&mut *worker.rng.borrow_mut())
            } else {
                0
            };
            sleep_until_aimed(Instant::now(), latency_ns + extra_ns).await;
            drop(permit);
        }
        Err(_) => {
            let delay_ns = route.outcomes[capacity.reject]
                .latency
                .sample_ns(&mut *worker.rng.borrow_mut());
            sleep_until_aimed(Instant::now(), delay_ns).await;
            if let ReplyKind::Outcome(answer) = &mut reply.kind {
                answer.outcome = capacity.reject;
            }
        }
    }
    reply
}

/// The 401 or 404 of a route with `requires` or `ids_from`, answered at once.
fn app_refusal(route: &Route, request: &RequestParts<'_>) -> Option<ReplyKind> {
    let refusal = route
        .rules
        .as_ref()?
        .refuse(&request.headers, request.param)?;
    Some(ReplyKind::Simple {
        status: refusal.status,
        content_type: "application/json",
        body: refusal.body,
        close: false,
        count: Some((refusal.slot, route.label)),
    })
}

/// Renders the route's templated headers and the outcome's templated body for this
/// request; None (nothing done) for a route without templates.
fn render(
    worker: &Rc<Worker>,
    route: &Route,
    outcome: &Outcome,
    request: &RequestParts<'_>,
) -> Option<Rendered> {
    if route.header_templates.is_empty() && outcome.body_template.is_none() {
        return None;
    }
    let mut rendered = Rendered::new(worker);
    let mut id = AnswerId::new(&worker.shared.answer_ids);
    let buf = rendered.buf();
    for (name, template) in &route.header_templates {
        buf.extend_from_slice(name.as_bytes());
        buf.extend_from_slice(b": ");
        template.render(request, &mut id, buf);
        buf.extend_from_slice(b"\r\n");
    }
    rendered.end_head();
    if let Some(template) = &outcome.body_template {
        template.render(request, &mut id, rendered.buf());
    }
    Some(rendered)
}

/// How much earlier than the deadline we ask tokio to wake us. Tokio's timer rounds a
/// deadline up to its next 1 ms tick and the epoll timeout rounds up again, so a plain
/// `sleep(50ms)` lasts 50-52 ms, 1 ms too long on average: a 2% error at 50 ms, and a
/// capacity model that tops out 2% under its W/S. Aiming 1 ms early centres the error:
/// each answer comes within about +-1 ms of its drawn latency, with no bias.
const TIMER_LEAD: Duration = Duration::from_millis(1);

/// Sleeps until `latency_ns` after `from`, aimed so the timer's rounding cancels out.
async fn sleep_until_aimed(from: Instant, latency_ns: u64) {
    let latency = Duration::from_nanos(latency_ns);
    let lead = TIMER_LEAD.min(latency / 2);
    tokio::time::sleep_until((from + latency - lead).into()).await;
}

/// A reply not tied to a parsed request (a refusal of bytes that did not parse).
pub(crate) fn bare_reply(worker: &Rc<Worker>, kind: ReplyKind, arrival: Instant) -> Reply {
    Reply {
        kind,
        arrival,
        head_only: false,
        keep_alive: false,
        _in_flight: InFlight::new(worker),
    }
}

/// origin_simulator's 406 for a path no route serves.
fn not_set(worker: &Worker, table: &Table, path: &str) -> ReplyKind {
    let text = if table.routes.is_empty() {
        "Recipe not set, please POST a recipe to /_admin/add_recipe".to_owned()
    } else {
        format!(
            "Recipe not set at {path}, please POST a recipe for this route to /_admin/add_recipe"
        )
    };
    ReplyKind::Simple {
        status: 406,
        content_type: "text/html",
        body: text.into_bytes(),
        close: false,
        count: Some((worker.shared.unmatched_slot, worker.shared.unmatched_label)),
    }
}

/// A request we will not route (bad HTTP); answered and, over HTTP/1.1, the
/// connection closed.
pub(crate) fn refusal(worker: &Worker, status: u16, reason: &str) -> ReplyKind {
    let slot = worker.shared.refusal_slot(status);
    ReplyKind::Simple {
        status,
        content_type: "text/plain",
        body: format!("{reason}\n").into_bytes(),
        close: true,
        count: Some((slot, worker.shared.bad_request_label)),
    }
}
