//! [`LogSampler`]: the system under test's own words on the run's timeline. It follows a
//! log file (`log=PATH`, from its end, as `tail -F`: a file rotated or truncated under
//! it is followed again from its start) or a command's output (`logcmd=COMMAND`, e.g.
//! `journalctl -f -u app`, `kubectl logs -f POD`, `docker logs -f NAME`), and counts
//! lines per second by pattern: the usual suspects ([`DEFAULT_PATTERNS`]: too many open
//! files, out of memory, connection refused, timeouts, 5xx statuses, panics) and a
//! user's `;pattern=NAME=REGEX`. The first few distinct lines of each pattern are kept
//! as examples (`log.example{pattern,line}`, value 1 when first seen), so a report can
//! quote `accept4() failed (24: Too many open files)` with its time.
//!
//! Lines are bytes: binary garbage is counted, never fatal. A line longer than twice
//! [`MAX_LINE_BYTES`] is matched on its first and last [`MAX_LINE_BYTES`] (a 10 MB
//! line ending in "too many open files" counts), never held whole from a stream; a
//! tick reads at most [`MAX_READ_BYTES`] of a file (the rest waits for the next tick),
//! so a flood cannot stall the monitor. A named pipe (FIFO) is opened once, at the
//! start, without waiting for a writer, and read as it fills: a writer can open it
//! whenever it likes.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use record::ResourceSeries as S;
use record::SamplerInfo;
use regex::bytes::Regex;

use crate::MonitorError;
use crate::hub::{Reading, SeriesDef};
use crate::sampler::{Sampler, Tick};
use crate::spec::{LogSource, LogSpec};

/// Patterns every log sampler counts: (name, regex).
pub const DEFAULT_PATTERNS: &[(&str, &str)] = &[
    ("too_many_open_files", r"(?i)too many open files"),
    (
        "out_of_memory",
        r"(?i)out of memory|oom-kill|cannot allocate memory",
    ),
    ("connection_refused", r"(?i)connection refused"),
    ("timeout", r"(?i)timed? ?out\b"),
    ("5xx", r#"(?:^|[\s"])5\d\d(?:[\s"]|$)"#),
    ("panic", r"(?i)\bpanic|exception|traceback|\bfatal\b"),
];
/// A longer line is matched on its first and last this many bytes (a stack trace on
/// one line, binary garbage without newlines).
pub const MAX_LINE_BYTES: usize = 8 * 1024;
/// A file is read at most this much per tick.
pub const MAX_READ_BYTES: u64 = 64 * 1024 * 1024;
/// Distinct example lines kept per pattern.
const EXAMPLES_PER_PATTERN: usize = 3;
/// An example line is quoted up to this many characters.
const EXAMPLE_CHARS: usize = 200;

/// Lines counted since the last tick, and examples not yet reported.
#[derive(Debug, Default)]
struct Counts {
    all: u64,
    by_pattern: Vec<u64>,
    new_examples: Vec<(usize, String)>,
    examples_seen: Vec<Vec<String>>,
    /// Why the source stopped (a command that exited), once it has.
    ended: Option<String>,
}

/// Counts lines by pattern; shared by the tick and a command's reader threads.
struct Matcher {
    patterns: Vec<(String, Regex)>,
    counts: Mutex<Counts>,
}

impl Matcher {
    fn count(&self, line: &[u8]) {
        // A long line's middle is left out: its start and its end are what a log
        // line says (a prefix and a message), and a pattern still finds them.
        let kept;
        let line = if line.len() > 2 * MAX_LINE_BYTES {
            kept = [
                &line[..MAX_LINE_BYTES],
                &line[line.len() - MAX_LINE_BYTES..],
            ]
            .concat();
            &kept[..]
        } else {
            line
        };
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.all += 1;
        for (index, (_, regex)) in self.patterns.iter().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            counts.by_pattern[index] += 1;
            let text: String = String::from_utf8_lossy(line)
                .trim_end()
                .chars()
                .take(EXAMPLE_CHARS)
                .collect();
            let seen = &mut counts.examples_seen[index];
            if seen.len() < EXAMPLES_PER_PATTERN && !seen.contains(&text) {
                seen.push(text.clone());
                counts.new_examples.push((index, text));
            }
        }
    }

    fn take(&self) -> Counts {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        Counts {
            all: std::mem::take(&mut counts.all),
            by_pattern: counts.by_pattern.iter_mut().map(std::mem::take).collect(),
            new_examples: std::mem::take(&mut counts.new_examples),
            examples_seen: Vec::new(),
            ended: counts.ended.clone(),
        }
    }
}

