//! [`Pattern`]: a line layout in nginx `log_format` syntax (`$var` and literal text)
//! compiled into segments and matched by scanning bytes, and [`PatternParser`], the
//! [`LineParser`] that nginx's formats and Apache's share.

use super::fields::{count, decimal_ns, quoted, seconds_ns, status, trim_end};
use super::request_line::{encode_path, logged_text, method, query, request, target, unescape};
use super::timestamps::{NS_PER_S, TimeCache, clf_ns, iso8601_ns};
use crate::{LineParser, LoggedRequest};

/// The variables a line's request is built from; any other is matched and ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Var {
    TimeLocal,
    TimeIso8601,
    Msec,
    Request,
    RequestMethod,
    RequestUri,
    Uri,
    /// `$uri$is_args$args`, which nothing separates.
    UriArgs,
    Args,
    IsArgs,
    Host,
    HttpHost,
    Status,
    BodyBytesSent,
    BytesSent,
    RequestTime,
    UpstreamResponseTime,
    UserAgent,
    Other,
}

/// Slots for the variables' values (all but [`Var::Other`]).
const SLOTS: usize = Var::Other as usize;

impl Var {
    fn of(name: &str) -> Var {
        match name {
            "time_local" => Var::TimeLocal,
            "time_iso8601" => Var::TimeIso8601,
            "msec" => Var::Msec,
            "request" => Var::Request,
            "request_method" => Var::RequestMethod,
            "request_uri" => Var::RequestUri,
            "uri" | "document_uri" => Var::Uri,
            "args" | "query_string" => Var::Args,
            "is_args" => Var::IsArgs,
            "host" => Var::Host,
            "http_host" => Var::HttpHost,
            "status" => Var::Status,
            "body_bytes_sent" => Var::BodyBytesSent,
            "bytes_sent" => Var::BytesSent,
            "request_time" => Var::RequestTime,
            "upstream_response_time" => Var::UpstreamResponseTime,
            "http_user_agent" => Var::UserAgent,
            _ => Var::Other,
        }
    }

    /// Spaces the value always holds: where the next literal starts with a space, its
    /// search starts past them.
    fn inner_spaces(self) -> usize {
        match self {
            Var::TimeLocal => 1,
            Var::Request => 2,
            _ => 0,
        }
    }

    /// A value that never holds a space (numbers, times, a URI): last on the line, it
    /// ends at the first space, so text appended after the format is not taken in.
    fn is_token(self) -> bool {
        !matches!(
            self,
            Var::Request | Var::UserAgent | Var::TimeLocal | Var::Other
        )
    }

    /// A value that starts with `/`: a variable right before it ends there.
    fn starts_with_slash(self) -> bool {
        matches!(self, Var::RequestUri | Var::Uri | Var::UriArgs)
    }
}

#[derive(Debug)]
enum Segment {
    Literal(Box<[u8]>),
    Var { var: Var, name: Box<str> },
}

/// A compiled line layout.
#[derive(Debug)]
pub(super) struct Pattern {
    segments: Vec<Segment>,
}

impl Pattern {
    /// Compiles `$name` / `${name}` variables and the literal text between them. Two
    /// variables with nothing between them are refused (their values could not be
    /// told apart), except before a value that starts with `/` and nginx's
    /// `$uri$is_args$args`.
    pub(super) fn compile(format: &str) -> Result<Pattern, String> {
        let segments = merge_uri_args(tokenize(format)?);
        for pair in segments.windows(2) {
            if let [
                Segment::Var { name: first, .. },
                Segment::Var {
                    var: second,
                    name: second_name,
                },
            ] = pair
                && !second.starts_with_slash()
            {
                return Err(format!(
                    "log_format: ${first} and ${second_name} have nothing between them"
                ));
            }
        }
        Ok(Pattern { segments })
    }

    /// Whether the layout names `var`.
    pub(super) fn has(&self, var: Var) -> bool {
        self.segments
            .iter()
            .any(|s| matches!(s, Segment::Var { var: v, .. } if *v == var))
    }

