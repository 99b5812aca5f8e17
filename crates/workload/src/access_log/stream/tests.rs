use std::io::Write as _;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::*;
use crate::HarFormat;

/// The tests' format: `UNIX_MS METHOD TARGET STATUS`, `#` comments skipped.
struct TestFormat {
    resolution_ns: u64,
}

impl LineParser for TestFormat {
    fn parse_line(&self, line: &str) -> Result<Option<LoggedRequest>, String> {
        if line.starts_with('#') || line.is_empty() {
            return Ok(None);
        }
        let fields: Vec<&str> = line.split(' ').collect();
        let [time_ms, method, target, status] = fields[..] else {
            return Err(format!("want 4 fields, found {}", fields.len()));
        };
        let time_ms: u64 = time_ms
            .parse()
            .map_err(|_| format!("{time_ms:?} is not a time"))?;
        Ok(Some(LoggedRequest {
            time_unix_ns: time_ms * 1_000_000,
            method: method.to_owned(),
            target: target.to_owned(),
            host: None,
            status: status.parse().ok(),
            bytes: None,
            user_agent: None,
            latency_ns: None,
            line: 0,
            put_back_ns: 0,
        }))
    }

    fn resolution_ns(&self) -> u64 {
        self.resolution_ns
    }

    fn name(&self) -> String {
        "test".to_owned()
    }
}

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// Files written for one test, removed with it.
struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn write_gz(&self, name: &str, text: &str) -> PathBuf {
        self.write(name, &gzip(text))
    }
}

fn gzip(text: &str) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(text.as_bytes()).unwrap();
    encoder.finish().unwrap()
}

/// Lines `TIME_MS GET /pathN 200` for the times given.
fn log(times_ms: &[u64]) -> String {
    times_ms
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{t} GET /p{i} 200\n"))
        .collect()
}

fn open_with(files: &[PathBuf], options: LogOptions) -> Result<LogStream, WorkloadError> {
    LogStream::open(files, options, &mut |_, _| {
        Ok(Box::new(TestFormat {
            resolution_ns: 1_000 * MS,
        }))
    })
}

fn no_spread() -> LogOptions {
    LogOptions {
        spread: false,
        ..LogOptions::default()
    }
}

/// All requests, or the first error's message.
fn read_all(stream: LogStream) -> Result<Vec<LoggedRequest>, String> {
    stream
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| err.to_string())
}

fn times_ms(requests: &[LoggedRequest]) -> Vec<u64> {
    requests.iter().map(|r| r.time_unix_ns / MS).collect()
}

fn name(path: &Path) -> String {
    path.display().to_string()
}

/// Times in file order, window, times out, reordered, largest displacement (ms).
type ReorderRow<'a> = (&'a [u64], u64, &'a [u64], u64, u64);

#[test]
fn reorders_within_the_window() {
    // (times in file order, window, times out, reordered, largest displacement)
    let rows: &[ReorderRow<'_>] = &[
        (&[1000, 2000, 3000], 10 * S, &[1000, 2000, 3000], 0, 0),
        (
            &[1000, 3000, 2000, 5000],
            10 * S,
            &[1000, 2000, 3000, 5000],
            1,
            1000,
        ),
        (
            &[9000, 1000, 5000, 1000],
            10 * S,
            &[1000, 1000, 5000, 9000],
            3,
            8000,
        ),
        (
            &[1000, 12_000, 3000],
            10 * S,
            &[1000, 3000, 12_000],
            1,
            9000,
        ),
        (&[2000, 2000, 1000], S, &[1000, 2000, 2000], 1, 1000),
        (&[1000, 1000, 1000], 0, &[1000, 1000, 1000], 0, 0),
    ];
    for (i, (input, window_ns, want, reordered, max_ms)) in rows.iter().enumerate() {
        let dir = Dir::new();
        let path = dir.write("a.log", log(input).as_bytes());
        let options = LogOptions {
            reorder_window_ns: *window_ns,
            spread: false,
        };
        let mut stream = open_with(&[path], options).unwrap();
        let requests: Vec<_> = stream.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(times_ms(&requests), *want, "row {i}");
        let stats = stream.stats();
        assert_eq!(stats.reordered, *reordered, "row {i}");
        assert_eq!(stats.max_reorder_ns, max_ms * MS, "row {i}");
        assert_eq!(stats.requests, input.len() as u64, "row {i}");
    }
}

