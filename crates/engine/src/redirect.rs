//! Following redirects as Go's client does (vegeta's `-redirects`): 301, 302 and 303
//! turn a non-HEAD request into a GET without a body; 307 and 308 repeat it as it was.

use url::Url;
use workload::{RenderContext, Target, TraceIds, TraceState};

use crate::render::RequestTemplate;

/// What to send next after a redirect response, or why not.
pub(crate) enum Next {
    Follow {
        url: Url,
        method: String,
        bytes: Vec<u8>,
    },
    Refuse(&'static str),
}

/// Statuses that carry a `Location` to follow.
pub(crate) fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// The trace context a traced request's next hops carry: its own ids (the hops are
/// part of the one request loadlab times and its client span covers), and the run's
/// `tracestate`.
#[derive(Clone, Copy)]
pub(crate) struct HopTrace<'a> {
    pub ids: TraceIds,
    pub state: Option<&'a TraceState>,
}

/// Builds the next hop from the current request (`base` target, current URL and
/// method) and the response's `Location`.
pub(crate) fn next_hop(
    base: &Target,
    (current_url, current_method): (&Url, &str),
    status: u16,
    location: &[u8],
    keepalive: bool,
    trace: Option<HopTrace<'_>>,
) -> Next {
    let Ok(location) = std::str::from_utf8(location) else {
        return Next::Refuse("redirect: Location is not UTF-8");
    };
    let Ok(url) = current_url.join(location.trim()) else {
        return Next::Refuse("redirect: bad Location");
    };
    if !matches!(url.scheme(), "http" | "https") {
        return Next::Refuse("redirect: Location is not http or https");
    }
    let keep_method = matches!(status, 307 | 308) || current_method == "HEAD";
    let method = if keep_method {
        current_method.to_owned()
    } else {
        "GET".to_owned()
    };
    let mut hop = base.clone();
    hop.method.clone_from(&method);
    hop.url = url.clone();
    // The Location is a concrete URL: placeholders of the original path do not apply.
    hop.templated_path = None;
    if !keep_method {
        hop.body.clear();
        hop.headers.retain(|h| {
            !h.name.eq_ignore_ascii_case("content-type")
                && !h.name.eq_ignore_ascii_case("content-length")
        });
    }
    // A Host header set by the user applies to the original host only.
    if url.host_str() != base.url.host_str() {
        hop.headers.retain(|h| !h.name.eq_ignore_ascii_case("host"));
    }
    let template =
        RequestTemplate::literal(&hop, keepalive).with_trace_state(trace.and_then(|t| t.state));
    let (mut bytes, mut body) = (Vec::new(), Vec::new());
    let context = RenderContext::plain(0, 0, None);
    template.render(&context, &mut bytes, &mut body, &[], trace.map(|t| t.ids));
    Next::Follow { bytes, url, method }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post() -> Target {
        Target {
            method: "POST".to_owned(),
            url: Url::parse("http://a.test/form").unwrap(),
            headers: vec![workload::Header {
                name: "Content-Type".to_owned(),
                value: "text/plain".to_owned(),
            }],
            body: b"x=1".to_vec(),
            templated_path: None,
            grpc_message: None,
            grpc_stream: None,
        }
    }

    #[test]
    fn follows_like_go() {
        let rows: &[(u16, &str, &str, &str, bool)] = &[
            (302, "/done", "GET", "http://a.test/done", false),
            (
                303,
                "http://b.test/x?y=1",
                "GET",
                "http://b.test/x?y=1",
                false,
            ),
            (307, "next", "POST", "http://a.test/next", true),
            (
                308,
                "https://a.test/secure",
                "POST",
                "https://a.test/secure",
                true,
            ),
        ];
        for &(status, location, method, url, has_body) in rows {
            let base = post();
            match next_hop(
                &base,
                (&base.url, "POST"),
                status,
                location.as_bytes(),
                true,
                None,
            ) {
                Next::Follow {
                    url: got,
                    method: got_method,
                    bytes,
                } => {
                    let text = String::from_utf8(bytes).unwrap();
                    assert_eq!(
                        (got.as_str(), got_method.as_str()),
                        (url, method),
                        "{status}"
                    );
                    assert_eq!(text.ends_with("x=1"), has_body, "{text}");
                }
                Next::Refuse(why) => panic!("{status}: {why}"),
            }
        }
        let base = post();
        for location in ["ftp://x/", "http://[bad"] {
            assert!(
                matches!(
                    next_hop(
                        &base,
                        (&base.url, "POST"),
                        302,
                        location.as_bytes(),
                        true,
                        None
                    ),
                    Next::Refuse(_)
                ),
                "{location}"
            );
        }
    }
}
