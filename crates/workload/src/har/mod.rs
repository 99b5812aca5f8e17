//! [`har_to_flow`]: a browser's recording (a HAR 1.2 file, DevTools' "Save all as
//! HAR") turned into a flow, the scenarios file of `docs/FLOWS.md`, as TOML text.
//! `loadlab encode -from har` is its command.
//!
//! The steps of reading it:
//! 1. read the file (`read`): every error names the file, the line and the field,
//!    and an input that is not a HAR file is named for what it looks like (`sniff`);
//! 2. sort the entries by start time and choose the steps (`select`): static assets,
//!    the browser's cache, unwanted hosts and followed redirects are left out, and
//!    each request keeps the headers a user wants; with `-base-url`, the steps go
//!    there instead of their recorded origin (`rebase`);
//! 3. propose extractions (`extract`): a value an answer gave that a later request sent
//!    back becomes `{{NAME}}` there and an `extract` of that answer;
//! 4. name the steps (method and last path segment, made unique), check each for its
//!    recorded status, think for the recorded pause before the next request, and
//!    write the file (`render`) under a header comment saying what was left out,
//!    proposed and worth a review (recorded passwords, cookies the jar will lack).

mod extract;
mod json;
mod locate;
mod raw;
mod read;
mod rebase;
mod render;
mod select;
mod sniff;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt as _, HashSet, HashSetExt as _};
use url::Url;

use crate::WorkloadError;
use extract::{BodyKind, Piece, Request, Text, Variable};
use locate::JsonPath;
use read::{Entry, Source};
use rebase::Rebase;
use render::{FlowOut, StepOut};
use select::{HostFilter, LeftOut};

/// Pauses shorter than this between an answer and the next request are the page's
/// own work (scripts chaining requests), not a user thinking: no `think`.
pub const MIN_THINK_MS: f64 = 250.0;

/// Longer pauses are capped: a user away for hours (a tab left open overnight, a
/// clock jump in the recording) is not a think time a load test wants.
pub const MAX_THINK_MS: f64 = 300_000.0;

/// What `-from har` was asked for.
#[derive(Debug, Clone, Default)]
pub struct HarOptions {
    /// The input's name in errors and in the header comment (a file, or `stdin`).
    pub source_name: String,
    /// The scenario's name (`-name`); the file's name without its extension when
    /// `None`.
    pub name: Option<String>,
    /// Keep static assets (`-har-keep-static`).
    pub keep_static: bool,
    /// Keep only entries to these hosts (`-har-host`, `HOST` or `HOST:PORT`).
    pub hosts: Vec<String>,
    /// Leave out entries to these hosts (`-har-skip-host`).
    pub skip_hosts: Vec<String>,
    /// Request headers to keep although the rule drops them (`-har-keep-header`).
    pub keep_headers: Vec<String>,
    /// Where the steps go instead of their recorded origin (`-base-url`): see
    /// `rebase`'s docs for which origins.
    pub base_url: Option<String>,
}

/// A flow made from a HAR file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarFlow {
    /// The scenarios file, TOML.
    pub toml: String,
    /// Entries in the HAR file.
    pub entries: usize,
    /// Steps of the flow.
    pub steps: usize,
    /// Extractions proposed.
    pub extractions: usize,
}

/// One step: the entry whose request is sent and the entry whose answer comes back
/// (a later one when the step's redirects were followed).
#[derive(Debug, Clone, Copy)]
struct Exchange {
    request: usize,
    answer: usize,
}

/// Entries chosen as steps, and those left out with why.
#[derive(Debug, Default)]
struct Selection {
    steps: Vec<Exchange>,
    left_out: Vec<(LeftOut, usize)>,
}

/// A HAR file's HTTP entries in file order, read with the checks and messages of the
/// import, for `attack -replay` (the access log reader, `access_log::har_entries`).
pub(crate) fn read_entries<'a>(
    text: &'a str,
    source_name: &str,
) -> Result<Vec<Entry<'a>>, WorkloadError> {
    // Some Windows tools write a byte order mark; JSON has none.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let source = Source {
        name: source_name,
        text,
    };
    Ok(source.read()?.entries)
}

