//! CSV: vegeta's headerless results (6, 11 or 12 columns) and ours, which starts with a
//! header row, keeps vegeta's 12 columns in vegeta's order and appends `send_lag`,
//! `ttfb`, `error_kind`, `protocol`, a flow step's `step`, `checks`, `checks_failed`
//! and `failed_by_flow`, and a gRPC call's `grpc_status` (files written before a column
//! existed read as HTTP/1.1, without checks, without gRPC statuses).

use std::io::{BufRead, Write};

use crate::RecordError;
use crate::codec_json::{json_failed_checks, json_strings};
use crate::import::{
    ImportSource, ImportedFlow, ImportedResult, Rows, parse_protocol, parse_timestamp,
};
use crate::meta::{ErrorKind, RunTables, TargetInfo};
use crate::record::{GrpcStatus, Record};
use crate::source::InputFormat;
pub(crate) const VEGETA_COLUMNS: [&str; 12] = [
    "timestamp",
    "code",
    "latency",
    "bytes_out",
    "bytes_in",
    "error",
    "body",
    "attack",
    "seq",
    "method",
    "url",
    "headers",
];
pub(crate) const OUR_EXTRA_COLUMNS: [&str; 9] = [
    "send_lag",
    "ttfb",
    "error_kind",
    "protocol",
    "step",
    "checks",
    "checks_failed",
    "failed_by_flow",
    "grpc_status",
];

/// A column a row is read from: its name (for errors) and its index in the row, if the
/// input has it.
#[derive(Debug, Clone, Copy)]
struct Column {
    name: &'static str,
    index: Option<usize>,
}

/// Where each column `parse_row` reads is, found once from the header.
#[derive(Debug)]
struct Layout {
    /// Columns in the header (vegeta's 12 for headerless input).
    width: usize,
    timestamp: Column,
    code: Column,
    latency: Column,
    bytes_out: Column,
    bytes_in: Column,
    error: Column,
    attack: Column,
    seq: Column,
    method: Column,
    url: Column,
    send_lag: Column,
    ttfb: Column,
    error_kind: Column,
    protocol: Column,
    step: Column,
    checks: Column,
    checks_failed: Column,
    failed_by_flow: Column,
    grpc_status: Column,
}

impl Layout {
    /// `columns`: the column names in file order; a name's first occurrence counts.
    fn new(columns: &[String]) -> Layout {
        let column = |name: &'static str| Column {
            name,
            index: columns.iter().position(|c| c == name),
        };
        Layout {
            width: columns.len(),
            timestamp: column("timestamp"),
            code: column("code"),
            latency: column("latency"),
            bytes_out: column("bytes_out"),
            bytes_in: column("bytes_in"),
            error: column("error"),
            attack: column("attack"),
            seq: column("seq"),
            method: column("method"),
            url: column("url"),
            send_lag: column("send_lag"),
            ttfb: column("ttfb"),
            error_kind: column("error_kind"),
            protocol: column("protocol"),
            step: column("step"),
            checks: column("checks"),
            checks_failed: column("checks_failed"),
            failed_by_flow: column("failed_by_flow"),
            grpc_status: column("grpc_status"),
        }
    }
}

/// Reads CSV results into records.
pub(crate) type CsvSource<R> = ImportSource<CsvRows<R>>;

/// CSV rows, one result each.
pub(crate) struct CsvRows<R: BufRead> {
    reader: csv::Reader<R>,
    name: String,
    /// Vegeta's (headerless) or ours.
    format: InputFormat,
    layout: Layout,
    row: csv::StringRecord,
}

