//! Answers over HTTP/2: one task per stream reads the request, hands it to the routing
//! both protocols share ([`crate::dispatch`]), and sends the reply as HEADERS and DATA
//! frames, or misbehaves as the outcome's failure mode says, in HTTP/2's terms:
//!
//! | mode | over HTTP/2 |
//! |---|---|
//! | `reset` | RST_STREAM (INTERNAL_ERROR); the connection lives on |
//! | `rst_stream` | RST_STREAM with its `code` (default INTERNAL_ERROR) |
//! | `close` | GOAWAY (NO_ERROR) and close: every stream in flight is lost |
//! | `goaway` | the answer, then GOAWAY (NO_ERROR); streams in flight finish, then close |
//! | `stall` | no answer on the stream; after `for`, RST_STREAM (CANCEL) |
//! | `malformed` | a DATA frame on stream 0 (a connection error), then close |
//! | `trickle` | the body in DATA frames of `chunk` bytes, `every` apart |
//! | `close_mid_body` | the full content-length, `after` bytes, RST_STREAM (INTERNAL_ERROR) |
//! | `chunked` | no content-length; DATA frames of `chunk` bytes |

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream};
use http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, DATE, SERVER};
use http::{HeaderMap, HeaderValue, StatusCode};
use tokio::sync::Notify;

use crate::dispatch::{bare_reply, dispatch, refusal, run_step};
use crate::failure::Failure;
use crate::grpc::Request;
use crate::http::{Incoming, MAX_BODY_BYTES, Method};
use crate::metrics::Protocol;
use crate::reply::{Reply, ReplyKind};
use crate::request::RequestHeaders;
use crate::respond::elapsed_ns;
use crate::worker::Worker;

/// What a stream's failure mode asks of its whole connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnAction {
    /// GOAWAY (NO_ERROR), finish the streams in flight, then close: `goaway`.
    Drain,
    /// GOAWAY with this code and close at once; streams in flight get no answer: `close`.
    Abort(Reason),
    /// Bytes that are not a valid frame, then close: `malformed`.
    Garbage,
}

/// How stream tasks reach their connection task.
#[derive(Default)]
pub(crate) struct ConnControl {
    action: Cell<Option<ConnAction>>,
    notify: Notify,
}

impl ConnControl {
    /// Asks the connection task to act. A drain never replaces an abort or garbage
    /// already asked for: the harsher action wins.
    pub fn ask(&self, action: ConnAction) {
        if action != ConnAction::Drain || self.action.get().is_none() {
            self.action.set(Some(action));
        }
        self.notify.notify_one();
    }

    /// What was asked, once the connection task is woken (None: nothing left to do).
    pub async fn asked(&self) -> Option<ConnAction> {
        self.notify.notified().await;
        self.action.take()
    }
}

/// How long `close_mid_body` lets its partial body leave before the RST_STREAM, which
/// would otherwise discard DATA still queued in `h2`.
const MID_BODY_PAUSE: Duration = Duration::from_millis(20);
/// Longest a stream whose mode closes the connection waits for that to happen.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Serves one stream: read the request (body included), route, wait, answer.
pub(crate) async fn serve_stream(
    worker: Rc<Worker>,
    request: http::Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    control: Rc<ConnControl>,
    peer_is_loopback: bool,
) {
    let arrival = Instant::now();
    let (head, body) = request.into_parts();
    if let Some(pools) = reflection(&worker, head.uri.path()) {
        let _ = crate::grpc_reflection::serve(pools, body, respond).await;
        return;
    }
    // A route answering each message of a stream as it comes reads it as it answers.
    let (body, mut request) = if answers_per_message(&worker, head.uri.path()) {
        (None, Request::Live(body))
    } else {
        (Some(body), Request::Read(0))
    };
    let read = match body {
        Some(body) => read_body(body).await,
        None => Ok(Vec::new()),
    };
    let reply = match read {
        Ok(body) => {
            if let Request::Read(messages) = &mut request {
                *messages = crate::grpc::messages_in(&body);
            }
            let incoming = Incoming {
                method: method_of(&head.method),
                path: head.uri.path().as_bytes(),
                authorization: head.headers.get(AUTHORIZATION).map(HeaderValue::as_bytes),
                query: head.uri.query().unwrap_or_default().as_bytes(),
                headers: RequestHeaders::Map(&head.headers),
                body: &body,
                keep_alive: true,
                arrival,
                peer_is_loopback,
            };
            let step = dispatch(&worker, &incoming);
            tokio::select! {
                reply = run_step(Rc::clone(&worker), step) => reply,
                // The client cancelled the stream (its timeout, say): stop waiting, which
                // returns a capacity-pool worker at once, as a closed HTTP/1.1
                // connection does.
                () = until_reset(&mut respond) => return,
            }
        }
        Err(BodyError::TooLarge) => {
            let kind = refusal(&worker, 413, "request body too large");
            bare_reply(&worker, kind, arrival)
        }
        Err(BodyError::Gone) => return,
    };
    send_reply(&worker, respond, (reply, request), &control).await;
}

