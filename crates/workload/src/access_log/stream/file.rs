//! [`FileStream`]: one log's requests in time order. Lines are parsed by the file's
//! [`LineParser`], bad ones counted (the run stops when most lines are bad), then
//! put in order ([`Reorder`]) and spread over their timestamp's interval ([`Spread`]).

use std::path::Path;

use super::input::{Input, Line, LineReader, MAX_LINE_BYTES, read_error};
use super::order::{Reorder, Spread};
use super::{ChooseParser, LogOptions, LogStats};
use crate::access_log::har_entries::{self, HAR_FORMAT};
use crate::{LineParser, LoggedRequest, WorkloadError};

/// Bad lines quoted in [`LogStats::bad_examples`] and in errors.
pub(super) const BAD_EXAMPLES: usize = 5;
/// Below this many lines, bad lines never stop the run (a short file with a few bad
/// lines is still worth replaying; one with none good fails at its end).
const MOSTLY_BAD_AFTER_LINES: u64 = 100;

/// Where a file's requests come from.
enum Source {
    /// A line format, read line by line.
    Lines {
        reader: LineReader,
        parser: Box<dyn LineParser>,
        gzip: bool,
    },
    /// A format read whole (HAR), already in time order.
    Whole(std::vec::IntoIter<LoggedRequest>),
}

/// One log file's requests in time order.
pub(super) struct FileStream {
    name: String,
    format: String,
    source: Source,
    order: Reorder,
    spread: Option<Spread>,
    /// The source is exhausted; what [`Reorder`] holds is still to go.
    ended: bool,
    pub stats: LogStats,
}

impl FileStream {
    /// Opens `path` and asks `parser_for` for its format.
    pub fn open(
        path: &Path,
        options: &LogOptions,
        parser_for: &mut ChooseParser<'_>,
    ) -> Result<FileStream, WorkloadError> {
        let input = Input::open(path)?;
        let first_lines = input.first_lines();
        let first: Vec<&str> = first_lines.iter().map(String::as_str).collect();
        let parser = parser_for(&input.name, &first)?;
        let name = input.name.clone();
        let format = parser.name();
        let spread = options.spread.then(|| Spread::new(parser.resolution_ns()));
        let mut stats = LogStats::default();
        let source = if format == HAR_FORMAT {
            let bytes = input.read_all()?;
            let requests = har_entries::read(&bytes, &name)?;
            if requests.is_empty() {
                return Err(WorkloadError::Log {
                    source_name: name,
                    reason: "no HTTP requests among its entries".to_owned(),
                });
            }
            stats.lines = requests.len() as u64;
            stats.requests = stats.lines;
            Source::Whole(requests.into_iter())
        } else {
            Source::Lines {
                gzip: input.gzip,
                reader: input.into_lines(),
                parser,
            }
        };
        Ok(FileStream {
            name,
            format,
            source,
            order: Reorder::new(options.reorder_window_ns),
            spread,
            ended: false,
            stats,
        })
    }

