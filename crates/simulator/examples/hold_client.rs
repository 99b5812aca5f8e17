//! A load client for `bench/simulator/run.sh` that holds many requests in flight at
//! once: `hold_client ADDR CONNECTIONS PIPELINE SECONDS`. Each connection sends
//! PIPELINE requests in one write, reads the answers, and repeats, so
//! CONNECTIONS x PIPELINE requests are outstanding (50k on 1000 connections with a
//! pipeline of 50, within the 20k file-descriptor limit of our machines). Connections
//! start spread over the first second so the load is smooth rather than in waves.
//! Prints throughput and the latency of every request (send of its batch to its answer).

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Tally {
    latencies_us: Vec<u32>,
    non_200: u64,
    errors: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = (|| -> Option<(String, usize, usize, u64)> {
        Some((
            args.first()?.clone(),
            args.get(1)?.parse().ok()?,
            args.get(2)?.parse().ok()?,
            args.get(3)?.parse().ok()?,
        ))
    })();
    let Some((addr, connections, pipeline, seconds)) = parsed else {
        eprintln!("usage: hold_client ADDR CONNECTIONS PIPELINE SECONDS");
        std::process::exit(2);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("hold_client: {e}");
            std::process::exit(1);
        }
    };
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let tallies = runtime.block_on(async {
        let tasks: Vec<_> = (0..connections)
            .map(|i| {
                let addr = addr.clone();
                let delay = Duration::from_secs(1) * i as u32 / connections as u32;
                tokio::spawn(
                    async move { connection(addr, pipeline, started + delay, deadline).await },
                )
            })
            .collect();
        let mut tallies = Vec::new();
        for task in tasks {
            if let Ok(tally) = task.await {
                tallies.push(tally);
            }
        }
        tallies
    });
    report(&tallies, started.elapsed(), connections * pipeline);
}

async fn connection(addr: String, pipeline: usize, start: Instant, deadline: Instant) -> Tally {
    let mut tally = Tally {
        latencies_us: Vec::new(),
        non_200: 0,
        errors: 0,
    };
    tokio::time::sleep_until(start.into()).await;
    let Ok(mut stream) = TcpStream::connect(&addr).await else {
        tally.errors += 1;
        return tally;
    };
    let _ = stream.set_nodelay(true);
    let batch = "GET / HTTP/1.1\r\nhost: bench\r\n\r\n".repeat(pipeline);
    let mut buf = Vec::with_capacity(64 * 1024);
    while Instant::now() < deadline {
        let sent = Instant::now();
        if stream.write_all(batch.as_bytes()).await.is_err() {
            tally.errors += 1;
            return tally;
        }
        for _ in 0..pipeline {
            match read_response(&mut stream, &mut buf).await {
                Some(status) => {
                    tally.latencies_us.push(sent.elapsed().as_micros() as u32);
                    tally.non_200 += u64::from(status != 200);
                }
                None => {
                    tally.errors += 1;
                    return tally;
                }
            }
        }
    }
    tally
}

/// Reads one response with a content-length body; returns its status.
async fn read_response(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<u16> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut response = httparse::Response::new(&mut headers);
        if let Ok(httparse::Status::Complete(head_len)) = response.parse(buf) {
            let status = response.code?;
            let body_len: usize = response
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= head_len + body_len {
                buf.drain(..head_len + body_len);
                return Some(status);
            }
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(16 * 1024);
        }
        if stream.read_buf(buf).await.ok()? == 0 {
            return None;
        }
    }
}

fn report(tallies: &[Tally], elapsed: Duration, outstanding: usize) {
    let mut all: Vec<u32> = tallies
        .iter()
        .flat_map(|t| t.latencies_us.iter().copied())
        .collect();
    all.sort_unstable();
    let errors: u64 = tallies.iter().map(|t| t.errors).sum();
    let non_200: u64 = tallies.iter().map(|t| t.non_200).sum();
    let pick = |q: f64| {
        all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0) as f64
            / 1000.0
    };
    println!(
        "requests={} rate={:.0}/s outstanding={} non_200={} errors={} latency_ms min={:.2} p50={:.2} p90={:.2} p99={:.2} max={:.2}",
        all.len(),
        all.len() as f64 / elapsed.as_secs_f64(),
        outstanding,
        non_200,
        errors,
        pick(0.0),
        pick(0.5),
        pick(0.9),
        pick(0.99),
        pick(1.0)
    );
}
