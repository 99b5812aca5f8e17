//! [`CookieJar`]: one virtual user's cookies, kept and sent by the rules a browser
//! applies (RFC 6265 section 5): `Domain` (host-only without one), `Path` (the
//! request's directory without one), `Max-Age` over `Expires`, `Secure`. No public
//! suffix list: a load test talks to the hosts its flow names.

/// The longest cookie kept, name and value together, bytes: what browsers keep
/// (RFC 6265 section 6.1 asks for at least this; Chrome and Firefox refuse longer).
pub const MAX_COOKIE_BYTES: usize = 4096;

/// Why a `Set-Cookie` was refused; static text, so refusing allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookieRefusal(pub &'static str);

#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Cookie {
    name: String,
    value: String,
    domain: String,
    host_only: bool,
    path: String,
    secure: bool,
    /// Unix seconds; `None` lives as long as the user (a session cookie).
    expires_unix_s: Option<i64>,
}

/// Where a request goes, as the jar needs it.
#[derive(Debug, Clone, Copy)]
pub struct CookieUrl<'a> {
    /// The host, lowercase, without port.
    pub host: &'a str,
    /// The path, without the query.
    pub path: &'a str,
    /// Whether it goes over TLS.
    pub https: bool,
}

impl<'a> CookieUrl<'a> {
    /// Where `url` goes.
    pub fn of(url: &'a url::Url) -> CookieUrl<'a> {
        CookieUrl {
            host: url.host_str().unwrap_or_default(),
            path: url.path(),
            https: url.scheme() == "https",
        }
    }
}

/// A user's cookies.
#[derive(Debug, Clone, Default)]
pub struct CookieJar {
    /// The jar's cookies first (`..live`, in the order they were set), then spare
    /// slots whose strings the next cookies reuse.
    cookies: Vec<Cookie>,
    live: usize,
}

impl PartialEq for CookieJar {
    fn eq(&self, other: &CookieJar) -> bool {
        self.cookies[..self.live] == other.cookies[..other.live]
    }
}

impl Eq for CookieJar {}

/// A `Set-Cookie` header read, borrowing its text.
struct SetCookie<'a> {
    name: &'a str,
    value: &'a str,
    domain: &'a str,
    host_only: bool,
    path: &'a str,
    secure: bool,
    max_age: Option<i64>,
    expires_unix_s: Option<i64>,
}

impl<'a> SetCookie<'a> {
    fn parse(header: &'a [u8], url: CookieUrl<'a>) -> Result<SetCookie<'a>, CookieRefusal> {
        let text = std::str::from_utf8(header)
            .map_err(|_| CookieRefusal("the Set-Cookie header is not UTF-8"))?;
        let mut parts = text.split(';');
        let (name, value) = parts
            .next()
            .unwrap_or_default()
            .split_once('=')
            .ok_or(CookieRefusal("a Set-Cookie without name=value"))?;
        let name = name.trim();
        if name.is_empty() {
            return Err(CookieRefusal("a Set-Cookie with an empty name"));
        }
        if name.len() + value.trim().len() > MAX_COOKIE_BYTES {
            return Err(CookieRefusal(
                "a cookie longer than 4096 bytes (name and value), which browsers refuse",
            ));
        }
        let mut set = SetCookie {
            name,
            value: value.trim(),
            domain: url.host,
            host_only: true,
            path: default_path(url.path),
            secure: false,
            max_age: None,
            expires_unix_s: None,
        };
        for attribute in parts {
            let (key, value) = attribute.split_once('=').unwrap_or((attribute, ""));
            set.attribute(key.trim(), value.trim(), url.host)?;
        }
        if set.secure && !url.https {
            return Err(CookieRefusal("a Secure cookie set over plain http"));
        }
        Ok(set)
    }

    fn attribute(&mut self, key: &str, value: &'a str, host: &str) -> Result<(), CookieRefusal> {
        let is = |name: &str| key.eq_ignore_ascii_case(name);
        if is("domain") {
            let domain = value.trim_start_matches('.');
            if domain.is_empty() {
                return Ok(());
            }
            if !domain_matches(host, &domain.to_ascii_lowercase()) {
                return Err(CookieRefusal(
                    "its Domain does not cover the request's host",
                ));
            }
            self.domain = domain;
            // An IP address only ever matches itself: the cookie stays host-only.
            self.host_only = is_ip(host);
        } else if is("path") && value.starts_with('/') {
            self.path = value;
        } else if is("secure") {
            self.secure = true;
        } else if is("max-age") {
            self.max_age = parse_max_age(value);
        } else if is("expires") && self.max_age.is_none() {
            self.expires_unix_s = parse_http_date(value).or(self.expires_unix_s);
        }
        Ok(())
    }
}