/// Turns HAR text into a flow; see the module docs.
pub fn har_to_flow(text: &str, options: &HarOptions) -> Result<HarFlow, WorkloadError> {
    let rebase = match &options.base_url {
        Some(text) => Some(Rebase::parse(text).map_err(|reason| WorkloadError::Field {
            label: "-base-url".to_owned(),
            reason,
        })?),
        None => None,
    };
    // Some Windows tools write a byte order mark; JSON has none.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let source = Source {
        name: &options.source_name,
        text,
    };
    let har = source.read()?;
    let entry_count = har.entries.len() + har.other_schemes.len();
    let mut entries = har.entries;
    // HAR orders entries by start "usually"; a flow must. The check first: a sort
    // allocates a scratch copy of the entries even when they are in order.
    let by_start = |a: &Entry<'_>, b: &Entry<'_>| a.started_ms.total_cmp(&b.started_ms);
    if !entries.is_sorted_by(|a, b| by_start(a, b).is_le()) {
        entries.sort_by(by_start);
    }
    let selection = select_steps(&entries, options, rebase.as_ref());
    if selection.steps.is_empty() {
        let reason = format!(
            "every entry was left out ({}): -har-keep-static keeps static assets, \
             -har-host and -har-skip-host choose hosts (here: {})",
            left_out_counts(&selection.left_out, &har.other_schemes),
            host_labels(&entries).join(", ")
        );
        return Err(source.fail(&JsonPath::default().key("log").key("entries"), reason));
    }
    let mut requests: Vec<Request<'_>> = selection
        .steps
        .iter()
        .map(|x| step_request(&entries[x.request], &options.keep_headers, rebase.as_ref()))
        .collect();
    let answers: Vec<&Entry<'_>> = selection.steps.iter().map(|x| &entries[x.answer]).collect();
    let variables = extract::propose(&mut requests, &answers);
    let names = step_names(&requests, &variables);
    let header = Header {
        source_name: &options.source_name,
        creator: har.creator.as_deref(),
        entries: &entries,
        entry_count,
        selection: &selection,
        other_schemes: &har.other_schemes,
        variables: &variables,
        names: &names,
        notes: review_notes(&selection.steps, &entries, &requests, &names),
        rebase: rebase.as_ref(),
        chose_hosts: !options.hosts.is_empty(),
    };
    let flow = FlowOut {
        header: header.paragraphs(),
        name: scenario_name(options),
    };
    let mut toml = render::flow(&flow, selection.steps.len());
    write_steps(
        &mut toml,
        &selection.steps,
        &entries,
        &requests,
        &variables,
        &names,
    );
    let flow = HarFlow {
        toml,
        entries: entry_count,
        steps: selection.steps.len(),
        extractions: variables.len(),
    };
    drop_aside((variables, names));
    Ok(flow)
}

/// Drops `value` on a thread of its own: a long recording's variables, names and
/// values are hundreds of thousands of small strings, and freeing them took a tenth
/// of the import (glibc's free merges chunks as it goes). Dropped here when no
/// thread can be started.
pub(super) fn drop_aside<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("har-drop".to_owned())
        .spawn(move || drop(value));
}

