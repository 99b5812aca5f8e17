//! Column-wise varint encoding of a batch of records.
//!
//! Each field is written for every record before the next field starts, as LEB128
//! varints; `seq` and `intended_unix_ns` are zigzag deltas from the previous record.
//! Columns keep similar numbers together, so small values stay one byte and the
//! optional zstd pass finds the repetition (status codes, byte counts, targets).
//! Format version 2 appended the `protocol` column; version 1 blocks end before it.
//! Format version 3 appended `checks_failed`, version 4 `grpc_status`; older blocks
//! end before them.

use crate::format::{CHECKS_SINCE_VERSION, GRPC_SINCE_VERSION, PROTOCOL_SINCE_VERSION};
use crate::record::{GrpcStatus, Protocol, Record};

/// Columns on disk in the current format. Changing their order is a format change.
const FIELDS: usize = 14;
/// Columns in a format version 3 block (no `grpc_status`).
const FIELDS_V3: usize = 13;
/// Columns in a format version 1 block (no `protocol`).
const FIELDS_V1: usize = 11;
/// Columns in a format version 2 block (no `checks_failed`).
const FIELDS_V2: usize = 12;

pub(crate) fn encode(records: &[Record], out: &mut Vec<u8>) {
    out.clear();
    put_column(out, records, |r| u64::from(r.attack));
    put_column(out, records, |r| u64::from(r.target));
    put_deltas(out, records, |r| r.seq);
    put_deltas(out, records, |r| r.intended_unix_ns);
    put_column(out, records, |r| r.send_lag_ns);
    put_column(out, records, |r| r.latency_ns);
    put_column(out, records, |r| r.ttfb_ns);
    put_column(out, records, |r| u64::from(r.status));
    put_column(out, records, |r| u64::from(r.error));
    put_column(out, records, |r| r.bytes_in);
    put_column(out, records, |r| r.bytes_out);
    put_column(out, records, |r| u64::from(r.protocol.id()));
    put_column(out, records, |r| u64::from(r.checks_failed));
    put_column(out, records, |r| GrpcStatus::stored(r.grpc_status));
}

fn put_column(out: &mut Vec<u8>, records: &[Record], field: impl Fn(&Record) -> u64) {
    for record in records {
        put_varint(out, field(record));
    }
}

