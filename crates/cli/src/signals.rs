//! Ctrl-C and SIGTERM: the first stops the run gracefully (an attack lets requests in
//! flight finish, so the record file is complete); a second Ctrl-C exits at once.

use engine::StopHandle;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// `stopping` says what the graceful stop waits for, e.g. "waiting for requests in flight".
pub fn stop_on_signals(stop: &StopHandle, stopping: &'static str) -> std::io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let stop = stop.clone();
    std::thread::Builder::new()
        .name("loadlab-signals".to_owned())
        .spawn(move || {
            let mut interrupts = 0;
            for signal in signals.forever() {
                if signal == SIGINT {
                    interrupts += 1;
                }
                if interrupts >= 2 {
                    // The live view's keys put the terminal in cbreak mode.
                    live::restore_terminal();
                    eprintln!("loadlab: interrupted twice; exiting now");
                    std::process::exit(130);
                }
                if !stop.is_stopping() {
                    eprintln!("loadlab: stopping: {stopping} (Ctrl-C again to exit now)");
                }
                stop.drain();
            }
        })?;
    Ok(())
}

/// For readers of a pipe (`attack | report`): Ctrl-C reaches every process in the
/// pipeline, and the attack answers it by flushing its last records. So the reader
/// lets the first one pass and reads on to the end of its input; a second exits.
pub fn outlive_first_interrupt(files: &[String]) -> std::io::Result<()> {
    use std::io::IsTerminal;
    let reads_pipe = files.is_empty() || files.iter().any(|f| f == "-");
    if !reads_pipe || std::io::stdin().is_terminal() {
        return Ok(());
    }
    let mut signals = Signals::new([SIGINT])?;
    std::thread::Builder::new()
        .name("loadlab-signals".to_owned())
        .spawn(move || {
            if signals.forever().nth(1).is_some() {
                std::process::exit(130);
            }
        })?;
    Ok(())
}