/// Where lines come from.
enum Follow {
    File(FileFollower),
    Command(Child),
    /// A command that could not start: a gap every tick says why.
    Nothing,
}

pub(crate) struct LogSampler {
    info: SamplerInfo,
    matcher: Arc<Matcher>,
    follow: Follow,
    last_at: Option<Instant>,
}

impl LogSampler {
    /// Starts following (a command is spawned here; a file is opened at its end).
    pub(crate) fn new(info: SamplerInfo, spec: &LogSpec) -> LogSampler {
        let mut patterns: Vec<(String, Regex)> = DEFAULT_PATTERNS
            .iter()
            .filter_map(|(name, re)| Some(((*name).to_owned(), Regex::new(re).ok()?)))
            .collect();
        // The spec's patterns were checked when it was parsed.
        patterns.extend(
            spec.patterns
                .iter()
                .filter_map(|(name, re)| Some((name.clone(), Regex::new(re).ok()?))),
        );
        let counts = Counts {
            by_pattern: vec![0; patterns.len()],
            examples_seen: vec![Vec::new(); patterns.len()],
            ..Counts::default()
        };
        let matcher = Arc::new(Matcher {
            patterns,
            counts: Mutex::new(counts),
        });
        let follow = match &spec.source {
            LogSource::File(path) => Follow::File(FileFollower::at_end(path)),
            LogSource::Command(command) => match spawn(command, &matcher) {
                Ok(child) => Follow::Command(child),
                Err(reason) => {
                    matcher
                        .counts
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .ended = Some(reason);
                    Follow::Nothing
                }
            },
        };
        LogSampler {
            info,
            matcher,
            follow,
            last_at: None,
        }
    }

    fn write(&mut self, counts: &Counts, at: Instant, reading: &mut Reading) {
        let elapsed = self
            .last_at
            .map(|then| at.saturating_duration_since(then).as_secs_f64());
        self.last_at = Some(at);
        let Some(seconds) = elapsed.filter(|s| *s > 0.0) else {
            return; // the first tick only starts the clock
        };
        let rate = |pattern: &str| {
            SeriesDef::rate(S::LogLinesPerSec.name(), "1/s").label("pattern", pattern)
        };
        reading.value(rate("all"), counts.all as f64 / seconds);
        for ((name, _), count) in self.matcher.patterns.iter().zip(&counts.by_pattern) {
            reading.value(rate(name), *count as f64 / seconds);
        }
        for (index, line) in &counts.new_examples {
            let def = SeriesDef::gauge(S::LogExample.name(), "count")
                .label("pattern", &self.matcher.patterns[*index].0)
                .label("line", line);
            reading.value(def, 1.0);
        }
    }
}