#[test]
fn every_line_is_accounted_for_when_reading_stops_early() {
    // Stopped after 0 to 4 of the 5 requests, whatever was read ahead by then.
    let text = "# header\n1000 GET /a 200\n\n3000 GET /c 200\n2000 GET /b 200\nbad\n\
                20000 GET /d 200\n30000 GET /e 200\n# trailer\nbad too\n";
    for given in 0..5 {
        let dir = Dir::new();
        let path = dir.write("a.log", text.as_bytes());
        let mut stream = open_with(&[path], no_spread()).unwrap();
        let out: Vec<LoggedRequest> = stream.by_ref().take(given).map(Result::unwrap).collect();
        let left = stream.skip_rest().unwrap();
        let stats = stream.stats();
        assert_eq!(stats.lines, 10, "given {given}");
        assert!(left > 0, "given {given}");
        let accounted = out.len() as u64 + stats.bad_lines + stats.no_request + left;
        assert_eq!(accounted, stats.lines, "given {given}: {stats:?}");
        assert!(stream.next().is_none(), "given {given}: stopped");
    }
}

#[test]
fn a_request_put_back_says_how_far() {
    let dir = Dir::new();
    let path = dir.write("a.log", log(&[1000, 3000, 2000, 2500, 4000]).as_bytes());
    let requests = read_all(open_with(&[path], no_spread()).unwrap()).unwrap();
    let put_back: Vec<(u64, u64)> = requests
        .iter()
        .map(|r| (r.time_unix_ns / MS, r.put_back_ns / MS))
        .collect();
    assert_eq!(
        put_back,
        [(1000, 0), (2000, 1000), (2500, 500), (3000, 0), (4000, 0)]
    );
}

#[test]
fn keeps_line_numbers_and_ties_in_file_order() {
    let dir = Dir::new();
    let path = dir.write(
        "a.log",
        b"# comment\n2000 GET /b 200\n1000 GET /a 200\n2000 GET /c 200\n",
    );
    let requests = read_all(open_with(&[path], no_spread()).unwrap()).unwrap();
    let seen: Vec<(&str, u64)> = requests
        .iter()
        .map(|r| (r.target.as_str(), r.line))
        .collect();
    assert_eq!(seen, [("/a", 3), ("/b", 2), ("/c", 4)]);
}

#[test]
fn refuses_lines_beyond_the_window() {
    // (times, window, error)
    let rows: &[(&[u64], u64, &str)] = &[
        (
            &[0, 5000, 30_000, 4000],
            10 * S,
            ":4: timestamps go backwards by 26s (1970-01-01T00:00:04Z after \
             1970-01-01T00:00:30Z), beyond the 10s reorder window; raise -reorder-window",
        ),
        // In the log's first seconds, before any request has gone out of the window:
        // the same error, not a minute of idling (issue 41).
        (
            &[61_000, 0, 62_000],
            10 * S,
            ":2: timestamps go backwards by 1m1s (1970-01-01T00:00:00Z after \
             1970-01-01T00:01:01Z), beyond the 10s reorder window; raise -reorder-window",
        ),
        (
            &[0, 1000, 62_000, 1000],
            10 * S,
            ":4: timestamps go backwards by 1m1s (1970-01-01T00:00:01Z after \
             1970-01-01T00:01:02Z), beyond the 10s reorder window; raise -reorder-window",
        ),
        (
            &[1_795_514_442_000, 1_795_514_400_000],
            0,
            ":2: timestamps go backwards by 42s (2026-11-24T10:00:00Z after \
             2026-11-24T10:00:42Z), beyond the 0s reorder window; raise -reorder-window",
        ),
    ];
    for (input, window_ns, want) in rows {
        let dir = Dir::new();
        let path = dir.write("a.log", log(input).as_bytes());
        let options = LogOptions {
            reorder_window_ns: *window_ns,
            spread: false,
        };
        let err = read_all(open_with(std::slice::from_ref(&path), options).unwrap()).unwrap_err();
        assert_eq!(err, format!("{}{want}", name(&path)));
    }
}

