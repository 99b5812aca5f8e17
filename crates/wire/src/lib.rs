//! HTTP/1.1 wire pieces that more than one of our clients needs, written once:
//! [`ChunkedDecoder`], an incremental decoder of chunked bodies, and [`client`], a
//! small blocking client with deadlines for the tools around a run (the monitor's
//! scrapes, Prometheus remote write), never the engine.
//!
//! The engine counts body bytes through it on its per-request path and the monitor
//! collects scraped bodies with it, so it never allocates, copies or formats: it hands
//! each piece of chunk data to the caller as a slice of the input.
//!
//! The simulator keeps its own decoder on purpose: it depends on none of our crates,
//! so the server the engine is measured against cannot be tuned to flatter it.

#![warn(missing_docs)]

mod chunked;
pub mod client;

pub use chunked::{ChunkedDecoder, Progress};

/// Why bytes could not be decoded. The texts are static: decoding never allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// A chunk-size line is not a hexadecimal size (read to its end first, so a
    /// caller that quotes the line has all of it).
    #[error("{0}")]
    ChunkSize(&'static str),
    /// A CRLF is missing after a size line, chunk data or a trailer, or chunk data is
    /// longer than its size.
    #[error("{0}")]
    ChunkFraming(&'static str),
}

impl WireError {
    /// What went wrong, as static text.
    pub fn reason(self) -> &'static str {
        match self {
            WireError::ChunkSize(reason) | WireError::ChunkFraming(reason) => reason,
        }
    }
}
