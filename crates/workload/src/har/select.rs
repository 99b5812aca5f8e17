//! Which entries become steps and which headers they keep.
//!
//! **Entries.** Left out, each counted in the flow's header comment:
//! - static assets, unless `-har-keep-static`: an answer whose MIME type is an image,
//!   font, audio, video, CSS, JavaScript, WebAssembly or a web manifest, a URL path
//!   ending in one of [`STATIC_EXTENSIONS`], or Chrome's `_resourceType` saying so. A
//!   load test of an application rarely wants them (a CDN serves them) and a browser
//!   fetches them from its cache after the first page anyway;
//! - entries the browser served from its own cache (Chrome's `_fromCache`): they never
//!   reached the server;
//! - hosts not named by `-har-host` (when given) or named by `-har-skip-host`;
//! - the request a browser sent to follow a redirect: the engine follows redirects
//!   itself (`-redirects`), so the step that got the 3xx gets the final answer, and its
//!   check and extractions are taken from that final answer.
//!
//! **Headers.** Kept as recorded except (any `-har-keep-header NAME` keeps NAME):
//! - what the engine or the cookie jar writes: HTTP/2 pseudo headers (`:method`, ...),
//!   `Host`, `Content-Length`, `Cookie`, and the hop-by-hop ones (`Connection`,
//!   `Keep-Alive`, `Transfer-Encoding`, `TE`, `Trailer`, `Upgrade`,
//!   `Proxy-Connection`);
//! - `Accept-Encoding`: the browser could decode brotli; checks and extractions want
//!   the body as sent, and compression is a test of its own;
//! - what the browser says about itself or its cache, not about the request:
//!   `User-Agent`, `Accept-Language`, `Referer`, `Cache-Control`, `Pragma`,
//!   `If-None-Match`, `If-Modified-Since` (the recording's cache state would turn
//!   answers into 304s), `Priority`, `DNT`, `Upgrade-Insecure-Requests`, and every
//!   `Sec-*` header (`Sec-Fetch-*`, `Sec-CH-UA*`, `Sec-GPC`, ...), `Purpose`,
//!   `X-Client-Data`.

use url::{Origin, Url};

use super::read::Entry;

/// URL path endings of static assets (lowercase).
pub(super) const STATIC_EXTENSIONS: &[&str] = &[
    "css",
    "js",
    "mjs",
    "map",
    "png",
    "jpg",
    "jpeg",
    "gif",
    "webp",
    "avif",
    "svg",
    "ico",
    "bmp",
    "woff",
    "woff2",
    "ttf",
    "otf",
    "eot",
    "mp3",
    "mp4",
    "webm",
    "ogg",
    "wav",
    "m4a",
    "mov",
    "wasm",
    "webmanifest",
];

/// Chrome's `_resourceType`s of static assets.
const STATIC_RESOURCE_TYPES: &[&str] =
    &["image", "stylesheet", "script", "font", "media", "manifest"];

/// Request headers dropped unless asked for (lowercase); `sec-*` and pseudo headers
/// are dropped by their prefix.
const DROPPED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "cookie",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "accept-encoding",
    "user-agent",
    "accept-language",
    "referer",
    "cache-control",
    "pragma",
    "if-none-match",
    "if-modified-since",
    "priority",
    "dnt",
    "upgrade-insecure-requests",
    "purpose",
    "x-client-data",
];

/// Why an entry is not a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum LeftOut {
    Static,
    Cached,
    Host,
    Redirect,
}

/// The host filters of the options.
#[derive(Debug, Clone, Copy)]
pub(super) struct HostFilter<'a> {
    pub only: &'a [String],
    pub skip: &'a [String],
    /// Only this origin (`-base-url` without `-har-host`: the main origin).
    pub origin: Option<&'a Origin>,
}

impl HostFilter<'_> {
    /// Whether `url`'s host passes: `HOST` matches that host on any port,
    /// `HOST:PORT` that port only.
    pub fn keeps(&self, url: &Url) -> bool {
        let matches = |pattern: &String| host_matches(pattern, url);
        (self.only.is_empty() || self.only.iter().any(matches))
            && !self.skip.iter().any(matches)
            && self.origin.is_none_or(|origin| url.origin() == *origin)
    }
}

