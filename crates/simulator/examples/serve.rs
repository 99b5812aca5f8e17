//! Serves a recipe with the library alone, for `bench/simulator/run.sh`:
//! `serve RECIPE.json ADDR THREADS`. Runs until killed. The bench uses this rather than
//! `loadlab simulate` so it measures the simulator and builds without the other crates;
//! both make the same `Simulator::start` call.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [recipe, addr, threads] = &args[..] else {
        eprintln!("usage: serve RECIPE.json ADDR THREADS");
        return ExitCode::FAILURE;
    };
    let run = || -> Result<(), String> {
        let recipe = simulator::parse_recipe_file(recipe.as_ref()).map_err(|e| e.to_string())?;
        let addr = addr
            .parse()
            .map_err(|e| format!("bad address {addr:?}: {e}"))?;
        let threads = threads
            .parse()
            .map_err(|e| format!("bad thread count {threads:?}: {e}"))?;
        let options = simulator::SimulatorOptions {
            threads,
            ..simulator::SimulatorOptions::new(addr)
        };
        let sim = simulator::Simulator::start(options, &recipe).map_err(|e| e.to_string())?;
        eprintln!("serve: listening on {}", sim.local_addr());
        loop {
            std::thread::park();
        }
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("serve: {e}");
            ExitCode::FAILURE
        }
    }
}
