//! Reading a HAR 1.2 file into [`Entry`]s: only the fields the import uses, each
//! checked, every error naming the file, the line and the field
//! (`session.har:42: log.entries[3].request.url: ...`).
//!
//! Required (the import cannot do without them): `log.entries[]`, and in each entry
//! `startedDateTime`, `time`, `request.method`, `request.url`, `response.status`.
//! Optional: headers, `postData`, `response.content` (tools leave them out when empty),
//! and Chrome's `_resourceType` and `_fromCache`.
//!
//! The text is read once by serde into the members of `raw` (borrowed, nothing else
//! built), each entry checked in a fixed order as soon as it is read, so no tree of
//! the whole file is ever held; a field's path is made only for its error, and an
//! error of the JSON itself, anywhere in the file, comes before an entry's.

use std::borrow::Cow;

use base64::Engine as _;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess};
use url::Url;

use super::locate::{JsonPath, line_of};
use super::raw::{
    Fill, Flag, Found, FoundSeed, List, Member, Members, Obj, Reader, Skip, Want, describe,
    read_into, skip,
};
use super::sniff;
use crate::WorkloadError;

/// One request and its answer, as recorded; strings borrowed from the HAR text where
/// they hold no escape.
#[derive(Debug, Clone)]
pub(crate) struct Entry<'a> {
    /// When the request started, in milliseconds since the Unix epoch.
    pub started_ms: f64,
    /// How long the exchange took, in milliseconds (HAR's `time`).
    pub time_ms: f64,
    pub method: Cow<'a, str>,
    /// Without its fragment (`#...`), which is never sent.
    pub url: Url,
    pub headers: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    pub body: Option<Cow<'a, str>>,
    /// `postData.mimeType`, for a body whose headers lack a `Content-Type`.
    pub body_mime: Option<Cow<'a, str>>,
    /// 0 when the browser got no answer (blocked, cancelled).
    pub status: u16,
    pub response_headers: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// `response.content.mimeType` without its parameters, lowercase.
    pub response_mime: Cow<'a, str>,
    /// The answer's body when it was recorded and is text.
    pub response_text: Option<Cow<'a, str>>,
    /// `response.bodySize`, bytes, when known (HAR writes -1 when not).
    pub body_size: Option<u64>,
    /// Chrome's `_resourceType` (`script`, `image`, `xhr`, ...).
    pub resource_type: Option<Cow<'a, str>>,
    /// Chrome's `_fromCache`: served by the browser's cache, not the network.
    pub from_cache: bool,
    /// Cookie names the request sent and the answer set (`request.cookies`,
    /// `response.cookies`, besides the `Cookie` and `Set-Cookie` headers).
    pub sent_cookies: Vec<Cow<'a, str>>,
    pub set_cookies: Vec<Cow<'a, str>>,
}

/// A HAR file's entries, with what was left out while reading.
#[derive(Debug, Default)]
pub(crate) struct Har<'a> {
    /// `log.creator.name` and `version`, for the flow's header comment.
    pub creator: Option<String>,
    pub entries: Vec<Entry<'a>>,
    /// Entries whose URL is a browser's own (`data:`, `blob:`, `ws:`, extensions):
    /// their schemes, one per entry.
    pub other_schemes: Vec<String>,
}

/// URL schemes a browser records beside HTTP that no HTTP load test can send: left
/// out (and counted) rather than refused, or every recording of a page with a
/// WebSocket or an inline image would be.
const BROWSER_SCHEMES: &[&str] = &[
    "data",
    "blob",
    "ws",
    "wss",
    "about",
    "chrome",
    "chrome-extension",
    "moz-extension",
    "safari-extension",
    "edge",
];

/// How deep serde_json reads nested arrays and objects before it gives up (its
/// recursion limit); a HAR file is about eight levels deep.
const MAX_JSON_DEPTH: usize = 128;

type Str<'a> = Cow<'a, str>;
type Objects<T> = List<Found<Obj<T>>>;

/// The members of the file the import reads, level by level; `log.entries` are
/// checked one by one as they are read ([`EntryReader`]), so only one entry's members
/// are ever held.
struct RawFile<'s, 'a> {
    source: &'s Source<'s, 'a>,
    log: Member<RawLog<'s, 'a>>,
}

