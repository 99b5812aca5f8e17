//! The options of each request that a command line gives over a file (`attack
//! -scenarios`, `run PLAN`) or writes into the plan it runs (`search`): declared once
//! for the three commands, their keys declared in `workload::options`.

use clap::ArgAction;
use units::GoDuration;
use workload::{AttackFields, TextOrNumber, defaults};

/// How each request is sent.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct RequestArgs {
    #[arg(help_heading = "Protocols", long, value_name = "DURATION", help = with_default(
        "Per-request timeout, connect included",
        GoDuration(defaults::TIMEOUT),
    ))]
    timeout: Option<String>,
    #[arg(help_heading = "Protocols", long, help = with_default("Reuse connections (HTTP keep-alive)", defaults::KEEPALIVE), action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    keepalive: Option<bool>,
    #[arg(help_heading = "Protocols", long, allow_negative_numbers = true, value_name = "N", help = with_default(
        "Redirects to follow; -1 follows none and counts 3xx as success",
        defaults::REDIRECTS,
    ))]
    redirects: Option<i32>,
    /// Request header `Key: Value`, for every target (repeatable)
    #[arg(help_heading = "Targets", short = 'H', long, value_name = "HEADER")]
    header: Vec<String>,
    #[arg(help_heading = "Load model", long, value_name = "N", help = with_default(
        "Requests in flight at most (open model), at least 1; with -rate=0, the users",
        defaults::MAX_IN_FLIGHT,
    ))]
    max_workers: Option<u64>,
    /// Read at most this many response body bytes (e.g. 64kb); -1 = no limit
    #[arg(
        help_heading = "Protocols",
        long,
        allow_hyphen_values = true,
        value_name = "SIZE"
    )]
    max_body: Option<String>,
    /// A .proto file of the gRPC targets' services (`GRPC HOST:PORT pkg.Service/Method`
    /// targets), compiled in process; repeatable (see docs/GRPC.md)
    #[arg(long, value_name = "FILE", help_heading = "Protocols")]
    proto: Vec<String>,
    /// A directory the .proto files' imports are looked up in (then each file's own
    /// directory); repeatable
    #[arg(long, value_name = "DIR", help_heading = "Protocols")]
    import_path: Vec<String>,
    /// Send gRPC calls' messages compressed: gzip (each message without placeholders is
    /// compressed once, at start), or identity [default: identity]
    #[arg(long, value_name = "ENCODING", help_heading = "Protocols")]
    grpc_compress: Option<String>,
}

impl RequestArgs {
    /// The options given, as an attack's fields; the others `None`.
    pub fn fields(&self) -> AttackFields {
        AttackFields {
            timeout: self.timeout.clone(),
            keepalive: self.keepalive,
            redirects: self.redirects,
            headers: Some(self.header.clone()).filter(|h| !h.is_empty()),
            max_workers: self.max_workers,
            max_body: self.max_body.clone().map(TextOrNumber::Text),
            proto: absolute_paths(&self.proto),
            import_path: absolute_paths(&self.import_path),
            grpc_compress: self.grpc_compress.clone(),
            ..AttackFields::default()
        }
    }
}

impl RequestArgs {
    /// The flags given, as a shell would take them: `-timeout=5s '-header=X-Run: 1'`.
    pub fn words(&self) -> String {
        let mut words = Vec::new();
        let mut word = |key: &str, value: &dyn std::fmt::Display| {
            words.push(shell_word(&format!(
                "{}={value}",
                workload::options::flag_of(key)
            )));
        };
        if let Some(timeout) = &self.timeout {
            word("timeout", timeout);
        }
        if let Some(keepalive) = self.keepalive {
            word("keepalive", &keepalive);
        }
        if let Some(redirects) = self.redirects {
            word("redirects", &redirects);
        }
        for header in &self.header {
            word("headers", header);
        }
        if let Some(n) = self.max_workers {
            word("max_workers", &n);
        }
        if let Some(size) = &self.max_body {
            word("max_body", size);
        }
        if let Some(encoding) = &self.grpc_compress {
            word("grpc_compress", encoding);
        }
        for (key, paths) in [("proto", &self.proto), ("import_path", &self.import_path)] {
            for path in paths {
                word(key, path);
            }
        }
        words.join(" ")
    }
}

/// Paths given on the command line, made absolute: a plan or scenario file that takes
/// them reads its own paths from its folder, and these from where the command ran.
fn absolute_paths(paths: &[String]) -> Option<Vec<String>> {
    let absolute = |path: &String| {
        std::path::absolute(path).map_or_else(|_| path.clone(), |p| p.display().to_string())
    };
    (!paths.is_empty()).then(|| paths.iter().map(absolute).collect())
}

/// `text` as one shell word: quoted unless it is plain.
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_=.,:/+@%".contains(c);
    if text.chars().all(plain) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// `text [default: value]`, the way clap shows a default, for flags whose default
/// lives in [`workload::defaults`] (an `Option` flag, so "not given" stays visible).
pub fn with_default(text: &str, value: impl std::fmt::Display) -> String {
    format!("{text} [default: {value}]")
}
