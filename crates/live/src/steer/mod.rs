//! Steering: one run over many shards judged and shown as one.
//!
//! - Shard side: [`SteerFeed`] (`attack -steer ADDR`) settles the shard's seconds in
//!   mergeable form ([`ShardSecond`], latencies as [`Buckets`], its stream connections'
//!   figures as [`ShardStreams`]) and answers
//!   `/seconds?from=N` with a [`ShardReport`], and `/stop?why=...`.
//! - Coordinator side: [`Coordinator`] polls every shard through a [`ShardLink`]
//!   ([`HttpLink`] for plain shards, the API server's pod proxy for `kube run`),
//!   merges the seconds ([`MergedSecond`]), judges the stop rules on them, stops every
//!   shard when one fires, names shards that fall behind or go silent, and keeps a
//!   [`crate::Snapshot`] for the live view and, when asked, one Prometheus exposition
//!   for the run ([`merge_expositions`] of the shards' own).

mod buckets;
mod coordinator;
mod feed;
mod link;
mod metrics;
mod second;
mod shard;
mod streams;

pub use buckets::Buckets;
pub use coordinator::Coordinator;
pub use feed::{FinalAnswer, KEPT_SECONDS, RECORDS_CHUNK, SteerFeed, records_answer};
pub use link::HttpLink;
pub use metrics::merge_expositions;
pub use second::{FEED_VERSION, MergedSecond, ShardReport, ShardSecond, ShardState};
pub use shard::{BEHIND_SECONDS, CLOCK_WARNING_NS, Event};
pub use shard::{Health, ShardLink};
pub use streams::ShardStreams;