struct RawLog<'s, 'a> {
    source: &'s Source<'s, 'a>,
    creator: Member<Obj<Named<'a>>>,
    entries: Member<ReadEntries<'a>>,
}

/// `log.entries` as read: the entries checked so far, and the first error (the rest
/// of the file is still read, for an error of its JSON first).
#[derive(Default)]
struct ReadEntries<'a> {
    entries: Vec<Entry<'a>>,
    other_schemes: Vec<String>,
    count: usize,
    error: Option<WorkloadError>,
}

/// Reads `log.entries`, each entry checked and turned into an [`Entry`] once read.
struct EntryReader<'s, 'a>(&'s Source<'s, 'a>);

impl<'a> Reader<'a> for EntryReader<'_, 'a> {
    type Out = ReadEntries<'a>;

    fn read_seq<A: SeqAccess<'a>>(self, mut seq: A) -> Result<Option<Self::Out>, A::Error> {
        let mut read = ReadEntries::default();
        loop {
            let at = EntryAt(read.count);
            if read.error.is_some() {
                if seq.next_element::<Skip>()?.is_none() {
                    break;
                }
            } else {
                let Some(value) = seq.next_element::<Found<Obj<RawEntry<'a>>>>()? else {
                    break;
                };
                let checked = self.0.required(Some(value), || at.path(&[]), "an object");
                match checked.and_then(|raw| self.0.entry(raw, at)) {
                    Ok(Ok(entry)) => read.entries.push(entry),
                    Ok(Err(scheme)) => read.other_schemes.push(scheme),
                    Err(err) => read.error = Some(err),
                }
            }
            read.count += 1;
        }
        Ok(Some(read))
    }
}

/// A `headers` array as (name, value) pairs, read without a list of its records (a
/// browser records a dozen headers each way): the pairs up to the first record that
/// is not `{name, value}` strings, and that one with its index, for the error.
#[derive(Default)]
struct Pairs<'a> {
    pairs: Vec<(Str<'a>, Str<'a>)>,
    bad: Option<(usize, Found<Obj<Named<'a>>>)>,
}

impl<'a> Want<'a> for Pairs<'a> {
    fn from_seq<A: SeqAccess<'a>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        let mut list = Pairs::default();
        while let Some(record) = seq.next_element::<Found<Obj<Named<'a>>>>()? {
            match record {
                _ if list.bad.is_some() => {}
                Found::Is(Obj(Named {
                    name: Some(Found::Is(name)),
                    value: Some(Found::Is(value)),
                    ..
                })) => list.pairs.push((name, value)),
                record => list.bad = Some((list.pairs.len(), record)),
            }
        }
        Ok(Some(list))
    }
}

/// Header, cookie and form parameter records alike (`{name, value}`), and the
/// creator (`{name, version}`).
#[derive(Default)]
struct Named<'a> {
    name: Member<Str<'a>>,
    value: Member<Str<'a>>,
    version: Member<Str<'a>>,
}

#[derive(Default)]
struct RawEntry<'a> {
    started: Member<Str<'a>>,
    time: Member<f64>,
    request: Member<Obj<RawRequest<'a>>>,
    response: Member<Obj<RawResponse<'a>>>,
    resource_type: Member<Str<'a>>,
    from_cache: Member<Flag>,
}

#[derive(Default)]
struct RawRequest<'a> {
    method: Member<Str<'a>>,
    url: Member<Str<'a>>,
    headers: Member<Pairs<'a>>,
    cookies: Member<Objects<Named<'a>>>,
    post_data: Member<Obj<RawPostData<'a>>>,
}

#[derive(Default)]
struct RawPostData<'a> {
    mime_type: Member<Str<'a>>,
    text: Member<Str<'a>>,
    params: Member<Objects<Named<'a>>>,
}

#[derive(Default)]
struct RawResponse<'a> {
    status: Member<f64>,
    headers: Member<Pairs<'a>>,
    cookies: Member<Objects<Named<'a>>>,
    content: Member<Obj<RawContent<'a>>>,
    body_size: Member<f64>,
}

#[derive(Default)]
struct RawContent<'a> {
    mime_type: Member<Str<'a>>,
    text: Member<Str<'a>>,
    encoding: Member<Str<'a>>,
}