/// Whether `path`'s route is a gRPC method answering each message of the request's
/// stream (`stream.per_message`): it answers each as it comes, not once the stream ended.
fn answers_per_message(worker: &Worker, path: &str) -> bool {
    let table = worker.view.table(&worker.shared);
    table.find(path).is_some_and(|at| {
        table.routes[at]
            .outcomes
            .iter()
            .any(|o| o.grpc.as_ref().is_some_and(|g| g.stream.per_message))
    })
}

/// The pools to answer reflection from, when `path` is the reflection service's, the
/// recipe has gRPC routes and none of them is on that path.
fn reflection(worker: &Worker, path: &str) -> Option<Vec<prost_reflect::DescriptorPool>> {
    if !crate::grpc_reflection::PATHS.contains(&path) {
        return None;
    }
    let table = worker.view.table(&worker.shared);
    let pools = crate::grpc_reflection::pools(&table);
    (table.find(path).is_none() && !pools.is_empty()).then_some(pools)
}

enum BodyError {
    TooLarge,
    /// The client reset the stream or the connection went away.
    Gone,
}

/// Collects the request body (empty at once for a HEADERS frame with END_STREAM),
/// returning flow-control credit as it goes.
async fn read_body(mut body: RecvStream) -> Result<Vec<u8>, BodyError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|_| BodyError::Gone)?;
        let _ = body.flow_control().release_capacity(chunk.len());
        if bytes.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(BodyError::TooLarge);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

fn method_of(method: &http::Method) -> Method {
    match *method {
        http::Method::GET => Method::Get,
        http::Method::HEAD => Method::Head,
        http::Method::POST => Method::Post,
        _ => Method::Other,
    }
}

/// Sends one reply and counts it. Errors mean the client left; nothing to do then.
async fn send_reply(
    worker: &Worker,
    mut respond: SendResponse<Bytes>,
    (reply, request): (Reply, Request),
    control: &ConnControl,
) {
    let arrival = reply.arrival;
    let answer = match reply.kind {
        ReplyKind::Simple {
            status,
            content_type,
            body,
            count,
            ..
        } => {
            let mut headers = HeaderMap::with_capacity(4);
            headers.insert(SERVER, HeaderValue::from_static("loadlab-simulate"));
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
            let body = Bytes::from(body);
            let _ = send_whole(&mut respond, (status, &headers), body, reply.head_only);
            if let Some((slot, label)) = count {
                let latency_ns = elapsed_ns(arrival);
                worker
                    .stats
                    .record(slot, label, latency_ns, Protocol::Http2);
            }
            return;
        }
        ReplyKind::Outcome(answer) => answer,
    };
    let (route, outcome) = (answer.route(), answer.outcome());
    let body = match answer.rendered_body() {
        // HTTP/2 keeps the body until the client's windows let it go: a copy.
        Some(rendered) => Bytes::copy_from_slice(rendered),
        None => outcome.body.pick_shared(&mut *worker.rng.borrow_mut()),
    };
    let _count = CountOnDrop {
        worker,
        slot: outcome.slot,
        route_label: route.label,
        arrival,
    };
    let templated;
    let headers = match answer.extra_head() {
        [] => &outcome.h2_headers,
        extra => {
            templated = with_rendered(&outcome.h2_headers, extra);
            &templated
        }
    };
    let head = (outcome.status, headers);
    match (&outcome.failure, &outcome.grpc) {
        (None, Some(grpc)) => {
            let answer = (grpc, request);
            let _ = crate::grpc::send(respond, response(head, None), body, answer).await;
        }
        (None, None) => {
            let _ = send_whole(&mut respond, head, body, reply.head_only);
        }
        (Some(failure), _) => {
            let answer = Answer {
                respond,
                head,
                body,
                head_only: reply.head_only,
            };
            misbehave(answer, failure, control).await;
        }
    }
}

