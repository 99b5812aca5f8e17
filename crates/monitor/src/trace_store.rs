//! [`TraceStoreClient`]: reads traces back from a trace store's query API (Jaeger's
//! `GET /api/traces/{trace_id}`, JSON) for `report -trace-store` (docs/TRACES.md).
//! Bounded: one call per trace, each under a timeout, all of them under an overall
//! one; a store that is down, slow or answers garbage is one error naming why, so the
//! report says "not judged" rather than guessing.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use analysis::{Fetched, Span};

use crate::MonitorError;

/// A trace's JSON larger than this is refused.
const MAX_TRACE_BYTES: usize = 16 << 20;
/// Each call's bound.
const PER_CALL: Duration = Duration::from_secs(3);
/// All calls' bound.
const OVERALL: Duration = Duration::from_secs(20);

/// Jaeger's query API at a base URL (`http://127.0.0.1:16686`).
#[derive(Debug, Clone)]
pub struct TraceStoreClient {
    base: url::Url,
    /// For an `https://` store (the engine's client configuration).
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl TraceStoreClient {
    /// Checks `base` (the store's query port: `http://`, or `https://` over `tls`).
    pub fn new(
        base: &str,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<TraceStoreClient, MonitorError> {
        let bad = |reason: String| MonitorError::TraceStore {
            base: base.to_owned(),
            reason,
        };
        let mut url = url::Url::parse(base).map_err(|err| bad(err.to_string()))?;
        let scheme_ok = match url.scheme() {
            "http" => true,
            "https" => tls.is_some(),
            _ => false,
        };
        if !scheme_ok || url.host_str().is_none() {
            return Err(bad(
                "want the store's query API as http://HOST:PORT or https://HOST:PORT, like http://127.0.0.1:16686"
                    .to_owned(),
            ));
        }
        // `api/traces/…` is joined under the base's path, not in place of its last part.
        if !url.path().ends_with('/') {
            url.set_path(&format!("{}/", url.path()));
        }
        Ok(TraceStoreClient { base: url, tls })
    }

    /// The base URL, as given.
    pub fn base(&self) -> &str {
        self.base.as_str()
    }

    /// Each trace's spans, `None` when the store has no such trace; an error naming
    /// why when the store cannot be read (down, slow, garbage).
    pub fn fetch(&self, trace_ids: &[String]) -> Result<Fetched, String> {
        let until = Instant::now() + OVERALL;
        let mut fetched = Vec::with_capacity(trace_ids.len());
        for (done, trace_id) in trace_ids.iter().enumerate() {
            let now = Instant::now();
            if now >= until {
                return Err(format!(
                    "{} answered {done} of {} traces within {}s",
                    self.base,
                    trace_ids.len(),
                    OVERALL.as_secs()
                ));
            }
            fetched.push(self.fetch_one(trace_id, until.min(now + PER_CALL))?);
        }
        Ok(fetched)
    }

    fn fetch_one(&self, trace_id: &str, deadline: Instant) -> Result<Option<Vec<Span>>, String> {
        let path = format!("api/traces/{trace_id}");
        let url = self
            .base
            .join(&path)
            .map_err(|err| format!("{}: {err}", self.base))?;
        let request = wire::client::Request {
            method: "GET",
            url: &url,
            headers: &[
                ("User-Agent", "loadlab-report"),
                ("Accept", "application/json"),
            ],
            body: &[],
            max_body_bytes: MAX_TRACE_BYTES,
            tls: self.tls.as_ref(),
        };
        let answer =
            wire::client::send(&request, deadline).map_err(|err| format!("{url}: {err}"))?;
        match answer.status {
            404 => Ok(None),
            200 => parse_jaeger_trace(&answer.body).map_err(|reason| format!("{url}: {reason}")),
            status => Err(format!("{url}: HTTP {status}")),
        }
    }
}

/// The spans of Jaeger's `{"data":[{"spans":[...],"processes":{...}}]}`; `None` for an
/// empty `data`.
pub(crate) fn parse_jaeger_trace(body: &[u8]) -> Result<Option<Vec<Span>>, String> {
    let json: serde_json::Value =
        serde_json::from_slice(body).map_err(|err| format!("the answer is not JSON ({err})"))?;
    let Some(data) = json.get("data").and_then(|d| d.as_array()) else {
        if json.get("data").is_some_and(serde_json::Value::is_null) {
            return Ok(None);
        }
        return Err("the answer has no \"data\" list (is it Jaeger's query API?)".to_owned());
    };
    let Some(trace) = data.first() else {
        return Ok(None);
    };
    let services = services(trace)?;
    let spans =
        (trace.get("spans").and_then(|s| s.as_array())).ok_or("the trace has no \"spans\" list")?;
    spans
        .iter()
        .enumerate()
        .map(|(index, span)| {
            parse_span(span, &services).map_err(|field| format!("span {index}: no valid {field:?}"))
        })
        .collect::<Result<Vec<Span>, String>>()
        .map(Some)
}

/// `processes`: process id to service name.
fn services(trace: &serde_json::Value) -> Result<HashMap<&str, &str>, String> {
    let processes = (trace.get("processes").and_then(|p| p.as_object()))
        .ok_or("the trace has no \"processes\" object")?;
    Ok(processes
        .iter()
        .filter_map(|(id, process)| Some((id.as_str(), process.get("serviceName")?.as_str()?)))
        .collect())
}

/// One span, or the name of the field it lacks.
fn parse_span(
    span: &serde_json::Value,
    services: &HashMap<&str, &str>,
) -> Result<Span, &'static str> {
    let text = |field: &'static str| span.get(field).and_then(|v| v.as_str()).ok_or(field);
    let number = |field: &'static str| span.get(field).and_then(|v| v.as_u64()).ok_or(field);
    let parent_id = (span.get("references").and_then(|r| r.as_array()))
        .into_iter()
        .flatten()
        .find(|r| r.get("refType").and_then(|t| t.as_str()) == Some("CHILD_OF"))
        .and_then(|r| r.get("spanID")?.as_str())
        .map(str::to_owned);
    let process = text("processID")?;
    Ok(Span {
        span_id: text("spanID")?.to_owned(),
        parent_id,
        service: (*services.get(process).ok_or("processID")?).to_owned(),
        operation: text("operationName")?.to_owned(),
        start_us: number("startTime")?,
        duration_us: number("duration")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = r#"{"data":[{"traceID":"0af7","spans":[
        {"traceID":"0af7","spanID":"a1","operationName":"GET /orders/<int:order_id>",
         "references":[{"refType":"CHILD_OF","traceID":"0af7","spanID":"b7ad"}],
         "startTime":1000,"duration":9000,"processID":"p1"},
        {"traceID":"0af7","spanID":"c2","operationName":"UPDATE",
         "references":[{"refType":"CHILD_OF","traceID":"0af7","spanID":"a1"}],
         "startTime":2000,"duration":6000,"processID":"p1"}],
        "processes":{"p1":{"serviceName":"traced-orders","tags":[]}}}],
        "total":0,"limit":0,"offset":0,"errors":null}"#;

    #[test]
    fn reads_jaegers_trace_json() {
        let spans = parse_jaeger_trace(TRACE.as_bytes()).unwrap().unwrap();
        assert_eq!(spans.len(), 2);
        assert_eq!(
            spans[1],
            Span {
                span_id: "c2".to_owned(),
                parent_id: Some("a1".to_owned()),
                service: "traced-orders".to_owned(),
                operation: "UPDATE".to_owned(),
                start_us: 2000,
                duration_us: 6000,
            }
        );
        assert_eq!(spans[0].parent_id.as_deref(), Some("b7ad"));
    }

    #[test]
    fn garbage_is_named_and_no_trace_is_none() {
        // (body, Ok(found) or Err(what the reason says))
        let rows: [(&str, Result<bool, &str>); 7] = [
            (r#"{"data":[]}"#, Ok(false)),
            (r#"{"data":null,"errors":[{"code":404}]}"#, Ok(false)),
            ("<html>hello</html>", Err("not JSON")),
            (r#"{"traces":[]}"#, Err("no \"data\" list")),
            (r#"{"data":[{"spans":[]}]}"#, Err("no \"processes\"")),
            (
                &TRACE.replace("\"duration\":6000", "\"duration\":\"6ms\""),
                Err("span 1: no valid \"duration\""),
            ),
            (
                &TRACE.replace("\"processID\":\"p1\"}]", "\"processID\":\"p9\"}]"),
                Err("span 1: no valid \"processID\""),
            ),
        ];
        for (body, want) in rows {
            match (parse_jaeger_trace(body.as_bytes()), want) {
                (Ok(found), Ok(want)) => assert_eq!(found.is_some(), want, "{body}"),
                (Err(reason), Err(want)) => assert!(reason.contains(want), "{reason}"),
                (got, _) => panic!("{body}: {got:?}"),
            }
        }
    }

    #[test]
    fn a_base_is_http_or_https_with_a_tls_configuration() {
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
        let tls = Some(Arc::new(tls));
        assert!(TraceStoreClient::new("http://127.0.0.1:16686", None).is_ok());
        assert!(TraceStoreClient::new("https://jaeger:16686", tls.clone()).is_ok());
        // (base, with a TLS configuration)
        let rows = [
            ("127.0.0.1:16686", true),
            ("https://jaeger:16686", false),
            ("ftp://jaeger:16686", true),
            ("not a url", true),
        ];
        for (bad, with_tls) in rows {
            let tls = tls.clone().filter(|_| with_tls);
            let err = TraceStoreClient::new(bad, tls).unwrap_err().to_string();
            assert!(err.starts_with("-trace-store"), "{err}");
        }
    }
}
