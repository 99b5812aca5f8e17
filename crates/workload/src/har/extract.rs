//! Proposed extractions: a value an answer gave that a later request sent back becomes
//! a variable, `extract`ed from that answer and written `{{NAME}}` in the requests.
//!
//! **Where values come from.** Each step's answer: every string and integer of a JSON
//! body, found again by its JSONPath (`$.token`, `$.items[3].id`), and the values of
//! its headers but the standard ones (`Date`, `Content-Type`, ...: see
//! [`PLAIN_RESPONSE_HEADERS`]), and the cookies it set. Cookies sent back in a `Cookie`
//! header are the jar's and never proposed (the `Cookie` header is not in the flow);
//! a cookie's value sent back elsewhere (a CSRF token copied from its cookie into an
//! `X-XSRF-Token` header) is extracted with `cookie NAME`, from the jar.
//! When several answers gave the same value (a token `1` and an item id `1`), the one
//! whose name fits where the request sends it is taken: the words of its name against
//! the words of the path segment before it (`/items/1` -> an `item` id), the query or
//! form key, the JSON member, or the header's name (`Authorization` fits a `token`,
//! `access` or `session`); on a tie, the first answer, where the client learned it.
//!
//! **Which values count.** A value that could recur by chance would make a wrong
//! proposal, so a value counts when it is:
//! - *a token*: a string of at least [`MIN_TOKEN_CHARS`] characters, without spaces,
//!   not a word like `true` or `null`, not a path or URL, that holds a digit, or is at
//!   least [`LONG_TOKEN_CHARS`] long, or whose name says it is an identifier (below).
//!   A token is found anywhere in a later request (path, query, header value, body) as
//!   long as no letter or digit touches it on either side;
//! - *a short value*: an integer (or an all-digit string) or a string shorter than
//!   [`MIN_TOKEN_CHARS`], when its name says it is an identifier, or an integer of at
//!   least [`MIN_BARE_NUMBER_DIGITS`] digits whatever its name. It counts only as a
//!   whole field of the later request: a path segment (`/items/4`), a query or form
//!   value (`?id=4`), a whole header value or the credentials after its scheme
//!   (`Authorization: Bearer 4`), a JSON scalar of the body (`"id": 4`). So `4` from
//!   `$.items[3].id` is found in `/items/4`, but `count: 20` never is, nor the `4` of
//!   `Chrome/124`.
//!
//! A name says "identifier" when its last word (`accessToken` -> `token`, `x-request-id`
//! -> `id`) is one of [`IDENTIFIER_WORDS`].
//!
//! Values the client had sent itself, in the same exchange or before (a user name typed
//! in a login form and echoed by the answer), are not proposed: the client did not
//! learn them from the server. The check compares whole fields (see above).
//!
//! Bounds, so a huge recording stays quick: at most [`MAX_VALUES_PER_ANSWER`] values
//! are taken from one answer and [`MAX_VALUE_CHARS`] characters per value.

use foldhash::{HashMap, HashSet, HashSetExt as _};
use std::borrow::Cow;
use std::ops::Range;

use std::fmt::{self, Write as _};

use serde_json::Value;

use super::json::Node;
use super::locate::Step;
use super::read::Entry;

/// Shortest string found anywhere in a request.
pub(super) const MIN_TOKEN_CHARS: usize = 4;
/// A string at least this long counts as a token even without a digit.
pub(super) const LONG_TOKEN_CHARS: usize = 12;
/// An integer this long counts whatever its name.
pub(super) const MIN_BARE_NUMBER_DIGITS: usize = 5;
/// Values taken from one answer at most.
pub(super) const MAX_VALUES_PER_ANSWER: usize = 20_000;
/// Longer values are left alone.
pub(super) const MAX_VALUE_CHARS: usize = 4096;

/// Last words of names that say "identifier".
pub(super) const IDENTIFIER_WORDS: &[&str] = &[
    "id", "ids", "uuid", "guid", "token", "key", "session", "sid", "nonce", "csrf", "xsrf", "slug",
    "ref", "cursor", "handle",
];

/// Response headers whose values are never an application's: protocol, caching,
/// security policy, cookies (the jar's).
pub(super) const PLAIN_RESPONSE_HEADERS: &[&str] = &[
    "date",
    "server",
    "content-type",
    "content-length",
    "content-encoding",
    "content-language",
    "content-security-policy",
    "content-disposition",
    "cache-control",
    "expires",
    "last-modified",
    "etag",
    "vary",
    "age",
    "via",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "accept-ranges",
    "set-cookie",
    "location",
    "pragma",
    "alt-svc",
    "strict-transport-security",
    "referrer-policy",
    "permissions-policy",
    "report-to",
    "nel",
    "x-powered-by",
    "x-frame-options",
    "x-content-type-options",
    "x-xss-protection",
];

/// A piece of request text: as recorded (borrowed from the entry), or a variable's
/// placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece<'a> {
    Literal(&'a str),
    /// The index of a [`Variable`].
    Var(usize),
}

/// Request text in pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Text<'a>(pub Vec<Piece<'a>>);

impl<'a> Text<'a> {
    pub fn literal(text: &'a str) -> Text<'a> {
        Text(vec![Piece::Literal(text)])
    }

    /// The text with `{{NAME}}` for each variable, and a recorded `{{` written as the
    /// literal placeholder `{{"{{"}}`.
    #[cfg(test)]
    pub fn render(&self, variables: &[Variable]) -> String {
        let mut out = String::new();
        self.render_into(&mut out, variables);
        out
    }

    /// [`Text::render`] onto the end of `out`.
    pub fn render_into(&self, out: &mut String, variables: &[Variable]) {
        for piece in &self.0 {
            match piece {
                Piece::Literal(text) => {
                    let mut parts = text.split("{{");
                    out.push_str(parts.next().unwrap_or_default());
                    for part in parts {
                        out.push_str("{{\"{{\"}}");
                        out.push_str(part);
                    }
                }
                Piece::Var(index) => {
                    out.push_str("{{");
                    out.push_str(&variables[*index].name);
                    out.push_str("}}");
                }
            }
        }
    }

    /// The text as recorded (only before its rewriting: each step is rewritten once).
    fn recorded(&self) -> &'a str {
        match self.0.as_slice() {
            [Piece::Literal(text)] => text,
            _ => "",
        }
    }