fn put_deltas(out: &mut Vec<u8>, records: &[Record], field: impl Fn(&Record) -> u64) {
    let mut previous = 0u64;
    for record in records {
        let value = field(record);
        put_varint(out, zigzag(value.wrapping_sub(previous) as i64));
        previous = value;
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub(crate) fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

/// Decodes `count` records of a file of format `version` from `bytes` into `out`
/// (cleared first). Returns a description of the problem when the bytes do not hold
/// them exactly.
pub(crate) fn decode(
    bytes: &[u8],
    count: usize,
    version: u16,
    out: &mut Vec<Record>,
) -> Result<(), String> {
    out.clear();
    let has_protocol = version >= PROTOCOL_SINCE_VERSION;
    let has_checks = version >= CHECKS_SINCE_VERSION;
    let has_grpc = version >= GRPC_SINCE_VERSION;
    let fields = match (has_protocol, has_checks) {
        (_, true) if has_grpc => FIELDS,
        (_, true) => FIELDS_V3,
        (true, false) => FIELDS_V2,
        (false, false) => FIELDS_V1,
    };
    // Every varint takes at least one byte, so this bounds the allocation by the input.
    if count.saturating_mul(fields) > bytes.len() {
        return Err(format!(
            "{count} records cannot fit in {} bytes",
            bytes.len()
        ));
    }
    out.resize(count, Record::default());
    let mut cursor = Cursor { bytes, at: 0 };
    cursor.column(out, |r, v| {
        r.attack = narrow(v, "attack")?;
        Ok(())
    })?;
    cursor.column(out, |r, v| {
        r.target = narrow(v, "target")?;
        Ok(())
    })?;
    cursor.deltas(out, |r, v| r.seq = v)?;
    cursor.deltas(out, |r, v| r.intended_unix_ns = v)?;
    cursor.column(out, |r, v| {
        r.send_lag_ns = v;
        Ok(())
    })?;
    cursor.column(out, |r, v| {
        r.latency_ns = v;
        Ok(())
    })?;
    cursor.column(out, |r, v| {
        r.ttfb_ns = v;
        Ok(())
    })?;
    cursor.column(out, |r, v| {
        r.status = narrow(v, "status")?;
        Ok(())
    })?;
    cursor.column(out, |r, v| {
        r.error = narrow(v, "error")?;
        Ok(())
    })?;
    cursor.column(out, |r, v| {
        r.bytes_in = v;
        Ok(())
    })?;
    cursor.column(out, |r, v| {
        r.bytes_out = v;
        Ok(())
    })?;
    // Version 1 records keep the default, HTTP/1.1: the only protocol then.
    if has_protocol {
        cursor.column(out, |r, v| {
            r.protocol = Protocol::from_id(v).ok_or_else(|| {
                format!(
                    "record seq {}: protocol id {v} is unknown (known: {})",
                    r.seq,
                    known_ids()
                )
            })?;
            Ok(())
        })?;
    }
    // Older records had no checks: none failed.
    if has_checks {
        cursor.column(out, |r, v| {
            r.checks_failed = narrow(v, "checks_failed")?;
            Ok(())
        })?;
    }
    // Older records were HTTP only: no gRPC status.
    if has_grpc {
        cursor.column(out, |r, v| {
            r.grpc_status = GrpcStatus::from_stored(v)
                .ok_or_else(|| format!("record seq {}: gRPC status {v} is out of range", r.seq))?;
            Ok(())
        })?;
    }
    if cursor.at != bytes.len() {
        return Err(format!(
            "{} bytes left over after {count} records",
            bytes.len() - cursor.at
        ));
    }
    Ok(())
}

/// `0 = http/1.1, 1 = h2`.
fn known_ids() -> String {
    Protocol::ALL
        .map(|p| format!("{} = {}", p.id(), p.name()))
        .join(", ")
}

pub(crate) fn narrow<T: TryFrom<u64>>(value: u64, field: &str) -> Result<T, String> {
    T::try_from(value).map_err(|_| format!("{field} value {value} out of range"))
}

/// Reads columns of varints off a block's bytes; `at` ends where the last one did.
pub(crate) struct Cursor<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) at: usize,
}

