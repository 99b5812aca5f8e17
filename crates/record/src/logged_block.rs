//! The column bytes of a `logged` block (kind [`LOGGED_BLOCK`]): a replay's
//! [`Logged`] originals, encoded like records so a run of them costs a few bytes each.
//!
//! ```text
//! payload = codec:u8 count:u32 raw_len:u32 data   (data as in a records block)
//! columns = attack, target, seq (delta), intended_unix_ns (delta), status,
//!           latency_ns + 1 (0 = not logged), bytes + 1 (0 = not logged)
//! ```

use crate::columns::{Cursor, narrow, put_varint, zigzag};
use crate::logged::Logged;

/// The optional block kind of logged originals.
pub(crate) const LOGGED_BLOCK: u8 = 0x42;
/// Logged payload head: codec u8, count u32, raw_len u32.
pub(crate) const LOGGED_HEAD_LEN: usize = 9;
/// Columns per entry, each at least one byte: bounds a claimed count by the bytes.
const FIELDS: usize = 7;

pub(crate) fn encode(logged: &[Logged], out: &mut Vec<u8>) {
    out.clear();
    let column = |out: &mut Vec<u8>, field: fn(&Logged) -> u64| {
        for entry in logged {
            put_varint(out, field(entry));
        }
    };
    let deltas = |out: &mut Vec<u8>, field: fn(&Logged) -> u64| {
        let mut previous = 0u64;
        for entry in logged {
            let value = field(entry);
            put_varint(out, zigzag(value.wrapping_sub(previous) as i64));
            previous = value;
        }
    };
    column(out, |l| u64::from(l.attack));
    column(out, |l| u64::from(l.target));
    deltas(out, |l| l.seq);
    deltas(out, |l| l.intended_unix_ns);
    column(out, |l| u64::from(l.status));
    column(out, |l| optional(l.latency_ns));
    column(out, |l| optional(l.bytes));
}

/// `value + 1`, 0 for none. A logged `u64::MAX` (no log says that) is kept as
/// `u64::MAX - 1` rather than read back as none.
fn optional(value: Option<u64>) -> u64 {
    value.map_or(0, |v| v.saturating_add(1))
}

/// Decodes `count` entries from `bytes` into `out` (cleared first); the reason when
/// the bytes do not hold exactly that.
pub(crate) fn decode(bytes: &[u8], count: usize, out: &mut Vec<Logged>) -> Result<(), String> {
    out.clear();
    if count.saturating_mul(FIELDS) > bytes.len() {
        return Err(format!(
            "{count} logged requests cannot fit in {} bytes",
            bytes.len()
        ));
    }
    out.resize(count, Logged::default());
    let mut cursor = Cursor { bytes, at: 0 };
    cursor.column(out, |l, v| {
        l.attack = narrow(v, "attack")?;
        Ok(())
    })?;
    cursor.column(out, |l, v| {
        l.target = narrow(v, "target")?;
        Ok(())
    })?;
    cursor.deltas(out, |l, v| l.seq = v)?;
    cursor.deltas(out, |l, v| l.intended_unix_ns = v)?;
    cursor.column(out, |l, v| {
        l.status = narrow(v, "status")?;
        Ok(())
    })?;
    cursor.column(out, |l, v| {
        l.latency_ns = v.checked_sub(1);
        Ok(())
    })?;
    cursor.column(out, |l, v| {
        l.bytes = v.checked_sub(1);
        Ok(())
    })?;
    if cursor.at != bytes.len() {
        return Err(format!(
            "{} bytes left over after {count} logged requests",
            bytes.len() - cursor.at
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u64) -> Logged {
        Logged {
            attack: (n % 2) as u16,
            target: (n % 5) as u32,
            seq: n * 3,
            intended_unix_ns: 1_700_000_000_000_000_000 + n * 1_000_000 - (n % 3) * 7_000,
            status: if n.is_multiple_of(4) { 0 } else { 200 },
            latency_ns: (!n.is_multiple_of(3)).then_some(n * 1_000),
            bytes: (!n.is_multiple_of(5)).then_some(n),
        }
    }

    #[test]
    fn round_trips_including_extremes_and_absent_values() {
        let mut logged: Vec<Logged> = (0..500).map(entry).collect();
        logged.push(Logged {
            attack: u16::MAX,
            target: u32::MAX,
            seq: u64::MAX,
            intended_unix_ns: 0,
            status: u16::MAX,
            latency_ns: Some(0),
            bytes: Some(u64::MAX - 1),
        });
        logged.push(Logged::default());
        let mut bytes = Vec::new();
        encode(&logged, &mut bytes);
        let mut decoded = Vec::new();
        decode(&bytes, logged.len(), &mut decoded).unwrap();
        assert_eq!(decoded, logged);
        assert!(decoded.iter().any(|l| l.latency_ns.is_none()));
        assert!(decoded.iter().any(|l| l.latency_ns == Some(0)));
    }

    #[test]
    fn a_logged_u64_max_is_kept_as_a_value_not_none() {
        let logged = [Logged {
            latency_ns: Some(u64::MAX),
            ..Logged::default()
        }];
        let (mut bytes, mut decoded) = (Vec::new(), Vec::new());
        encode(&logged, &mut bytes);
        decode(&bytes, 1, &mut decoded).unwrap();
        assert_eq!(decoded[0].latency_ns, Some(u64::MAX - 1));
    }

    #[test]
    fn rejects_bad_bytes_naming_the_problem() {
        let logged: Vec<Logged> = (0..10).map(entry).collect();
        let mut bytes = Vec::new();
        encode(&logged, &mut bytes);
        let mut status_too_big = Vec::new();
        for _ in 0..4 {
            put_varint(&mut status_too_big, 0);
        }
        put_varint(&mut status_too_big, 70_000);
        status_too_big.extend([0, 0]);
        let rows: Vec<(Vec<u8>, usize, &str)> = vec![
            (bytes[..bytes.len() - 1].to_vec(), 10, "middle of a number"),
            ([bytes.as_slice(), &[0]].concat(), 10, "left over"),
            (bytes.clone(), 1_000_000, "cannot fit"),
            (vec![0xff; 200], 10, "longer than 10 bytes"),
            (
                [&[0x80, 0x80, 0x04][..], &[0; 10]].concat(),
                1,
                "attack value",
            ),
            (status_too_big, 1, "status value 70000 out of range"),
        ];
        let mut out = Vec::new();
        for (input, count, want) in rows {
            let err = decode(&input, count, &mut out).unwrap_err();
            assert!(err.contains(want), "{want}: {err}");
        }
    }
}