    /// The text with a NUL for each variable: no value holds one, so a field with a
    /// variable in it never counts as sent by the client.
    fn masked(&self) -> Cow<'_, str> {
        match self.0.as_slice() {
            [Piece::Literal(text)] => Cow::Borrowed(text),
            pieces => Cow::Owned(
                pieces
                    .iter()
                    .map(|piece| match piece {
                        Piece::Literal(text) => *text,
                        Piece::Var(_) => "\0",
                    })
                    .collect(),
            ),
        }
    }

    pub fn has_variables(&self) -> bool {
        self.0.iter().any(|piece| matches!(piece, Piece::Var(_)))
    }
}

/// How a body is read for whole fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BodyKind {
    Json,
    Form,
    Other,
}

/// Where in a request a value was found; whole fields are told apart by place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Path,
    Query,
    Header,
    Body(BodyKind),
}

/// A step's request, in the parts a variable may go into. The scheme, host and port
/// never take one (targets may not template them).
#[derive(Debug, Clone)]
pub(super) struct Request<'a> {
    pub method: &'a str,
    /// `scheme://host:port`.
    pub base: &'a str,
    pub path: Text<'a>,
    /// Without its `?`.
    pub query: Option<Text<'a>>,
    pub headers: Vec<(&'a str, Text<'a>)>,
    pub body: Option<Text<'a>>,
    pub body_kind: BodyKind,
}

impl<'a> Request<'a> {
    /// Each text of the request with its place, for reading or rewriting.
    fn texts_mut(&mut self) -> Vec<(Label<'a>, Place, &mut Text<'a>)> {
        let mut texts = Vec::with_capacity(3 + self.headers.len());
        texts.push((Label::Path, Place::Path, &mut self.path));
        if let Some(query) = &mut self.query {
            texts.push((Label::Query, Place::Query, query));
        }
        for (name, value) in &mut self.headers {
            texts.push((Label::Header(name), Place::Header, value));
        }
        if let Some(body) = &mut self.body {
            texts.push((Label::Body, Place::Body(self.body_kind), body));
        }
        texts
    }
}

/// Which text of a request, as [`Variable::uses`] names it: `path`, `query`,
/// `header NAME`, `body`.
#[derive(Debug, Clone, Copy)]
enum Label<'r> {
    Path,
    Query,
    Header(&'r str),
    Body,
}

impl fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Path => f.write_str("path"),
            Label::Query => f.write_str("query"),
            Label::Header(name) => write!(f, "header {name}"),
            Label::Body => f.write_str("body"),
        }
    }
}

/// A proposed variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Variable {
    pub name: String,
    /// The step whose answer it is extracted from.
    pub step: usize,
    /// `json $.token`, `header X-Request-Id`.
    pub expression: String,
    /// The value recorded.
    pub value: String,
    /// Where later steps send it: (step, `path`, `query`, `header NAME`, `body`).
    pub uses: Vec<(usize, String)>,
}

/// How a value must sit in a request to count (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strength {
    /// Anywhere, with no letter or digit touching it.
    Token,
    /// Only as a whole field.
    Field,
}

/// A value an answer gave (the value itself is its key in [`Known::by_value`]).
#[derive(Debug, Clone)]
struct Candidate {
    strength: Strength,
    step: usize,
    expression: String,
    name_hint: String,
}

/// The values answers gave so far, first answer first.
#[derive(Default)]
struct Known {
    candidates: Vec<Candidate>,
    /// Each value's candidates (several answers may give one).
    by_value: HashMap<String, Sources>,
    /// Whether a value of each length (bytes) is known, up to `longest`: asked for
    /// every word of every request.
    lengths: Vec<bool>,
    longest: usize,
    /// The candidate's variable, once a request used it.
    bound: HashMap<usize, usize>,
    names: Names,
}

/// A value's candidates, first answer first: most values come from one answer, and
/// need no vector of their own.
#[derive(Debug)]
struct Sources {
    first: usize,
    more: Vec<usize>,
}

impl Sources {
    fn len(&self) -> usize {
        1 + self.more.len()
    }

    fn iter(&self) -> impl DoubleEndedIterator<Item = usize> + '_ {
        std::iter::once(self.first).chain(self.more.iter().copied())
    }
}

/// Variable names given so far, and the next number to try for each base name (a
/// recording can have thousands of `item_id`s).
#[derive(Default)]
struct Names {
    taken: HashSet<String>,
    next: HashMap<String, usize>,
}

/// Answers a value is remembered from at most (a list of a thousand `"open"` flags
/// should not make a thousand candidates).
const MAX_SOURCES_PER_VALUE: usize = 8;

/// Rewrites `requests` (each step's, with the headers it keeps) with variables for the
/// values `answers` (each step's final answer) gave earlier, and returns them.
pub(super) fn propose(requests: &mut [Request<'_>], answers: &[&Entry<'_>]) -> Vec<Variable> {
    let mut known = Known::default();
    let mut variables: Vec<Variable> = Vec::new();
    let mut client_fields: HashSet<String> = HashSet::new();
    let mut ends = Vec::new();
    for (step, request) in requests.iter_mut().enumerate() {
        rewrite(request, step, &mut known, &mut variables, &mut ends);
        collect_fields(request, &mut client_fields);
        let Some(answer) = answers.get(step) else {
            continue;
        };
        Learning {
            known: &mut known,
            step,
            client_fields: &client_fields,
            offered: 0,
            digits: String::new(),
            expression: String::new(),
        }
        .answer(answer);
    }
    super::drop_aside((known, client_fields));
    variables
}