#[test]
fn merges_files_by_time() {
    let dir = Dir::new();
    let a = dir.write("a.log", log(&[1000, 3000, 3000, 7000]).as_bytes());
    let b = dir.write("b.log", log(&[500, 2000, 3000, 8000, 9000]).as_bytes());
    let mut stream = open_with(&[a, b], no_spread()).unwrap();
    let requests: Vec<_> = stream.by_ref().collect::<Result<_, _>>().unwrap();
    let seen: Vec<(u64, &str)> = requests
        .iter()
        .map(|r| (r.time_unix_ns / MS, r.target.as_str()))
        .collect();
    // Ties go in the order the files were given.
    let want = [
        (500, "/p0"),
        (1000, "/p0"),
        (2000, "/p1"),
        (3000, "/p1"),
        (3000, "/p2"),
        (3000, "/p2"),
        (7000, "/p3"),
        (8000, "/p3"),
        (9000, "/p4"),
    ];
    assert_eq!(seen, want);
    assert_eq!(stream.stats().requests, 9);
    assert_eq!(stream.stats().lines, 9);
}

#[test]
fn spreads_a_timestamps_requests_over_its_interval() {
    // (times in ms, with a 1 s resolution, times out)
    let rows: &[(&[u64], &[u64])] = &[
        (
            &[10_000, 10_000, 10_000, 10_000, 11_000, 13_000, 13_000],
            &[10_000, 10_250, 10_500, 10_750, 11_000, 13_000, 13_500],
        ),
        // A timestamp off the grid: the spread stops short of it.
        (&[10_000, 10_000, 10_400], &[10_000, 10_200, 10_400]),
        (&[5000, 5000, 5000], &[5000, 5333, 5666]),
        (&[5000], &[5000]),
    ];
    for (input, want) in rows {
        let dir = Dir::new();
        let path = dir.write("a.log", log(input).as_bytes());
        let requests = read_all(open_with(&[path], LogOptions::default()).unwrap()).unwrap();
        assert_eq!(times_ms(&requests), *want, "{input:?}");
    }
    let dir = Dir::new();
    let path = dir.write("a.log", log(&[5000, 5000]).as_bytes());
    let requests = read_all(open_with(&[path], no_spread()).unwrap()).unwrap();
    assert_eq!(times_ms(&requests), [5000, 5000], "spread off");
}

#[test]
fn reads_gzip() {
    let dir = Dir::new();
    let text = log(&[1000, 2000, 3000]);
    let plain = dir.write_gz("a.log.gz", &text);
    // Two gzip members one after the other (`cat a.gz b.gz`) read as one.
    let mut members = gzip(&log(&[1000]));
    members.extend(gzip(&log(&[2000, 3000])));
    let concatenated = dir.write("b.log.gz", &members);
    // The magic decides, not the name.
    let named_plain = dir.write_gz("c.log", &text);
    for path in [plain, concatenated, named_plain] {
        let requests =
            read_all(open_with(std::slice::from_ref(&path), no_spread()).unwrap()).unwrap();
        assert_eq!(times_ms(&requests), [1000, 2000, 3000], "{}", name(&path));
    }
}

#[test]
fn refuses_a_truncated_gzip_naming_file_and_line() {
    let dir = Dir::new();
    let times: Vec<u64> = (0..20_000).collect();
    let whole = gzip(&log(&times));
    let path = dir.write("cut.log.gz", &whole[..whole.len() / 2]);
    let err = read_all(open_with(std::slice::from_ref(&path), no_spread()).unwrap()).unwrap_err();
    let prefix = format!("{}:", name(&path));
    let rest = err.strip_prefix(&prefix).unwrap_or_else(|| panic!("{err}"));
    let (line, reason) = rest.split_once(": ").unwrap();
    let line: u64 = line.parse().unwrap();
    assert!(line > 1000 && line < 20_000, "{err}");
    assert_eq!(reason, "the gzip data ends early (a truncated file?)");
    // Cut within the first lines: the error comes at open.
    let short = gzip(&log(&[1, 2, 3]));
    let path = dir.write("short.log.gz", &short[..short.len() - 4]);
    let err = open_with(std::slice::from_ref(&path), no_spread())
        .err()
        .unwrap()
        .to_string();
    assert!(err.starts_with(&format!("{}:", name(&path))), "{err}");
    assert!(
        err.ends_with("the gzip data ends early (a truncated file?)"),
        "{err}"
    );
}