impl<'a> Members<'a> for RawFile<'_, 'a> {
    fn member<A: MapAccess<'a>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "log" => {
                let log = RawLog {
                    source: self.source,
                    creator: None,
                    entries: None,
                };
                self.log = Some(map.next_value_seed(FoundSeed(Fill(log)))?);
                Ok(())
            }
            _ => skip(map),
        }
    }
}

impl<'a> Members<'a> for RawLog<'_, 'a> {
    fn member<A: MapAccess<'a>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "creator" => read_into(&mut self.creator, map),
            "entries" => {
                let entries = map.next_value_seed(FoundSeed(EntryReader(self.source)))?;
                self.entries = Some(entries);
                Ok(())
            }
            _ => skip(map),
        }
    }
}

impl<'de> Members<'de> for Named<'de> {
    fn member<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "name" => read_into(&mut self.name, map),
            "value" => read_into(&mut self.value, map),
            "version" => read_into(&mut self.version, map),
            _ => skip(map),
        }
    }
}

impl<'de> Members<'de> for RawEntry<'de> {
    fn member<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "startedDateTime" => read_into(&mut self.started, map),
            "time" => read_into(&mut self.time, map),
            "request" => read_into(&mut self.request, map),
            "response" => read_into(&mut self.response, map),
            "_resourceType" => read_into(&mut self.resource_type, map),
            "_fromCache" => read_into(&mut self.from_cache, map),
            _ => skip(map),
        }
    }
}

impl<'de> Members<'de> for RawRequest<'de> {
    fn member<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "method" => read_into(&mut self.method, map),
            "url" => read_into(&mut self.url, map),
            "headers" => read_into(&mut self.headers, map),
            "cookies" => read_into(&mut self.cookies, map),
            "postData" => read_into(&mut self.post_data, map),
            _ => skip(map),
        }
    }
}

impl<'de> Members<'de> for RawPostData<'de> {
    fn member<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "mimeType" => read_into(&mut self.mime_type, map),
            "text" => read_into(&mut self.text, map),
            "params" => read_into(&mut self.params, map),
            _ => skip(map),
        }
    }
}

impl<'de> Members<'de> for RawResponse<'de> {
    fn member<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "status" => read_into(&mut self.status, map),
            "headers" => read_into(&mut self.headers, map),
            "cookies" => read_into(&mut self.cookies, map),
            "content" => read_into(&mut self.content, map),
            "bodySize" => read_into(&mut self.body_size, map),
            _ => skip(map),
        }
    }
}

impl<'de> Members<'de> for RawContent<'de> {
    fn member<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "mimeType" => read_into(&mut self.mime_type, map),
            "text" => read_into(&mut self.text, map),
            "encoding" => read_into(&mut self.encoding, map),
            _ => skip(map),
        }
    }
}

/// The input's name and text, for errors that name a line.
pub(crate) struct Source<'n, 'a> {
    pub name: &'n str,
    pub text: &'a str,
}