impl<R: BufRead> CsvSource<R> {
    pub(crate) fn open(input: R, name: &str, format: InputFormat) -> Result<Self, RecordError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(input);
        let mut columns: Vec<String> = VEGETA_COLUMNS.iter().map(|c| (*c).to_owned()).collect();
        if format == InputFormat::LoadlabCsv {
            let mut header = csv::StringRecord::new();
            reader
                .read_record(&mut header)
                .map_err(|err| csv_error(name, &err))?;
            columns = header.iter().map(str::to_owned).collect();
            if let Some(unknown) = columns.iter().find(|c| {
                !VEGETA_COLUMNS.contains(&c.as_str()) && !OUR_EXTRA_COLUMNS.contains(&c.as_str())
            }) {
                return Err(RecordError::Parse {
                    source_name: name.to_owned(),
                    line: 1,
                    field: unknown.clone(),
                    reason: "unknown column".to_owned(),
                });
            }
        }
        let rows = CsvRows {
            reader,
            name: name.to_owned(),
            format,
            layout: Layout::new(&columns),
            row: csv::StringRecord::new(),
        };
        Ok(ImportSource::new(rows, name, format))
    }
}

impl<R: BufRead> Rows for CsvRows<R> {
    fn next_result(&mut self) -> Result<Option<ImportedResult>, RecordError> {
        loop {
            let more = (self.reader.read_record(&mut self.row))
                .map_err(|err| csv_error(&self.name, &err))?;
            if !more {
                return Ok(None);
            }
            if !(self.row.len() == 1 && self.row[0].is_empty()) {
                return self.parse_row().map(Some);
            }
        }
    }

    fn row_error(&self, field: &str, reason: String) -> RecordError {
        RecordError::Parse {
            source_name: self.name.clone(),
            line: self.row.position().map_or(0, csv::Position::line),
            field: field.to_owned(),
            reason,
        }
    }
}

impl<R: BufRead> CsvRows<R> {
    fn parse_row(&self) -> Result<ImportedResult, RecordError> {
        let fail = |field: &str, reason: String| self.row_error(field, reason);
        if self.format == InputFormat::VegetaCsv && ![6, 11, 12].contains(&self.row.len()) {
            return Err(fail(
                "(row)",
                format!(
                    "vegeta CSV rows have 6, 11 or 12 columns, this one has {}",
                    self.row.len()
                ),
            ));
        }
        let layout = &self.layout;
        if self.format == InputFormat::LoadlabCsv && self.row.len() != layout.width {
            return Err(fail(
                "(row)",
                format!(
                    "expected {} columns like the header, found {}",
                    layout.width,
                    self.row.len()
                ),
            ));
        }
        let get =
            |column: Column| -> &str { column.index.and_then(|i| self.row.get(i)).unwrap_or("") };
        let number = |column: Column| -> Result<u64, RecordError> {
            match get(column) {
                "" => Ok(0),
                text => text.parse().map_err(|_| {
                    fail(
                        column.name,
                        format!("expected a whole number >= 0, found {text:?}"),
                    )
                }),
            }
        };
        let error_kind = match get(layout.error_kind) {
            "" => None,
            kind => Some(
                ErrorKind::from_name(kind)
                    .ok_or_else(|| fail("error_kind", format!("unknown kind {kind:?}")))?,
            ),
        };
        let timestamp = get(layout.timestamp);
        let result = ImportedResult {
            attack: get(layout.attack).to_owned(),
            seq: match get(layout.seq) {
                "" => None,
                _ => Some(number(layout.seq)?),
            },
            code: number(layout.code)?
                .try_into()
                .map_err(|_| fail("code", "out of range".to_owned()))?,
            sent_unix_ns: parse_timestamp(timestamp).map_err(|r| fail("timestamp", r))?,
            latency_ns: number(layout.latency)?,
            bytes_out: number(layout.bytes_out)?,
            bytes_in: number(layout.bytes_in)?,
            error: get(layout.error).to_owned(),
            method: get(layout.method).to_owned(),
            url: get(layout.url).to_owned(),
            send_lag_ns: number(layout.send_lag)?,
            ttfb_ns: number(layout.ttfb)?,
            error_kind,
            protocol: parse_protocol(get(layout.protocol)).map_err(|r| fail("protocol", r))?,
            grpc_status: match get(layout.grpc_status) {
                "" => None,
                text => Some(GrpcStatus::from_text(text).map_err(|r| fail("grpc_status", r))?),
            },
            flow: ImportedFlow {
                step: Some(get(layout.step))
                    .filter(|step| !step.is_empty())
                    .map(str::to_owned),
                checks: names_cell(get(layout.checks)).map_err(|r| fail("checks", r))?,
                checks_failed: names_cell(get(layout.checks_failed))
                    .map_err(|r| fail("checks_failed", r))?,
                failed_by_flow: match get(layout.failed_by_flow) {
                    "" | "false" => false,
                    "true" => true,
                    other => {
                        return Err(fail(
                            "failed_by_flow",
                            format!("expected true, false or nothing, found {other:?}"),
                        ));
                    }
                },
            },
        };
        Ok(result)
    }
}

