//! [`PostgresSampler`]: connections and transactions per second from
//! `pg_stat_database`, per database (templates left out).
//!
//! - `postgres.connections{database}`: `numbackends`, less the sampler's own
//!   connection in its database.
//! - `postgres.transactions_per_sec{database}`: `xact_commit + xact_rollback` per
//!   second, less the sampler's own query (one transaction per tick in its database).
//! - `postgres.rollbacks_per_sec{database}`.
//! - `postgres.busy_connections{database}`: seconds its backends spent in a statement or
//!   inside a transaction per second (`active_time + idle_in_transaction_time`,
//!   PostgreSQL 14 and later): how many connections were in use on average. Beside
//!   `postgres.connections` it says whether the connections an app opened were all busy
//!   (its pool is the limit) while the transactions per second stopped growing.
//!
//! PostgreSQL publishes these counters when a backend's transaction ends, at most about
//! once a second per backend, so a 1 s series is jumpy while its sum over a run is
//! exact. A refused login, a server that is down or a query that fails is a gap with
//! the server's reason; the sampler reconnects on the next tick.

use std::time::{Duration, Instant};

use postgres::{Client, NoTls, SimpleQueryMessage};
use record::SamplerInfo;

use crate::hub::{Reading, SeriesDef};
use crate::rates::Rates;
use crate::sampler::{Sampler, Tick};
use record::ResourceSeries as S;
use units::redact_url;

const QUERY: &str = "SELECT datname, numbackends, xact_commit + xact_rollback, xact_rollback, \
                     current_database(), current_setting('max_connections'), NULL FROM pg_stat_database \
                     WHERE datname IS NOT NULL AND datname NOT IN ('template0', 'template1')";

/// The same with the time in use, which PostgreSQL 14 added to `pg_stat_database`.
const QUERY_WITH_BUSY_TIME: &str = "SELECT datname, numbackends, xact_commit + xact_rollback, \
                     xact_rollback, current_database(), current_setting('max_connections'), \
                     active_time + idle_in_transaction_time FROM pg_stat_database \
                     WHERE datname IS NOT NULL AND datname NOT IN ('template0', 'template1')";

/// The first server version whose `pg_stat_database` has `active_time`.
const BUSY_TIME_SINCE_VERSION: u32 = 140_000;

/// One row of `pg_stat_database`.
#[derive(Debug, Clone, PartialEq)]
struct DatabaseRow {
    name: String,
    backends: f64,
    transactions: f64,
    rollbacks: f64,
    ours: bool,
    /// The server's `max_connections` (the same on every row).
    max_connections: f64,
    /// Milliseconds its backends spent in a statement or a transaction, when the
    /// server keeps them.
    busy_ms: Option<f64>,
}

pub(crate) struct PostgresSampler {
    info: SamplerInfo,
    url: String,
    timeout: Duration,
    client: Option<Client>,
    /// The query this server answers (chosen by its version on connecting).
    query: &'static str,
    rates: Rates<(String, &'static str)>,
    last_at: Option<Instant>,
}

impl PostgresSampler {
    pub(crate) fn new(info: SamplerInfo, url: &str, timeout: Duration) -> PostgresSampler {
        PostgresSampler {
            info,
            url: url.to_owned(),
            timeout,
            client: None,
            query: QUERY,
            rates: Rates::default(),
            last_at: None,
        }
    }

    fn connect(&self) -> Result<Client, String> {
        let mut config: postgres::Config = self
            .url
            .parse()
            .map_err(|err: postgres::Error| describe(&err))?;
        config.connect_timeout(self.timeout);
        config.application_name("loadlab monitor");
        let statement_timeout = self.timeout.as_millis().max(1);
        config.options(&format!("-c statement_timeout={statement_timeout}"));
        config.connect(NoTls).map_err(|err| describe(&err))
    }

    /// The query for the server `client` talks to: with the time in use from 14 on.
    fn query_for(client: &mut Client) -> &'static str {
        let version = client
            .simple_query("SHOW server_version_num")
            .ok()
            .and_then(|messages| {
                messages.iter().find_map(|m| match m {
                    SimpleQueryMessage::Row(row) => row.get(0)?.parse::<u32>().ok(),
                    _ => None,
                })
            });
        match version {
            Some(version) if version >= BUSY_TIME_SINCE_VERSION => QUERY_WITH_BUSY_TIME,
            _ => QUERY,
        }
    }

