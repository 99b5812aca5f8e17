//! Render cost of templates, for `bench/models/run.py`: nanoseconds per render of a
//! static text and of fully dynamic ones, measured over many renders into one buffer.
//!
//! Usage: cargo run --release -p loadlab-workload --example template_render [RENDERS]

use std::time::Instant;

use workload::{RenderContext, Template};

fn main() {
    let renders: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000_000);
    let rows = [
        ("static", "/search?q=fixed-query&page=1"),
        ("rand.lower 50", "/search?q={{rand.lower 50}}"),
        (
            "fully dynamic",
            "/search?q={{rand.lower 50}}&id={{uuid}}&n={{rand.int 1 1000000}}&k={{seq}}&c={{pick red green blue}}",
        ),
    ];
    for (name, text) in rows {
        let template = match Template::parse(text) {
            Ok(template) => template,
            Err(err) => {
                eprintln!("{err}");
                std::process::exit(1);
            }
        };
        let mut out = Vec::with_capacity(256);
        let mut bytes = 0usize;
        let started = Instant::now();
        for seq in 0..renders {
            out.clear();
            template.render(&RenderContext::plain(7, seq, None), &mut out);
            bytes += out.len();
        }
        let ns = started.elapsed().as_nanos() as f64 / renders as f64;
        println!(
            "{name:<16} {ns:8.1} ns/render  ({} bytes per render)",
            bytes / renders as usize
        );
    }
}
