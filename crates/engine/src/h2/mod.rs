//! HTTP/2 for the engine's own event loop (RFC 9113): frames (`frame.rs`), requests
//! re-framed from their HTTP/1.1 rendering (`request.rs`) and the client's side of a
//! connection, free of I/O ([`Session`], `session.rs`). The worker (`worker/h2.rs`)
//! owns the sockets: a connection slot carries a [`Session`], each request is a
//! stream slot linked to it, and everything else (pacing, timeouts, records) is the
//! same as for HTTP/1.1. HPACK is ours too (`hpack.rs`), but for its Huffman code.

pub(crate) mod frame;
mod hpack;
mod request;
mod session;

pub(crate) use session::{BodyPlan, Event, Session, State};