impl Known {
    /// The candidate of `value` whose name fits `context` best; the first on a tie.
    fn choose(&self, value: &str, context: impl FnOnce() -> Vec<String>) -> Option<usize> {
        let sources = self.by_value.get(value)?;
        if sources.more.is_empty() {
            return Some(sources.first);
        }
        let context = context();
        let score = |id: usize| {
            let hint = with_singulars(words(&self.candidates[id].name_hint));
            hint.iter().filter(|w| context.contains(w)).count()
        };
        // max_by_key keeps the last of equals: go backwards so the first answer wins.
        sources.iter().rev().max_by_key(|id| score(*id))
    }

    /// Where known values sit in `text`, leftmost first, longest first at each place;
    /// non-overlapping. Each is (byte range, the value's first candidate). `ends` is
    /// scratch space, kept between calls.
    fn find(&self, text: &str, place: Place, ends: &mut Vec<usize>) -> Vec<(Range<usize>, usize)> {
        if self.candidates.is_empty() {
            return Vec::new();
        }
        let bytes = text.as_bytes();
        // Values start after a non-word byte and end before one (or at the ends); bytes
        // of non-ASCII characters count as word bytes, so each cut is a char boundary.
        ends.clear();
        ends.extend((1..=bytes.len()).filter(|&e| e == bytes.len() || !is_word_byte(bytes[e])));
        let mut found = Vec::new();
        let mut start = 0;
        while start < bytes.len() {
            if (start == 0 || !is_word_byte(bytes[start - 1]))
                && let Some((end, id)) = self.longest_at(text, start, ends, place)
            {
                found.push((start..end, id));
                start = end;
                continue;
            }
            start += 1;
        }
        found
    }

    /// The longest known value that starts at `start` and sits right for `place`.
    fn longest_at(
        &self,
        text: &str,
        start: usize,
        ends: &[usize],
        place: Place,
    ) -> Option<(usize, usize)> {
        let first = ends.partition_point(|&e| e <= start);
        let last = ends.partition_point(|&e| e <= start + self.longest);
        ends[first..last].iter().rev().find_map(|&end| {
            if !self.lengths.get(end - start).copied().unwrap_or(false) {
                return None;
            }
            let id = self.by_value.get(&text[start..end])?.first;
            sits_right(text, start..end, place, self.candidates[id].strength).then_some((end, id))
        })
    }
}

/// Rewrites one step's request with the known values it sends.
fn rewrite(
    request: &mut Request<'_>,
    step: usize,
    known: &mut Known,
    variables: &mut Vec<Variable>,
    ends: &mut Vec<usize>,
) {
    if known.candidates.is_empty() {
        return;
    }
    for (label, place, text) in request.texts_mut() {
        let found = known.find(text.recorded(), place, ends);
        if found.is_empty() {
            continue;
        }
        // Found values mean the text is still as recorded: one literal, taken whole.
        let recorded = text.recorded();
        let label = label.to_string();
        let mut pieces = Vec::new();
        let mut at = 0;
        for (range, first) in found {
            if range.start > at {
                pieces.push(Piece::Literal(&recorded[at..range.start]));
            }
            let value = &recorded[range.clone()];
            let context = || context_words(recorded, range.start, place, &label);
            let id = known.choose(value, context).unwrap_or(first);
            let var = bind(known, id, value, variables);
            let uses = &mut variables[var].uses;
            // Uses come in step order: only this step's can repeat (a scan of them
            // all made a token every request sends quadratic).
            let this_step = uses.iter().rev().take_while(|(s, _)| *s == step);
            if !this_step.clone().any(|(_, l)| *l == label) {
                uses.push((step, label.clone()));
            }
            pieces.push(Piece::Var(var));
            at = range.end;
        }
        if at < recorded.len() {
            pieces.push(Piece::Literal(&recorded[at..]));
        }
        *text = Text(pieces);
    }
}

/// Words saying what a value at `start` of `text` is, by its place: the path segment
/// before it, its query or form key, its JSON member, its header's name.
fn context_words(text: &str, start: usize, place: Place, label: &str) -> Vec<String> {
    let before = &text[..start];
    let name = match place {
        Place::Path => before
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default(),
        Place::Query | Place::Body(BodyKind::Form) => before
            .strip_suffix('=')
            .and_then(|b| b.rsplit('&').next())
            .unwrap_or_default(),
        Place::Body(_) => json_member_before(before),
        Place::Header => label.strip_prefix("header ").unwrap_or(label),
    };
    let mut context = with_singulars(words(name));
    if place == Place::Header && name.eq_ignore_ascii_case("authorization") {
        // What an Authorization header carries, by the names answers give it.
        context.extend(["token", "access", "auth", "session", "jwt"].map(str::to_owned));
    }
    context
}

/// The member name of a JSON value starting after `before` (`{"order": ` -> `order`).
fn json_member_before(before: &str) -> &str {
    let before = before.trim_end_matches('"').trim_end();
    let Some(before) = before.strip_suffix(':') else {
        return "";
    };
    let before = before.trim_end().strip_suffix('"').unwrap_or_default();
    before.rsplit('"').next().unwrap_or_default()
}