impl<'a> Source<'_, 'a> {
    /// An error about the field at `path`.
    pub fn fail(&self, path: &JsonPath, reason: impl Into<String>) -> WorkloadError {
        let line = line_of(self.text, path);
        let label = if path.0.is_empty() {
            format!("{}:{line}", self.name)
        } else {
            format!("{}:{line}: {path}", self.name)
        };
        WorkloadError::Field {
            label,
            reason: reason.into(),
        }
    }

    /// Parses the whole text as a HAR file.
    pub fn read(&self) -> Result<Har<'a>, WorkloadError> {
        let log = self.log()?;
        let entries_path = || JsonPath::default().key("log").key("entries");
        let read = match log.entries {
            Some(Found::Is(read)) => read,
            Some(other) => return Err(self.fail(&entries_path(), wrong_type("an array", &other))),
            None => {
                return Err(self.fail(
                    &entries_path(),
                    "missing: a HAR log lists its requests in \"entries\"",
                ));
            }
        };
        if read.count == 0 {
            return Err(self.fail(
                &entries_path(),
                "no entries: the recording holds no request",
            ));
        }
        if let Some(err) = read.error {
            return Err(err);
        }
        Ok(Har {
            creator: log.creator.and_then(Found::ok).and_then(creator),
            entries: read.entries,
            other_schemes: read.other_schemes,
        })
    }

    /// `log`, or an error saying where the JSON breaks or what the document looks
    /// like instead.
    fn log<'s>(&'s self) -> Result<RawLog<'s, 'a>, WorkloadError> {
        let root = FoundSeed(Fill(RawFile {
            source: self,
            log: None,
        }));
        let mut json = serde_json::Deserializer::from_str(self.text);
        let root = root
            .deserialize(&mut json)
            .and_then(|root| json.end().map(|()| root))
            .map_err(|err| self.not_json(&err))?;
        match root {
            Found::Is(RawFile {
                log: Some(Found::Is(log)),
                ..
            }) => Ok(log),
            Found::Is(RawFile {
                log: Some(other), ..
            }) => Err(self.fail(
                &JsonPath::default().key("log"),
                wrong_type("an object", &other),
            )),
            _ => Err(self.not_har()),
        }
    }

    /// Where the text stops being JSON, and what it looks like.
    fn not_json(&self, err: &serde_json::Error) -> WorkloadError {
        let reason = match (err.classify(), sniff::describe_text(self.text)) {
            (serde_json::error::Category::Eof, _) if !self.text.trim().is_empty() => {
                format!("the JSON ends early (a truncated file?): {}", message(err))
            }
            // Before the sniffing: `[[[[...` would read as TOML's `[[scenario]]`.
            _ if message(err) == "recursion limit exceeded" => format!(
                "not JSON: nested deeper than {MAX_JSON_DEPTH} levels (serde_json's limit), \
                 not a HAR file"
            ),
            (_, Some(looks_like)) => {
                format!("not JSON: this looks like {looks_like}, not a HAR file")
            }
            _ => format!("not JSON: {}", message(err)),
        };
        WorkloadError::Field {
            label: format!("{}:{}:{}", self.name, err.line(), err.column()),
            reason,
        }
    }

    /// JSON without a `log`: named for what it looks like (read again whole, as
    /// values: only on this error).
    fn not_har(&self) -> WorkloadError {
        let looks_like = serde_json::from_str(self.text)
            .map_or_else(|_| "JSON".to_owned(), |root| sniff::describe_json(&root));
        self.fail(
            &JsonPath::default(),
            format!(
                "not a HAR file: this looks like {looks_like}; a HAR file is a JSON object whose \
                 \"log\" holds \"entries\" (a browser saves one from its developer tools: \
                 Network tab, \"Save all as HAR\")"
            ),
        )
    }

    /// One entry; `Err(scheme)` inside when its URL is a browser's own.
    fn entry(
        &self,
        raw: Obj<RawEntry<'a>>,
        at: EntryAt,
    ) -> Result<Result<Entry<'a>, String>, WorkloadError> {
        let Obj(raw) = raw;
        let Obj(request) = self.required(raw.request, || at.path(&["request"]), "an object")?;
        let url_text = self.required(request.url, || at.path(&["request", "url"]), "a string")?;
        let url = match self.url(&url_text, || at.path(&["request", "url"]))? {
            Ok(url) => url,
            Err(scheme) => return Ok(Err(scheme)),
        };
        let method_path = || at.path(&["request", "method"]);
        let method = self.required(request.method, method_path, "a string")?;
        crate::target::check_method(&method).map_err(|reason| self.fail(&method_path(), reason))?;
        let Obj(response) = self.required(raw.response, || at.path(&["response"]), "an object")?;
        let started_path = || at.path(&["startedDateTime"]);
        let started = self.required(raw.started, started_path, "a string")?;
        let started_ms = parse_timestamp_ms(&started).ok_or_else(|| {
            self.fail(
                &started_path(),
                format!(
                    "{started:?} is not an ISO 8601 date and time (like 2024-05-01T10:00:00.123Z)"
                ),
            )
        })?;
        let time_ms = self.required(raw.time, || at.path(&["time"]), "a number")?;
        let (body, body_mime) = self.post_data(request.post_data, at)?;
        let (response_mime, response_text) = self.content(response.content, at)?;
        Ok(Ok(Entry {
            started_ms,
            time_ms: time_ms.max(0.0),
            method,
            url,
            headers: self.headers(request.headers, at, "request")?,
            body,
            body_mime,
            status: self.status(response.status, at)?,
            response_headers: self.headers(response.headers, at, "response")?,
            response_mime,
            response_text,
            body_size: response
                .body_size
                .and_then(Found::ok)
                .filter(|size| *size >= 0.0)
                .map(|size| size as u64),
            resource_type: raw.resource_type.and_then(Found::ok),
            from_cache: raw
                .from_cache
                .and_then(Found::ok)
                .is_some_and(|Flag(yes)| yes),
            sent_cookies: cookie_names(request.cookies),
            set_cookies: cookie_names(response.cookies),
        }))
    }

    /// An http(s) URL without its fragment; `Err(scheme)` inside for a browser's own.
    fn url(
        &self,
        text: &str,
        path: impl Fn() -> JsonPath,
    ) -> Result<Result<Url, String>, WorkloadError> {
        let scheme = text.split(':').next().unwrap_or_default();
        if text.contains(':')
            && BROWSER_SCHEMES
                .iter()
                .any(|s| scheme.eq_ignore_ascii_case(s))
        {
            return Ok(Err(scheme.to_ascii_lowercase()));
        }
        // Redacted only for an error: every entry has a URL.
        let shown = || units::redact_url(text);
        let mut url = Url::parse(text)
            .map_err(|err| self.fail(&path(), format!("{:?} is not a URL ({err})", shown())))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(self.fail(
                &path(),
                format!("{:?} is not an http or https URL", shown()),
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(self.fail(&path(), format!("{:?} has no host", shown())));
        }
        url.set_fragment(None);
        Ok(Ok(url))
    }

    fn status(&self, status: Member<f64>, at: EntryAt) -> Result<u16, WorkloadError> {
        let status_path = || at.path(&["response", "status"]);
        let status = self.required(status, status_path, "a number")?;
        if status.fract() != 0.0 || !(0.0..=999.0).contains(&status) {
            return Err(self.fail(&status_path(), format!("{status} is not an HTTP status")));
        }
        Ok(status as u16)
    }

    /// `headers` of the `request` or `response`: absent means none; present, each must
    /// be `{name, value}` strings, and a request's must be sendable (a token for a
    /// name, no line break in a value; HTTP/2 pseudo headers are dropped later,
    /// whatever they hold).
    fn headers(
        &self,
        list: Member<Pairs<'a>>,
        at: EntryAt,
        side: &'static str,
    ) -> Result<Vec<(Str<'a>, Str<'a>)>, WorkloadError> {
        let headers_path = || at.path(&[side, "headers"]);
        let Some(Pairs { pairs, bad }) = self.optional(list, headers_path, "an array")? else {
            return Ok(Vec::new());
        };
        for (i, (name, value)) in pairs.iter().enumerate() {
            if side == "request" && !name.starts_with(':') {
                crate::target::check_header(name, value)
                    .map_err(|reason| self.fail(&headers_path().index(i), reason))?;
            }
        }
        if let Some((i, header)) = bad {
            // The first record that is not two strings: one of these fails.
            let header_path = || headers_path().index(i);
            let Obj(header) = self.required(Some(header), header_path, "an object")?;
            self.required(header.name, || header_path().key("name"), "a string")?;
            self.required(header.value, || header_path().key("value"), "a string")?;
        }
        Ok(pairs)
    }

    /// `postData`: its text, or a form rebuilt from its `params` when the tool left
    /// the text out; and its MIME type.
    fn post_data(
        &self,
        post: Member<Obj<RawPostData<'a>>>,
        at: EntryAt,
    ) -> Result<(Option<Str<'a>>, Option<Str<'a>>), WorkloadError> {
        let post_path = || at.path(&["request", "postData"]);
        let Some(Obj(post)) = self.optional(post, post_path, "an object")? else {
            return Ok((None, None));
        };
        let mime = self.optional(post.mime_type, || post_path().key("mimeType"), "a string")?;
        let text = match self.optional(post.text, || post_path().key("text"), "a string")? {
            None => form_from_params(post.params).map(Cow::Owned),
            text => text,
        };
        Ok((text.filter(|t| !t.is_empty()), mime))
    }

    /// `response.content`: the MIME type (lowercase, no parameters) and the body when
    /// it is text (base64 bodies decoded).
    fn content(
        &self,
        content: Member<Obj<RawContent<'a>>>,
        at: EntryAt,
    ) -> Result<(Str<'a>, Option<Str<'a>>), WorkloadError> {
        let content_path = || at.path(&["response", "content"]);
        let Some(Obj(content)) = self.optional(content, content_path, "an object")? else {
            return Ok((Cow::Borrowed(""), None));
        };
        let mime = content
            .mime_type
            .and_then(Found::ok)
            .map(bare_mime)
            .unwrap_or_default();
        let text = content.text.and_then(Found::ok);
        let base64 = content.encoding.and_then(Found::ok).as_deref() == Some("base64");
        let text = match (text, base64) {
            (Some(text), true) => base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .map(Cow::Owned),
            (text, false) => text,
            (None, true) => None,
        };
        Ok((mime, text))
    }

    /// A member that must be there and of the wanted type (`want`, as errors say it).
    fn required<T>(
        &self,
        member: Member<T>,
        path: impl FnOnce() -> JsonPath,
        want: &str,
    ) -> Result<T, WorkloadError> {
        match member {
            Some(Found::Is(value)) => Ok(value),
            Some(other) => Err(self.fail(&path(), wrong_type(want, &other))),
            None => Err(self.fail(&path(), "missing")),
        }
    }

    /// A member that may be left out or null, and else is of the wanted type.
    fn optional<T>(
        &self,
        member: Member<T>,
        path: impl FnOnce() -> JsonPath,
        want: &str,
    ) -> Result<Option<T>, WorkloadError> {
        match member {
            Some(Found::Is(value)) => Ok(Some(value)),
            None | Some(Found::Null) => Ok(None),
            Some(other) => Err(self.fail(&path(), wrong_type(want, &other))),
        }
    }
}