#[test]
fn counts_bad_lines_and_quotes_the_first() {
    let dir = Dir::new();
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"1000 GET /a 200\n");
    bytes.extend_from_slice(b"1000 GET\n");
    bytes.extend_from_slice(b"soon GET /b 200\n");
    bytes.extend_from_slice(b"2000 GET /\xff 200\n");
    bytes.extend_from_slice(format!("3000 GET /{} 200\n", "x".repeat(2 << 20)).as_bytes());
    bytes.extend_from_slice(b"\xef\xbb\xbf4000 GET /bom-not-first 200\r\n");
    bytes.extend_from_slice(b"a b\n");
    bytes.extend_from_slice(b"5000 GET /c 200\r\n");
    let path = dir.write("f.log", &bytes);
    let mut stream = open_with(std::slice::from_ref(&path), no_spread()).unwrap();
    let requests: Vec<_> = stream.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].target, "/c", "the \\r is taken off");
    let stats = stream.stats();
    let f = name(&path);
    let want = LogStats {
        lines: 8,
        requests: 2,
        bad_lines: 6,
        no_request: 0,
        bad_examples: vec![
            format!("{f}:2: want 4 fields, found 2"),
            format!("{f}:3: \"soon\" is not a time"),
            format!("{f}:4: not UTF-8 text (a bad byte at column 11)"),
            format!("{f}:5: longer than 1 MiB"),
            format!("{f}:6: \"\\u{{feff}}4000\" is not a time"),
        ],
        reordered: 0,
        max_reorder_ns: 0,
    };
    assert_eq!(stats, want);
}

#[test]
fn stops_when_most_lines_are_bad() {
    let dir = Dir::new();
    let mut text = log(&[1000; 40]);
    for _ in 0..100 {
        text.push_str("garbage\n");
    }
    let path = dir.write("bad.log", text.as_bytes());
    let mut stream = open_with(std::slice::from_ref(&path), no_spread()).unwrap();
    let results: Vec<_> = stream.by_ref().collect();
    let err = results.last().unwrap().as_ref().unwrap_err().to_string();
    let f = name(&path);
    assert_eq!(
        err,
        format!(
            "{f}: 60 of the first 100 lines could not be read as test (is it the log's \
             format?); \
             the first: {f}:41: want 4 fields, found 1; {f}:42: want 4 fields, found 1; \
             {f}:43: want 4 fields, found 1; {f}:44: want 4 fields, found 1; \
             {f}:45: want 4 fields, found 1"
        )
    );
    assert!(results.len() <= 41, "the stream ends at the error");
    // Half bad is not most: the run goes on.
    let mut text = log(&[1000; 60]);
    text.push_str(&"garbage\n".repeat(60));
    let path = dir.write("half.log", text.as_bytes());
    let requests = read_all(open_with(&[path], no_spread()).unwrap()).unwrap();
    assert_eq!(requests.len(), 60);
}

#[test]
fn refuses_a_file_without_requests() {
    let rows: &[(&str, &str)] = &[
        ("# only\n# comments\n", ": no requests in its 2 lines"),
        (
            "# head\nnope\n",
            ": no requests in its 2 lines (1 could not be read as test, the first: F:2: want \
             4 fields, found 1)",
        ),
    ];
    for (text, want) in rows {
        let dir = Dir::new();
        let path = dir.write("x.log", text.as_bytes());
        let err =
            read_all(open_with(std::slice::from_ref(&path), no_spread()).unwrap()).unwrap_err();
        let f = name(&path);
        assert_eq!(err, format!("{f}{}", want.replace('F', &f)));
    }
    // An empty file is no error: it has no lines, as a quiet host's log.
    let dir = Dir::new();
    let empty = dir.write("empty.log", b"");
    let other = dir.write("a.log", log(&[1000]).as_bytes());
    let requests = read_all(open_with(&[empty, other], no_spread()).unwrap()).unwrap();
    assert_eq!(requests.len(), 1);
}

#[test]
fn asks_the_caller_for_each_files_format() {
    let dir = Dir::new();
    let a = dir.write("a.log", b"# first\n1000 GET /a 200\n");
    let b = dir.write_gz("b.log.gz", "line one\r\nline two");
    let mut seen = Vec::new();
    let result = LogStream::open(&[a.clone(), b.clone()], no_spread(), &mut |file, lines| {
        seen.push((
            file.to_owned(),
            lines.iter().map(|l| (*l).to_owned()).collect::<Vec<_>>(),
        ));
        if file.ends_with(".gz") {
            return Err(WorkloadError::Log {
                source_name: file.to_owned(),
                reason: "format could not be guessed".to_owned(),
            });
        }
        Ok(Box::new(TestFormat { resolution_ns: MS }))
    });
    let err = result.err().unwrap().to_string();
    assert_eq!(err, format!("{}: format could not be guessed", name(&b)));
    let want = vec![
        (
            name(&a),
            vec!["# first".to_owned(), "1000 GET /a 200".to_owned()],
        ),
        (name(&b), vec!["line one".to_owned(), "line two".to_owned()]),
    ];
    assert_eq!(seen, want);
}