/// `words` with each word's singular added.
fn with_singulars(mut words: Vec<String>) -> Vec<String> {
    let singulars: Vec<String> = words
        .iter()
        .map(|w| singular(w))
        .filter(|w| !words.contains(w))
        .collect();
    words.extend(singulars);
    words
}

/// The variable of candidate `id`, made on its first use.
fn bind(known: &mut Known, id: usize, value: &str, variables: &mut Vec<Variable>) -> usize {
    if let Some(&var) = known.bound.get(&id) {
        return var;
    }
    let candidate = &known.candidates[id];
    let name = known.names.unique(&candidate.name_hint);
    variables.push(Variable {
        name,
        step: candidate.step,
        expression: candidate.expression.clone(),
        value: value.to_owned(),
        uses: Vec::new(),
    });
    known.bound.insert(id, variables.len() - 1);
    variables.len() - 1
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || !byte.is_ascii()
}

/// Whether a value at `range` of `text` counts, by its strength and place.
fn sits_right(text: &str, range: Range<usize>, place: Place, strength: Strength) -> bool {
    let before = text[..range.start].chars().next_back();
    let after = text[range.end..].chars().next();
    let loose = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
    match strength {
        Strength::Token => loose(before) && loose(after),
        Strength::Field => whole_field(text, range.start, before, after, place),
    }
}

/// Whether the value between `before` and `after` is a whole field of its place.
fn whole_field(
    text: &str,
    start: usize,
    before: Option<char>,
    after: Option<char>,
    place: Place,
) -> bool {
    match place {
        Place::Path => before == Some('/') && matches!(after, None | Some('/' | ';')),
        Place::Query | Place::Body(BodyKind::Form) => {
            before == Some('=') && matches!(after, None | Some('&'))
        }
        Place::Header => {
            // The whole value, or the credentials after a one-word scheme (`Bearer 4`).
            let scheme = text[..start].strip_suffix(' ');
            after.is_none()
                && (before.is_none()
                    || scheme.is_some_and(|s| !s.is_empty() && !s.contains(char::is_whitespace)))
        }
        Place::Body(BodyKind::Json) => {
            let opens = matches!(
                before,
                Some('"' | ':' | ',' | '[' | ' ' | '\t' | '\n' | '\r')
            );
            let closes = matches!(
                after,
                None | Some('"' | ',' | '}' | ']' | ' ' | '\t' | '\n' | '\r')
            );
            opens && closes && ((before == Some('"')) == (after == Some('"')))
        }
        Place::Body(BodyKind::Other) => false,
    }
}

/// The whole fields a request sends (see the module docs) but those holding a
/// variable, for "the client knew it".
fn collect_fields(request: &Request<'_>, fields: &mut HashSet<String>) {
    let mut add = |field: &str| {
        if !field.is_empty() && !field.contains('\0') && !fields.contains(field) {
            fields.insert(field.to_owned());
        }
    };
    for segment in request.path.masked().split('/') {
        add(segment);
    }
    if let Some(query) = &request.query {
        form_values(&query.masked()).for_each(&mut add);
    }
    for (_, value) in &request.headers {
        let value = value.masked();
        add(&value);
        if let Some((_, credentials)) = value.split_once(' ') {
            add(credentials);
        }
    }
    let Some(body) = &request.body else {
        return;
    };
    let body = body.masked();
    match request.body_kind {
        BodyKind::Form => form_values(&body).for_each(add),
        BodyKind::Json => match serde_json::from_str::<Value>(&body) {
            Ok(json) => json_scalars(&json, &mut add),
            Err(_) => add(body.trim()),
        },
        BodyKind::Other => add(body.trim()),
    }
}

fn form_values(text: &str) -> impl Iterator<Item = &str> {
    text.split('&')
        .map(|pair| pair.split_once('=').map_or(pair, |(_, value)| value))
}

fn json_scalars(value: &Value, add: &mut impl FnMut(&str)) {
    match value {
        Value::String(text) => add(text),
        Value::Number(number) => add(&number.to_string()),
        Value::Array(items) => items.iter().for_each(|item| json_scalars(item, add)),
        Value::Object(members) => members.values().for_each(|item| json_scalars(item, add)),
        Value::Bool(_) | Value::Null => {}
    }
}

/// Where an answer gave a value; its expression and name are made only for a value
/// that is kept.
#[derive(Clone, Copy)]
enum Origin<'p, 'k> {
    /// The value's JSON path.
    Json(&'p [PathStep<'k>]),
    /// A header's name as recorded.
    Header(&'p str),
    /// A cookie's name.
    Cookie(&'p str),
}

impl Origin<'_, '_> {
    /// The expression, written into `out` (emptied first).
    fn write_expression(self, out: &mut String) {
        out.clear();
        match self {
            Origin::Json(path) => json_expression(out, path),
            Origin::Header(name) => {
                out.push_str("header ");
                out.push_str(name);
            }
            Origin::Cookie(name) => {
                out.push_str("cookie ");
                out.push_str(name);
            }
        }
    }

    fn name_hint(self) -> String {
        match self {
            Origin::Json(path) => json_name_hint(path),
            Origin::Header(name) => {
                let lower = name.to_ascii_lowercase();
                lower.strip_prefix("x-").unwrap_or(&lower).to_owned()
            }
            Origin::Cookie(name) => name.to_owned(),
        }
    }
}

/// One answer's values on their way into [`Known`]: read where they lie in the answer
/// (its JSON body's, then its headers'), kept unless the client had sent them.
struct Learning<'a> {
    known: &'a mut Known,
    step: usize,
    client_fields: &'a HashSet<String>,
    /// Values that counted so far, for [`MAX_VALUES_PER_ANSWER`].
    offered: usize,
    /// An integer's digits, written here rather than in a new string each.
    digits: String,
    /// A value's expression, written here: most values met again are dropped.
    expression: String,
}