impl Drop for LogSampler {
    fn drop(&mut self) {
        if let Follow::Command(child) = &mut self.follow {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Sampler for LogSampler {
    fn thread_name(&self) -> String {
        "loadlab-mon-log".to_owned()
    }

    fn sample(&mut self, tick: &Tick, out: &mut Vec<Reading>) {
        let mut reading = Reading::new(&self.info, tick.at_unix_ns);
        match &mut self.follow {
            Follow::File(file) => {
                if let Err(reason) = file.read_new(&self.matcher) {
                    reading.gap(None, reason);
                }
            }
            Follow::Command(child) => {
                if let Ok(Some(status)) = child.try_wait() {
                    let mut counts = self
                        .matcher
                        .counts
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    counts
                        .ended
                        .get_or_insert_with(|| format!("the command ended ({status})"));
                }
            }
            Follow::Nothing => {}
        }
        let counts = self.matcher.take();
        self.write(&counts, tick.now, &mut reading);
        if let Some(reason) = counts.ended {
            reading.gap(None, reason);
        }
        out.push(reading);
    }
}

/// Refuses at the start a `log=` path no log can be followed at (a directory); a
/// file that does not exist yet is followed once it does.
pub(crate) fn check_source(source: &LogSource) -> Result<(), MonitorError> {
    let LogSource::File(path) = source else {
        return Ok(());
    };
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(MonitorError::Spec {
            spec: format!("log={path}"),
            reason: format!("{path} is a directory: give a log file in it (or logcmd=COMMAND)"),
        });
    }
    Ok(())
}

/// `sh -c COMMAND` with its stdout and stderr read line by line on two threads.
fn spawn(command: &str, matcher: &Arc<Matcher>) -> Result<Child, String> {
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot run the log command: {err}"))?;
    let streams: [Option<Box<dyn Read + Send>>; 2] = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ];
    for stream in streams.into_iter().flatten() {
        let matcher = Arc::clone(matcher);
        let spawned = std::thread::Builder::new()
            .name("loadlab-mon-logcmd".to_owned())
            .spawn(move || read_lines(stream, &matcher));
        if let Err(err) = spawned {
            let _ = child.kill();
            return Err(format!("cannot start a reader thread: {err}"));
        }
    }
    Ok(child)
}

/// Counts each line until the stream ends.
fn read_lines(mut reader: impl Read, matcher: &Matcher) {
    let mut lines = Lines::default();
    let mut buffer = vec![0; 64 * 1024];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => lines.push(&buffer[..read], matcher),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    lines.finish(matcher);
}

/// A stream's lines as its bytes arrive, in pieces: of each line its first
/// [`MAX_LINE_BYTES`] and its last are kept, so memory stays bounded whatever the
/// line's length.
#[derive(Debug, Default)]
struct Lines {
    head: Vec<u8>,
    /// What came after the head, its last [`MAX_LINE_BYTES`] at least.
    tail: Vec<u8>,
}

impl Lines {
    /// Takes bytes in, counting each line they complete.
    fn push(&mut self, mut bytes: &[u8], matcher: &Matcher) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            self.add(&bytes[..newline.unwrap_or(bytes.len())]);
            let Some(at) = newline else { return };
            self.end_line(matcher);
            bytes = &bytes[at + 1..];
        }
    }

    fn add(&mut self, piece: &[u8]) {
        let room = MAX_LINE_BYTES.saturating_sub(self.head.len());
        let (head, rest) = piece.split_at(piece.len().min(room));
        self.head.extend_from_slice(head);
        if rest.len() >= MAX_LINE_BYTES {
            self.tail.clear();
            self.tail
                .extend_from_slice(&rest[rest.len() - MAX_LINE_BYTES..]);
        } else {
            self.tail.extend_from_slice(rest);
            if self.tail.len() > 2 * MAX_LINE_BYTES {
                self.tail.drain(..self.tail.len() - MAX_LINE_BYTES);
            }
        }
    }

    /// The stream ended: the line under way, if any, is counted.
    fn finish(&mut self, matcher: &Matcher) {
        if !self.head.is_empty() {
            self.end_line(matcher);
        }
    }

    /// Its newline came: the line is counted.
    fn end_line(&mut self, matcher: &Matcher) {
        let tail = &self.tail[self.tail.len().saturating_sub(MAX_LINE_BYTES)..];
        self.head.extend_from_slice(tail);
        matcher.count(&self.head);
        self.head.clear();
        self.tail.clear();
    }
}

/// A file followed from where it was at the start: new lines only, again from the top
/// when it is replaced (rotated) or shrinks (truncated).
struct FileFollower {
    path: String,
    /// A named pipe, opened once at the start and read as it fills.
    fifo: Option<Fifo>,
    /// (device, inode) of the file being read, and the offset read up to: the end of
    /// the last complete line.
    identity: Option<(u64, u64)>,
    offset: u64,
}

impl FileFollower {
    fn at_end(path: &str) -> FileFollower {
        let metadata = std::fs::metadata(path).ok();
        let fifo = metadata
            .as_ref()
            .filter(|m| m.file_type().is_fifo())
            .map(|_| Fifo::open(path));
        FileFollower {
            path: path.to_owned(),
            fifo,
            identity: metadata.as_ref().map(|m| (m.dev(), m.ino())),
            offset: metadata.map_or(0, |m| m.len()),
        }
    }