impl CookieJar {
    /// Keeps (or replaces, or with a past expiry removes) the cookie `set_cookie` sets
    /// for a request to `url` at `now_unix_s`. Read without allocating; kept in a
    /// slot whose strings are reused (a user logs in again every run of its flow).
    pub fn store(
        &mut self,
        set_cookie: &[u8],
        url: CookieUrl<'_>,
        now_unix_s: i64,
    ) -> Result<(), CookieRefusal> {
        let set = SetCookie::parse(set_cookie, url)?;
        let expires_unix_s = match set.max_age {
            Some(seconds) => Some(now_unix_s.saturating_add(seconds)),
            None => set.expires_unix_s,
        };
        let same = self.cookies[..self.live].iter().position(|c| {
            c.name == set.name && c.domain.eq_ignore_ascii_case(set.domain) && c.path == set.path
        });
        if expires_unix_s.is_some_and(|e| e <= now_unix_s) {
            if let Some(index) = same {
                // Out of the jar, its strings kept for the next cookie.
                self.cookies[index..self.live].rotate_left(1);
                self.live -= 1;
            }
            return Ok(());
        }
        let index = same.unwrap_or_else(|| self.spare_slot());
        let cookie = &mut self.cookies[index];
        for (field, text) in [
            (&mut cookie.name, set.name),
            (&mut cookie.value, set.value),
            (&mut cookie.path, set.path),
        ] {
            field.clear();
            field.push_str(text);
        }
        cookie.domain.clear();
        cookie
            .domain
            .extend(set.domain.chars().map(|c| c.to_ascii_lowercase()));
        cookie.host_only = set.host_only;
        cookie.secure = set.secure;
        cookie.expires_unix_s = expires_unix_s;
        Ok(())
    }

    /// A slot past the jar's cookies (a spare one's strings reused), now in the jar.
    fn spare_slot(&mut self) -> usize {
        if self.live == self.cookies.len() {
            self.cookies.push(Cookie::default());
        }
        self.live += 1;
        self.live - 1
    }

    /// Appends `Cookie: a=1; b=2\r\n` for a request to `url`, if any cookie goes
    /// there (longer paths first, as a browser sends them).
    pub fn write_header(&self, url: CookieUrl<'_>, now_unix_s: i64, out: &mut Vec<u8>) {
        let mut sent = 0;
        // Few cookies per user: a pass per path length keeps it allocation-free.
        let mut lengths: [usize; 8] = [0; 8];
        let mut distinct = 0;
        for cookie in self.cookies[..self.live]
            .iter()
            .filter(|c| c.goes_to(url, now_unix_s))
        {
            if distinct < lengths.len() && !lengths[..distinct].contains(&cookie.path.len()) {
                lengths[distinct] = cookie.path.len();
                distinct += 1;
            }
        }
        lengths[..distinct].sort_unstable_by(|a, b| b.cmp(a));
        for &length in &lengths[..distinct] {
            for cookie in self.cookies[..self.live]
                .iter()
                .filter(|c| c.path.len() == length && c.goes_to(url, now_unix_s))
            {
                out.extend_from_slice(if sent == 0 { b"Cookie: " } else { b"; " });
                out.extend_from_slice(cookie.name.as_bytes());
                out.push(b'=');
                out.extend_from_slice(cookie.value.as_bytes());
                sent += 1;
            }
        }
        if sent > 0 {
            out.extend_from_slice(b"\r\n");
        }
    }

    /// The value of the cookie named `name` (the first kept, whatever its domain).
    pub fn value(&self, name: &str) -> Option<&str> {
        self.cookies[..self.live]
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value.as_str())
    }

    /// Forgets every cookie (a user that starts over); their slots stay for reuse.
    pub fn clear(&mut self) {
        self.live = 0;
    }
}

impl Cookie {
    fn goes_to(&self, url: CookieUrl<'_>, now_unix_s: i64) -> bool {
        let domain_ok = if self.host_only {
            url.host == self.domain
        } else {
            domain_matches(url.host, &self.domain)
        };
        domain_ok
            && path_matches(url.path, &self.path)
            && (!self.secure || url.https)
            && self.expires_unix_s.is_none_or(|e| e > now_unix_s)
    }
}