    fn query(&mut self) -> Result<Vec<DatabaseRow>, String> {
        if self.client.is_none() {
            let mut client = self.connect()?;
            self.query = Self::query_for(&mut client);
            self.client = Some(client);
        }
        let Some(client) = self.client.as_mut() else {
            return Err("not connected".to_owned());
        };
        let result = client.simple_query(self.query);
        match result {
            Ok(messages) => messages
                .iter()
                .filter_map(|m| match m {
                    SimpleQueryMessage::Row(row) => Some(row),
                    _ => None,
                })
                .map(parse_row)
                .collect(),
            Err(err) => {
                self.client = None;
                Err(describe(&err))
            }
        }
    }

    fn read(&mut self, rows: &[DatabaseRow], at: Instant, reading: &mut Reading) {
        // Our previous query was one transaction in our database during this interval.
        let elapsed = self
            .last_at
            .map(|then| at.saturating_duration_since(then).as_secs_f64());
        self.last_at = Some(at);
        let own_per_sec = elapsed.filter(|&s| s > 0.0).map_or(0.0, |s| 1.0 / s);
        for row in rows {
            let label = |def: SeriesDef| def.label("database", &row.name);
            let own_backends = if row.ours { 1.0 } else { 0.0 };
            let connections = (row.backends - own_backends).max(0.0);
            reading.value(
                label(SeriesDef::gauge(S::PostgresConnections.name(), "count")),
                connections,
            );
            let own = if row.ours { own_per_sec } else { 0.0 };
            let counters = [
                (S::PostgresTransactionsPerSec.name(), row.transactions, own),
                (S::PostgresRollbacksPerSec.name(), row.rollbacks, 0.0),
            ];
            for (name, value, own) in counters {
                let def = label(SeriesDef::rate(name, "1/s"));
                let rate = self.rates.update((row.name.clone(), name), value, at);
                reading.rate(def, rate.map(|rate| (rate - own).max(0.0)));
            }
            if let Some(busy_ms) = row.busy_ms {
                // Seconds in use per second: the connections busy on average. Our own
                // query's millisecond a tick is left in.
                let name = S::PostgresBusyConnections.name();
                let def = label(SeriesDef::rate(name, "count"));
                let busy = self
                    .rates
                    .update((row.name.clone(), name), busy_ms / 1e3, at);
                reading.rate(def, busy);
            }
        }
        if let Some(row) = rows.first() {
            reading.value(
                SeriesDef::gauge(S::PostgresMaxConnections.name(), "count"),
                row.max_connections,
            );
        }
    }
}

fn parse_row(row: &postgres::SimpleQueryRow) -> Result<DatabaseRow, String> {
    let number = |index: usize| -> Result<f64, String> {
        row.get(index)
            .unwrap_or("0")
            .parse::<f64>()
            .map_err(|_| format!("pg_stat_database: column {index} is not a number"))
    };
    let name = row.get(0).unwrap_or_default().to_owned();
    Ok(DatabaseRow {
        ours: row.get(4) == Some(name.as_str()),
        name,
        backends: number(1)?,
        transactions: number(2)?,
        rollbacks: number(3)?,
        max_connections: number(5)?,
        busy_ms: row.get(6).map(|_| number(6)).transpose()?,
    })
}

/// The server's own words for database errors (`password authentication failed for
/// user "x"`), with any password in the text redacted.
fn describe(err: &postgres::Error) -> String {
    let text = match err.as_db_error() {
        Some(db) if db.code().code().starts_with("28") => {
            format!("login refused: {}", db.message())
        }
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        // "error connecting to server" alone says little: add the causes.
        None => units::error_chain(err),
    };
    redact_url(&text)
}

impl Sampler for PostgresSampler {
    fn thread_name(&self) -> String {
        "loadlab-mon-postgres".to_owned()
    }

    fn sample(&mut self, tick: &Tick, out: &mut Vec<Reading>) {
        let mut reading = Reading::new(&self.info, tick.at_unix_ns);
        match self.query() {
            Ok(rows) => self.read(&rows, tick.now, &mut reading),
            Err(reason) => reading.gap(None, reason),
        }
        out.push(reading);
    }
}
