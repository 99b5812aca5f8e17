//! Runs the lab's step summary ([`lab::summarise`], what `loadlab run` judges a step
//! by) on one record file, for `bench/plans/summarise.py`: the same call a plan makes
//! after each step, without sending traffic.
//!
//! Usage: `summarise_step RECORDS [WINDOW_START_S] [WINDOW_END_S] [RATE]`
//! (defaults: 0, 1e9 and 20000 req/s for the asked count).

use std::process::ExitCode;

use lab::{Window, summarise};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: summarise_step RECORDS [WINDOW_START_S] [WINDOW_END_S] [RATE]");
        return ExitCode::FAILURE;
    };
    let seconds = |index: usize, default: f64| {
        args.get(index)
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(default)
    };
    let window = Window {
        start_ns: (seconds(1, 0.0) * 1e9) as u64,
        end_ns: (seconds(2, 1e9) * 1e9) as u64,
    };
    let rate = seconds(3, 20_000.0);
    let asked = |_attack: usize, from: u64, to: u64| Some(((to - from) as f64 / 1e9 * rate) as u64);
    match summarise(std::slice::from_ref(path), window, (1, None), &asked) {
        Ok(figures) => {
            let s = &figures.summary;
            println!(
                "records {} window {} success {:.4} latency_ns {:?} lag_p99_ns {}",
                figures.all_records, s.requests, s.success_ratio, s.latency_ns, s.lag_p99_ns
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("summarise_step: {err}");
            ExitCode::FAILURE
        }
    }
}
