//! Error ids. Errors are counted by kind and described once: a worker keeps a small
//! cache of the errors it has seen and takes the shared registry's lock only the first
//! time it meets a new one, never per request.

use std::sync::{Arc, Mutex, PoisonError};

use record::{ErrorEntry, ErrorKind, GrpcStatus};

use crate::render::Refusal;

/// The run's error table; ids are 1-based positions.
#[derive(Default)]
pub(crate) struct ErrorRegistry {
    entries: Mutex<Vec<ErrorEntry>>,
}

impl ErrorRegistry {
    fn intern(&self, entry: ErrorEntry) -> u32 {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(index) = entries.iter().position(|e| *e == entry) {
            return index as u32 + 1;
        }
        entries.push(entry);
        entries.len() as u32
    }

    /// Entries from position `from` on (for the writer's dictionary blocks).
    pub(crate) fn since(&self, from: usize) -> Vec<ErrorEntry> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .get(from..)
            .map(<[ErrorEntry]>::to_vec)
            .unwrap_or_default()
    }
}

/// What identifies an error without formatting text: kind, operation and errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cause {
    pub kind: ErrorKind,
    pub operation: &'static str,
    pub errno: i32,
}

impl Cause {
    pub(crate) fn new(kind: ErrorKind, operation: &'static str) -> Cause {
        Cause {
            kind,
            operation,
            errno: 0,
        }
    }

    pub(crate) fn io(kind: ErrorKind, operation: &'static str, err: &std::io::Error) -> Cause {
        Cause {
            kind,
            operation,
            errno: err.raw_os_error().unwrap_or(-1),
        }
    }

    fn text(&self) -> String {
        match self.errno {
            0 => self.operation.to_owned(),
            -1 => format!("{}: failed", self.operation),
            errno => {
                let message = std::io::Error::from_raw_os_error(errno).to_string();
                let message = message
                    .split(" (os error")
                    .next()
                    .unwrap_or(&message)
                    .to_ascii_lowercase();
                format!("{}: {message}", self.operation)
            }
        }
    }
}

/// How many distinct TLS errors a worker remembers. Some never compare equal (rustls'
/// `Other`), so the cache is bounded; past it, errors are described every time.
const TLS_CACHE_ENTRIES: usize = 32;

/// A worker's view of the registry.
pub(crate) struct ErrorCache {
    registry: Arc<ErrorRegistry>,
    causes: Vec<(Cause, u32)>,
    statuses: Vec<(u16, Box<[u8]>, u32)>,
    /// gRPC statuses met, with their messages, and their ids.
    grpc: Vec<(GrpcStatus, Box<[u8]>, u32)>,
    tls: Vec<(rustls::Error, u32)>,
    /// Per `-redirects` limit: attacks may set different ones.
    redirect_limits: Vec<(i32, u32)>,
    /// Flow failures by (attack, step, failure).
    flows: Vec<((u16, usize, workload::FlowFailure), u32)>,
    /// Refused requests by (attack, target index, (header, placeholder)).
    refusals: Vec<((u16, u32, Refusal), u32)>,
    /// Refused streamed targets, by their text (bounded like `tls`).
    refused_texts: Vec<(Arc<str>, u32)>,
}

impl ErrorCache {
    pub(crate) fn new(registry: Arc<ErrorRegistry>) -> ErrorCache {
        ErrorCache {
            registry,
            causes: Vec::new(),
            statuses: Vec::new(),
            grpc: Vec::new(),
            tls: Vec::new(),
            redirect_limits: Vec::new(),
            flows: Vec::new(),
            refusals: Vec::new(),
            refused_texts: Vec::new(),
        }
    }

