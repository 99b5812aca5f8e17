//! `-base-url`: the flow sent somewhere else than where it was recorded (a staging
//! host, a local build), its steps' paths and queries as recorded.
//!
//! **Which requests.** A browser's recording holds the application's requests and its
//! third parties' (analytics, fonts, a CDN, a login provider), which are not the
//! server under test and make no sense on another host. So without `-har-host` only
//! the recording's *main origin* is rebased: the `scheme://host:port` most steps go
//! to (the first on a tie), once the other rules have left out static assets and
//! cached entries; entries to other origins are left out as other hosts, and the
//! header lists them. With `-har-host`, every host it keeps is rebased (an
//! application on `www.` and `api.` together).
//!
//! **Where.** Each step's `scheme://host:port` becomes the base URL's, and the base
//! URL's path (without its last `/`) goes before the recorded path:
//! `http://127.0.0.1:8080/shop` sends a recorded `https://shop.test/items?page=2` as
//! `http://127.0.0.1:8080/shop/items?page=2`. A recorded `Origin` header naming a
//! rebased origin names the base URL's instead (servers checking it against their own
//! host would refuse the recorded one).

use url::{Origin, Position, Url};

use super::read::Entry;

/// Where the steps go instead of their recorded origins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Rebase {
    /// `scheme://host[:port]` and the base URL's path without its last `/`: written
    /// before each recorded path.
    pub prefix: String,
    /// The base URL's origin (`http://127.0.0.1:8080`), for a recorded `Origin` header.
    pub origin: String,
}