impl Learning<'_> {
    /// Every value of `answer` that counts: its JSON body's, then its headers'.
    fn answer(&mut self, answer: &Entry<'_>) {
        if let Some(text) = json_text(answer)
            && let Some(json) = Node::parse(text)
        {
            self.json(&json, &mut Vec::new());
        }
        for (name, value) in &answer.response_headers {
            if name.eq_ignore_ascii_case("set-cookie") {
                self.cookies(value);
            }
            let plain = PLAIN_RESPONSE_HEADERS
                .iter()
                .any(|plain| name.eq_ignore_ascii_case(plain));
            if plain || self.offered >= MAX_VALUES_PER_ANSWER {
                continue;
            }
            if let Some(strength) = strength(value, name, false) {
                self.offer(value, strength, Origin::Header(name));
            }
        }
    }

    /// The cookies of a `Set-Cookie` value (Firefox puts several in one, a line each).
    fn cookies(&mut self, header: &str) {
        for line in header.lines() {
            let Some(pair) = line.split(';').next() else {
                continue;
            };
            let Some((name, value)) = pair.split_once('=') else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim().trim_matches('"'));
            if let Some(strength) = strength(value, name, false) {
                self.offer(value, strength, Origin::Cookie(name));
            }
        }
    }

    /// Every string and integer under `node` that counts, with its JSONPath.
    fn json<'k>(&mut self, node: &'k Node<'_>, path: &mut Vec<PathStep<'k>>) {
        if self.offered >= MAX_VALUES_PER_ANSWER {
            return;
        }
        match node {
            Node::Str(text) => self.scalar(text, false, path),
            Node::Uint(number) => {
                let mut digits = std::mem::take(&mut self.digits);
                digits.clear();
                let _ = write!(digits, "{number}");
                self.scalar(&digits, true, path);
                self.digits = digits;
            }
            Node::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(PathStep::Index(i));
                    self.json(item, path);
                    path.pop();
                }
            }
            Node::Object(members) => {
                for (name, item) in members {
                    path.push(PathStep::Key(name));
                    self.json(item, path);
                    path.pop();
                }
            }
            Node::Other => {}
        }
    }

    /// A string or integer at `path`, named by its last key.
    fn scalar(&mut self, text: &str, is_number: bool, path: &[PathStep<'_>]) {
        let key = path.iter().rev().find_map(|s| match s {
            PathStep::Key(key) => Some(*key),
            PathStep::Index(_) => None,
        });
        if let Some(strength) = strength(text, key.unwrap_or_default(), is_number) {
            self.offer(text, strength, Origin::Json(path));
        }
    }

    /// Remembers `value`, unless the client had sent it, or it is already known from
    /// this place of an earlier answer (the first is it), or from enough answers.
    fn offer(&mut self, value: &str, strength: Strength, origin: Origin<'_, '_>) {
        self.offered += 1;
        if self.client_fields.contains(value) {
            return;
        }
        let known = &mut *self.known;
        let id = known.candidates.len();
        let expression = &mut self.expression;
        match known.by_value.get_mut(value) {
            Some(sources) => {
                if sources.len() >= MAX_SOURCES_PER_VALUE {
                    return;
                }
                origin.write_expression(expression);
                if sources
                    .iter()
                    .any(|other| known.candidates[other].expression == *expression)
                {
                    return;
                }
                sources.more.push(id);
            }
            None => {
                let sources = Sources {
                    first: id,
                    more: Vec::new(),
                };
                known.by_value.insert(value.to_owned(), sources);
                origin.write_expression(expression);
            }
        }
        if known.lengths.len() <= value.len() {
            known.lengths.resize(value.len() + 1, false);
        }
        known.lengths[value.len()] = true;
        known.longest = known.longest.max(value.len());
        known.candidates.push(Candidate {
            strength,
            step: self.step,
            expression: expression.clone(),
            name_hint: origin.name_hint(),
        });
    }
}

/// The answer's body when it may be JSON.
fn json_text<'e>(answer: &'e Entry<'_>) -> Option<&'e str> {
    let text = answer.response_text.as_deref()?.trim_start();
    let looks_json = answer.response_mime.contains("json") || text.starts_with(['{', '[']);
    looks_json.then_some(text)
}

/// Whether a value counts, and how (see the module docs). `name` is its JSON member's
/// or header's name.
fn strength(value: &str, name: &str, is_number: bool) -> Option<Strength> {
    let chars = value.chars().count();
    if value.is_empty()
        || chars > MAX_VALUE_CHARS
        || value.chars().any(|c| c.is_whitespace() || c.is_control())
        || value.starts_with('/')
        || value.contains("://")
        || ["true", "false", "null", "undefined", "none", "nan"]
            .iter()
            .any(|word| value.eq_ignore_ascii_case(word))
    {
        return None;
    }
    let identifier = names_identifier(name);
    let numeric = is_number || value.bytes().all(|b| b.is_ascii_digit());
    if numeric {
        return (identifier || value.len() >= MIN_BARE_NUMBER_DIGITS).then_some(Strength::Field);
    }
    if chars < MIN_TOKEN_CHARS {
        return identifier.then_some(Strength::Field);
    }
    let tokenish = value.bytes().any(|b| b.is_ascii_digit()) || chars >= LONG_TOKEN_CHARS;
    (tokenish || identifier).then_some(Strength::Token)
}

/// Whether a name's last word is one of [`IDENTIFIER_WORDS`].
fn names_identifier(name: &str) -> bool {
    last_word(name).is_some_and(|last| {
        let lower = || last.chars().flat_map(char::to_lowercase);
        IDENTIFIER_WORDS.iter().any(|word| lower().eq(word.chars()))
    })
}

