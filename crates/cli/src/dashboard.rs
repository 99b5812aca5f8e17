//! `attack -dashboard ADDR`: the run page served live on loopback ([`plot::LivePage`]
//! behind a [`live::Server`]). A port that cannot be bound is a warning naming the
//! flag; the run goes on without the page, its records untouched.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::StopHandle;
use live::{Handler, Request, Response, Server};
use plot::{LivePage, PlotConfig};

/// `-dashboard` without a value, and the host of `-dashboard :PORT` or `PORT`.
pub const DEFAULT_ADDRESS: &str = "127.0.0.1:8088";

/// The page and its server while the run goes.
pub struct Dashboard {
    page: Arc<LivePage>,
    server: Server,
}

/// The run's output, copied to the page when there is one.
pub type Output = Box<dyn Write + Send>;

/// Starts the page on `given` (the flag's value) for the records written to `out`,
/// named `name` on the page. On failure, warns and hands `out` back unchanged.
pub fn start(given: &str, name: &str, out: Output) -> (Output, Option<Dashboard>) {
    let config = PlotConfig::default();
    let (page, feed) = match LivePage::start(out, name, &config) {
        Ok(started) => started,
        Err((err, out)) => {
            eprintln!(
                "loadlab: warning: -dashboard: cannot start the page ({err}); the run goes on without it"
            );
            return (out, None);
        }
    };
    let page = Arc::new(page);
    let handler: Handler = {
        let page = Arc::clone(&page);
        Arc::new(move |request: &Request| answer(&page, request))
    };
    match Server::start("-dashboard", given, handler) {
        Ok(server) => {
            eprintln!("loadlab: dashboard on http://{}/", server.address());
            (Box::new(feed), Some(Dashboard { page, server }))
        }
        Err(err) => {
            eprintln!(
                "loadlab: warning: {}; the run goes on without the dashboard",
                units::error_chain(&err)
            );
            (Box::new(feed.into_inner()), None)
        }
    }
}

fn answer(page: &LivePage, request: &Request) -> Response {
    match request.path.as_str() {
        "/" | "/index.html" => Response::ok("text/html; charset=utf-8", page.page()),
        "/data" => Response::ok("application/json", page.status_json()),
        path => Response::not_found(path),
    }
}

impl Dashboard {
    /// The run is over and its output dropped: waits for the final page, then keeps
    /// serving it for `linger` or until Ctrl-C.
    pub fn finish(self, linger: Duration, stop: &StopHandle) {
        let Dashboard { page, server } = self;
        page.finish();
        if !linger.is_zero() {
            eprintln!(
                "loadlab: dashboard: the final page stays on http://{}/ for {} (Ctrl-C to exit)",
                server.address(),
                units::GoDuration(linger)
            );
            let deadline = Instant::now() + linger;
            let interrupted_before = stop.is_stopping();
            while Instant::now() < deadline && (interrupted_before || !stop.is_stopping()) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        server.stop();
    }
}