/// A cell of check names: a JSON array of strings (names hold any character, commas
/// and quotes included), or empty for none.
fn names_cell(cell: &str) -> Result<Vec<String>, String> {
    if cell.is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(cell)
        .map_err(|err| format!("expected a JSON array of strings like [\"status 200\"]: {err}"))
}

fn csv_error(name: &str, err: &csv::Error) -> RecordError {
    let line = err.position().map_or(0, csv::Position::line);
    RecordError::Parse {
        source_name: name.to_owned(),
        line,
        field: "(row)".to_owned(),
        reason: err.to_string(),
    }
}

/// Writes records as loadlab CSV: a header row, then one row per record.
pub struct CsvEncoder<W: Write> {
    writer: csv::Writer<W>,
    /// The row's `checks` and `checks_failed` cells, reused from row to row.
    checks: Vec<u8>,
    checks_failed: Vec<u8>,
}

impl<W: Write> CsvEncoder<W> {
    /// Writes the header row (vegeta's 12 columns, then ours) to `out`.
    pub fn new(out: W) -> std::io::Result<Self> {
        let mut writer = csv::WriterBuilder::new().from_writer(out);
        writer.write_record(VEGETA_COLUMNS.iter().chain(OUR_EXTRA_COLUMNS.iter()))?;
        Ok(CsvEncoder {
            writer,
            checks: Vec::new(),
            checks_failed: Vec::new(),
        })
    }

    /// Writes one record as a row; `tables` resolves its attack, target and error ids.
    pub fn write(&mut self, record: &Record, tables: &RunTables) -> std::io::Result<()> {
        let (attack, target, error) = tables.names_of(record);
        let mut numbers = itoa_buffers();
        let [sent, status, latency, bytes_out, bytes_in, seq, lag, ttfb] = &mut numbers;
        fill_check_cells(record, target, &mut self.checks, &mut self.checks_failed);
        let failed_by_flow = record.checks_failed & Record::FAILED_BY_FLOW != 0;
        let grpc_status = record
            .grpc_status
            .map(|s| s.to_string())
            .unwrap_or_default();
        self.writer.write_record([
            sent.format(record.sent_unix_ns()).as_bytes(),
            status.format(record.status).as_bytes(),
            latency.format(record.latency_ns).as_bytes(),
            bytes_out.format(record.bytes_out).as_bytes(),
            bytes_in.format(record.bytes_in).as_bytes(),
            error.map_or("", |e| e.text.as_str()).as_bytes(),
            b"",
            attack.as_bytes(),
            seq.format(record.seq).as_bytes(),
            target.map_or("", |t| t.method.as_str()).as_bytes(),
            target.map_or("", |t| t.url.as_str()).as_bytes(),
            b"",
            lag.format(record.send_lag_ns).as_bytes(),
            ttfb.format(record.ttfb_ns).as_bytes(),
            error.map_or("", |e| e.kind.name()).as_bytes(),
            // Unlike the JSON key, a column is in every row: HTTP/1.1 rows say so too.
            record.protocol.name().as_bytes(),
            target
                .and_then(|t| t.step.as_deref())
                .unwrap_or("")
                .as_bytes(),
            &self.checks,
            &self.checks_failed,
            if failed_by_flow { b"true" } else { b"" },
            grpc_status.as_bytes(),
        ])?;
        Ok(())
    }