/// The outcome's fixed headers plus rendered template headers (`name: value\r\n`
/// lines; names were checked at load, and values that HTTP/2 refuses are left out).
fn with_rendered(fixed: &HeaderMap, extra: &[u8]) -> HeaderMap {
    let mut map = fixed.clone();
    for line in extra.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.windows(2).position(|w| w == b": ") else {
            continue;
        };
        let name = &line[..colon];
        if crate::table::CONNECTION_SPECIFIC
            .iter()
            .any(|c| c.as_bytes() == name)
        {
            continue;
        }
        let name = http::HeaderName::from_bytes(name);
        let value = HeaderValue::from_bytes(&line[colon + 2..]);
        if let (Ok(name), Ok(value)) = (name, value) {
            map.append(name, value);
        }
    }
    map
}

/// Counts an answer once it is done with: when the failure mode ends, or when the
/// connection goes first and drops the stream's task (a stall the client gave up on,
/// the stream that asked for `close`), as HTTP/1.1 counts those when the client leaves.
struct CountOnDrop<'a> {
    worker: &'a Worker,
    slot: usize,
    route_label: usize,
    arrival: Instant,
}

impl Drop for CountOnDrop<'_> {
    fn drop(&mut self) {
        let latency_ns = elapsed_ns(self.arrival);
        self.worker
            .stats
            .record(self.slot, self.route_label, latency_ns, Protocol::Http2);
    }
}

/// The head of a response: status and fixed headers, plus date and (when given)
/// content-length.
fn response(
    (status, headers): (u16, &HeaderMap),
    content_length: Option<usize>,
) -> http::Response<()> {
    let mut response = http::Response::new(());
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let map = response.headers_mut();
    map.clone_from(headers);
    map.insert(DATE, crate::date::date_value());
    // 204 and 304 carry no body and so no length (RFC 9110 8.6).
    if let Some(len) = content_length.filter(|_| !matches!(status, 204 | 304)) {
        map.insert(CONTENT_LENGTH, HeaderValue::from(len));
    }
    response
}

/// HEADERS, then the body in one go (`h2` cuts it into frames as the client's windows
/// allow; the bytes are shared with the recipe, not copied).
fn send_whole(
    respond: &mut SendResponse<Bytes>,
    head: (u16, &HeaderMap),
    body: Bytes,
    head_only: bool,
) -> Result<(), h2::Error> {
    let end = head_only || body.is_empty();
    let mut stream = respond.send_response(response(head, Some(body.len())), end)?;
    if !end {
        stream.send_data(body, true)?;
    }
    Ok(())
}

/// An answer about to be sent, for a failure mode to bend.
struct Answer<'a> {
    respond: SendResponse<Bytes>,
    head: (u16, &'a HeaderMap),
    body: Bytes,
    head_only: bool,
}

impl Answer<'_> {
    /// The whole answer at once, as a stream without a failure mode gets it.
    fn send_whole(mut self) -> Result<(), h2::Error> {
        send_whole(&mut self.respond, self.head, self.body, self.head_only)
    }
}

