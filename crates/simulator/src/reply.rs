//! [`Reply`]: an answer ready to write, whichever protocol sends it, and the request
//! it counts in flight until then ([`InFlight`]).

use std::rc::Rc;
use std::time::Instant;

use crate::state::LocalTable;
use crate::table::{Outcome, Route};
use crate::worker::Worker;

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
    Outcome(RouteAnswer),
    /// A small answer made on the spot (admin, 406 for unmatched paths, refusals),
    /// rendered by the protocol that sends it.
    Simple {
        status: u16,
        content_type: &'static str,
        body: Vec<u8>,
        /// HTTP/1.1: close the connection after it (a request that did not parse).
        close: bool,
        /// Metrics slot and route label, when it is counted.
        count: Option<(usize, usize)>,
    },
}

/// A route's pre-built outcome, in the table the request was routed with.
pub(crate) struct RouteAnswer {
    pub table: Rc<LocalTable>,
    pub route: usize,
    pub outcome: usize,
}

impl RouteAnswer {
    /// The route answered.
    pub fn route(&self) -> &Route {
        &self.table.routes[self.route]
    }

    /// The outcome drawn.
    pub fn outcome(&self) -> &Outcome {
        &self.route().outcomes[self.outcome]
    }
}

impl ReplyKind {
    /// A placeholder filled in later (the admin API's answer).
    pub fn empty() -> Self {
        ReplyKind::Simple {
            status: 500,
            content_type: "text/plain",
            body: Vec::new(),
            close: false,
            count: None,
        }
    }
}