    /// Counts the lines completed since the last call (a line still being written waits
    /// for its newline, unless it is already longer than [`MAX_LINE_BYTES`]).
    fn read_new(&mut self, matcher: &Matcher) -> Result<(), String> {
        let fail = |err: std::io::Error| format!("{}: {err}", self.path);
        if let Some(fifo) = &mut self.fifo {
            return fifo.read_new(matcher).map_err(fail);
        }
        let metadata = std::fs::metadata(&self.path).map_err(fail)?;
        let identity = (metadata.dev(), metadata.ino());
        if self.identity != Some(identity) || metadata.len() < self.offset {
            // Rotated (a new file) or truncated: its lines are all new.
            (self.identity, self.offset) = (Some(identity), 0);
        }
        if metadata.len() == self.offset {
            return Ok(());
        }
        let mut file = std::fs::File::open(&self.path).map_err(fail)?;
        file.seek(SeekFrom::Start(self.offset)).map_err(fail)?;
        let mut chunk = Vec::new();
        file.take(MAX_READ_BYTES)
            .read_to_end(&mut chunk)
            .map_err(fail)?;
        let complete = match chunk.iter().rposition(|&b| b == b'\n') {
            Some(last) => last + 1,
            None if chunk.len() >= MAX_LINE_BYTES => chunk.len(),
            None => 0,
        };
        let lines = chunk[..complete]
            .strip_suffix(b"\n")
            .unwrap_or(&chunk[..complete]);
        if complete > 0 {
            lines
                .split(|&b| b == b'\n')
                .for_each(|line| matcher.count(line));
        }
        self.offset += complete as u64;
        Ok(())
    }
}

/// A named pipe: opened without waiting for a writer (a blocking open would wait for
/// one, and a writer opening without waiting gets ENXIO until a reader holds it open),
/// kept open for the run, and read without blocking each tick.
struct Fifo {
    file: Result<std::fs::File, std::io::ErrorKind>,
    lines: Lines,
    buffer: Vec<u8>,
}

impl Fifo {
    fn open(path: &str) -> Fifo {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(path)
            .map_err(|err| err.kind());
        Fifo {
            file,
            lines: Lines::default(),
            buffer: vec![0; 64 * 1024],
        }
    }

    /// Reads what the writers wrote since the last tick (at most [`MAX_READ_BYTES`]).
    fn read_new(&mut self, matcher: &Matcher) -> std::io::Result<()> {
        let file = self
            .file
            .as_mut()
            .map_err(|kind| std::io::Error::from(*kind))?;
        let mut read_bytes = 0_u64;
        while read_bytes < MAX_READ_BYTES {
            match file.read(&mut self.buffer) {
                // No writer holds it open (yet, or any more): nothing to read.
                Ok(0) => break,
                Ok(read) => {
                    self.lines.push(&self.buffer[..read], matcher);
                    read_bytes += read as u64;
                }
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(patterns: &[(&str, &str)]) -> Matcher {
        Matcher {
            patterns: patterns
                .iter()
                .map(|(name, re)| ((*name).to_owned(), Regex::new(re).unwrap()))
                .collect(),
            counts: Mutex::new(Counts {
                by_pattern: vec![0; patterns.len()],
                examples_seen: vec![Vec::new(); patterns.len()],
                ..Counts::default()
            }),
        }
    }

    fn defaults() -> Matcher {
        matcher(DEFAULT_PATTERNS)
    }

    /// (all lines, lines per default pattern by name)
    fn counted(matcher: &Matcher) -> (u64, Vec<(String, u64)>) {
        let counts = matcher.take();
        let by_name = matcher
            .patterns
            .iter()
            .zip(counts.by_pattern)
            .filter(|(_, n)| *n > 0)
            .map(|((name, _), n)| (name.clone(), n))
            .collect();
        (counts.all, by_name)
    }

    #[test]
    fn default_patterns_match_the_usual_suspects() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "2026/11/25 [crit] accept4() failed (24: Too many open files)",
                Some("too_many_open_files"),
            ),
            (
                "kernel: Out of memory: Killed process 4242 (app)",
                Some("out_of_memory"),
            ),
            (
                "dial tcp 127.0.0.1:5432: connect: connection refused",
                Some("connection_refused"),
            ),
            (
                "upstream timed out (110: Connection timed out)",
                Some("timeout"),
            ),
            (
                "127.0.0.1 - - [25/Nov/2026] \"GET / HTTP/1.1\" 503 12 \"-\"",
                Some("5xx"),
            ),
            ("thread 'main' panicked at src/main.rs:3", Some("panic")),
            ("Traceback (most recent call last):", Some("panic")),
            ("127.0.0.1 - - \"GET /5030 HTTP/1.1\" 200 5031", None),
            ("all is well", None),
        ];
        for (line, want) in cases {
            let matcher = defaults();
            matcher.count(line.as_bytes());
            let (all, by_name) = counted(&matcher);
            assert_eq!(all, 1, "{line}");
            let names: Vec<&str> = by_name.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(names.first().copied(), *want, "{line}: {names:?}");
        }
    }