    /// Flushes and returns the output.
    pub fn finish(self) -> std::io::Result<W> {
        self.writer
            .into_inner()
            .map_err(|err| std::io::Error::other(err.to_string()))
    }
}

/// The `checks` and `checks_failed` cells: JSON arrays of names, as the JSON export's
/// keys, or both empty for a plain target.
fn fill_check_cells(
    record: &Record,
    target: Option<&TargetInfo>,
    checks: &mut Vec<u8>,
    failed: &mut Vec<u8>,
) {
    checks.clear();
    failed.clear();
    let names = target.map_or(&[][..], |t| &t.checks[..]);
    if names.is_empty() && record.checks_failed & !Record::FAILED_BY_FLOW == 0 {
        return;
    }
    json_strings(checks, names.iter().map(String::as_str));
    json_failed_checks(failed, record, names);
}

fn itoa_buffers() -> [itoa::Buffer; 8] {
    std::array::from_fn(|_| itoa::Buffer::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Protocol;

    fn read_all(text: &str) -> Result<(Vec<Record>, RunTables), RecordError> {
        crate::input::read_text(text, "in.csv")
    }

    #[test]
    fn imports_every_vegeta_csv_generation() {
        let rows: &[&str] = &[
            "1589017970528381465,200,2315900,0,12,\"\"",
            "1589017970528381465,200,2315900,0,12,,SGk=,,0,GET,http://localhost:8080/",
            "1589017970528381465,200,2315900,0,12,,SGk=,,0,GET,http://localhost:8080/,",
        ];
        for row in rows {
            let (records, _) = read_all(&format!("{row}\n")).unwrap();
            assert_eq!(records.len(), 1, "{row}");
            assert_eq!(
                (
                    records[0].intended_unix_ns,
                    records[0].latency_ns,
                    records[0].bytes_in
                ),
                (1_589_017_970_528_381_465, 2_315_900, 12)
            );
        }
    }

    #[test]
    fn names_the_line_and_column_of_bad_rows() {
        let good = "1589017970528381465,200,2315900,0,12,,,,0,GET,http://x/,";
        let rows: &[(&str, &str)] = &[
            (
                "1,2,3",
                "in.csv:2: field \"(row)\": vegeta CSV rows have 6, 11 or 12 columns, this one has 3",
            ),
            (
                "1589017970528381465,abc,1,0,0,",
                "field \"code\": expected a whole number",
            ),
            ("1589017970528381465,200,-1,0,0,", "field \"latency\""),
            ("later,200,1,0,0,", "field \"timestamp\""),
        ];
        for (row, want) in rows {
            let err = read_all(&format!("{good}\n{row}\n"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{row}: {err}");
        }
        let err = read_all("timestamp,code,bogus\n").unwrap_err().to_string();
        assert!(err.contains("field \"bogus\": unknown column"), "{err}");
        let err = read_all(
            "timestamp,latency,protocol\n1589017970528381465,1,h2\n1589017970528381465,1,spdy\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("in.csv:3: field \"protocol\": unknown protocol \"spdy\""),
            "{err}"
        );
    }

    #[test]
    fn our_csv_reads_columns_by_header_name() {
        // The sniffer wants `timestamp` first; the rest come in any order, some absent.
        let text = "timestamp,error_kind,latency,code,seq,url,method,error\n\
                    1589017970528381465,timeout,7,0,4,http://x/,GET,deadline exceeded\n";
        let (records, tables) = read_all(text).unwrap();
        assert_eq!(records.len(), 1);
        let record = records[0];
        assert_eq!(
            (
                record.intended_unix_ns,
                record.latency_ns,
                record.seq,
                record.status
            ),
            (1_589_017_970_528_381_465, 7, 4, 0)
        );
        assert_eq!(
            (record.bytes_in, record.send_lag_ns, record.ttfb_ns),
            (0, 0, 0)
        );
        assert_eq!(tables.targets[0].url, "http://x/");
        let error = tables.error(record.error).unwrap();
        assert_eq!(
            (error.kind, error.text.as_str()),
            (ErrorKind::Timeout, "deadline exceeded")
        );
        let err = read_all("timestamp,latency\n1589017970528381465,-1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("in.csv:2: field \"latency\""), "{err}");
    }

    #[test]
    fn our_csv_round_trips_with_awkward_text() {
        let (records, mut tables) = read_all("1589017970528381465,500,2315900,7,12,\"500 Internal, \"\"Server\"\" Error\",,a,3,POST,http://x/?a=1,\n").unwrap();
        tables.attacks[0].name = "with,comma".to_owned();
        let mut record = records[0];
        record.send_lag_ns = 5;
        record.ttfb_ns = 6;
        let mut encoder = CsvEncoder::new(Vec::new()).unwrap();
        encoder.write(&record, &tables).unwrap();
        let text = String::from_utf8(encoder.finish().unwrap()).unwrap();
        let (again, again_tables) = read_all(&text).unwrap();
        assert_eq!(again[0], record);
        assert_eq!(again_tables.attacks[0].name, "with,comma");
        assert_eq!(again_tables.errors, tables.errors);
    }

    /// The flow columns of each record's row, and that it reads back as written.
    #[test]
    fn our_csv_carries_flow_checks_by_name() {
        let (records, mut tables) =
            read_all("1589017970528381465,200,5,0,12,,,,0,GET,http://x/,\n").unwrap();
        tables.targets.push(TargetInfo {
            method: "POST".to_owned(),
            url: "http://x/login".to_owned(),
            step: Some("log, in".to_owned()),
            checks: vec!["status 200".to_owned(), "body contains \"a,b\"".to_owned()],
        });
        const FLOW: u32 = Record::FAILED_BY_FLOW;
        // (target, checks_failed, the row's last four cells as written)
        let rows: &[(u32, u32, &str)] = &[
            (0, 0, ",h2,,,,"),
            (0, FLOW, ",h2,,,,true"),
            (
                1,
                0,
                ",h2,\"log, in\",\"[\"\"status 200\"\",\"\"body contains \\\"\"a,b\\\"\"\"\"]\",[],",
            ),
            (
                1,
                0b10 | FLOW,
                ",\"[\"\"body contains \\\"\"a,b\\\"\"\"\"]\",true",
            ),
            (0, 1 << 4, ",h2,,[],\"[\"\"#4\"\"]\","),
        ];
        for &(target, checks_failed, end) in rows {
            let record = Record {
                target,
                checks_failed,
                protocol: Protocol::Http2,
                ..records[0]
            };
            let mut encoder = CsvEncoder::new(Vec::new()).unwrap();
            encoder.write(&record, &tables).unwrap();
            let text = String::from_utf8(encoder.finish().unwrap()).unwrap();
            // Then an empty grpc_status.
            let end = format!("{end},");
            assert!(
                text.trim_end().ends_with(&end),
                "{checks_failed:#x}: {text}"
            );
            let (again, again_tables) = read_all(&text).unwrap();
            assert_eq!(again[0].checks_failed, checks_failed, "{text}");
            assert_eq!(
                again_tables.targets[again[0].target as usize], tables.targets[target as usize],
                "{text}"
            );
        }
    }

    #[test]
    fn bad_flow_cells_name_their_column() {
        let header = "timestamp,latency,checks,checks_failed,failed_by_flow\n";
        let rows: &[(&str, &str)] = &[
            (
                "1589017970528381465,1,status 200,,",
                "in.csv:2: field \"checks\": expected a JSON array of strings",
            ),
            (
                "1589017970528381465,1,\"[\"\"a\"\"]\",\"[\"\"b\"\"]\",",
                "in.csv:2: field \"checks_failed\": \"b\" is not one of the line's checks",
            ),
            (
                "1589017970528381465,1,,,yes",
                "in.csv:2: field \"failed_by_flow\": expected true, false or nothing, found \"yes\"",
            ),
        ];
        for (row, want) in rows {
            let err = read_all(&format!("{header}{row}\n"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{row}: {err}");
        }
        // Our CSV from before the columns: no checks.
        let (old, tables) = read_all("timestamp,latency\n1589017970528381465,1\n").unwrap();
        assert_eq!(old[0].checks_failed, 0);
        assert_eq!(
            (&tables.targets[0].step, tables.targets[0].checks.len()),
            (&None, 0)
        );
    }

    #[test]
    fn our_csv_carries_the_protocol() {
        let (records, tables) =
            read_all("1589017970528381465,200,5,0,12,,,,0,GET,http://x/,\n").unwrap();
        assert_eq!(
            records[0].protocol,
            Protocol::Http1,
            "vegeta's rows are HTTP/1.1"
        );
        let mut encoder = CsvEncoder::new(Vec::new()).unwrap();
        let written = [
            records[0],
            Record {
                protocol: Protocol::Http2,
                seq: 1,
                ..records[0]
            },
        ];
        for record in &written {
            encoder.write(record, &tables).unwrap();
        }
        let text = String::from_utf8(encoder.finish().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].ends_with(
                ",error_kind,protocol,step,checks,checks_failed,failed_by_flow,grpc_status"
            ),
            "{text}"
        );
        assert!(
            lines[1].ends_with(",http/1.1,,,,,") && lines[2].ends_with(",h2,,,,,"),
            "{text}"
        );
        let (again, _) = read_all(&text).unwrap();
        assert_eq!(again, written);
        // Our CSV from before the column: every row HTTP/1.1.
        let (old, _) = read_all("timestamp,latency\n1589017970528381465,1\n").unwrap();
        assert_eq!(old[0].protocol, Protocol::Http1);
    }

    #[test]
    fn our_csv_carries_the_grpc_status_by_name() {
        let (records, tables) =
            read_all("1589017970528381465,200,5,0,12,,,,0,POST,http://x/s/M,\n").unwrap();
        assert_eq!(records[0].grpc_status, None);
        let mut encoder = CsvEncoder::new(Vec::new()).unwrap();
        let written: Vec<Record> = [0, 14, 200]
            .into_iter()
            .map(|code| Record {
                grpc_status: Some(GrpcStatus(code)),
                protocol: Protocol::Http2,
                ..records[0]
            })
            .collect();
        for record in &written {
            encoder.write(record, &tables).unwrap();
        }
        let text = String::from_utf8(encoder.finish().unwrap()).unwrap();
        let ends: Vec<&str> = text
            .lines()
            .skip(1)
            .map(|l| l.rsplit(',').next().unwrap())
            .collect();
        assert_eq!(ends, ["OK", "UNAVAILABLE", "code 200"], "{text}");
        let (again, _) = read_all(&text).unwrap();
        assert_eq!(again, written);
        let header = text.lines().next().unwrap();
        let rows = [
            ("NOPE", "field \"grpc_status\": \"NOPE\" is no gRPC status"),
            ("300", "field \"grpc_status\": \"300\" is no gRPC status"),
        ];
        for (cell, want) in rows {
            let row = text
                .lines()
                .nth(1)
                .unwrap()
                .replace(",OK", &format!(",{cell}"));
            let err = read_all(&format!("{header}\n{row}\n"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{cell}: {err}");
        }
    }
}
