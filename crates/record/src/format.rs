//! The bytes on disk (specified in `docs/RECORD_FORMAT.md`).
//!
//! ```text
//! file   = preamble block*
//! preamble = "LLRECORD" version:u16le reserved:u16le
//! block  = kind:u8 payload_len:u32le crc32:u32le payload
//! ```
//! The CRC-32 (IEEE) covers the payload. Readers stop at the first block that is cut
//! short or fails its checksum and report how many bytes they skipped.

use std::io::{self, Write};

/// The first eight bytes of every record file.
pub const MAGIC: [u8; 8] = *b"LLRECORD";
/// Bumped whenever the bytes written change; readers accept every version up to theirs.
/// Version 2 appended the `protocol` column to records blocks, version 3 the
/// `checks_failed` column, version 4 the `grpc_status` column, version 5 the header's
/// `trace` and the end block's `exemplars` (JSON fields older readers would refuse),
/// version 6 the exemplars' `typical` kind, version 7 the connections entries' `kind`
/// and `first_message_ns` (gRPC streaming calls), version 8 the stats samples'
/// `streams` (connections and messages per second) and the gRPC calls' `round_trips`
/// (bidirectional calls), version 9 the connections entries' `events` (an event
/// stream's events by type).
pub const FORMAT_VERSION: u16 = 9;
/// The first version whose records blocks carry the `protocol` column.
pub(crate) const PROTOCOL_SINCE_VERSION: u16 = 2;
/// The first version whose records blocks carry the `checks_failed` column.
pub(crate) const CHECKS_SINCE_VERSION: u16 = 3;
/// The first version whose records blocks carry the `grpc_status` column.
pub(crate) const GRPC_SINCE_VERSION: u16 = 4;

pub(crate) const PREAMBLE_LEN: usize = 12;
pub(crate) const BLOCK_HEAD_LEN: usize = 9;
/// A sanity bound: a length beyond this is a corrupt file, not a reason to allocate.
pub(crate) const MAX_PAYLOAD_LEN: u32 = 64 << 20;
/// Records per block at most (writers flush earlier; readers reject more).
pub(crate) const MAX_RECORDS_PER_BLOCK: u32 = 1 << 20;
/// Records payload: codec u8, count u32, raw_len u32, watermark u64.
pub(crate) const RECORDS_HEAD_LEN: usize = 17;
/// `watermark` value meaning "unknown".
pub(crate) const NO_WATERMARK: u64 = u64::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    Header,
    Dictionary,
    Records,
    Stats,
    End,
    /// A kind this reader does not know; kinds >= 0x40 are optional and skipped.
    Optional(u8),
}

impl BlockKind {
    pub(crate) fn code(self) -> u8 {
        match self {
            BlockKind::Header => 1,
            BlockKind::Dictionary => 2,
            BlockKind::Records => 3,
            BlockKind::Stats => 4,
            BlockKind::End => 5,
            BlockKind::Optional(code) => code,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<BlockKind> {
        Some(match code {
            1 => BlockKind::Header,
            2 => BlockKind::Dictionary,
            3 => BlockKind::Records,
            4 => BlockKind::Stats,
            5 => BlockKind::End,
            0x40.. => BlockKind::Optional(code),
            _ => return None,
        })
    }
}

/// Record payload codecs.
pub(crate) const CODEC_RAW: u8 = 0;
pub(crate) const CODEC_ZSTD: u8 = 1;

pub(crate) fn preamble() -> [u8; PREAMBLE_LEN] {
    let mut bytes = [0u8; PREAMBLE_LEN];
    bytes[..8].copy_from_slice(&MAGIC);
    bytes[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes
}

/// Writes one block with a single `write_all`, so a reader on the other end of a pipe
/// sees whole blocks whenever the writer is not killed mid-call.
pub(crate) fn write_block(
    out: &mut impl Write,
    kind: BlockKind,
    payload: &[u8],
    scratch: &mut Vec<u8>,
) -> io::Result<()> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&len| len <= MAX_PAYLOAD_LEN)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "record block too large"))?;
    scratch.clear();
    scratch.push(kind.code());
    scratch.extend_from_slice(&len.to_le_bytes());
    scratch.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    scratch.extend_from_slice(payload);
    out.write_all(scratch)?;
    out.flush()
}