/// The last of [`words`], as it is written in `name` (not lowercased): a value's
/// name is read for every value of every answer.
fn last_word(name: &str) -> Option<&str> {
    let mut last = None;
    let mut start: Option<usize> = None;
    let mut previous_lower = false;
    for (at, c) in name.char_indices() {
        if !c.is_alphanumeric() {
            previous_lower = false;
            if let Some(from) = start.take() {
                last = Some(&name[from..at]);
            }
            continue;
        }
        match start {
            Some(from) if c.is_uppercase() && previous_lower => {
                last = Some(&name[from..at]);
                start = Some(at);
            }
            Some(_) => {}
            None => start = Some(at),
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
    }
    match start {
        Some(from) => Some(&name[from..]),
        None => last,
    }
}

/// `accessToken`, `access_token`, `Access-Token` -> `access`, `token`.
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            previous_lower = false;
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            continue;
        }
        if c.is_uppercase() && previous_lower && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// A step of a value's JSON path, its key borrowed from the answer.
#[derive(Debug, Clone, Copy)]
enum PathStep<'k> {
    Key(&'k str),
    Index(usize),
}

/// A path step as [`json_expression`] and [`json_name_hint`] read it: an answer's
/// borrowed one, or `locate`'s.
trait AsPathStep {
    fn as_step(&self) -> PathStep<'_>;
}

impl AsPathStep for PathStep<'_> {
    fn as_step(&self) -> PathStep<'_> {
        *self
    }
}

impl AsPathStep for Step {
    fn as_step(&self) -> PathStep<'_> {
        match self {
            Step::Key(key) => PathStep::Key(key),
            Step::Index(index) => PathStep::Index(*index),
        }
    }
}

/// `json $.items[3].id` onto the end of `out`; a JSON pointer (`json /a'b/0`) when a
/// key cannot be written in the JSONPath subset (it holds a quote or a backslash).
fn json_expression(out: &mut String, path: &[impl AsPathStep]) {
    let awkward = path
        .iter()
        .any(|s| matches!(s.as_step(), PathStep::Key(k) if k.contains(['\'', '\\'])));
    if awkward {
        out.push_str("json ");
        for step in path {
            let _ = match step.as_step() {
                PathStep::Key(k) => write!(out, "/{}", k.replace('~', "~0").replace('/', "~1")),
                PathStep::Index(i) => write!(out, "/{i}"),
            };
        }
        return;
    }
    out.push_str("json $");
    for step in path {
        let _ = match step.as_step() {
            PathStep::Key(key) if is_identifier(key) => write!(out, ".{key}"),
            PathStep::Key(key) => write!(out, "['{key}']"),
            PathStep::Index(index) => write!(out, "[{index}]"),
        };
    }
}

fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A variable name for a JSON value: its key, or for a generic key (`id`) its
/// container's name too, in the singular: `$.items[3].id` -> `item_id`.
fn json_name_hint(path: &[impl AsPathStep]) -> String {
    let mut keys = path.iter().rev().filter_map(|s| match s.as_step() {
        PathStep::Key(key) => Some(key),
        PathStep::Index(_) => None,
    });
    let Some(last) = keys.next() else {
        return "value".to_owned();
    };
    let generic = matches!(
        words(last).as_slice(),
        [word] if ["id", "key", "value", "uuid", "guid", "slug", "ref"].contains(&word.as_str())
    );
    match keys.next() {
        Some(parent) if generic => format!("{}_{last}", singular(parent)),
        _ => last.to_owned(),
    }
}

/// A plural's singular, for the common English endings only.
fn singular(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies") {
        format!("{stem}y")
    } else if word.ends_with("ss") || word.ends_with("us") || !word.ends_with('s') {
        word.to_owned()
    } else {
        word[..word.len() - 1].to_owned()
    }
}

/// Template names a variable must not take: the built-in placeholders.
const RESERVED_NAMES: &[&str] = &["uuid", "seq", "user", "pick", "rand", "csv"];

impl Names {
    /// A snake_case name from `hint`, not given before and not a built-in
    /// placeholder; `token`, `token_2`, `token_3`, ...
    fn unique(&mut self, hint: &str) -> String {
        let base = base_name(hint);
        let mut name = base.clone();
        let next = self.next.entry(base.clone()).or_insert(2);
        while self.taken.contains(&name) {
            name = format!("{base}_{next}");
            *next += 1;
        }
        self.taken.insert(name.clone());
        name
    }
}