/// Chooses the steps (see `select`'s docs); when rebased without `-har-host`, only
/// those to the main origin (see `rebase`'s docs).
fn select_steps(entries: &[Entry<'_>], options: &HarOptions, rebase: Option<&Rebase>) -> Selection {
    let hosts = HostFilter {
        only: &options.hosts,
        skip: &options.skip_hosts,
        origin: None,
    };
    let selection = select_with(entries, options, &hosts);
    if rebase.is_none() || !options.hosts.is_empty() {
        return selection;
    }
    let steps = selection.steps.iter().map(|x| &entries[x.request]);
    match rebase::main_origin(steps) {
        Some(main) => select_with(
            entries,
            options,
            &HostFilter {
                origin: Some(&main),
                ..hosts
            },
        ),
        None => selection,
    }
}

fn select_with(entries: &[Entry<'_>], options: &HarOptions, hosts: &HostFilter<'_>) -> Selection {
    let mut selection = Selection::default();
    for (i, entry) in entries.iter().enumerate() {
        // A followed redirect first: the engine follows it whatever the filters say.
        if let Some(last) = selection.steps.last_mut()
            && select::follows_redirect(&entries[last.answer], entry)
        {
            last.answer = i;
            selection.left_out.push((LeftOut::Redirect, i));
            continue;
        }
        let left_out = if entry.from_cache {
            Some(LeftOut::Cached)
        } else if !hosts.keeps(&entry.url) {
            Some(LeftOut::Host)
        } else if !options.keep_static && select::is_static(entry) {
            Some(LeftOut::Static)
        } else {
            None
        };
        match left_out {
            Some(why) => selection.left_out.push((why, i)),
            None => selection.steps.push(Exchange {
                request: i,
                answer: i,
            }),
        }
    }
    selection
}

/// A step's request with the headers it keeps, in parts for the extractions.
fn step_request<'e>(
    entry: &'e Entry<'_>,
    keep_headers: &[String],
    rebase: Option<&'e Rebase>,
) -> Request<'e> {
    let mut headers: Vec<(&str, Text<'_>)> = entry
        .headers
        .iter()
        .filter(|(name, _)| select::keeps_header(name, keep_headers))
        .map(|(name, value)| {
            let value = match rebase {
                Some(rebase) => rebase.header_value(name, value, &entry.url),
                None => value,
            };
            (name.as_ref(), Text::literal(value))
        })
        .collect();
    let content_type = entry
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        .map(|(_, value)| value.as_ref());
    // Some tools keep the body's type in postData only; the server needs the header.
    if entry.body.is_some()
        && content_type.is_none()
        && let Some(mime) = &entry.body_mime
        && !mime.is_empty()
    {
        headers.push(("Content-Type", Text::literal(mime)));
    }
    let mime = read::bare_mime(content_type.or(entry.body_mime.as_deref()).unwrap_or(""));
    let body_kind = match entry.body.as_deref() {
        _ if contains_ignore_case(&mime, "json") => BodyKind::Json,
        _ if mime.eq_ignore_ascii_case("application/x-www-form-urlencoded") => BodyKind::Form,
        Some(b) if b.trim_start().starts_with(['{', '[']) => BodyKind::Json,
        _ => BodyKind::Other,
    };
    Request {
        method: &entry.method,
        base: match rebase {
            Some(rebase) => &rebase.prefix,
            None => &entry.url[..url::Position::BeforePath],
        },
        path: Text::literal(entry.url.path()),
        query: entry.url.query().map(Text::literal),
        headers,
        body: entry.body.as_deref().map(Text::literal),
        body_kind,
    }
}

/// The request in vegeta's http target syntax, placeholders written in, onto the end
/// of `text`.
fn push_target_text(text: &mut String, request: &Request<'_>, variables: &[Variable]) {
    text.push_str(request.method);
    text.push(' ');
    text.push_str(request.base);
    request.path.render_into(text, variables);
    if let Some(query) = &request.query {
        text.push('?');
        query.render_into(text, variables);
    }
    for (name, value) in &request.headers {
        text.push('\n');
        text.push_str(name);
        text.push_str(": ");
        value.render_into(text, variables);
    }
}

/// Each step's name: its method and last path segment (`GET items`); an id segment
/// (a number, a hex or UUID string, a variable) shows with the segment before it and
/// in braces (`GET items/{item_id}`). Repeats get ` 2`, ` 3`.
fn step_names(requests: &[Request<'_>], variables: &[Variable]) -> Vec<Arc<str>> {
    let mut names: Vec<Arc<str>> = Vec::with_capacity(requests.len());
    // The names themselves, shared: one string per step.
    let mut taken: HashSet<Arc<str>> = HashSet::with_capacity(requests.len());
    let mut seen: HashMap<String, usize> = HashMap::new();
    let (mut path, mut base, mut numbered) = (String::new(), String::new(), String::new());
    let mut number = |base: &str, count: usize| {
        numbered.clear();
        let _ = write!(numbered, "{base} {count}");
        Arc::<str>::from(numbered.as_str())
    };
    for request in requests {
        path.clear();
        request.path.render_into(&mut path, variables);
        base.clear();
        base.push_str(request.method);
        base.push(' ');
        push_path_label(&mut base, &path);
        let count = match seen.get_mut(&base) {
            Some(count) => count,
            None => seen.entry(base.clone()).or_insert(0),
        };
        *count += 1;
        let mut name = if *count == 1 {
            Arc::from(base.as_str())
        } else {
            number(&base, *count)
        };
        // `2` may have been a real segment (`GET page 2`): count on.
        while !taken.insert(Arc::clone(&name)) {
            *count += 1;
            name = number(&base, *count);
        }
        names.push(name);
    }
    names
}

/// The part of a path a step is named by, onto the end of `out`.
fn push_path_label(out: &mut String, path: &str) {
    let start = out.len();
    // A colon would read as `if = "step: check"`'s separator; keep names short.
    let mut room = 60_usize;
    let mut push = |text: &str| {
        for c in text.chars().filter(|c| *c != ':' && !c.is_control()) {
            if room == 0 {
                return;
            }
            out.push(c);
            room -= 1;
        }
    };
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    match segments.next_back() {
        None => push("/"),
        Some(last) if !is_id_segment(last) => push(last),
        Some(last) => {
            if let Some(before) = segments.next_back() {
                push(before);
                push("/");
            }
            push(&id_label(last));
        }
    }
    if out.len() == start {
        out.push('/');
    }
}

fn is_id_segment(segment: &str) -> bool {
    let hexish = segment.len() >= 8
        && segment.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
        && segment.chars().any(|c| c.is_ascii_digit());
    segment.contains("{{") || segment.bytes().all(|b| b.is_ascii_digit()) || hexish
}

fn id_label(segment: &str) -> Cow<'static, str> {
    if segment.contains("{{") {
        Cow::Owned(segment.replace("{{", "{").replace("}}", "}"))
    } else {
        Cow::Borrowed("{id}")
    }
}

/// The steps as written (request, body, extractions, check, think), onto the end of
/// `text`, one at a time through the same scratch strings.
fn write_steps(
    text: &mut String,
    steps: &[Exchange],
    entries: &[Entry<'_>],
    requests: &[Request<'_>],
    variables: &[Variable],
    names: &[Arc<str>],
) {
    let mut extracted: Vec<Vec<(&str, &str)>> = vec![Vec::new(); steps.len()];
    for variable in variables {
        extracted[variable.step].push((&variable.name, &variable.expression));
    }
    let (mut request, mut body) = (String::new(), String::new());
    for (i, exchange) in steps.iter().enumerate() {
        let answer = &entries[exchange.answer];
        let next_start = steps
            .get(i + 1)
            .map(|next| entries[next.request].started_ms);
        request.clear();
        push_target_text(&mut request, &requests[i], variables);
        body.clear();
        if let Some(text) = &requests[i].body {
            text.render_into(&mut body, variables);
        }
        let think = next_start.and_then(|start| think(answer, start));
        let step = StepOut {
            name: &names[i],
            request: &request,
            body: requests[i].body.as_ref().map(|_| body.as_str()),
            extract: &extracted[i],
            status: answer.status,
            think: think.as_deref(),
        };
        render::push_step(text, &step);
    }
}

/// The pause from the end of `answer` to the next step's start, in ms.
fn pause_ms(answer: &Entry<'_>, next_start_ms: f64) -> f64 {
    next_start_ms - (answer.started_ms + answer.time_ms)
}

/// The pause from the end of `answer` to the next step's start, when it is a user's,
/// at most [`MAX_THINK_MS`].
fn think(answer: &Entry<'_>, next_start_ms: f64) -> Option<String> {
    let pause_ms = pause_ms(answer, next_start_ms);
    (pause_ms >= MIN_THINK_MS).then(|| render::think_text(pause_ms.min(MAX_THINK_MS)))
}

fn scenario_name(options: &HarOptions) -> String {
    if let Some(name) = options
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        return name.to_owned();
    }
    let stem = Path::new(&options.source_name)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    match stem {
        "" | "stdin" | "-" => "har".to_owned(),
        stem => stem.to_owned(),
    }
}

/// What a person should look at before running the flow.
fn review_notes(
    steps: &[Exchange],
    entries: &[Entry<'_>],
    requests: &[Request<'_>],
    names: &[Arc<str>],
) -> Vec<String> {
    let mut notes = Vec::new();
    let mut jar: HashSet<&str> = HashSet::new();
    for (i, exchange) in steps.iter().enumerate() {
        let (sent, answer) = (&entries[exchange.request], &entries[exchange.answer]);
        let name = &names[i];
        let missing: Vec<&str> = sent_cookie_names(sent)
            .into_iter()
            .filter(|c| !jar.contains(c))
            .collect();
        if !missing.is_empty() {
            notes.push(format!(
                "\"{name}\" sends cookies no earlier answer of the recording set ({}): a \
                 user's jar will not have them (record from a logged-out start, or add a \
                 scenario `headers` line)",
                missing.join(", ")
            ));
        }
        jar.extend(set_cookie_names(sent));
        jar.extend(set_cookie_names(answer));
        notes.extend(secret_notes(&requests[i], name));
        if has_literal_braces(&requests[i]) {
            notes.push(format!(
                "\"{name}\" holds a recorded `{{{{`, written `{{{{\"{{{{\"}}}}` (a literal, not a placeholder)"
            ));
        }
        if answer.status == 0 {
            notes.push(format!(
                "\"{name}\" got no answer in the recording (status 0): it has no check"
            ));
        }
        let pause_ms = steps.get(i + 1).map_or(0.0, |next| {
            pause_ms(answer, entries[next.request].started_ms)
        });
        if pause_ms > MAX_THINK_MS {
            notes.push(format!(
                "\"{name}\" thinks {}, not the {:.2}s recorded (longer pauses are capped)",
                render::think_text(MAX_THINK_MS),
                pause_ms / 1000.0
            ));
        }
    }
    notes
}

fn sent_cookie_names<'e>(entry: &'e Entry<'_>) -> Vec<&'e str> {
    let mut names: Vec<&str> = entry.sent_cookies.iter().map(AsRef::as_ref).collect();
    for (name, value) in &entry.headers {
        if name.eq_ignore_ascii_case("cookie") {
            for pair in value.split(';') {
                let cookie = pair.split('=').next().unwrap_or_default().trim();
                if !cookie.is_empty() && !names.contains(&cookie) {
                    names.push(cookie);
                }
            }
        }
    }
    names
}

fn set_cookie_names<'e>(entry: &'e Entry<'_>) -> Vec<&'e str> {
    let mut names: Vec<&str> = entry.set_cookies.iter().map(AsRef::as_ref).collect();
    for (name, value) in &entry.response_headers {
        if name.eq_ignore_ascii_case("set-cookie") {
            // Firefox joins several Set-Cookie lines in one value, one per line.
            for line in value.lines() {
                let cookie = line.split('=').next().unwrap_or_default().trim();
                if !cookie.is_empty() {
                    names.push(cookie);
                }
            }
        }
    }
    names
}

/// Key names whose values are secrets.
const SECRET_WORDS: &[&str] = &["password", "passwd", "pwd", "secret", "passphrase"];

/// Headers that carry credentials.
const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
];

/// Recorded credentials the flow would send as they are.
fn secret_notes(request: &Request<'_>, name: &str) -> Vec<String> {
    let mut notes = Vec::new();
    for (header, value) in &request.headers {
        if CREDENTIAL_HEADERS
            .iter()
            .any(|credential| header.eq_ignore_ascii_case(credential))
            && !value.has_variables()
        {
            notes.push(format!(
                "\"{name}\" sends the recorded {header} header as it is"
            ));
        }
    }
    for (place, text) in [("query", &request.query), ("body", &request.body)] {
        let Some(text) = text else {
            continue;
        };
        let holds = |word: &str| literals(text).any(|piece| contains_ignore_case(piece, word));
        if let Some(word) = SECRET_WORDS.iter().find(|word| holds(word)) {
            notes.push(format!(
                "\"{name}\" sends a recorded {word} in its {place}: a data file keeps it out \
                 of this file (`data = \"users.csv\"` and `{{{{csv.{word}}}}}`)"
            ));
        }
    }
    notes
}

/// The recorded pieces of `text` (a step is read for secrets and braces, piece by
/// piece: no word sought spans a variable).
fn literals<'a>(text: &Text<'a>) -> impl Iterator<Item = &'a str> {
    text.0.iter().filter_map(|piece| match piece {
        Piece::Literal(text) => Some(*text),
        Piece::Var(_) => None,
    })
}

/// Whether `text` holds `word` (lowercase ASCII), in any case.
fn contains_ignore_case(text: &str, word: &str) -> bool {
    text.as_bytes()
        .windows(word.len())
        .any(|window| window.eq_ignore_ascii_case(word.as_bytes()))
}

fn has_literal_braces(request: &Request<'_>) -> bool {
    let texts = [
        Some(&request.path),
        request.query.as_ref(),
        request.body.as_ref(),
    ];
    texts
        .into_iter()
        .flatten()
        .chain(request.headers.iter().map(|(_, v)| v))
        .any(|text| literals(text).any(|piece| piece.contains("{{")))
}

/// Each host of the entries, once, in order of first appearance.
fn host_labels(entries: &[Entry<'_>]) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    for entry in entries {
        let label = select::host_label(&entry.url);
        if !hosts.contains(&label) {
            hosts.push(label);
        }
    }
    hosts
}

/// `3 static assets, 1 from the browser's cache, ...`.
fn left_out_counts(left_out: &[(LeftOut, usize)], other_schemes: &[String]) -> String {
    let mut counts: BTreeMap<LeftOut, usize> = BTreeMap::new();
    for (why, _) in left_out {
        *counts.entry(*why).or_insert(0) += 1;
    }
    let mut parts: Vec<String> = counts
        .iter()
        .map(|(why, n)| left_out_phrase(*why, *n))
        .collect();
    if !other_schemes.is_empty() {
        parts.push(not_http_phrase(other_schemes));
    }
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join(", ")
    }
}

