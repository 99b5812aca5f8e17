//! `-dashboard ADDR` (`attack` and `run`): the run page served live on loopback
//! ([`plot::LivePage`] behind a [`live::Server`]). The server starts once; each run
//! (`attack`'s, each step of a plan) gets a page of its own, fed a copy of the records
//! written to its output, and the address shows the newest. A port that cannot be
//! bound is a warning naming the flag; the runs go on without the page, their records
//! untouched.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use engine::StopHandle;
use live::{Handler, Request, Response, Server};
use plot::{LivePage, PlotConfig};

/// `-dashboard` without a value, and the host of `-dashboard :PORT` or `PORT`.
pub const DEFAULT_ADDRESS: &str = "127.0.0.1:8088";

/// The run's output, copied to the page when there is one.
pub type Output = Box<dyn Write + Send>;

/// The server, and the page of the newest run it shows.
pub struct Dashboard {
    current: Current,
    server: Server,
}

type Current = Arc<Mutex<Option<Arc<LivePage>>>>;

/// Starts the server on `given` (the flag's value); on failure, warns and returns
/// `None`.
pub fn start(given: &str) -> Option<Dashboard> {
    let current: Current = Arc::default();
    let handler: Handler = {
        let current = Arc::clone(&current);
        Arc::new(move |request: &Request| {
            let page = current
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            answer(page.as_deref(), request)
        })
    };
    match Server::start("-dashboard", given, handler) {
        Ok(server) => {
            eprintln!("loadlab: dashboard on http://{}/", server.address());
            Some(Dashboard { current, server })
        }
        Err(err) => {
            eprintln!(
                "loadlab: warning: {}; the run goes on without the dashboard",
                units::error_chain(&err)
            );
            None
        }
    }
}

fn answer(page: Option<&LivePage>, request: &Request) -> Response {
    match (request.path.as_str(), page) {
        ("/" | "/index.html", Some(page)) => Response::ok("text/html; charset=utf-8", page.page()),
        ("/data", Some(page)) => Response::ok("application/json", page.status_json()),
        ("/" | "/index.html", None) => Response::ok(
            "text/plain; charset=utf-8",
            "loadlab: no run has started yet; reload in a moment\n",
        ),
        (path, _) => Response::not_found(path),
    }
}

/// One run's page; [`RunPage::finish`] once the run's output is closed.
#[derive(Clone)]
pub struct RunPage(Arc<LivePage>);

impl Dashboard {
    /// A page for the run writing to `out` (named `name` on the page, as `loadlab
    /// plot` would be given the file), shown from now on; `out` comes back wrapped so
    /// the page reads what is written. A page that cannot start is a warning.
    pub fn watch(&self, out: Output, name: &str) -> (Output, Option<RunPage>) {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        let after = current.as_ref().map_or(0, |page| page.version());
        match LivePage::start_after(out, name, &PlotConfig::default(), after) {
            Ok((page, feed)) => {
                let page = Arc::new(page);
                *current = Some(Arc::clone(&page));
                (Box::new(feed), Some(RunPage(page)))
            }
            Err((err, out)) => {
                eprintln!(
                    "loadlab: warning: -dashboard: cannot start the page ({err}); the run goes on without it"
                );
                (out, None)
            }
        }
    }

    /// The page of one run written as several record streams (a steered run's
    /// shards): each output passes its bytes on and to the page.
    pub fn watch_many(
        &self,
        outs: Vec<(Output, String)>,
        title: &str,
    ) -> anyhow::Result<(Vec<Output>, RunPage)> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        let after = current.as_ref().map_or(0, |page| page.version());
        let (page, feeds) = LivePage::start_many(outs, title, &PlotConfig::default(), after)
            .map_err(|(err, _)| anyhow::anyhow!("-dashboard: cannot start the page: {err}"))?;
        let page = Arc::new(page);
        *current = Some(Arc::clone(&page));
        let feeds = feeds
            .into_iter()
            .map(|feed| Box::new(feed) as Output)
            .collect();
        Ok((feeds, RunPage(page)))
    }

    /// After the last run: keeps serving its final page for `linger` or until
    /// Ctrl-C, then stops.
    pub fn finish(self, linger: Duration, stop: &StopHandle) {
        if !linger.is_zero() {
            eprintln!(
                "loadlab: dashboard: the final page stays on http://{}/ for {} (Ctrl-C to exit)",
                self.server.address(),
                units::GoDuration(linger)
            );
            let deadline = Instant::now() + linger;
            let interrupted_before = stop.is_stopping();
            while Instant::now() < deadline && (interrupted_before || !stop.is_stopping()) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        self.server.stop();
    }
}

impl RunPage {
    /// The run is over and its output dropped: waits for the final page.
    pub fn finish(self) {
        self.0.finish();
    }

    /// Lines under the page's header from its next snapshot on.
    pub fn set_notes(&self, notes: Vec<String>) {
        self.0.set_notes(notes);
    }
}