/// `accessToken` -> `access_token`; names that would not be identifiers or would be
/// built-in placeholders are changed (`1st` -> `v_1st`, `user` -> `user_value`).
fn base_name(hint: &str) -> String {
    let mut base = words(hint).join("_");
    if base.is_empty() {
        base = "value".to_owned();
    }
    if base.starts_with(|c: char| c.is_ascii_digit()) || !base.is_ascii() {
        base = format!(
            "v_{}",
            base.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        );
    }
    if RESERVED_NAMES.contains(&base.as_str()) {
        base.push_str("_value");
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(
        path: &'static str,
        query: Option<&'static str>,
        headers: &[(&'static str, &'static str)],
        body: Option<&'static str>,
    ) -> Request<'static> {
        let body_kind = match body {
            Some(b) if b.trim_start().starts_with(['{', '[']) => BodyKind::Json,
            Some(b) if b.contains('=') => BodyKind::Form,
            _ => BodyKind::Other,
        };
        Request {
            method: "GET",
            base: "http://a",
            path: Text::literal(path),
            query: query.map(Text::literal),
            headers: headers
                .iter()
                .map(|(n, v)| (*n, Text::literal(v)))
                .collect(),
            body: body.map(Text::literal),
            body_kind,
        }
    }

    fn answer(json: &str, headers: &[(&str, &str)]) -> Entry<'static> {
        let mut entry =
            super::super::select::tests::entry("GET", "http://a/", 200, "application/json");
        entry.response_text = Some(json.to_owned().into());
        entry.response_headers = headers
            .iter()
            .map(|(n, v)| ((*n).to_owned().into(), (*v).to_owned().into()))
            .collect();
        entry
    }

    /// The requests rendered as one line each, after the proposals.
    fn run(requests: Vec<Request<'_>>, answers: &[Entry<'_>]) -> (Vec<String>, Vec<Variable>) {
        let mut requests = requests;
        let answers: Vec<&Entry<'_>> = answers.iter().collect();
        let variables = propose(&mut requests, &answers);
        let shown = requests
            .iter()
            .map(|r| {
                let mut line = r.path.render(&variables);
                if let Some(q) = &r.query {
                    line.push('?');
                    line.push_str(&q.render(&variables));
                }
                for (name, value) in &r.headers {
                    line.push_str(&format!(" | {name}: {}", value.render(&variables)));
                }
                if let Some(body) = &r.body {
                    line.push_str(&format!(" | {}", body.render(&variables)));
                }
                line
            })
            .collect();
        (shown, variables)
    }

    #[test]
    fn proposes_what_later_requests_send_back() {
        struct Row {
            what: &'static str,
            answer: &'static str,
            answer_headers: &'static [(&'static str, &'static str)],
            later: Request<'static>,
            want: &'static str,
            want_expressions: &'static [&'static str],
        }
        let rows = vec![
            Row {
                what: "a bearer token (short: its name says identifier)",
                answer: r#"{"token": "1", "user": "ann"}"#,
                answer_headers: &[],
                later: request("/me", None, &[("Authorization", "Bearer 1")], None),
                want: "/me | Authorization: Bearer {{token}}",
                want_expressions: &["json $.token"],
            },
            Row {
                what: "a long token anywhere in a header",
                answer: r#"{"data": {"accessToken": "eyJhbGc.eyJzdWIi.SflKxw"}}"#,
                answer_headers: &[],
                later: request(
                    "/me",
                    None,
                    &[("X-Auth", "v=eyJhbGc.eyJzdWIi.SflKxw;x")],
                    None,
                ),
                want: "/me | X-Auth: v={{access_token}};x",
                want_expressions: &["json $.data.accessToken"],
            },
            Row {
                what: "an id from a list, as a path segment",
                answer: r#"{"count": 20, "items": [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}]}"#,
                answer_headers: &[],
                later: request("/items/4", None, &[], None),
                want: "/items/{{item_id}}",
                want_expressions: &["json $.items[3].id"],
            },
            Row {
                what: "a count is not an id",
                answer: r#"{"count": 20}"#,
                answer_headers: &[],
                later: request("/items/20", Some("limit=20"), &[], None),
                want: "/items/20?limit=20",
                want_expressions: &[],
            },
            Row {
                what: "a short id only as a whole field",
                answer: r#"{"id": 4}"#,
                answer_headers: &[],
                later: request(
                    "/v4/items/x4",
                    Some("page=4"),
                    &[("Accept", "text/html;q=0.4")],
                    Some("n=4"),
                ),
                want: "/v4/items/x4?page={{id}} | Accept: text/html;q=0.4 | n={{id}}",
                want_expressions: &["json $.id"],
            },
            Row {
                what: "a big number whatever its name, in a JSON body",
                answer: r#"{"orderNumber": 1234567}"#,
                answer_headers: &[],
                later: request(
                    "/pay",
                    None,
                    &[],
                    Some(r#"{"order": 1234567, "note": "x1234567"}"#),
                ),
                want: r#"/pay | {"order": {{order_number}}, "note": "x1234567"}"#,
                want_expressions: &["json $.orderNumber"],
            },
            Row {
                what: "a word is not a token",
                answer: r#"{"status": "active", "flag": "true"}"#,
                answer_headers: &[],
                later: request("/search", Some("status=active&flag=true"), &[], None),
                want: "/search?status=active&flag=true",
                want_expressions: &[],
            },
            Row {
                what: "a token inside a longer word is a coincidence",
                answer: r#"{"code": "ab12"}"#,
                answer_headers: &[],
                later: request("/x/zab12/ab12z", None, &[], None),
                want: "/x/zab12/ab12z",
                want_expressions: &[],
            },
            Row {
                what: "an answer header, but not a plain one",
                answer: "not json",
                answer_headers: &[
                    ("X-CSRF-Token", "k7Hq9Zt2"),
                    ("Date", "Mon, 01 Jan 2024 10:00:00 GMT"),
                    ("ETag", "abc123def"),
                ],
                later: request(
                    "/save",
                    None,
                    &[("X-CSRF-Token", "k7Hq9Zt2"), ("If-Match", "abc123def")],
                    None,
                ),
                want: "/save | X-CSRF-Token: {{csrf_token}} | If-Match: abc123def",
                want_expressions: &["header X-CSRF-Token"],
            },
            Row {
                what: "a cookie's value sent back in a header (a Cookie header never gets here)",
                answer: "{}",
                answer_headers: &[(
                    "Set-Cookie",
                    "sid=77aa; Path=/\nXSRF-TOKEN=\"x5rf-9b\"; Path=/",
                )],
                later: request("/save", None, &[("X-XSRF-TOKEN", "x5rf-9b")], None),
                want: "/save | X-XSRF-TOKEN: {{xsrf_token}}",
                want_expressions: &["cookie XSRF-TOKEN"],
            },
            Row {
                what: "a value with a key a JSONPath cannot spell",
                answer: r#"{"it's": {"session id": "s3cr3t-9"}}"#,
                answer_headers: &[],
                later: request("/x", Some("s=s3cr3t-9"), &[], None),
                want: "/x?s={{session_id}}",
                want_expressions: &["json /it's/session id"],
            },
            Row {
                what: "a key with a space but no quote",
                answer: r#"{"a b": {"ref": "r-123"}}"#,
                answer_headers: &[],
                later: request("/x/r-123", None, &[], None),
                want: "/x/{{a_b_ref}}",
                want_expressions: &["json $['a b'].ref"],
            },
        ];
        for row in rows {
            let first = request("/start", None, &[], None);
            let (shown, variables) = run(
                vec![first, row.later],
                &[answer(row.answer, row.answer_headers)],
            );
            assert_eq!(shown[1], row.want, "{}", row.what);
            let expressions: Vec<&str> = variables.iter().map(|v| v.expression.as_str()).collect();
            assert_eq!(expressions, row.want_expressions, "{}", row.what);
        }
    }

    #[test]
    fn the_fitting_answer_wins_and_echoes_are_not_proposed() {
        let requests = vec![
            request("/login", Some("user=ann"), &[], None),
            request("/items", None, &[("Authorization", "Bearer 1")], None),
            request("/items/1", None, &[("Authorization", "Bearer 1")], None),
            request("/users/ann", None, &[], None),
        ];
        let answers = [
            answer(r#"{"token": "1", "user": "ann", "userId": "ann"}"#, &[]),
            answer(r#"{"items": [{"id": 1}]}"#, &[]),
            answer(r#"{"id": 1}"#, &[]),
        ];
        let (shown, variables) = run(requests, &answers);
        assert_eq!(
            shown,
            [
                "/login?user=ann",
                "/items | Authorization: Bearer {{token}}",
                "/items/{{item_id}} | Authorization: Bearer {{token}}",
                "/users/ann",
            ]
        );
        let summary: Vec<String> = variables
            .iter()
            .map(|v| {
                format!(
                    "{} = {} of step {}, used by {:?}",
                    v.name, v.expression, v.step, v.uses
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                r#"token = json $.token of step 0, used by [(1, "header Authorization"), (2, "header Authorization")]"#,
                r#"item_id = json $.items[0].id of step 1, used by [(2, "path")]"#,
            ]
        );
    }

    #[test]
    fn longer_values_win_over_their_parts() {
        let requests = vec![
            request("/a", None, &[], None),
            request("/b/abcd1234-5678", None, &[], None),
        ];
        let answers = [answer(
            r#"{"part": "abcd1234", "whole": "abcd1234-5678"}"#,
            &[],
        )];
        let (shown, variables) = run(requests, &answers);
        assert_eq!(shown[1], "/b/{{whole}}");
        assert_eq!(variables.len(), 1);
    }

    #[test]
    fn tells_which_values_count() {
        let rows: &[(&str, &str, bool, Option<Strength>)] = &[
            ("4", "id", true, Some(Strength::Field)),
            ("4", "count", true, None),
            ("12345", "total", true, Some(Strength::Field)),
            ("1", "token", false, Some(Strength::Field)),
            ("abc", "name", false, None),
            ("abc", "sessionId", false, Some(Strength::Field)),
            ("ab12", "code", false, Some(Strength::Token)),
            ("active", "status", false, None),
            ("activeactive", "status", false, Some(Strength::Token)),
            ("slug-like", "slug", false, Some(Strength::Token)),
            ("item 4", "name", false, None),
            ("/items/4", "href", false, None),
            ("http://a/b1", "url", false, None),
            ("TRUE", "flag", false, None),
            ("", "id", false, None),
        ];
        for (value, name, is_number, want) in rows {
            assert_eq!(strength(value, name, *is_number), *want, "{value} {name}");
        }
    }

    #[test]
    fn last_word_is_the_last_of_words() {
        let rows = [
            "accessToken",
            "x-request-id",
            "XMLHttpRequest",
            "sessionID",
            "item_id_",
            "a b",
            "名前",
            "ÀbcDéf",
            "id2Token",
            "--",
            "",
            "K\u{212a}ey",
        ];
        for name in rows {
            let want = words(name).last().cloned();
            let got = last_word(name).map(|w| w.chars().flat_map(char::to_lowercase).collect());
            assert_eq!(got, want, "{name:?}");
        }
    }

    #[test]
    fn names_variables() {
        let key = |k: &str| Step::Key(k.to_owned());
        let rows: &[(Vec<Step>, &str)] = &[
            (vec![key("token")], "token"),
            (vec![key("items"), Step::Index(3), key("id")], "item_id"),
            (
                vec![key("categories"), Step::Index(0), key("id")],
                "category_id",
            ),
            (vec![key("address"), key("id")], "address_id"),
            (vec![Step::Index(0), key("id")], "id"),
            (vec![key("data"), key("accessToken")], "accessToken"),
            (vec![], "value"),
        ];
        for (path, want) in rows {
            assert_eq!(json_name_hint(path), *want, "{path:?}");
        }
        let rows: &[(&str, &[&str], &str)] = &[
            ("accessToken", &[], "access_token"),
            ("x-request-id", &[], "x_request_id"),
            ("token", &["token"], "token_2"),
            ("token", &["token", "token"], "token_3"),
            ("token", &["token_2", "token"], "token_3"),
            ("user", &[], "user_value"),
            ("uuid", &[], "uuid_value"),
            ("1st", &[], "v_1st"),
            ("名前", &[], "v___"),
            ("", &[], "value"),
        ];
        for (hint, given, want) in rows {
            let mut names = Names::default();
            for earlier in *given {
                names.unique(earlier);
            }
            assert_eq!(names.unique(hint), *want, "{hint} after {given:?}");
        }
    }
}