    /// The spans of the variables' values in `line`, or which literal is missing.
    fn match_line<'a>(&self, line: &'a [u8]) -> Result<Values<'a>, String> {
        let mut values = Values {
            line,
            spans: [None; SLOTS],
        };
        let mut pos = 0;
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Literal(literal) => {
                    if !line[pos..].starts_with(literal) {
                        return Err(self.missing(i));
                    }
                    pos += literal.len();
                }
                Segment::Var { var, .. } => {
                    let end = self
                        .value_end(i, *var, line, pos)
                        .ok_or_else(|| self.missing(i + 1))?;
                    if let Some(span) = values.spans.get_mut(*var as usize) {
                        *span = Some((pos, end));
                    }
                    pos = end;
                }
            }
        }
        match line.get(pos) {
            None | Some(b' ' | b'\t') => Ok(values),
            Some(_) => Err(format!(
                "{} follows the log format's end",
                quoted(&line[pos..])
            )),
        }
    }

    /// Where the value of the variable at segment `i`, starting at `pos`, ends.
    fn value_end(&self, i: usize, var: Var, line: &[u8], pos: usize) -> Option<usize> {
        match self.segments.get(i + 1) {
            Some(Segment::Literal(literal)) => {
                let mut from = pos;
                if literal.first() == Some(&b' ') {
                    for _ in 0..var.inner_spaces() {
                        from += line[from..].iter().position(|&b| b == b' ')? + 1;
                    }
                }
                find_literal(line, from, literal)
            }
            Some(Segment::Var { .. }) => {
                line[pos..].iter().position(|&b| b == b'/').map(|n| pos + n)
            }
            None if var.is_token() => Some(
                line[pos..]
                    .iter()
                    .position(|&b| b == b' ' || b == b'\t')
                    .map_or(line.len(), |n| pos + n),
            ),
            None => Some(line.len()),
        }
    }

    /// Why a line does not match: the literal at segment `i` is not where it should be.
    fn missing(&self, i: usize) -> String {
        let Some(Segment::Literal(literal)) = self.segments.get(i) else {
            return "line does not match the log format".to_owned();
        };
        let before = i
            .checked_sub(1)
            .and_then(|j| self.segments.get(j))
            .and_then(|s| match s {
                Segment::Var { name, .. } => Some(name),
                Segment::Literal(_) => None,
            });
        match before {
            Some(name) => format!("no {} after ${name}", quoted(literal)),
            None => format!("line does not start with {}", quoted(literal)),
        }
    }
}

/// The first index from `from` where `literal` starts, stepping over backslash
/// escapes (Apache writes a quote inside a quoted value as `\"`).
fn find_literal(line: &[u8], from: usize, literal: &[u8]) -> Option<usize> {
    let first = *literal.first()?;
    let mut i = from;
    while i < line.len() {
        let b = line[i];
        if b == b'\\' {
            i += 2;
        } else if b == first && line[i..].starts_with(literal) {
            return Some(i);
        } else {
            i += 1;
        }
    }
    None
}

fn tokenize(format: &str) -> Result<Vec<Segment>, String> {
    let bytes = format.as_bytes();
    let mut segments = Vec::new();
    let mut literal = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let (name, used) = variable_at(bytes, i)?;
        if name.is_empty() {
            literal.push(bytes[i]);
            i += 1;
            continue;
        }
        if !literal.is_empty() {
            segments.push(Segment::Literal(std::mem::take(&mut literal).into()));
        }
        segments.push(Segment::Var {
            var: Var::of(name),
            name: name.into(),
        });
        i += used;
    }
    if !literal.is_empty() {
        segments.push(Segment::Literal(literal.into()));
    }
    Ok(segments)
}

/// The variable named at `i` (`$name` or `${name}`) and the bytes it takes; an empty
/// name where there is none (a `$` alone is literal text).
fn variable_at(bytes: &[u8], i: usize) -> Result<(&str, usize), String> {
    if bytes[i] != b'$' {
        return Ok(("", 1));
    }
    let is_name = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let braced = bytes.get(i + 1) == Some(&b'{');
    let start = i + 1 + usize::from(braced);
    let len = bytes[start..].iter().take_while(|b| is_name(b)).count();
    let name = std::str::from_utf8(&bytes[start..start + len]).unwrap_or_default();
    if braced && bytes.get(start + len) != Some(&b'}') {
        return Err(format!("log_format: ${{{name} has no closing }}"));
    }
    Ok((name, 1 + usize::from(braced) * 2 + len))
}

/// `$uri$is_args$args` as one value, since nothing separates its parts.
fn merge_uri_args(segments: Vec<Segment>) -> Vec<Segment> {
    let mut merged: Vec<Segment> = Vec::with_capacity(segments.len());
    for segment in segments {
        let tail_vars = |merged: &[Segment]| -> Option<(Var, Var)> {
            match merged {
                [.., Segment::Var { var: a, .. }, Segment::Var { var: b, .. }] => Some((*a, *b)),
                _ => None,
            }
        };
        if matches!(segment, Segment::Var { var: Var::Args, .. })
            && tail_vars(&merged) == Some((Var::Uri, Var::IsArgs))
        {
            merged.truncate(merged.len() - 2);
            merged.push(Segment::Var {
                var: Var::UriArgs,
                name: "uri$is_args$args".into(),
            });
        } else {
            merged.push(segment);
        }
    }
    merged
}

/// The values one line gave, as spans of it.
struct Values<'a> {
    line: &'a [u8],
    spans: [Option<(usize, usize)>; SLOTS],
}

impl<'a> Values<'a> {
    fn get(&self, var: Var) -> Option<&'a [u8]> {
        let (start, end) = (*self.spans.get(var as usize)?)?;
        Some(&self.line[start..end])
    }
}

/// A [`LineParser`] over a [`Pattern`].
pub(super) struct PatternParser {
    name: &'static str,
    pattern: Pattern,
    /// nginx logs when the request completes: the arrival is the logged time minus
    /// the latency. Apache's `%t` is the arrival already.
    logged_at_completion: bool,
    /// Apache's `%b` writes `-` for an empty body.
    dash_bytes_is_zero: bool,
    resolution_ns: u64,
    cache: TimeCache,
}