/// Which entry of `log.entries` a field is in, for the path of an error.
#[derive(Debug, Clone, Copy)]
struct EntryAt(usize);

impl EntryAt {
    /// `log.entries[N]` and then `keys`.
    fn path(self, keys: &[&str]) -> JsonPath {
        let entry = JsonPath::default().key("log").key("entries").index(self.0);
        keys.iter().fold(entry, |path, key| path.key(key))
    }
}

/// serde_json's message without its " at line L column C" (the label has them).
fn message(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

fn wrong_type<T>(want: &str, found: &Found<T>) -> String {
    format!("expected {want}, found {}", describe(found))
}

fn creator(Obj(creator): Obj<Named<'_>>) -> Option<String> {
    let name = creator.name?.ok()?;
    Some(match creator.version.and_then(Found::ok) {
        Some(version) if !version.is_empty() => format!("{name} {version}"),
        _ => name.into_owned(),
    })
}

/// The names in a request's or response's `cookies` array.
fn cookie_names(list: Member<Objects<Named<'_>>>) -> Vec<Str<'_>> {
    let Some(List(cookies)) = list.and_then(Found::ok) else {
        return Vec::new();
    };
    cookies
        .into_iter()
        .filter_map(|c| c.ok()?.0.name?.ok())
        .collect()
}

/// `name=value&...` from `postData.params`, for tools that record a form that way.
fn form_from_params(params: Member<Objects<Named<'_>>>) -> Option<String> {
    let List(params) = params?.ok()?;
    let mut form = String::new();
    for param in params {
        let Some(Obj(param)) = param.ok() else {
            continue;
        };
        let Some(name) = param.name.and_then(Found::ok) else {
            continue;
        };
        let value = param.value.and_then(Found::ok).unwrap_or_default();
        if !form.is_empty() {
            form.push('&');
        }
        form.push_str(&name);
        form.push('=');
        form.push_str(&value);
    }
    (!form.is_empty()).then_some(form)
}

/// `application/json; charset=utf-8` -> `application/json`; borrowed when it was
/// lowercase (every entry has one).
pub(super) fn bare_mime<'a>(mime: impl Into<Cow<'a, str>>) -> Cow<'a, str> {
    fn bare(mime: &str) -> &str {
        mime.split(';').next().unwrap_or_default().trim()
    }
    match mime.into() {
        Cow::Borrowed(mime) if !bare(mime).bytes().any(|b| b.is_ascii_uppercase()) => {
            Cow::Borrowed(bare(mime))
        }
        mime => Cow::Owned(bare(&mime).to_ascii_lowercase()),
    }
}