#[test]
fn refuses_bad_file_lists() {
    let dir = Dir::new();
    let missing = dir.0.path().join("missing.log");
    let rows: Vec<(Vec<PathBuf>, String)> = vec![
        (vec![], "no access log to read".to_owned()),
        (
            vec![PathBuf::from("-"), PathBuf::from("-")],
            "stdin (-) is given more than once as an access log".to_owned(),
        ),
        (vec![missing.clone()], format!("reading {}", name(&missing))),
    ];
    for (files, want) in rows {
        let err = open_with(&files, no_spread()).err().unwrap().to_string();
        assert_eq!(err, want);
    }
}

#[test]
fn reads_har_files_whole() {
    let dir = Dir::new();
    let entry = |started: &str, url: &str| {
        format!(
            r#"{{"startedDateTime": "{started}", "time": 5,
                "request": {{"method": "GET", "url": "{url}"}},
                "response": {{"status": 200}}}}"#
        )
    };
    let har = format!(
        r#"{{"log": {{"entries": [{}, {}]}}}}"#,
        entry("1970-01-01T00:00:02Z", "http://a/late"),
        entry("1970-01-01T00:00:01Z", "http://a/early")
    );
    let har_path = dir.write("s.har", har.as_bytes());
    let log_path = dir.write("a.log", log(&[1500]).as_bytes());
    let mut stream = LogStream::open(&[har_path, log_path], no_spread(), &mut |file, _| {
        Ok(if file.ends_with(".har") {
            Box::new(HarFormat) as Box<dyn LineParser>
        } else {
            Box::new(TestFormat { resolution_ns: MS })
        })
    })
    .unwrap();
    let requests: Vec<_> = stream.by_ref().collect::<Result<_, _>>().unwrap();
    let targets: Vec<&str> = requests.iter().map(|r| r.target.as_str()).collect();
    assert_eq!(targets, ["http://a/early", "/p0", "http://a/late"]);
    assert_eq!(stream.stats().requests, 3);
    // Only a browser's own URLs: nothing to replay.
    let har = format!(
        r#"{{"log": {{"entries": [{}]}}}}"#,
        entry("1970-01-01T00:00:02Z", "data:text/plain,hi")
    );
    let path = dir.write("data.har", har.as_bytes());
    let err = LogStream::open(std::slice::from_ref(&path), no_spread(), &mut |_, _| {
        Ok(Box::new(HarFormat))
    })
    .err()
    .unwrap();
    let want = format!("{}: no HTTP requests among its entries", name(&path));
    assert_eq!(err.to_string(), want);
}

#[test]
fn log_stream_is_send() {
    // A compile-time check: the engine may read the log on its own thread.
    fn send<T: Send>() {}
    send::<LogStream>();
}

#[test]
fn streams_a_large_file_with_bounded_buffers() {
    const LINES: u64 = 200_000;
    let dir = Dir::new();
    // 1000 requests a second of log time, every 7th line written 3 s late (as a
    // slow request's is): the window holds about 10 s of requests, never the file.
    let mut text = String::with_capacity(LINES as usize * 24);
    for i in 0..LINES {
        let time_ms = if i % 7 == 0 && i > 3000 { i - 3000 } else { i };
        text.push_str(&format!("{time_ms} GET /p{} 200\n", i % 100));
    }
    let path = dir.write_gz("big.log.gz", &text);
    drop(text);
    let mut stream = open_with(&[path], LogOptions::default()).unwrap();
    let (mut count, mut last_ns, mut max_bytes, mut max_held) = (0_u64, 0, 0, 0);
    while let Some(request) = stream.next() {
        let request = request.unwrap();
        assert!(request.time_unix_ns >= last_ns, "in order at {count}");
        last_ns = request.time_unix_ns;
        count += 1;
        let (bytes, held) = stream.buffered();
        max_bytes = max_bytes.max(bytes);
        max_held = max_held.max(held);
    }
    assert_eq!(count, LINES);
    assert!(max_bytes <= 1024, "line buffer grew to {max_bytes} bytes");
    // One window (10 s x 1000/s) plus one second for the spread.
    assert!(max_held <= 12_000, "held {max_held} requests");
    assert!(max_held >= 9_000, "held {max_held}: the window holds 10 s");
    let stats = stream.stats();
    assert_eq!(stats.reordered, (LINES - 3001) / 7 + 1);
    assert_eq!(stats.max_reorder_ns, 2999 * MS);
}
