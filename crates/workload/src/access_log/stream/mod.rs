//! [`LogStream`]: access logs read as one time-ordered stream of [`LoggedRequest`]s,
//! with [`LogOptions`] and the [`LogStats`] of what was read.
//!
//! Each file is read on its own (`file`): line by line through a bounded buffer
//! (`input`, gzip read as it is), put in order within a window and spread over its
//! timestamps' interval (`order`). The files are then merged by time (a k-way merge
//! holding one request per file), so the logs of several hosts replay as one.
//!
//! Memory is bounded by the window, not the file: one line (at most 1 MiB), the
//! requests of one reorder window, one timestamp's requests for the spread, and one
//! request per file for the merge.

mod file;
mod input;
mod order;

#[cfg(test)]
mod tests;

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::path::PathBuf;

use crate::{LineParser, LoggedRequest, WorkloadError};
use file::FileStream;
pub use order::time_text as log_time_text;

/// The caller's choice of a file's format ([`LogStream::open`]): given the file's
/// name and its first lines, its [`LineParser`], or an error such as "format could
/// not be guessed".
pub type ChooseParser<'a> =
    dyn FnMut(&str, &[&str]) -> Result<Box<dyn LineParser>, WorkloadError> + 'a;

/// How logs are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOptions {
    /// How far back in time a line may come after a later one and still be put in
    /// order (logs are written at completion), nanoseconds. 10 s by default.
    pub reorder_window_ns: u64,
    /// Spread requests that share a coarse timestamp (nginx's whole seconds) evenly
    /// over its interval, rather than sending them in one burst. On by default.
    pub spread: bool,
}

impl Default for LogOptions {
    fn default() -> LogOptions {
        LogOptions {
            reorder_window_ns: 10_000_000_000,
            spread: true,
        }
    }
}

/// What reading the logs found, over all files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogStats {
    /// Lines read (HAR: entries).
    pub lines: u64,
    /// Requests read.
    pub requests: u64,
    /// Lines the format could not read (or too long, or not UTF-8).
    pub bad_lines: u64,
    /// Lines that hold no request and are not bad: blank lines, comments, a
    /// format's header lines (CloudFront's `#Fields`).
    pub no_request: u64,
    /// The first few bad lines, `FILE:LINE: reason`.
    pub bad_examples: Vec<String>,
    /// Requests that came after a later one and were put back in order (each also
    /// says so in its [`LoggedRequest::put_back_ns`]).
    pub reordered: u64,
    /// The largest such displacement, nanoseconds.
    pub max_reorder_ns: u64,
}

impl LogStats {
    fn add(&mut self, other: &LogStats) {
        self.lines += other.lines;
        self.requests += other.requests;
        self.bad_lines += other.bad_lines;
        self.no_request += other.no_request;
        let room = file::BAD_EXAMPLES.saturating_sub(self.bad_examples.len());
        self.bad_examples
            .extend(other.bad_examples.iter().take(room).cloned());
        self.reordered += other.reordered;
        self.max_reorder_ns = self.max_reorder_ns.max(other.max_reorder_ns);
    }
}

/// Access logs as one time-ordered stream of requests; see the module docs. An error
/// ends the stream.
pub struct LogStream {
    files: Vec<FileStream>,
    /// Each file's next request, oldest first.
    heads: BinaryHeap<Reverse<Head>>,
    started: bool,
    failed: bool,
    /// The file of the request given out last.
    last_file: usize,
}

/// A file's next request in the merge, ordered by time, then file.
struct Head {
    time_unix_ns: u64,
    file: usize,
    request: LoggedRequest,
}

impl Head {
    fn key(&self) -> (u64, usize) {
        (self.time_unix_ns, self.file)
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Head) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Head {}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Head) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Head) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl LogStream {
    /// Opens `files` (paths, `-` for stdin), each read through gzip when it starts
    /// with gzip's magic. `parser_for(file_name, first_lines)` gives each file's
    /// [`LineParser`]; a parser named `har` ([`crate::HarFormat`]) has the file read
    /// whole as a HAR recording.
    pub fn open(
        files: &[PathBuf],
        options: LogOptions,
        parser_for: &mut ChooseParser<'_>,
    ) -> Result<LogStream, WorkloadError> {
        if files.is_empty() {
            return Err(WorkloadError::Plan("no access log to read".to_owned()));
        }
        let stdin_count = files.iter().filter(|f| f.as_os_str() == "-").count();
        if stdin_count > 1 {
            return Err(WorkloadError::Plan(
                "stdin (-) is given more than once as an access log".to_owned(),
            ));
        }
        let files = files
            .iter()
            .map(|path| FileStream::open(path, &options, parser_for))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LogStream {
            heads: BinaryHeap::with_capacity(files.len()),
            files,
            started: false,
            failed: false,
            last_file: 0,
        })
    }

    /// What was read so far, over all files.
    pub fn stats(&self) -> LogStats {
        let mut stats = LogStats::default();
        for file in &self.files {
            stats.add(&file.stats);
        }
        stats
    }

    /// The next request of all files, oldest first.
    fn next_request(&mut self) -> Result<Option<LoggedRequest>, WorkloadError> {
        if !self.started {
            self.started = true;
            for file in 0..self.files.len() {
                self.pull(file)?;
            }
        }
        let Some(Reverse(head)) = self.heads.pop() else {
            return Ok(None);
        };
        self.pull(head.file)?;
        self.last_file = head.file;
        Ok(Some(head.request))
    }

    /// The name of the file the last request given out came from (for errors that
    /// name a request's file and line).
    pub fn last_file_name(&self) -> &str {
        self.files.get(self.last_file).map_or("", FileStream::name)
    }

    /// Stops reading: the lines not given out yet (requests read ahead and held,
    /// and the rest of every file, counted without being read as requests), which
    /// [`LogStats::lines`] then includes. For a replay whose window ends before its
    /// logs do, so that every line is accounted for.
    pub fn skip_rest(&mut self) -> Result<u64, WorkloadError> {
        let mut left = self.heads.len() as u64;
        self.heads.clear();
        for file in &mut self.files {
            left += file.skip_rest()?;
        }
        self.failed = true;
        Ok(left)
    }

    /// Puts `file`'s next request among the heads.
    fn pull(&mut self, file: usize) -> Result<(), WorkloadError> {
        if let Some(request) = self.files[file].next_request()? {
            self.heads.push(Reverse(Head {
                time_unix_ns: request.time_unix_ns,
                file,
                request,
            }));
        }
        Ok(())
    }

    /// The largest line buffer (bytes) and requests held, over the files (for the
    /// test that memory stays flat).
    #[cfg(test)]
    fn buffered(&self) -> (usize, usize) {
        self.files
            .iter()
            .map(FileStream::buffered)
            .fold((0, self.heads.len()), |(bytes, held), (b, h)| {
                (bytes.max(b), held + h)
            })
    }
}

impl Iterator for LogStream {
    type Item = Result<LoggedRequest, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.next_request() {
            Ok(request) => request.map(Ok),
            Err(err) => {
                self.failed = true;
                Some(Err(err))
            }
        }
    }
}