impl Cursor<'_> {
    pub(crate) fn column<T>(
        &mut self,
        records: &mut [T],
        mut set: impl FnMut(&mut T, u64) -> Result<(), String>,
    ) -> Result<(), String> {
        for record in records {
            let value = self.varint()?;
            set(record, value)?;
        }
        Ok(())
    }

    pub(crate) fn deltas<T>(
        &mut self,
        records: &mut [T],
        mut set: impl FnMut(&mut T, u64),
    ) -> Result<(), String> {
        let mut previous = 0u64;
        for record in records {
            previous = previous.wrapping_add(unzigzag(self.varint()?) as u64);
            set(record, previous);
        }
        Ok(())
    }

    #[inline(always)]
    fn varint(&mut self) -> Result<u64, String> {
        // Most values (ids, status, small deltas) are one byte: decide that first.
        if let Some(&byte) = self.bytes.get(self.at)
            && byte < 0x80
        {
            self.at += 1;
            return Ok(u64::from(byte));
        }
        self.varint_long()
    }

    #[cold]
    fn varint_long(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&byte) = self.bytes.get(self.at) else {
                return Err("the columns end in the middle of a number".to_owned());
            };
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err("a number runs longer than 10 bytes".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FORMAT_VERSION;

    fn sample(n: u64) -> Record {
        Record {
            checks_failed: if n.is_multiple_of(6) { 0b101 } else { 0 },
            attack: (n % 3) as u16,
            target: (n % 7) as u32,
            seq: n,
            intended_unix_ns: 1_700_000_000_000_000_000 + n * 20_000 - (n % 5) * 3_000,
            send_lag_ns: n % 1000,
            latency_ns: 100_000 + n * 37,
            ttfb_ns: 90_000 + n,
            status: if n.is_multiple_of(11) { 0 } else { 200 },
            error: u32::from(n.is_multiple_of(11)),
            bytes_in: 612,
            bytes_out: 38,
            protocol: if n.is_multiple_of(4) {
                Protocol::Http1
            } else {
                Protocol::Http2
            },
            grpc_status: n.is_multiple_of(5).then_some(GrpcStatus((n % 17) as u8)),
        }
    }

    const V1: u16 = 1;
    const V2: u16 = 2;
    const V3: u16 = 3;

    #[test]
    fn round_trips_including_extremes() {
        let mut records: Vec<Record> = (0..1000).map(sample).collect();
        records.push(Record {
            checks_failed: u32::MAX,
            attack: u16::MAX,
            target: u32::MAX,
            seq: u64::MAX,
            intended_unix_ns: 0,
            send_lag_ns: u64::MAX,
            latency_ns: u64::MAX,
            ttfb_ns: u64::MAX,
            status: u16::MAX,
            error: u32::MAX,
            bytes_in: u64::MAX,
            bytes_out: u64::MAX,
            protocol: Protocol::Http2,
            grpc_status: Some(GrpcStatus(254)),
        });
        records.push(Record::default());
        let mut bytes = Vec::new();
        encode(&records, &mut bytes);
        let mut decoded = Vec::new();
        decode(&bytes, records.len(), FORMAT_VERSION, &mut decoded).unwrap();
        assert_eq!(decoded, records);
    }

    /// A block of an older version: the current one without its last `dropped`
    /// columns (every value of those is one byte in [`sample`]).
    fn old_bytes(records: &[Record], dropped: usize) -> Vec<u8> {
        let mut bytes = Vec::new();
        encode(records, &mut bytes);
        bytes.truncate(bytes.len() - dropped * records.len());
        bytes
    }

    fn v1_bytes(records: &[Record]) -> Vec<u8> {
        old_bytes(records, 3)
    }

    #[test]
    fn version_3_blocks_read_without_grpc_statuses() {
        let records: Vec<Record> = (0..100).map(sample).collect();
        let mut decoded = Vec::new();
        decode(&old_bytes(&records, 1), records.len(), V3, &mut decoded).unwrap();
        let want: Vec<Record> = records
            .iter()
            .map(|r| Record {
                grpc_status: None,
                ..*r
            })
            .collect();
        assert_eq!(decoded, want);
        assert!(
            decode(
                &old_bytes(&records, 1),
                records.len(),
                FORMAT_VERSION,
                &mut decoded
            )
            .is_err(),
            "the same bytes read as version 4 lack a column"
        );
    }

    #[test]
    fn the_grpc_status_column_is_checked() {
        let records: Vec<Record> = (1..4).map(sample).collect();
        let mut bytes = Vec::new();
        encode(&records, &mut bytes);
        let statuses = bytes.len() - records.len();
        let mut out = Vec::new();
        for (stored, want) in [
            (
                &[0u8, 1, 15][..],
                Ok([None, Some(GrpcStatus::OK), Some(GrpcStatus(14))]),
            ),
            (
                &[0x80, 0x02, 0, 0],
                Err("record seq 1: gRPC status 256 is out of range"),
            ),
        ] {
            let input = [&bytes[..statuses], stored].concat();
            match (
                decode(&input, records.len(), FORMAT_VERSION, &mut out),
                want,
            ) {
                (Ok(()), Ok(want)) => {
                    let got: Vec<_> = out.iter().map(|r| r.grpc_status).collect();
                    assert_eq!(got, want, "{stored:?}");
                }
                (Err(err), Err(want)) => assert!(err.contains(want), "{stored:?}: {err}"),
                (got, want) => panic!("{stored:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn version_2_blocks_read_without_failed_checks() {
        let records: Vec<Record> = (0..100).map(sample).collect();
        let mut decoded = Vec::new();
        decode(&old_bytes(&records, 2), records.len(), V2, &mut decoded).unwrap();
        let want: Vec<Record> = records
            .iter()
            .map(|r| Record {
                checks_failed: 0,
                grpc_status: None,
                ..*r
            })
            .collect();
        assert_eq!(decoded, want);
        assert!(
            decode(&old_bytes(&records, 2), records.len(), V3, &mut decoded).is_err(),
            "the same bytes read as version 3 lack a column"
        );
    }

    #[test]
    fn version_1_blocks_read_as_http1() {
        let records: Vec<Record> = (0..100).map(sample).collect();
        let mut decoded = Vec::new();
        decode(&v1_bytes(&records), records.len(), V1, &mut decoded).unwrap();
        let want: Vec<Record> = records
            .iter()
            .map(|r| Record {
                protocol: Protocol::Http1,
                checks_failed: 0,
                grpc_status: None,
                ..*r
            })
            .collect();
        assert_eq!(decoded, want);
        // The same bytes read as version 2 lack a column.
        let err = decode(
            &v1_bytes(&records),
            records.len(),
            FORMAT_VERSION,
            &mut decoded,
        )
        .unwrap_err();
        assert!(
            err.contains("cannot fit") || err.contains("middle"),
            "{err}"
        );
    }

    #[test]
    fn the_protocol_column_is_checked() {
        let records: Vec<Record> = (1..4).map(sample).collect();
        let mut bytes = Vec::new();
        encode(&records, &mut bytes);
        let protocols = bytes.len() - 3 * records.len();
        let checks = &bytes[protocols + records.len()..].to_vec();
        assert_eq!(
            &bytes[protocols..protocols + records.len()],
            &[1, 1, 1],
            "one id byte per record"
        );
        let mut out = Vec::new();
        /// The protocol ids written, and the protocols read or the error.
        type Row<'a> = (&'a [u8], Result<[Protocol; 3], &'a str>);
        let rows: &[Row<'_>] = &[
            (&[0, 0, 0], Ok([Protocol::Http1; 3])),
            (
                &[1, 0, 1],
                Ok([Protocol::Http2, Protocol::Http1, Protocol::Http2]),
            ),
            (
                &[0, 2, 0],
                Err("record seq 2: protocol id 2 is unknown (known: 0 = http/1.1, 1 = h2)"),
            ),
            (
                &[0, 0, 0x7f],
                Err("record seq 3: protocol id 127 is unknown"),
            ),
            (
                &[0x80, 0x02, 0, 0],
                Err("record seq 1: protocol id 256 is unknown"),
            ),
        ];
        for (ids, want) in rows {
            let input = [&bytes[..protocols], ids, checks].concat();
            match (
                decode(&input, records.len(), FORMAT_VERSION, &mut out),
                want,
            ) {
                (Ok(()), Ok(want)) => {
                    let got: Vec<Protocol> = out.iter().map(|r| r.protocol).collect();
                    assert_eq!(got, want, "{ids:?}");
                }
                (Err(err), Err(want)) => assert!(err.contains(want), "{ids:?}: {err}"),
                (got, want) => panic!("{ids:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn rejects_bad_bytes() {
        let records: Vec<Record> = (0..10).map(sample).collect();
        let mut bytes = Vec::new();
        encode(&records, &mut bytes);
        let mut out = Vec::new();
        let rows: Vec<(Vec<u8>, usize, &str)> = vec![
            (bytes[..bytes.len() - 1].to_vec(), 10, "middle of a number"),
            ([bytes.as_slice(), &[0]].concat(), 10, "left over"),
            (bytes.clone(), 1_000_000, "cannot fit"),
            (vec![0xff; 200], 10, "longer than 10 bytes"),
            (
                [&[0x80, 0x80, 0x04][..], &[0; 200]].concat(),
                10,
                "attack value",
            ),
        ];
        for (input, count, want) in rows {
            let err = decode(&input, count, FORMAT_VERSION, &mut out).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }
}