/// `3 static assets`, `1 to other hosts`, ...
fn left_out_phrase(why: LeftOut, n: usize) -> String {
    match why {
        LeftOut::Static => plural(n, "static asset", "static assets"),
        LeftOut::Cached => format!("{n} from the browser's cache"),
        LeftOut::Host => format!("{n} to other hosts"),
        LeftOut::Redirect => plural(n, "followed redirect", "followed redirects"),
    }
}

/// `2 not HTTP (data, wss)`.
fn not_http_phrase(schemes: &[String]) -> String {
    let mut distinct = schemes.to_vec();
    distinct.sort();
    distinct.dedup();
    format!("{} not HTTP ({})", schemes.len(), distinct.join(", "))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Extractions the header comment lists at most.
const MAX_LISTED_EXTRACTIONS: usize = 40;
/// Uses of one extraction the header comment lists at most (a token goes into every
/// request of a long recording).
const MAX_LISTED_USES: usize = 5;
/// Review notes the header comment lists at most.
const MAX_LISTED_NOTES: usize = 40;

/// What the header comment says.
struct Header<'a> {
    source_name: &'a str,
    creator: Option<&'a str>,
    entries: &'a [Entry<'a>],
    entry_count: usize,
    selection: &'a Selection,
    other_schemes: &'a [String],
    variables: &'a [Variable],
    names: &'a [Arc<str>],
    notes: Vec<String>,
    rebase: Option<&'a Rebase>,
    /// `-har-host` was given (with `-base-url`, every host it keeps is rebased).
    chose_hosts: bool,
}