    /// The next request in time order, spread over its timestamp's interval.
    pub fn next_request(&mut self) -> Result<Option<LoggedRequest>, WorkloadError> {
        loop {
            if let Some(request) = self.spread.as_mut().and_then(Spread::pop) {
                return Ok(Some(request));
            }
            let ordered = self.next_ordered()?;
            match (&mut self.spread, ordered) {
                (None, request) => return Ok(request),
                (Some(spread), Some(request)) => spread.push(request),
                (Some(spread), None) => {
                    if !spread.finish() {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// The next request in time order.
    fn next_ordered(&mut self) -> Result<Option<LoggedRequest>, WorkloadError> {
        loop {
            if let Some(request) = self.order.pop_ready() {
                return Ok(Some(request));
            }
            if self.ended {
                return Ok(self.order.pop_any());
            }
            match self.next_parsed()? {
                Some(request) => self.order.push(request, &self.name, &mut self.stats)?,
                None => {
                    self.ended = true;
                    self.check_end()?;
                }
            }
        }
    }

    /// The next request in file order; bad lines are counted and passed over.
    fn next_parsed(&mut self) -> Result<Option<LoggedRequest>, WorkloadError> {
        let (reader, parser, gzip) = match &mut self.source {
            Source::Whole(requests) => return Ok(requests.next()),
            Source::Lines {
                reader,
                parser,
                gzip,
            } => (reader, parser, *gzip),
        };
        loop {
            // The number of the line about to be read, if there is one.
            let line = reader.line + 1;
            let outcome = match reader.next_line() {
                Err(err) => return Err(read_error(&self.name, line, gzip, &err)),
                Ok(Line::End) => return Ok(None),
                Ok(Line::TooLong) => Err(format!("longer than {} MiB", MAX_LINE_BYTES >> 20)),
                Ok(Line::Text(bytes)) => parse(parser.as_ref(), bytes, line),
            };
            self.stats.lines += 1;
            match outcome {
                Ok(Some(mut request)) => {
                    request.line = line;
                    self.stats.requests += 1;
                    return Ok(Some(request));
                }
                Ok(None) => self.stats.no_request += 1,
                Err(reason) => {
                    bad_line(&mut self.stats, &self.name, line, &reason);
                    check_mostly_bad(&self.stats, &self.name, &self.format)?;
                }
            }
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Stops reading: requests held and lines left, which [`LogStats::lines`] then
    /// includes (see [`super::LogStream::skip_rest`]).
    pub fn skip_rest(&mut self) -> Result<u64, WorkloadError> {
        let held = self.order.held() + self.spread.as_ref().map_or(0, Spread::held);
        let rest = match &mut self.source {
            // Counted whole when read.
            Source::Whole(requests) => return Ok(held as u64 + requests.by_ref().count() as u64),
            Source::Lines { reader, gzip, .. } => {
                let mut rest = 0;
                loop {
                    let line = reader.line + 1;
                    match reader.next_line() {
                        Ok(Line::End) => break,
                        Ok(_) => rest += 1,
                        Err(err) => return Err(read_error(&self.name, line, *gzip, &err)),
                    }
                }
                rest
            }
        };
        self.stats.lines += rest;
        self.ended = true;
        Ok(held as u64 + rest)
    }

    /// A file with lines but no request is an error, not an empty replay.
    fn check_end(&self) -> Result<(), WorkloadError> {
        let LogStats {
            lines,
            requests,
            bad_lines,
            ..
        } = self.stats;
        if lines == 0 || requests > 0 {
            return Ok(());
        }
        let mut reason = format!("no requests in its {lines} lines");
        if bad_lines > 0 {
            reason += &format!(
                " ({bad_lines} could not be read as {}, the first: {})",
                self.format,
                self.stats.bad_examples.join("; ")
            );
        }
        Err(WorkloadError::Log {
            source_name: self.name.clone(),
            reason,
        })
    }

    /// Buffered bytes and requests (for the test that memory stays flat).
    #[cfg(test)]
    pub fn buffered(&self) -> (usize, usize) {
        let line_bytes = match &self.source {
            Source::Lines { reader, .. } => reader.buffer_capacity(),
            Source::Whole(_) => 0,
        };
        let spread = self.spread.as_ref().map_or(0, Spread::held);
        (line_bytes, self.order.held() + spread)
    }
}

/// One line through the parser: text (UTF-8, `\r` and a first line's byte order mark
/// taken off), then the format's reading of it.
fn parse(
    parser: &dyn LineParser,
    bytes: &[u8],
    line: u64,
) -> Result<Option<LoggedRequest>, String> {
    let text = std::str::from_utf8(bytes).map_err(|err| {
        format!(
            "not UTF-8 text (a bad byte at column {})",
            err.valid_up_to() + 1
        )
    })?;
    let text = text.strip_suffix('\r').unwrap_or(text);
    let text = if line == 1 {
        text.strip_prefix('\u{feff}').unwrap_or(text)
    } else {
        text
    };
    parser.parse_line(text)
}

/// Most lines bad: the format is wrong, or this is not a log.
fn check_mostly_bad(stats: &LogStats, name: &str, format: &str) -> Result<(), WorkloadError> {
    let LogStats {
        lines, bad_lines, ..
    } = *stats;
    if lines < MOSTLY_BAD_AFTER_LINES || bad_lines * 2 <= lines {
        return Ok(());
    }
    Err(WorkloadError::Log {
        source_name: name.to_owned(),
        reason: format!(
            "{bad_lines} of the first {lines} lines could not be read as {format} (is it \
             the log's format?); the first: {}",
            stats.bad_examples.join("; ")
        ),
    })
}

fn bad_line(stats: &mut LogStats, name: &str, line: u64, reason: &str) {
    stats.bad_lines += 1;
    if stats.bad_examples.len() < BAD_EXAMPLES {
        stats.bad_examples.push(format!("{name}:{line}: {reason}"));
    }
}