    #[test]
    fn examples_are_the_first_few_distinct_lines() {
        let matcher = matcher(&[("err", "ERR")]);
        for line in ["ERR a", "ERR a", "ERR b", "ERR c", "ERR d", "fine"] {
            matcher.count(line.as_bytes());
        }
        let counts = matcher.take();
        let examples: Vec<&str> = counts
            .new_examples
            .iter()
            .map(|(_, l)| l.as_str())
            .collect();
        assert_eq!(examples, ["ERR a", "ERR b", "ERR c"]);
        assert_eq!((counts.all, counts.by_pattern[0]), (6, 5));
        // Taken once: the next tick reports only what is new.
        matcher.count(b"ERR e");
        assert!(matcher.take().new_examples.is_empty());
    }

    #[test]
    fn a_file_is_followed_through_appends_partial_lines_rotation_and_truncation() {
        let dir = std::env::temp_dir().join(format!("loadlab-log-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("app.log");
        let path_text = path.to_str().unwrap().to_owned();
        std::fs::write(&path, "old line: too many open files\n").unwrap();
        let matcher = defaults();
        let mut follower = FileFollower::at_end(&path_text);
        let append = |text: &[u8]| {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            file.write_all(text).unwrap();
        };
        // (what happens, then (lines counted, of which too_many_open_files))
        let mut step = |what: &str, act: &dyn Fn(), want: (u64, u64)| {
            act();
            let _ = follower.read_new(&matcher);
            let counts = matcher.take();
            assert_eq!((counts.all, counts.by_pattern[0]), want, "{what}");
        };
        step("nothing new: the old line is not counted", &|| {}, (0, 0));
        step(
            "two lines appended",
            &|| append(b"a\nToo many open files\n"),
            (2, 1),
        );
        step(
            "half a line waits for its end",
            &|| append(b"too many open"),
            (0, 0),
        );
        step("its end arrives", &|| append(b" files\n"), (1, 1));
        step(
            "binary garbage is a line like any",
            &|| append(b"\x00\xff\xfe\n"),
            (1, 0),
        );
        step(
            "rotated: the new file is read from its start",
            &|| {
                std::fs::rename(&path, dir.join("app.log.1")).unwrap();
                std::fs::write(&path, "new file\ntoo many open files\n").unwrap();
            },
            (2, 1),
        );
        step(
            "truncated: read again from the start",
            &|| {
                std::fs::write(&path, "").unwrap();
                append(b"x\n");
            },
            (1, 0),
        );
        let long = vec![b'z'; MAX_LINE_BYTES * 2];
        step(
            "a line with no end in sight is cut and counted",
            &|| append(&long),
            (1, 0),
        );
        std::fs::remove_file(&path).unwrap();
        let gone = follower.read_new(&matcher);
        assert!(gone.is_err_and(|reason| reason.contains("app.log")));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_long_line_is_matched_on_its_start_and_end() {
        let long = |start: &str, end: &str| {
            let mut line = start.as_bytes().to_vec();
            line.resize(10 << 20, b'x');
            line.extend_from_slice(end.as_bytes());
            line
        };
        // (line, too_many_open_files, panic)
        let rows: Vec<(Vec<u8>, u64, u64)> = vec![
            (long("", "accept4() failed: too many open files"), 1, 0),
            (long("panic: ", ""), 0, 1),
            (long("", ""), 0, 0),
            (b"short: too many open files".to_vec(), 1, 0),
        ];
        for (line, open_files, panics) in &rows {
            // Whole (a file's lines) and through a stream in pieces (a command, a FIFO).
            let whole = defaults();
            whole.count(line);
            let streamed = defaults();
            let mut lines = Lines::default();
            for piece in line.chunks(7_777).chain([&b"\nnext\n"[..]]) {
                lines.push(piece, &streamed);
            }
            assert!(lines.head.capacity() <= 4 * MAX_LINE_BYTES, "bounded");
            for (how, matcher, all) in [("whole", whole, 1), ("streamed", streamed, 2)] {
                let (counted, by_name) = counted(&matcher);
                let of = |name: &str| {
                    by_name
                        .iter()
                        .find(|(n, _)| n == name)
                        .map_or(0, |(_, n)| *n)
                };
                assert_eq!(counted, all, "{how}");
                assert_eq!(
                    (of("too_many_open_files"), of("panic")),
                    (*open_files, *panics),
                    "{how}: {}",
                    line.len()
                );
            }
        }
        // An empty line is a line; the stream's last line counts without its newline.
        let matcher = defaults();
        let mut lines = Lines::default();
        lines.push(b"\n\nlast: out of memory", &matcher);
        lines.finish(&matcher);
        let (all, by_name) = counted(&matcher);
        assert_eq!((all, by_name), (3, vec![("out_of_memory".to_owned(), 1)]));
    }

    #[test]
    fn a_fifo_is_opened_at_once_and_read_as_writers_write() {
        let dir = std::env::temp_dir().join(format!("loadlab-fifo-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("app.fifo");
        let _ = std::fs::remove_file(&path);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let matcher = defaults();
        let mut follower = FileFollower::at_end(path.to_str().unwrap());
        assert_eq!(
            follower.read_new(&matcher),
            Ok(()),
            "no writer yet: nothing"
        );
        // A writer that will not wait finds a reader (no ENXIO).
        let mut writer = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(&path)
            .unwrap();
        use std::io::Write;
        writer.write_all(b"a\ntoo many open files\nhalf").unwrap();
        follower.read_new(&matcher).unwrap();
        assert_eq!((counted(&matcher).0), 2);
        writer.write_all(b" a line: connection refused\n").unwrap();
        drop(writer);
        follower.read_new(&matcher).unwrap();
        let (all, by_name) = counted(&matcher);
        assert_eq!(
            (all, by_name),
            (1, vec![("connection_refused".to_owned(), 1)])
        );
        assert_eq!(
            follower.read_new(&matcher),
            Ok(()),
            "the writer gone: nothing"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_command_s_lines_are_counted_and_its_end_is_a_gap() {
        let info = SamplerInfo {
            kind: record::SamplerKind::Log,
            name: "app".to_owned(),
        };
        let spec = LogSpec {
            source: LogSource::Command(
                "echo 'too many open files'; echo 'boom: out of memory' >&2; exit 3".to_owned(),
            ),
            patterns: vec![("boom".to_owned(), "boom".to_owned())],
        };
        let mut sampler = LogSampler::new(info, &spec);
        let tick = |seconds: u64| Tick {
            now: Instant::now(),
            at_unix_ns: seconds * 1_000_000_000,
        };
        let mut out = Vec::new();
        sampler.sample(&tick(0), &mut out);
        std::thread::sleep(std::time::Duration::from_millis(300));
        sampler.sample(&tick(1), &mut out);
        let last = out.last().unwrap();
        let value = |pattern: &str| {
            last.values
                .iter()
                .find(|(def, _)| {
                    def.name == S::LogLinesPerSec.name() && def.labels["pattern"] == pattern
                })
                .map(|(_, v)| *v)
        };
        assert!(value("all").unwrap() > 0.0, "{last:?}");
        for pattern in ["too_many_open_files", "out_of_memory", "boom"] {
            assert!(value(pattern).unwrap() > 0.0, "{pattern}: {last:?}");
        }
        let examples = last
            .values
            .iter()
            .filter(|(def, _)| def.name == S::LogExample.name())
            .count();
        assert_eq!(examples, 3, "{last:?}");
        assert!(
            last.gaps
                .iter()
                .any(|(_, reason)| reason.contains("the command ended")),
            "{last:?}"
        );
    }
}
