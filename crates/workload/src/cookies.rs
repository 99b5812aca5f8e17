//! [`CookieJar`]: one virtual user's cookies, kept and sent by the rules a browser
//! applies (RFC 6265 section 5): `Domain` (host-only without one), `Path` (the
//! request's directory without one), `Max-Age` over `Expires`, `Secure`. No public
//! suffix list: a load test talks to the hosts its flow names.

/// Why a `Set-Cookie` was refused; static text, so refusing allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookieRefusal(pub &'static str);

#[derive(Debug, Clone, PartialEq, Eq)]
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

/// A user's cookies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CookieJar {
    cookies: Vec<Cookie>,
}

impl CookieJar {
    /// Keeps (or replaces, or with a past expiry removes) the cookie `set_cookie` sets
    /// for a request to `url` at `now_unix_s`.
    pub fn store(
        &mut self,
        set_cookie: &[u8],
        url: CookieUrl<'_>,
        now_unix_s: i64,
    ) -> Result<(), CookieRefusal> {
        let text = std::str::from_utf8(set_cookie)
            .map_err(|_| CookieRefusal("the Set-Cookie header is not UTF-8"))?;
        let mut parts = text.split(';');
        let pair = parts.next().unwrap_or_default();
        let (name, value) = pair
            .split_once('=')
            .ok_or(CookieRefusal("a Set-Cookie without name=value"))?;
        let name = name.trim();
        if name.is_empty() {
            return Err(CookieRefusal("a Set-Cookie with an empty name"));
        }
        let mut cookie = Cookie {
            name: name.to_owned(),
            value: value.trim().to_owned(),
            domain: url.host.to_owned(),
            host_only: true,
            path: default_path(url.path).to_owned(),
            secure: false,
            expires_unix_s: None,
        };
        let mut max_age = None;
        for attribute in parts {
            let (key, value) = attribute.split_once('=').unwrap_or((attribute, ""));
            let (key, value) = (key.trim(), value.trim());
            match key.to_ascii_lowercase().as_str() {
                "domain" => set_domain(&mut cookie, value, url.host)?,
                "path" if value.starts_with('/') => cookie.path = value.to_owned(),
                "secure" => cookie.secure = true,
                "max-age" => max_age = parse_max_age(value),
                "expires" if max_age.is_none() => {
                    cookie.expires_unix_s = parse_http_date(value).or(cookie.expires_unix_s);
                }
                _ => {}
            }
        }
        if let Some(seconds) = max_age {
            cookie.expires_unix_s = Some(now_unix_s.saturating_add(seconds));
        }
        if cookie.secure && !url.https {
            return Err(CookieRefusal("a Secure cookie set over plain http"));
        }
        self.put(cookie, now_unix_s);
        Ok(())
    }

    fn put(&mut self, cookie: Cookie, now_unix_s: i64) {
        let same = self.cookies.iter().position(|c| {
            c.name == cookie.name && c.domain == cookie.domain && c.path == cookie.path
        });
        let expired = cookie.expires_unix_s.is_some_and(|e| e <= now_unix_s);
        match (same, expired) {
            (Some(index), true) => {
                self.cookies.remove(index);
            }
            (Some(index), false) => self.cookies[index] = cookie,
            (None, true) => {}
            (None, false) => self.cookies.push(cookie),
        }
    }

    /// Appends `Cookie: a=1; b=2\r\n` for a request to `url`, if any cookie goes
    /// there (longer paths first, as a browser sends them).
    pub fn write_header(&self, url: CookieUrl<'_>, now_unix_s: i64, out: &mut Vec<u8>) {
        let mut sent = 0;
        // Few cookies per user: a pass per path length keeps it allocation-free.
        let mut lengths: [usize; 8] = [0; 8];
        let mut distinct = 0;
        for cookie in self.cookies.iter().filter(|c| c.goes_to(url, now_unix_s)) {
            if distinct < lengths.len() && !lengths[..distinct].contains(&cookie.path.len()) {
                lengths[distinct] = cookie.path.len();
                distinct += 1;
            }
        }
        lengths[..distinct].sort_unstable_by(|a, b| b.cmp(a));
        for &length in &lengths[..distinct] {
            for cookie in self
                .cookies
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
        self.cookies
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value.as_str())
    }

    /// Forgets every cookie (a user that starts over).
    pub fn clear(&mut self) {
        self.cookies.clear();
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

fn set_domain(cookie: &mut Cookie, value: &str, host: &str) -> Result<(), CookieRefusal> {
    let domain = value.trim_start_matches('.').to_ascii_lowercase();
    if domain.is_empty() {
        return Ok(());
    }
    if !domain_matches(host, &domain) {
        return Err(CookieRefusal(
            "its Domain does not cover the request's host",
        ));
    }
    cookie.domain = domain;
    // An IP address only ever matches itself: the cookie stays host-only.
    cookie.host_only = is_ip(host);
    Ok(())
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
        ];
        for (header, to, want) in rows {
            let mut jar = CookieJar::default();
            let err = jar.store(header.as_bytes(), *to, NOW).unwrap_err();
            assert!(err.0.contains(want), "{header}: {err:?}");
            assert_eq!(jar, CookieJar::default(), "{header}: nothing kept");
        }
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
