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
    /// The route's templated headers and the outcome's templated body, rendered for
    /// this request; None for a route without templates.
    pub rendered: Option<Rendered>,
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

    /// Rendered header lines (`name: value\r\n`) to send after the fixed ones.
    pub fn extra_head(&self) -> &[u8] {
        self.rendered.as_ref().map_or(&[][..], Rendered::head)
    }

    /// The rendered body, when the outcome answered has a templated one. (A capacity
    /// pool's rejection replaces the outcome after rendering, and has none.)
    pub fn rendered_body(&self) -> Option<&[u8]> {
        let rendered = self.rendered.as_ref()?;
        self.outcome().body_template.as_ref()?;
        Some(rendered.body())
    }
}

/// Buffers bigger than this are not kept for reuse (a large templated body allocates
/// per answer rather than pinning memory).
const KEEP_RENDER_BYTES: usize = 16 * 1024;
/// Most spare buffers one worker keeps: with [`KEEP_RENDER_BYTES`], at most 4 MiB held
/// per thread, and enough for 256 templated answers in flight without allocating.
const KEEP_RENDER_BUFFERS: usize = 256;

/// A templated answer's per-request bytes, rendered at dispatch (while the request's
/// bytes are still at hand) into a buffer borrowed from the worker and handed back
/// when the answer is done with.
pub(crate) struct Rendered {
    buf: Vec<u8>,
    /// `buf[..head_bytes]` holds header lines, the rest the body.
    head_bytes: usize,
    worker: Rc<Worker>,
}

impl Rendered {
    pub fn new(worker: &Rc<Worker>) -> Self {
        let buf = worker.render_buffers.borrow_mut().pop().unwrap_or_default();
        Self {
            buf,
            head_bytes: 0,
            worker: Rc::clone(worker),
        }
    }

    /// The buffer to render into: header lines first, then [`Rendered::end_head`], then
    /// the body.
    pub fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Marks where the header lines end and the body starts.
    pub fn end_head(&mut self) {
        self.head_bytes = self.buf.len();
    }

    pub fn head(&self) -> &[u8] {
        &self.buf[..self.head_bytes]
    }

    pub fn body(&self) -> &[u8] {
        &self.buf[self.head_bytes..]
    }
}

impl Drop for Rendered {
    fn drop(&mut self) {
        let mut spare = self.worker.render_buffers.borrow_mut();
        if self.buf.capacity() <= KEEP_RENDER_BYTES && spare.len() < KEEP_RENDER_BUFFERS {
            let mut buf = std::mem::take(&mut self.buf);
            buf.clear();
            spare.push(buf);
        }
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