impl PatternParser {
    pub(super) fn new(
        name: &'static str,
        pattern: Pattern,
        logged_at_completion: bool,
        dash_bytes_is_zero: bool,
    ) -> Self {
        let resolution_ns = if pattern.has(Var::Msec) {
            1_000_000
        } else {
            NS_PER_S
        };
        PatternParser {
            name,
            pattern,
            logged_at_completion,
            dash_bytes_is_zero,
            resolution_ns,
            cache: TimeCache::default(),
        }
    }

    fn logged_time_ns(&self, values: &Values<'_>) -> Result<u64, String> {
        if let Some(msec) = values.get(Var::Msec) {
            return decimal_ns(msec, NS_PER_S)
                .ok_or_else(|| format!("msec {} is not seconds.millis", quoted(msec)));
        }
        if let Some(time) = values.get(Var::TimeLocal) {
            return self.cache.get(time, clf_ns);
        }
        if let Some(time) = values.get(Var::TimeIso8601) {
            return self.cache.get(time, |t| iso8601_ns(t).map(|(ns, _)| ns));
        }
        Err("the log format has no time".to_owned())
    }

    fn bytes(&self, values: &Values<'_>) -> Result<Option<u64>, String> {
        let (text, field) = match (values.get(Var::BodyBytesSent), values.get(Var::BytesSent)) {
            (Some(text), _) => (text, "body_bytes_sent"),
            (None, Some(text)) => (text, "bytes_sent"),
            (None, None) => return Ok(None),
        };
        if text == b"-" && self.dash_bytes_is_zero {
            return Ok(Some(0));
        }
        count(text, field)
    }
}

fn method_and_target(values: &Values<'_>) -> Result<(String, String), String> {
    if let Some(raw) = values.get(Var::Request) {
        return request(raw);
    }
    let method = method(&unescape(values.get(Var::RequestMethod).unwrap_or(b"-")))?;
    if let Some(uri) = values.get(Var::RequestUri) {
        return Ok((method, target(&unescape(uri))?));
    }
    let (path, args) = match (values.get(Var::UriArgs), values.get(Var::Uri)) {
        (Some(both), _) => match both.iter().position(|&b| b == b'?') {
            Some(mark) => (&both[..mark], &both[mark + 1..]),
            None => (both, &[][..]),
        },
        (None, Some(uri)) => (uri, values.get(Var::Args).unwrap_or_default()),
        (None, None) => return Err("the log format has no request uri".to_owned()),
    };
    let path_text = unescape(path);
    if path_text.first() != Some(&b'/') {
        return Err(format!("uri {} is not a path", quoted(path)));
    }
    let mut target = encode_path(&path_text);
    if !args.is_empty() && args != b"-" {
        target.push('?');
        target.push_str(&query(&unescape(args))?);
    }
    Ok((method, target))
}

/// `$request_time`, else the sum of `$upstream_response_time`'s list (`0.010, 0.002`
/// after a retry; `-` for an upstream never reached).
fn latency_ns(values: &Values<'_>) -> Result<Option<u64>, String> {
    if let Some(text) = values.get(Var::RequestTime) {
        return seconds_ns(text, "request_time");
    }
    let Some(list) = values.get(Var::UpstreamResponseTime) else {
        return Ok(None);
    };
    let mut total_ns = None;
    let parts = list.split(|&b| matches!(b, b',' | b':' | b' '));
    for part in parts.filter(|part| !part.is_empty()) {
        if let Some(ns) = seconds_ns(part, "upstream_response_time")? {
            total_ns = Some(total_ns.unwrap_or(0) + ns);
        }
    }
    Ok(total_ns)
}

impl LineParser for PatternParser {
    fn parse_line(&self, line: &str) -> Result<Option<LoggedRequest>, String> {
        let line = trim_end(line);
        if line.is_empty() {
            return Ok(None);
        }
        let values = self.pattern.match_line(line)?;
        let (method, target) = method_and_target(&values)?;
        let latency_ns = latency_ns(&values)?;
        let logged_ns = self.logged_time_ns(&values)?;
        let time_unix_ns = if self.logged_at_completion {
            logged_ns.saturating_sub(latency_ns.unwrap_or(0))
        } else {
            logged_ns
        };
        let host = values
            .get(Var::HttpHost)
            .or_else(|| values.get(Var::Host))
            .and_then(logged_text);
        Ok(Some(LoggedRequest {
            time_unix_ns,
            method,
            target,
            host,
            status: values.get(Var::Status).map(status).transpose()?.flatten(),
            bytes: self.bytes(&values)?,
            user_agent: values.get(Var::UserAgent).and_then(logged_text),
            latency_ns,
            line: 0,
            put_back_ns: 0,
        }))
    }

    fn resolution_ns(&self) -> u64 {
        self.resolution_ns
    }

    fn name(&self) -> String {
        self.name.to_owned()
    }
}