impl Rebase {
    /// Reads a `-base-url` value; the error says what is wrong with it (the caller
    /// names the flag).
    pub fn parse(text: &str) -> Result<Rebase, String> {
        let shown = units::redact_url(text);
        let like = "like http://127.0.0.1:8080 or https://staging.test/shop";
        if !text.contains("://") {
            // `127.0.0.1:8080` reads as a scheme and a path to a URL parser: say what helps.
            return Err(format!(
                "{shown:?} has no scheme: want http://{} (or https://)",
                shown.trim()
            ));
        }
        let url = Url::parse(text.trim())
            .map_err(|err| format!("{shown:?} is not a URL ({err}): want one {like}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "{shown:?} is not an http or https URL: want one {like}"
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(format!("{shown:?} has no host: want a URL {like}"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(format!(
                "{shown:?} has a query or a fragment: each step keeps its recorded query; \
                 want scheme://host:port and a path at most, {like}"
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "{shown:?} holds a user name or password: a flow's credentials go in its \
                 headers (-har-keep-header authorization keeps the recorded ones)"
            ));
        }
        let prefix = format!(
            "{}{}",
            &url[..Position::BeforePath],
            url.path().trim_end_matches('/')
        );
        if prefix.contains("{{") {
            return Err(format!(
                "{shown:?} holds a placeholder ({{{{): a flow's host is never templated"
            ));
        }
        Ok(Rebase {
            prefix,
            origin: url.origin().ascii_serialization(),
        })
    }

    /// A recorded header's value once rebased: an `Origin` naming the step's recorded
    /// origin names the base URL's.
    pub fn header_value<'v>(&'v self, name: &str, value: &'v str, recorded: &Url) -> &'v str {
        if name.eq_ignore_ascii_case("origin") && value == recorded.origin().ascii_serialization() {
            &self.origin
        } else {
            value
        }
    }
}

/// The origin most of `requests` go to; the first on a tie; `None` for none.
pub(super) fn main_origin<'e>(requests: impl Iterator<Item = &'e Entry<'e>>) -> Option<Origin> {
    let mut counts: Vec<(Origin, usize)> = Vec::new();
    for entry in requests {
        let origin = entry.url.origin();
        match counts.iter_mut().find(|(o, _)| *o == origin) {
            Some((_, count)) => *count += 1,
            None => counts.push((origin, 1)),
        }
    }
    // max_by_key keeps the last of equals: go backwards so the first origin wins.
    counts
        .into_iter()
        .rev()
        .max_by_key(|(_, count)| *count)
        .map(|(origin, _)| origin)
}

#[cfg(test)]
mod tests {
    use super::super::select::tests::entry;
    use super::*;

    /// The prefix and origin read, or a part of the error.
    type Want = Result<(&'static str, &'static str), &'static str>;

    #[test]
    fn reads_base_urls() {
        let rows: &[(&str, Want)] = &[
            (
                "http://127.0.0.1:8080",
                Ok(("http://127.0.0.1:8080", "http://127.0.0.1:8080")),
            ),
            (
                "http://127.0.0.1:8080/",
                Ok(("http://127.0.0.1:8080", "http://127.0.0.1:8080")),
            ),
            (
                "https://staging.test/shop/",
                Ok(("https://staging.test/shop", "https://staging.test")),
            ),
            (
                "HTTP://Staging.Test:443/a/b",
                Ok(("http://staging.test:443/a/b", "http://staging.test:443")),
            ),
            (
                "https://staging.test:443/",
                Ok(("https://staging.test", "https://staging.test")),
            ),
            (
                "http://[::1]:9000",
                Ok(("http://[::1]:9000", "http://[::1]:9000")),
            ),
            (
                "127.0.0.1:8080",
                Err("\"127.0.0.1:8080\" has no scheme: want http://127.0.0.1:8080 (or"),
            ),
            ("localhost", Err("has no scheme: want http://localhost (or")),
            ("", Err("\"\" has no scheme")),
            ("localhost:8080://x", Err("is not an http or https URL")),
            (
                "http://a b/",
                Err("is not a URL (invalid international domain name)"),
            ),
            ("ftp://files.test/", Err("is not an http or https URL")),
            ("http://", Err("is not a URL (empty host)")),
            ("http://a.test/?x=1", Err("has a query or a fragment")),
            ("http://a.test/#top", Err("has a query or a fragment")),
            (
                "http://ann:secret@a.test/",
                Err("\"http://ann:REDACTED@a.test/\" holds a user name or password"),
            ),
            ("http://{{host}}/", Err("holds a placeholder")),
        ];
        for (text, want) in rows {
            let got = Rebase::parse(text);
            match (got, want) {
                (Ok(got), Ok((prefix, origin))) => {
                    assert_eq!(
                        (got.prefix.as_str(), got.origin.as_str()),
                        (*prefix, *origin),
                        "{text}"
                    );
                }
                (Err(err), Err(want)) => assert!(err.contains(want), "{text}: {err}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn rewrites_only_a_recorded_origin_header() {
        let rebase = Rebase::parse("http://127.0.0.1:8080/shop").unwrap();
        let recorded = Url::parse("https://shop.test/items").unwrap();
        let rows = [
            ("Origin", "https://shop.test", "http://127.0.0.1:8080"),
            ("origin", "https://shop.test", "http://127.0.0.1:8080"),
            ("Origin", "https://other.test", "https://other.test"),
            ("X-Origin", "https://shop.test", "https://shop.test"),
            ("Accept", "*/*", "*/*"),
        ];
        for (name, value, want) in rows {
            assert_eq!(rebase.header_value(name, value, &recorded), want, "{name}");
        }
    }

    #[test]
    fn the_main_origin_is_the_most_frequent_then_the_first() {
        let rows: &[(&[&str], Option<&str>)] = &[
            (&[], None),
            (&["https://a.test/1"], Some("https://a.test")),
            (
                &["https://cdn.test/x", "https://a.test/1", "https://a.test/2"],
                Some("https://a.test"),
            ),
            (
                &["https://b.test/x", "https://a.test/1"],
                Some("https://b.test"),
            ),
            (
                &["http://a.test/x", "https://a.test/1", "http://a.test:80/y"],
                Some("http://a.test"),
            ),
        ];
        for (urls, want) in rows {
            let entries: Vec<Entry<'_>> = urls.iter().map(|u| entry("GET", u, 200, "")).collect();
            let got = main_origin(entries.iter()).map(|o| o.ascii_serialization());
            assert_eq!(got.as_deref(), *want, "{urls:?}");
        }
    }
}