/// An ISO 8601 date and time (`2024-05-01T10:00:00.123+02:00`, `Z`, or no zone as
/// UTC) as milliseconds since the Unix epoch. Only differences between entries are
/// used, so a missing zone does no harm.
pub(super) fn parse_timestamp_ms(text: &str) -> Option<f64> {
    let (date, time) = text.split_once(['T', 't', ' '])?;
    let mut date_parts = date.splitn(3, '-');
    let year: i64 = digits(date_parts.next()?, 4)?;
    let month: i64 = digits(date_parts.next()?, 2)?;
    let day: i64 = digits(date_parts.next()?, 2)?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let zone_at = time.find(['Z', 'z', '+', '-']).unwrap_or(time.len());
    let (clock, zone) = time.split_at(zone_at);
    let offset_minutes = zone_offset_minutes(zone)?;
    let mut clock_parts = clock.splitn(3, ':');
    let hour: i64 = digits(clock_parts.next()?, 2)?;
    let minute: i64 = digits(clock_parts.next()?, 2)?;
    let seconds_text = clock_parts.next()?;
    let (whole, fraction) = seconds_text.split_once('.').unwrap_or((seconds_text, ""));
    let second: i64 = digits(whole, 2)?;
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let fraction_ms = if fraction.is_empty() {
        0.0
    } else if fraction.bytes().all(|b| b.is_ascii_digit()) {
        fraction_value(fraction)? * 1000.0
    } else {
        return None;
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds as f64 * 1000.0 + fraction_ms)
}