async fn misbehave(mut answer: Answer<'_>, failure: &Failure, control: &ConnControl) {
    match *failure {
        Failure::Reset => {
            answer.respond.send_reset(Reason::INTERNAL_ERROR);
        }
        Failure::RstStream { code } => {
            answer.respond.send_reset(code);
        }
        Failure::Close | Failure::Malformed => {
            let action = if *failure == Failure::Close {
                ConnAction::Abort(Reason::NO_ERROR)
            } else {
                ConnAction::Garbage
            };
            control.ask(action);
            // Held open until the connection goes, so that dropping it does not send
            // a RST_STREAM (CANCEL) first.
            let _ = tokio::time::timeout(CLOSE_WAIT, until_reset(&mut answer.respond)).await;
        }
        Failure::Stall { for_duration } => {
            let reset = until_reset(&mut answer.respond);
            match for_duration {
                None => reset.await,
                Some(limit) => {
                    if tokio::time::timeout(limit, reset).await.is_err() {
                        answer.respond.send_reset(Reason::CANCEL);
                    }
                }
            }
        }
        Failure::GoAway => {
            let _ = answer.send_whole();
            control.ask(ConnAction::Drain);
        }
        Failure::Trickle { chunk_bytes, every } => {
            let _ = trickle(answer, chunk_bytes, every, true).await;
        }
        Failure::Chunked { chunk_bytes } => {
            let _ = trickle(answer, chunk_bytes, Duration::ZERO, false).await;
        }
        Failure::CloseMidBody { after_bytes } => {
            let _ = close_mid_body(answer, after_bytes).await;
        }
    }
}

/// Waits until the client resets the stream or the connection goes away.
async fn until_reset(respond: &mut SendResponse<Bytes>) {
    let _ = std::future::poll_fn(|cx| respond.poll_reset(cx)).await;
}

/// The body in DATA frames of `chunk_bytes`, `every` apart; with its length announced
/// (`trickle`) or not (`chunked`).
async fn trickle(
    answer: Answer<'_>,
    chunk_bytes: usize,
    every: Duration,
    announce_length: bool,
) -> Result<(), h2::Error> {
    let Answer {
        mut respond,
        head,
        body,
        head_only,
    } = answer;
    let length = announce_length.then_some(body.len());
    let end = head_only || body.is_empty();
    let mut stream = respond.send_response(response(head, length), end)?;
    if end {
        return Ok(());
    }
    let mut at = 0;
    while at < body.len() {
        if at > 0 && !every.is_zero() {
            tokio::time::sleep(every).await;
        }
        let next = (at + chunk_bytes).min(body.len());
        stream.send_data(body.slice(at..next), next == body.len())?;
        at = next;
    }
    Ok(())
}

/// The full content-length, part of the body, then RST_STREAM (INTERNAL_ERROR).
async fn close_mid_body(answer: Answer<'_>, after_bytes: Option<usize>) -> Result<(), h2::Error> {
    let Answer {
        mut respond,
        head,
        body,
        ..
    } = answer;
    let cut = after_bytes
        .unwrap_or(body.len() / 2)
        .min(body.len().saturating_sub(1));
    let mut stream = respond.send_response(response(head, Some(body.len())), false)?;
    stream.send_data(body.slice(..cut), false)?;
    tokio::time::sleep(MID_BODY_PAUSE).await;
    stream.send_reset(Reason::INTERNAL_ERROR);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harsher_actions_are_not_replaced_by_a_drain() {
        let rows: &[(&[ConnAction], Option<ConnAction>)] = &[
            (&[ConnAction::Drain], Some(ConnAction::Drain)),
            (
                &[ConnAction::Garbage, ConnAction::Drain],
                Some(ConnAction::Garbage),
            ),
            (
                &[ConnAction::Drain, ConnAction::Abort(Reason::NO_ERROR)],
                Some(ConnAction::Abort(Reason::NO_ERROR)),
            ),
            (&[], None),
        ];
        for (asks, want) in rows {
            let control = ConnControl::default();
            for ask in *asks {
                control.ask(*ask);
            }
            assert_eq!(control.action.take(), *want, "{asks:?}");
        }
    }
}