impl Header<'_> {
    fn paragraphs(&self) -> Vec<String> {
        let made_by = match self.creator {
            Some(creator) => format!(" (recorded by {creator})"),
            None => String::new(),
        };
        let mut out = vec![
            format!(
                "A flow from {}{made_by}, made by `loadlab encode -from har`. A starting \
                 point: review it, then set the load at the end of this comment.",
                self.source_name
            ),
            String::new(),
            format!(
                "Steps: {} of the {} entries, in the order they started.",
                self.selection.steps.len(),
                self.entry_count
            ),
        ];
        if !self.selection.left_out.is_empty() || !self.other_schemes.is_empty() {
            out.push(format!("Left out: {}.", self.left_out_detail()));
        }
        out.push(format!(
            "Hosts: {}; -har-host and -har-skip-host choose.",
            self.hosts()
        ));
        out.extend(self.rebased());
        out.push(
            "Headers: as recorded, less those the engine and the cookie jar write (Host, \
             Content-Length, Cookie, HTTP/2's), Accept-Encoding, and the browser's own \
             (User-Agent, Accept-Language, Referer, caching, Sec-*); -har-keep-header NAME \
             keeps one."
                .to_owned(),
        );
        out.push(format!(
            "Think times: the recorded pause from each answer to the next request, to 0.1 s \
             (whole seconds from 10 s), at most {} s; pauses under {MIN_THINK_MS} ms are \
             the page's own work and left out. Cookies: left to each user's jar. Checks: the recorded \
             status.",
            MAX_THINK_MS / 1000.0
        ));
        out.extend(self.extractions());
        if !self.notes.is_empty() {
            out.push("Review:".to_owned());
            let listed = self.notes.iter().take(MAX_LISTED_NOTES);
            out.extend(listed.map(|note| format!("  {note}")));
            if self.notes.len() > MAX_LISTED_NOTES {
                out.push(format!(
                    "  ... and {} more.",
                    self.notes.len() - MAX_LISTED_NOTES
                ));
            }
        }
        out.push(String::new());
        out.push(
            "The load: one user looping the flow for a minute. For a test, set concurrency \
             (users, closed model) or rate (flows started per second, open model), and \
             duration."
                .to_owned(),
        );
        out
    }

    /// Each kind of entry left out, with a few of their paths.
    fn left_out_detail(&self) -> String {
        let mut parts = Vec::new();
        for why in [
            LeftOut::Static,
            LeftOut::Cached,
            LeftOut::Host,
            LeftOut::Redirect,
        ] {
            let which: Vec<&Entry<'_>> = self
                .selection
                .left_out
                .iter()
                .filter(|(w, _)| *w == why)
                .map(|(_, i)| &self.entries[*i])
                .collect();
            if which.is_empty() {
                continue;
            }
            let count = left_out_phrase(why, which.len());
            let mut examples: Vec<String> = Vec::new();
            for entry in &which {
                let example = match why {
                    LeftOut::Host => select::host_label(&entry.url),
                    _ => entry.url.path().to_owned(),
                };
                if !examples.contains(&example) {
                    examples.push(example);
                }
                if examples.len() > 4 {
                    break; // enough to say "..."
                }
            }
            let more = if examples.len() > 4 { ", ..." } else { "" };
            examples.truncate(4);
            let hint = match why {
                LeftOut::Static => "; -har-keep-static keeps them",
                LeftOut::Redirect => "; the engine follows redirects itself",
                _ => "",
            };
            parts.push(format!("{count} ({}{more}{hint})", examples.join(", ")));
        }
        if !self.other_schemes.is_empty() {
            parts.push(not_http_phrase(self.other_schemes));
        }
        parts.join("; ")
    }

    /// Where `-base-url` sends the steps, and instead of which origins.
    fn rebased(&self) -> Option<String> {
        let rebase = self.rebase?;
        let mut origins: Vec<String> = Vec::new();
        for step in &self.selection.steps {
            let origin = self.entries[step.request]
                .url
                .origin()
                .ascii_serialization();
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        let which = if self.chose_hosts {
            "the hosts -har-host keeps"
        } else {
            "the recording's main origin (most steps), other hosts left out"
        };
        Some(format!(
            "Sent to {} (-base-url) instead of {} ({which}): paths after its own, queries as \
             recorded.",
            rebase.prefix,
            origins.join(", ")
        ))
    }

    /// `127.0.0.1:8080 (9 entries, 4 steps)`, in order of first appearance.
    fn hosts(&self) -> String {
        let mut is_step = vec![false; self.entries.len()];
        for step in &self.selection.steps {
            is_step[step.request] = true;
        }
        // Told apart by host and port, as their labels are; a label is made once.
        let mut hosts: Vec<(&Url, usize, usize)> = Vec::new();
        for (entry, &is_step) in self.entries.iter().zip(&is_step) {
            let url = &entry.url;
            let same = |(h, _, _): &&mut (&Url, usize, usize)| {
                h.host_str() == url.host_str() && h.port() == url.port()
            };
            match hosts.iter_mut().find(same) {
                Some((_, seen, steps)) => {
                    *seen += 1;
                    *steps += usize::from(is_step);
                }
                None => hosts.push((url, 1, usize::from(is_step))),
            }
        }
        hosts
            .iter()
            .map(|(url, seen, steps)| {
                format!(
                    "{} ({}, {})",
                    select::host_label(url),
                    plural(*seen, "entry", "entries"),
                    plural(*steps, "step", "steps")
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The proposed extractions, one per line.
    fn extractions(&self) -> Vec<String> {
        if self.variables.is_empty() {
            return vec![
                "Extractions: none proposed (no value of an answer came back in a \
                         later request)."
                    .to_owned(),
            ];
        }
        let mut out = vec![
            "Extractions proposed: a value an answer gave that a later request sent back, \
             now {{NAME}} there (remove an extract and write the value back to undo one):"
                .to_owned(),
        ];
        let mut indexed = false;
        let mut by_step: Vec<&Variable> = self.variables.iter().collect();
        by_step.sort_by_key(|v| v.step);
        for variable in by_step.iter().take(MAX_LISTED_EXTRACTIONS) {
            let mut uses: Vec<String> = variable
                .uses
                .iter()
                .take(MAX_LISTED_USES)
                .map(|(step, place)| format!("\"{}\" ({place})", self.names[*step]))
                .collect();
            if variable.uses.len() > MAX_LISTED_USES {
                uses.push(format!("{} more", variable.uses.len() - MAX_LISTED_USES));
            }
            let mut value: String = variable.value.chars().take(24).collect();
            if value.len() < variable.value.len() {
                value.push_str("...");
            }
            out.push(format!(
                "  {} = \"{}\" of \"{}\" (recorded {value:?}), sent by {}",
                variable.name,
                variable.expression,
                self.names[variable.step],
                uses.join(", ")
            ));
            indexed |= variable
                .expression
                .as_bytes()
                .windows(2)
                .any(|w| w[0] == b'[' && w[1].is_ascii_digit());
        }
        if by_step.len() > MAX_LISTED_EXTRACTIONS {
            out.push(format!(
                "  ... and {} more: each step's extract lists its own.",
                by_step.len() - MAX_LISTED_EXTRACTIONS
            ));
        }
        if indexed {
            out.push(
                "  A JSONPath index ([3]) takes the element the recording took each time; \
                 [*] takes one at random."
                    .to_owned(),
            );
        }
        out
    }
}