/// `0.DIGITS` as f64, read as Rust reads that text; written on the stack for the
/// usual few digits (every entry has a timestamp).
fn fraction_value(digits: &str) -> Option<f64> {
    let mut buffer = [0u8; 32];
    match buffer.get_mut(2..2 + digits.len()) {
        Some(tail) => {
            tail.copy_from_slice(digits.as_bytes());
            buffer[..2].copy_from_slice(b"0.");
            std::str::from_utf8(&buffer[..2 + digits.len()])
                .ok()?
                .parse()
                .ok()
        }
        None => format!("0.{digits}").parse().ok(),
    }
}

/// Exactly `count` ASCII digits.
fn digits(text: &str, count: usize) -> Option<i64> {
    (text.len() == count && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// `""` and `Z`: 0; `+02:00`, `-0530`, `+02`: the offset in minutes.
fn zone_offset_minutes(zone: &str) -> Option<i64> {
    if zone.is_empty() || zone.eq_ignore_ascii_case("z") {
        return Some(0);
    }
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let rest = zone[1..].replace(':', "");
    let (hours, minutes) = match rest.len() {
        2 => (digits(&rest, 2)?, 0),
        4 => (digits(&rest[..2], 2)?, digits(&rest[2..], 2)?),
        _ => return None,
    };
    Some(sign * (hours * 60 + minutes))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let shifted_month = (month + 9) % 12;
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_timestamps() {
        let rows: &[(&str, Option<f64>)] = &[
            ("1970-01-01T00:00:00Z", Some(0.0)),
            ("1970-01-01T00:00:01.5Z", Some(1500.0)),
            ("1970-01-01T01:00:00+01:00", Some(0.0)),
            ("1970-01-01T00:00:00-0030", Some(1_800_000.0)),
            ("1970-01-01T00:00:00.123", Some(123.0)),
            ("2000-03-01T00:00:00Z", Some(951_868_800_000.0)),
            ("2024-05-01T10:00:00.123456+02", Some(1_714_550_400_123.456)),
            ("2024-05-01 10:00:00Z", Some(1_714_557_600_000.0)),
            ("2024-13-01T10:00:00Z", None),
            ("2024-05-01T25:00:00Z", None),
            ("2024-05-01", None),
            ("yesterday", None),
            ("2024-05-01T10:00:00.12a", None),
            ("2024-05-01T10:00:00+1", None),
            ("", None),
        ];
        for (text, want) in rows {
            let got = parse_timestamp_ms(text);
            match (got, want) {
                (Some(got), Some(want)) => assert!((got - want).abs() < 0.01, "{text}: {got}"),
                _ => assert_eq!(got, *want, "{text}"),
            }
        }
    }

    #[test]
    fn strips_mime_parameters() {
        assert_eq!(
            bare_mime("Application/JSON; charset=utf-8"),
            "application/json"
        );
        assert_eq!(bare_mime(""), "");
    }
}
