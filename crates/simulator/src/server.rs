//! Threads and listeners: thread-per-core, each thread a current-thread tokio runtime
//! with its own `SO_REUSEPORT` listener on the same address, so the kernel spreads
//! connections and no request ever crosses threads or waits on a central task.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::sync::watch;

use crate::error::SimulatorError;
use crate::state::{LocalView, Shared};
use crate::worker::Worker;

/// Pending connections the kernel may hold per listener; load tools open thousands at once.
const LISTEN_BACKLOG: i32 = 4096;

/// Running threads and the means to stop them.
pub(crate) struct Threads {
    shutdown: watch::Sender<bool>,
    handles: Vec<JoinHandle<()>>,
}

impl Threads {
    /// Binds `threads` listeners on `addr` and starts one server thread per listener.
    /// Returns once every listener is bound and every runtime is running.
    pub fn start(
        addr: SocketAddr,
        shared: &Arc<Shared>,
    ) -> Result<(SocketAddr, Threads), SimulatorError> {
        let listeners = bind_all(addr, shared.threads.len())?;
        let local_addr = listeners[0]
            .local_addr()
            .map_err(|cause| SimulatorError::Bind { addr, cause })?;
        let (shutdown, watcher) = watch::channel(false);
        let (ready_tx, ready_rx) = mpsc::channel();
        let mut threads = Threads {
            shutdown,
            handles: Vec::new(),
        };
        for (index, listener) in listeners.into_iter().enumerate() {
            let (shared, watcher, ready) = (Arc::clone(shared), watcher.clone(), ready_tx.clone());
            let handle = std::thread::Builder::new()
                .name(format!("loadlab-sim-{index}"))
                .spawn(move || run_thread(index, listener, shared, watcher, &ready))
                .map_err(SimulatorError::Thread)?;
            threads.handles.push(handle);
        }
        drop(ready_tx);
        for _ in 0..threads.handles.len() {
            // A thread that died before reporting drops its sender; recv then fails.
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(SimulatorError::Thread(e)),
                Err(_) => {
                    return Err(SimulatorError::Thread(std::io::Error::other(
                        "server thread exited at start",
                    )));
                }
            }
        }
        Ok((local_addr, threads))
    }

    /// Stops accepting, drops every connection and joins the threads.
    pub fn stop(&mut self) {
        let _ = self.shutdown.send(true);
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}

/// One listener per thread. With several, each sets `SO_REUSEPORT`; a fixed port is
/// first probed without it, so a second simulator on a busy port fails loudly instead
/// of silently sharing the port with the first.
fn bind_all(addr: SocketAddr, count: usize) -> Result<Vec<std::net::TcpListener>, SimulatorError> {
    let bind_error = |cause| SimulatorError::Bind { addr, cause };
    if count > 1 && addr.port() != 0 {
        drop(bind_one(addr, false).map_err(bind_error)?);
    }
    let first = bind_one(addr, count > 1).map_err(bind_error)?;
    let actual = first.local_addr().map_err(bind_error)?;
    let mut listeners = vec![first];
    for _ in 1..count {
        listeners.push(bind_one(actual, true).map_err(bind_error)?);
    }
    Ok(listeners)
}

fn bind_one(addr: SocketAddr, reuse_port: bool) -> std::io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

fn run_thread(
    index: usize,
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
    ready: &mpsc::Sender<std::io::Result<()>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let local = tokio::task::LocalSet::new();
    let worker = Rc::new(Worker {
        stats: Arc::clone(&shared.threads[index]),
        view: LocalView::new(&shared),
        rng: RefCell::new(shared.rng()),
        render_buffers: RefCell::new(Vec::new()),
        shared,
    });
    local.block_on(&runtime, async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        accept_loop(listener, worker, shutdown).await;
    });
    // Dropping the LocalSet and runtime here closes every connection this thread held.
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    worker: Rc<Worker>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            biased;
            _ = shutdown.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    // Whole responses go out in one write; Nagle would only delay them.
                    let _ = stream.set_nodelay(true);
                    // An IPv4 peer on a dual-stack socket shows as ::ffff:127.0.0.1.
                    let loopback = peer.ip().to_canonical().is_loopback();
                    tokio::task::spawn_local(crate::negotiate::serve(Rc::clone(&worker), stream, loopback));
                }
                // Out of file descriptors or similar: back off instead of spinning.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            },
        }
    }
}
