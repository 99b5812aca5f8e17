//! Ctrl-C and SIGTERM: the first stops sending and lets requests in flight finish
//! (so the record file is complete); a second Ctrl-C exits at once.

use engine::StopHandle;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

pub fn stop_on_signals(stop: &StopHandle) -> std::io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let stop = stop.clone();
    std::thread::Builder::new().name("loadlab-signals".to_owned()).spawn(move || {
        let mut interrupts = 0;
        for signal in signals.forever() {
            if signal == SIGINT {
                interrupts += 1;
            }
            if interrupts >= 2 {
                eprintln!("loadlab: interrupted twice; exiting now");
                std::process::exit(130);
            }
            if !stop.is_stopping() {
                eprintln!("loadlab: stopping: waiting for requests in flight (Ctrl-C again to exit now)");
            }
            stop.drain();
        }
    })?;
    Ok(())
}
