//! From a parsed request to the answer it gets: route, stage on the run clock,
//! outcome drawn by weight, latency drawn from its distribution, and the wait through
//! the capacity pool. The synchronous part ([`dispatch`]) allocates nothing for a
//! simulated route; the waiting part ([`wait`]) only sleeps and takes a worker.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::http::{Method, Request, simple_response};
use crate::server::Worker;
use crate::state::LocalTable;
use crate::table::Table;

/// Counts a request in flight from dispatch until its reply is written or dropped.
pub(crate) struct InFlight(Rc<Worker>);

impl InFlight {
    pub fn new(worker: &Rc<Worker>) -> Self {
        worker.stats.in_flight_delta(1);
        Self(Rc::clone(worker))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.stats.in_flight_delta(-1);
    }
}

/// An answer ready to write.
pub(crate) struct Reply {
    pub kind: ReplyKind,
    pub arrival: Instant,
    pub head_only: bool,
    pub keep_alive: bool,
    pub _in_flight: InFlight,
}

pub(crate) enum ReplyKind {
    /// One of a route's pre-built outcomes.
    Outcome {
        table: Rc<LocalTable>,
        route: usize,
        outcome: usize,
    },
    /// A whole response rendered on the spot (admin, 406 for unmatched paths, refusals).
    Bytes {
        bytes: Vec<u8>,
        close: bool,
        count: Option<(usize, usize)>,
    },
}

/// What to do next with a request.
pub(crate) enum Step {
    Ready(Reply),
    /// Sleep and/or queue for a worker, then answer: see [`wait`].
    Wait(Waiting),
    Admin(crate::admin::AdminRequest),
}

pub(crate) struct Waiting {
    reply: Reply,
    latency_ns: u64,
}

/// Routes a request. `buf` is the read buffer the request's ranges point into;
/// `peer_is_loopback` says whether the client connected from this machine.
pub(crate) fn dispatch(
    worker: &Rc<Worker>,
    buf: &[u8],
    request: &Request,
    (arrival, peer_is_loopback): (Instant, bool),
) -> Step {
    let head = &request.head;
    let in_flight = InFlight::new(worker);
    let reply = |kind| Reply {
        kind,
        arrival,
        head_only: head.method == Method::Head,
        keep_alive: head.keep_alive,
        _in_flight: in_flight,
    };
    let Ok(path) = std::str::from_utf8(&buf[head.path.clone()]) else {
        return Step::Ready(reply(refusal(worker, 400, "path is not utf-8")));
    };
    if path.starts_with("/_admin") {
        let authorization = head.authorization.clone().map(|range| &buf[range]);
        if let Some((status, text)) = worker
            .shared
            .access
            .refusal(peer_is_loopback, authorization)
        {
            let body = format!("{text}\n");
            let bytes = simple_response(status, "text/plain", body.as_bytes(), !head.keep_alive);
            return Step::Ready(reply(ReplyKind::Bytes {
                bytes,
                close: !head.keep_alive,
                count: None,
            }));
        }
    }
    if path.starts_with("/_admin") || path == "/metrics" {
        return Step::Admin(crate::admin::AdminRequest::new(
            path,
            head.method,
            request.body.bytes(buf),
            reply(ReplyKind::Bytes {
                bytes: Vec::new(),
                close: false,
                count: None,
            }),
        ));
    }
    let table = worker.view.table(&worker.shared);
    let Some(route_index) = table.find(path) else {
        return Step::Ready(reply(not_set(worker, &table, path, head.keep_alive)));
    };
    let route = &table.routes[route_index];
    let mut rng = worker.rng.borrow_mut();
    let outcome = match route.stage_at(table.elapsed_ns(arrival)) {
        Some(stage) => route.stages[stage].pick(&mut *rng),
        None => route.before_start,
    };
    let latency_ns = route.outcomes[outcome].latency.sample_ns(&mut *rng);
    let queued = route.capacity.is_some();
    drop(rng);
    let reply = reply(ReplyKind::Outcome {
        table,
        route: route_index,
        outcome,
    });
    if latency_ns == 0 && !queued {
        Step::Ready(reply)
    } else {
        Step::Wait(Waiting { reply, latency_ns })
    }
}

/// Waits out the latency, holding a pool worker for it when the route has a capacity
/// model. Service time starts once a worker is held, so queueing adds to latency.
pub(crate) async fn wait(worker: Rc<Worker>, waiting: Waiting) -> Reply {
    let Waiting {
        mut reply,
        latency_ns,
    } = waiting;
    let ReplyKind::Outcome { table, route, .. } = &reply.kind else {
        return reply;
    };
    let (table, route_index) = (Rc::clone(table), *route);
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
            reply.kind = ReplyKind::Outcome {
                table: Rc::clone(&table),
                route: route_index,
                outcome: capacity.reject,
            };
        }
    }
    reply
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
fn not_set(worker: &Worker, table: &Table, path: &str, keep_alive: bool) -> ReplyKind {
    let text = if table.routes.is_empty() {
        "Recipe not set, please POST a recipe to /_admin/add_recipe".to_owned()
    } else {
        format!(
            "Recipe not set at {path}, please POST a recipe for this route to /_admin/add_recipe"
        )
    };
    let bytes = simple_response(406, "text/html", text.as_bytes(), !keep_alive);
    ReplyKind::Bytes {
        bytes,
        close: !keep_alive,
        count: Some((worker.shared.unmatched_slot, worker.shared.unmatched_label)),
    }
}

/// A request we will not route (bad HTTP); answered and the connection closed.
pub(crate) fn refusal(worker: &Worker, status: u16, reason: &str) -> ReplyKind {
    let body = format!("{reason}\n");
    let bytes = simple_response(status, "text/plain", body.as_bytes(), true);
    let slot = worker.shared.refusal_slot(status);
    ReplyKind::Bytes {
        bytes,
        close: true,
        count: Some((slot, worker.shared.bad_request_label)),
    }
}