    /// The id of a request of target `target` of `attack` refused for a value from
    /// outside (`refusal`: header and placeholder), described by `describe` the first
    /// time.
    pub(crate) fn refusal(
        &mut self,
        attack: u16,
        target: u32,
        refusal: Refusal,
        describe: impl FnOnce() -> String,
    ) -> u32 {
        let key = (attack, target, refusal);
        if let Some(&(_, id)) = self.refusals.iter().find(|(k, _)| *k == key) {
            return id;
        }
        let id = self.registry.intern(ErrorEntry {
            kind: ErrorKind::UnsafeValue,
            text: describe(),
        });
        self.refusals.push((key, id));
        id
    }

    /// The id of a streamed target refused as written (its `text` says why).
    pub(crate) fn refused(&mut self, text: &Arc<str>) -> u32 {
        if let Some(&(_, id)) = self.refused_texts.iter().find(|(t, _)| t == text) {
            return id;
        }
        let id = self.registry.intern(ErrorEntry {
            kind: ErrorKind::UnsafeValue,
            text: text.to_string(),
        });
        if self.refused_texts.len() < TLS_CACHE_ENTRIES {
            self.refused_texts.push((Arc::clone(text), id));
        }
        id
    }

    /// The id of a flow failure of `step` of `attack`, described by `describe` the
    /// first time.
    pub(crate) fn flow(
        &mut self,
        attack: u16,
        step: usize,
        failure: workload::FlowFailure,
        describe: impl FnOnce() -> (ErrorKind, String),
    ) -> u32 {
        let key = (attack, step, failure);
        if let Some(&(_, id)) = self.flows.iter().find(|(k, _)| *k == key) {
            return id;
        }
        let (kind, text) = describe();
        let id = self.registry.intern(ErrorEntry { kind, text });
        self.flows.push((key, id));
        id
    }

    /// The id of an error described already (a session's: they end seconds apart,
    /// so taking the registry's lock each time costs nothing that matters).
    pub(crate) fn text(&mut self, kind: ErrorKind, text: &str) -> u32 {
        self.registry.intern(ErrorEntry {
            kind,
            text: text.to_owned(),
        })
    }

    /// The id of a transport error.
    pub(crate) fn cause(&mut self, cause: Cause) -> u32 {
        if let Some(&(_, id)) = self.causes.iter().find(|(c, _)| *c == cause) {
            return id;
        }
        let id = self.registry.intern(ErrorEntry {
            kind: cause.kind,
            text: cause.text(),
        });
        self.causes.push((cause, id));
        id
    }

    /// The id of a TLS error (`tls: ` and rustls' description: alerts, certificate
    /// problems). A bad certificate fails every connection, so equal errors are
    /// described once.
    pub(crate) fn tls(&mut self, err: &rustls::Error) -> u32 {
        if let Some(&(_, id)) = self.tls.iter().find(|(e, _)| e == err) {
            return id;
        }
        let id = self.registry.intern(ErrorEntry {
            kind: ErrorKind::Tls,
            text: format!("tls: {err}{}", crate::tls::hint(err)),
        });
        if self.tls.len() < TLS_CACHE_ENTRIES {
            self.tls.push((err.clone(), id));
        }
        id
    }

    /// The id of vegeta's `stopped after N redirects`.
    pub(crate) fn redirect_limit(&mut self, limit: i32) -> u32 {
        if let Some(&(_, id)) = self.redirect_limits.iter().find(|(l, _)| *l == limit) {
            return id;
        }
        let id = self.registry.intern(ErrorEntry {
            kind: ErrorKind::Redirect,
            text: format!("stopped after {limit} redirects"),
        });
        self.redirect_limits.push((limit, id));
        id
    }

    /// The id of a gRPC call's status other than `OK`: its name, and its
    /// `grpc-message` when it sent one (`UNAVAILABLE: no backend`).
    pub(crate) fn grpc(&mut self, code: GrpcStatus, message: &[u8]) -> u32 {
        if let Some(&(_, _, id)) = self
            .grpc
            .iter()
            .find(|(c, m, _)| *c == code && **m == *message)
        {
            return id;
        }
        let text = match String::from_utf8_lossy(message) {
            m if m.is_empty() => code.to_string(),
            m => format!("{code}: {m}"),
        };
        let id = self.registry.intern(ErrorEntry {
            kind: ErrorKind::Grpc,
            text,
        });
        self.grpc.push((code, message.into(), id));
        id
    }