/// RFC 6265 5.1.3: the host is the domain, or a name under it (never an IP address).
fn domain_matches(host: &str, domain: &str) -> bool {
    host == domain
        || (!is_ip(host)
            && host.len() > domain.len()
            && host.ends_with(domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.')
}

fn is_ip(host: &str) -> bool {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
        .is_ok()
}

/// RFC 6265 5.1.4: the request path up to its last `/`, or `/`.
fn default_path(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(index) => &path[..index],
    }
}

/// RFC 6265 5.1.4: the cookie's path is the request's, or a directory above it.
fn path_matches(request: &str, cookie: &str) -> bool {
    request == cookie
        || (request.starts_with(cookie)
            && (cookie.ends_with('/') || request.as_bytes().get(cookie.len()) == Some(&b'/')))
}

fn parse_max_age(value: &str) -> Option<i64> {
    let valid = !value.is_empty()
        && value
            .strip_prefix('-')
            .unwrap_or(value)
            .bytes()
            .all(|b| b.is_ascii_digit());
    valid.then(|| value.parse::<i64>().unwrap_or(i64::MAX).max(0))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`, also with dashes (`06-Nov-1994`); an
/// unreadable date is ignored, as browsers do.
fn parse_http_date(value: &str) -> Option<i64> {
    let spaced = value.replace('-', " ");
    jiff::fmt::rfc2822::parse(&spaced)
        .ok()
        .map(|zoned| zoned.timestamp().as_second())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_780_000_000;

    fn url(host: &'static str, path: &'static str, https: bool) -> CookieUrl<'static> {
        CookieUrl { host, path, https }
    }

    fn sent(jar: &CookieJar, to: CookieUrl<'_>, now: i64) -> String {
        let mut out = Vec::new();
        jar.write_header(to, now, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn keeps_and_sends_cookies_by_the_rules() {
        let mut jar = CookieJar::default();
        let shop = url("shop.test", "/account/login", false);
        for header in [
            "sid=abc; Path=/; HttpOnly",
            "pref=1",
            "wide=w; Domain=.shop.test; Path=/",
            "cart=9; Path=/cart",
            "short=s; Max-Age=60",
            "old=o; Expires=Sun, 06 Nov 1994 08:49:37 GMT",
            "tls=t; Secure; Path=/",
        ] {
            let https = header.contains("Secure");
            let to = CookieUrl { https, ..shop };
            jar.store(header.as_bytes(), to, NOW).unwrap();
        }
        let rows: &[(CookieUrl<'_>, i64, &str)] = &[
            (
                url("shop.test", "/account/x", false),
                NOW,
                "Cookie: pref=1; short=s; sid=abc; wide=w\r\n",
            ),
            (
                url("shop.test", "/cart/1", true),
                NOW,
                "Cookie: cart=9; sid=abc; wide=w; tls=t\r\n",
            ),
            (url("api.shop.test", "/", false), NOW, "Cookie: wide=w\r\n"),
            (url("other.test", "/", false), NOW, ""),
            (
                url("shop.test", "/accountant", false),
                NOW + 61,
                "Cookie: sid=abc; wide=w\r\n",
            ),
        ];
        for (to, now, want) in rows {
            assert_eq!(sent(&jar, *to, *now), *want, "{to:?}");
        }
        assert_eq!(jar.value("sid"), Some("abc"));
        // Replaced in place, then removed by a past expiry.
        jar.store(b"sid=new; Path=/", shop, NOW).unwrap();
        assert_eq!(jar.value("sid"), Some("new"));
        jar.store(b"sid=; Path=/; Max-Age=0", shop, NOW).unwrap();
        assert_eq!(jar.value("sid"), None);
    }

    #[test]
    fn refuses_what_a_browser_refuses() {
        let rows: &[(&str, CookieUrl<'_>, &str)] = &[
            (
                "a=1; Domain=evil.test",
                url("shop.test", "/", false),
                "does not cover",
            ),
            (
                "a=1; Domain=hop.test",
                url("shop.test", "/", false),
                "does not cover",
            ),
            (
                "a=1; Domain=0.0.1",
                url("127.0.0.1", "/", false),
                "does not cover",
            ),
            ("a=1; Secure", url("shop.test", "/", false), "Secure"),
            (
                "novalue",
                url("shop.test", "/", false),
                "without name=value",
            ),
            ("=1", url("shop.test", "/", false), "empty name"),
            (
                &format!("a={}", "v".repeat(MAX_COOKIE_BYTES)),
                url("shop.test", "/", false),
                "longer than 4096 bytes",
            ),
            (
                &format!("big={}; Path=/", "v".repeat(100_000)),
                url("shop.test", "/", false),
                "longer than 4096 bytes",
            ),
        ];
        for (header, to, want) in rows {
            let mut jar = CookieJar::default();
            let err = jar.store(header.as_bytes(), *to, NOW).unwrap_err();
            assert!(err.0.contains(want), "{header}: {err:?}");
            assert_eq!(jar, CookieJar::default(), "{header}: nothing kept");
        }
        let mut jar = CookieJar::default();
        let longest = format!("a={}", "v".repeat(MAX_COOKIE_BYTES - 1));
        jar.store(longest.as_bytes(), url("shop.test", "/", false), NOW)
            .unwrap();
        assert_eq!(jar.value("a").map(str::len), Some(MAX_COOKIE_BYTES - 1));
        let mut jar = CookieJar::default();
        jar.store(b"a=1; Domain=127.0.0.1", url("127.0.0.1", "/", false), NOW)
            .unwrap();
        assert_eq!(
            sent(&jar, url("127.0.0.1", "/x", false), NOW),
            "Cookie: a=1\r\n"
        );
    }

    #[test]
    fn paths_and_dates() {
        assert_eq!(default_path("/a/b/c"), "/a/b");
        assert_eq!(default_path("/a"), "/");
        assert_eq!(default_path(""), "/");
        assert!(path_matches("/a/b", "/a"));
        assert!(path_matches("/a/", "/a/"));
        assert!(!path_matches("/ab", "/a"));
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(
            parse_http_date("Sun, 06-Nov-1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_http_date("tomorrow"), None);
        assert_eq!(parse_max_age("-5"), Some(0));
        assert_eq!(parse_max_age("5s"), None);
    }
}
