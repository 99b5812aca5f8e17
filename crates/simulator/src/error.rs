//! The crate's one error type. Every message names the input it rejects: the recipe
//! source (file name or `add_recipe`), the field path inside it, or the address.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why a recipe was rejected or the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimulatorError {
    /// The recipe text is not JSON. `detail` carries serde_json's line and column.
    #[error("{source_name}: not valid json: {detail}")]
    Json {
        /// The recipe file's name, or `add_recipe`.
        source_name: String,
        /// serde_json's message.
        detail: String,
    },
    /// A field of the recipe is missing, unknown or out of range, or the recipe is over
    /// a memory cap, or names a file it may not.
    #[error("{source_name}: {field}: {message}")]
    Recipe {
        /// The recipe file's name, or `add_recipe`.
        source_name: String,
        /// The field's path in the recipe (`recipe[1].stages[0].latency`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    // The I/O causes below are part of the message, not a `source()`, so that both
    // `to_string()` and anyhow's `{:#}` chain print them exactly once.
    /// A recipe file could not be read.
    #[error("cannot read recipe {path}: {cause}")]
    RecipeFile {
        /// The recipe file.
        path: PathBuf,
        /// Why it could not be read.
        cause: std::io::Error,
    },
    /// The listening socket could not be set up.
    #[error("cannot listen on {addr}: {cause}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why it could not be bound.
        cause: std::io::Error,
    },
    /// A worker thread or its runtime could not be started.
    #[error("cannot start simulator thread: {0}")]
    Thread(std::io::Error),
    /// The TLS certificate or key could not be read, made or used. The message names
    /// the file.
    #[error("tls: {0}")]
    Tls(String),
    /// The options passed to [`crate::Simulator::start`] are unusable.
    #[error("simulator option {option}: {message}")]
    Option {
        /// The option's name, spelled as `loadlab simulate`'s flag (`threads`, `files`).
        option: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

/// A rejected field before we know which source it came from. Parsers deep in the
/// recipe return this; [`Invalid::within`] turns it into a [`SimulatorError::Recipe`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    pub field: String,
    pub message: String,
}

impl Invalid {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn within(self, source_name: &str) -> SimulatorError {
        SimulatorError::Recipe {
            source_name: source_name.to_owned(),
            field: self.field,
            message: self.message,
        }
    }
}