fn host_matches(pattern: &str, url: &Url) -> bool {
    let bare = |host: &str| {
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase()
    };
    let pattern = pattern.trim();
    // A port follows the last `:` of `name:8080` and `[::1]:8080`; a bare IPv6
    // address (`::1`) has none.
    let (name, port) = match pattern.rsplit_once(':') {
        Some((name, port)) if name.ends_with(']') || !name.contains(':') => {
            match port.parse::<u16>() {
                Ok(port) => (name, Some(port)),
                Err(_) => (pattern, None),
            }
        }
        _ => (pattern, None),
    };
    bare(name) == bare(url.host_str().unwrap_or_default())
        && port.is_none_or(|port| Some(port) == url.port_or_known_default())
}

/// `host:port` as the header comment lists it.
pub(super) fn host_label(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// Whether an entry is a static asset.
pub(super) fn is_static(entry: &Entry<'_>) -> bool {
    let mime = entry.response_mime.as_ref();
    let static_mime = ["image/", "font/", "audio/", "video/"]
        .iter()
        .any(|prefix| mime.starts_with(prefix))
        || mime.contains("javascript")
        || mime.contains("ecmascript")
        || mime.contains("font")
        || matches!(
            mime,
            "text/css" | "application/wasm" | "application/manifest+json"
        );
    let extension = entry
        .url
        .path()
        .rsplit('/')
        .next()
        .and_then(|last| last.rsplit_once('.'))
        .map(|(_, ext)| ext.to_ascii_lowercase());
    let static_path = extension.is_some_and(|ext| STATIC_EXTENSIONS.contains(&ext.as_str()));
    let static_type = entry
        .resource_type
        .as_deref()
        .is_some_and(|kind| STATIC_RESOURCE_TYPES.contains(&kind));
    static_mime || static_path || static_type
}

/// Whether a request header is kept; `keep` holds the `-har-keep-header` names.
pub(super) fn keeps_header(name: &str, keep: &[String]) -> bool {
    if name.starts_with(':') {
        return false; // pseudo headers are the request line's, never headers
    }
    if keep.iter().any(|k| k.eq_ignore_ascii_case(name)) {
        return true;
    }
    let sec = name
        .as_bytes()
        .get(..4)
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(b"sec-"));
    !(DROPPED_HEADERS.iter().any(|d| name.eq_ignore_ascii_case(d)) || sec)
}

