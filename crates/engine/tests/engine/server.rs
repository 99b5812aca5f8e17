//! A small HTTP/1.1 server on loopback whose paths misbehave on purpose.
//!
//! `/ok`, `/status/NNN`, `/slow/MS`, `/chunked`, `/close`, `/until-close`,
//! `/reset`, `/garbage`, `/stall`, `/half-body`, `/big/BYTES`, `/redirect/N`
//! (N hops, then `/ok`), `/redirect-loop`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

pub struct TestServer {
    pub addr: SocketAddr,
    pub stats: Arc<Stats>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

#[derive(Default)]
pub struct Stats {
    pub connections: AtomicUsize,
    pub requests: AtomicUsize,
    pub in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
    /// Every path served, in arrival order.
    pub paths: std::sync::Mutex<Vec<String>>,
}

/// Anything that reads and writes like a socket (TCP, TLS, Unix).
pub trait Stream: Read + Write + Send {
    fn reset(&mut self) {}
}

impl Stream for TcpStream {
    fn reset(&mut self) {
        let _ = socket2::SockRef::from(&*self).set_linger(Some(Duration::ZERO));
    }
}

impl Stream for std::os::unix::net::UnixStream {}

impl<S: Read + Write + Send> Stream for rustls::StreamOwned<rustls::ServerConnection, S> {}

impl TestServer {
    pub fn start() -> TestServer {
        Self::start_with(|stream: TcpStream| Box::new(stream) as Box<dyn Stream>)
    }

    /// Serves every accepted TCP connection through `wrap` (e.g. a TLS layer).
    pub fn start_with(
        wrap: impl Fn(TcpStream) -> Box<dyn Stream> + Send + Sync + 'static,
    ) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stats = Arc::new(Stats::default());
        let stop = Arc::new(AtomicBool::new(false));
        let wrap = Arc::new(wrap);
        let accept = {
            let (stats, stop) = (Arc::clone(&stats), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            stream.set_nonblocking(false).unwrap();
                            stats.connections.fetch_add(1, Ordering::SeqCst);
                            let (stats, stop, wrap) =
                                (Arc::clone(&stats), Arc::clone(&stop), Arc::clone(&wrap));
                            std::thread::spawn(move || serve(wrap(stream), &stats, &stop));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(1)),
                    }
                }
            })
        };
        TestServer {
            addr,
            stats,
            stop,
            accept: Some(accept),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// Serves requests on one connection until the client or a path closes it.
pub fn serve(stream: Box<dyn Stream>, stats: &Stats, stop: &AtomicBool) {
    let mut reader = BufReader::new(stream);
    loop {
        let Some(path) = read_request(&mut reader) else {
            return;
        };
        stats.requests.fetch_add(1, Ordering::SeqCst);
        stats.paths.lock().unwrap().push(path.clone());
        let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let keep_going = respond(reader.get_mut(), &path, stop);
        stats.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !keep_going {
            return;
        }
    }
}

/// Reads one request head (and body, by Content-Length); returns its path.
fn read_request(reader: &mut BufReader<Box<dyn Stream>>) -> Option<String> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(path)
}

/// Writes the response for `path`; false when the connection must end.
fn respond(stream: &mut Box<dyn Stream>, path: &str, stop: &AtomicBool) -> bool {
    let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let result = match parts.as_slice() {
        ["ok"] | ["echo", ..] => stream.write_all(ok.as_bytes()),
        ["status", code] => {
            let reason = match *code { "404" => " Not Found", "500" => " Internal Server Error", "503" => " Service Unavailable", _ => "" };
            stream.write_all(format!("HTTP/1.1 {code}{reason}\r\nContent-Length: 0\r\n\r\n").as_bytes())
        }
        ["slow", ms] => {
            std::thread::sleep(Duration::from_millis(ms.parse().unwrap_or(0)));
            stream.write_all(ok.as_bytes())
        }
        ["chunked"] => stream.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n3\r\nefg\r\n0\r\n\r\n"),
        ["close"] => return finish(stream, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"),
        ["until-close"] => return finish(stream, b"HTTP/1.0 200 OK\r\n\r\nbody until close"),
        ["reset"] => {
            stream.reset();
            return false;
        }
        ["garbage"] => stream.write_all(b"THIS IS NOT HTTP\r\n\r\n"),
        ["stall"] => {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(10));
            }
            return false;
        }
        ["half-body"] => return finish(stream, b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"),
        ["big", bytes] => {
            let bytes: usize = bytes.parse().unwrap_or(0);
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {bytes}\r\n\r\n");
            stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&vec![b'x'; bytes]))
        }
        ["redirect", "0"] => stream.write_all(b"HTTP/1.1 302 Found\r\nLocation: /ok\r\nContent-Length: 0\r\n\r\n"),
        ["redirect", n] => {
            let next: u32 = n.parse::<u32>().unwrap_or(1) - 1;
            stream.write_all(format!("HTTP/1.1 302 Found\r\nLocation: /redirect/{next}\r\nContent-Length: 0\r\n\r\n").as_bytes())
        }
        ["redirect-loop"] => stream.write_all(b"HTTP/1.1 301 Moved Permanently\r\nLocation: /redirect-loop\r\nContent-Length: 3\r\n\r\nbye"),
        _ => stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"),
    };
    result.and_then(|()| stream.flush()).is_ok()
}

/// Writes a last response and ends the connection.
fn finish(stream: &mut Box<dyn Stream>, bytes: &[u8]) -> bool {
    let _ = stream.write_all(bytes).and_then(|()| stream.flush());
    false
}