    /// The id of an unsuccessful status, described by the server's own status line
    /// (`500 Internal Server Error`, or `422` when it sent no reason), as vegeta does.
    pub(crate) fn status(&mut self, status: u16, reason: &[u8]) -> u32 {
        if let Some(&(_, _, id)) = self
            .statuses
            .iter()
            .find(|(s, r, _)| *s == status && **r == *reason)
        {
            return id;
        }
        let reason_text = String::from_utf8_lossy(reason);
        let text = if reason_text.is_empty() {
            status.to_string()
        } else {
            format!("{status} {reason_text}")
        };
        let id = self.registry.intern(ErrorEntry {
            kind: ErrorKind::Status,
            text,
        });
        self.statuses.push((status, reason.into(), id));
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interns_each_error_once_across_workers() {
        let registry = Arc::new(ErrorRegistry::default());
        let mut a = ErrorCache::new(Arc::clone(&registry));
        let mut b = ErrorCache::new(Arc::clone(&registry));
        let refused = Cause::io(
            ErrorKind::Connect,
            "connect",
            &std::io::Error::from_raw_os_error(111),
        );
        let ids = [
            a.cause(refused),
            b.cause(refused),
            a.status(503, b"Service Unavailable"),
            b.status(503, b"Service Unavailable"),
            a.status(422, b""),
            a.cause(Cause::new(ErrorKind::Timeout, "timeout awaiting response")),
        ];
        assert_eq!(ids, [1, 1, 2, 2, 3, 4]);
        let texts: Vec<String> = registry.since(0).into_iter().map(|e| e.text).collect();
        assert_eq!(
            texts,
            [
                "connect: connection refused",
                "503 Service Unavailable",
                "422",
                "timeout awaiting response"
            ]
        );
        assert_eq!(registry.since(3).len(), 1);
        assert!(registry.since(9).is_empty());
    }

    #[test]
    fn each_redirect_limit_has_its_own_text() {
        let registry = Arc::new(ErrorRegistry::default());
        let mut cache = ErrorCache::new(Arc::clone(&registry));
        let ids = [
            cache.redirect_limit(10),
            cache.redirect_limit(3),
            cache.redirect_limit(10),
        ];
        assert_eq!(ids, [1, 2, 1]);
        let texts: Vec<String> = registry.since(0).into_iter().map(|e| e.text).collect();
        assert_eq!(
            texts,
            ["stopped after 10 redirects", "stopped after 3 redirects"]
        );
    }

    #[test]
    fn tls_errors_are_described_once_per_worker() {
        let registry = Arc::new(ErrorRegistry::default());
        let mut a = ErrorCache::new(Arc::clone(&registry));
        let mut b = ErrorCache::new(Arc::clone(&registry));
        let unknown_issuer =
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let ids = [
            a.tls(&unknown_issuer),
            a.tls(&unknown_issuer),
            b.tls(&unknown_issuer),
            a.tls(&rustls::Error::DecryptError),
        ];
        assert_eq!(ids, [1, 1, 1, 2]);
        assert_eq!(a.tls.len(), 2, "a hit does not add an entry");
        let entries = registry.since(0);
        assert!(entries.iter().all(|e| e.kind == ErrorKind::Tls));
        assert_eq!(
            entries[0].text,
            format!(
                "tls: {unknown_issuer} (give -root-certs FILE with the CA that signed it, or -insecure)"
            ),
            "with its usual fix"
        );
        assert_eq!(
            entries[1].text,
            format!("tls: {}", rustls::Error::DecryptError)
        );
    }
}