/// Whether `next` is the browser following `entry`'s redirect: `entry` answered a
/// 3xx with a `Location`, and `next` asks for that URL (with GET, or the same method
/// after 307 and 308, as the engine would).
pub(super) fn follows_redirect(entry: &Entry<'_>, next: &Entry<'_>) -> bool {
    if !matches!(entry.status, 301 | 302 | 303 | 307 | 308) {
        return false;
    }
    let Some((_, location)) = entry
        .response_headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("location"))
    else {
        return false;
    };
    let Ok(mut target) = entry.url.join(location) else {
        return false;
    };
    target.set_fragment(None);
    let method_ok = match entry.status {
        307 | 308 => next.method == entry.method,
        _ => next.method == "GET",
    };
    method_ok && target == next.url
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn entry(method: &str, url: &str, status: u16, mime: &str) -> Entry<'static> {
        Entry {
            started_ms: 0.0,
            time_ms: 0.0,
            method: method.to_owned().into(),
            url: Url::parse(url).unwrap(),
            headers: Vec::new(),
            body: None,
            body_mime: None,
            status,
            response_headers: Vec::new(),
            response_mime: mime.to_owned().into(),
            response_text: None,
            body_size: None,
            resource_type: None,
            from_cache: false,
            sent_cookies: Vec::new(),
            set_cookies: Vec::new(),
        }
    }

    #[test]
    fn tells_static_assets() {
        let rows: &[(&str, &str, Option<&str>, bool)] = &[
            ("http://a/app.css", "text/css", None, true),
            ("http://a/app.JS?v=3", "", None, true),
            ("http://a/logo", "image/png", None, true),
            ("http://a/f", "font/woff2", None, true),
            ("http://a/f", "application/x-font-ttf", None, true),
            ("http://a/x", "application/javascript", None, true),
            ("http://a/x", "text/html", Some("script"), true),
            ("http://a/api/items", "application/json", Some("xhr"), false),
            ("http://a/", "text/html", Some("document"), false),
            ("http://a/v1.2/items", "application/json", None, false),
            ("http://a/report.csv", "text/csv", None, false),
        ];
        for (url, mime, kind, want) in rows {
            let mut e = entry("GET", url, 200, mime);
            e.resource_type = kind.map(|k| k.to_owned().into());
            assert_eq!(is_static(&e), *want, "{url} {mime} {kind:?}");
        }
    }

    #[test]
    fn keeps_the_headers_a_user_wants() {
        let rows: &[(&str, &[&str], bool)] = &[
            ("Authorization", &[], true),
            ("Content-Type", &[], true),
            ("Accept", &[], true),
            ("X-CSRF-Token", &[], true),
            ("Origin", &[], true),
            (":authority", &[], false),
            (":path", &["path"], false),
            ("Host", &[], false),
            ("content-length", &[], false),
            ("Cookie", &[], false),
            ("Accept-Encoding", &[], false),
            ("Accept-Encoding", &["accept-encoding"], true),
            ("User-Agent", &[], false),
            ("User-Agent", &["User-Agent"], true),
            ("sec-ch-ua-platform", &[], false),
            ("Sec-Fetch-Mode", &[], false),
            ("If-None-Match", &[], false),
            ("Referer", &[], false),
        ];
        for (name, keep, want) in rows {
            let keep: Vec<String> = keep.iter().map(|k| (*k).to_owned()).collect();
            assert_eq!(keeps_header(name, &keep), *want, "{name} {keep:?}");
        }
    }

    #[test]
    fn filters_hosts() {
        let strings = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let rows: &[(&str, &[&str], &[&str], bool)] = &[
            ("http://127.0.0.1:8080/", &[], &[], true),
            ("http://127.0.0.1:8080/", &["127.0.0.1:8080"], &[], true),
            ("http://127.0.0.1:8080/", &["127.0.0.1"], &[], true),
            ("http://127.0.0.1:8080/", &["127.0.0.1:9090"], &[], false),
            ("http://127.0.0.1:8080/", &["other.test"], &[], false),
            ("https://cdn.test/x", &[], &["cdn.test"], false),
            ("https://cdn.test/x", &[], &["cdn.test:443"], false),
            ("https://cdn.test/x", &[], &["cdn.test:80"], true),
            ("http://[::1]:8080/", &["[::1]:8080"], &[], true),
            ("http://[::1]:8080/", &["::1"], &[], true),
            ("http://App.Test/", &["app.test"], &[], true),
        ];
        for (url, only, skip, want) in rows {
            let (only, skip) = (strings(only), strings(skip));
            let filter = HostFilter {
                only: &only,
                skip: &skip,
                origin: None,
            };
            assert_eq!(
                filter.keeps(&Url::parse(url).unwrap()),
                *want,
                "{url} {only:?} {skip:?}"
            );
        }
    }

    #[test]
    fn tells_a_followed_redirect() {
        let with_location = |status: u16, method: &str, location: &str| {
            let mut e = entry(method, "http://a/login", status, "text/html");
            e.response_headers = vec![("Location".into(), location.to_owned().into())];
            e
        };
        let rows: &[(u16, &str, &str, &str, &str, bool)] = &[
            (302, "POST", "/home", "GET", "http://a/home", true),
            (
                303,
                "POST",
                "http://a/home#top",
                "GET",
                "http://a/home",
                true,
            ),
            (307, "POST", "/home", "POST", "http://a/home", true),
            (307, "POST", "/home", "GET", "http://a/home", false),
            (302, "POST", "/home", "GET", "http://a/other", false),
            (200, "POST", "/home", "GET", "http://a/home", false),
        ];
        for (status, method, location, next_method, next_url, want) in rows {
            let e = with_location(*status, method, location);
            let next = entry(next_method, next_url, 200, "text/html");
            assert_eq!(
                follows_redirect(&e, &next),
                *want,
                "{status} {location} {next_url}"
            );
        }
        let no_location = entry("GET", "http://a/", 302, "");
        assert!(!follows_redirect(
            &no_location,
            &entry("GET", "http://a/", 200, "")
        ));
    }
}
