//! [`Keys`]: the live view's keys, read from the terminal while a run goes on.
//!
//! - `p` (or space) pauses and resumes the view (the run goes on; only the redraw stops),
//! - `q` quits cleanly: the run drains as on Ctrl-C, so the records are complete and the
//!   summary follows.
//!
//! Keys are read only when stdin is the terminal and loadlab is its foreground job: a
//! background job touching the terminal would be stopped by the kernel (SIGTTOU), and a
//! stdin that carries targets is not a keyboard. The terminal is put in cbreak mode (no
//! line buffering, no echo; Ctrl-C still signals, output is unchanged) and restored at
//! the end, on drop, and by [`restore_terminal`] before an immediate exit.

use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use rustix::termios::{self, LocalModes, OptionalActions, SpecialCodeIndex, Termios};

/// The terminal's settings before cbreak mode, to put back.
static SAVED: Mutex<Option<Termios>> = Mutex::new(None);

/// What a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAction {
    /// Pause or resume the view.
    TogglePause,
    /// Stop the run cleanly.
    Quit,
}

impl KeyAction {
    /// The action of a key byte, if any.
    pub fn of(byte: u8) -> Option<KeyAction> {
        match byte {
            b'p' | b'P' | b' ' => Some(KeyAction::TogglePause),
            b'q' | b'Q' => Some(KeyAction::Quit),
            _ => None,
        }
    }
}

/// The key-reading thread; [`Keys::finish`] stops it and restores the terminal.
pub struct Keys {
    stopped: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Keys {
    /// Starts reading keys when stdin is the foreground terminal, else `None`.
    /// `paused` is flipped by `p`; `quit` is called (once) on `q`.
    pub fn start(paused: Arc<AtomicBool>, quit: Box<dyn FnOnce() + Send>) -> Option<Keys> {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() || !in_foreground(&stdin) {
            return None;
        }
        let saved = termios::tcgetattr(&stdin).ok()?;
        let mut cbreak = saved.clone();
        cbreak.local_modes -= LocalModes::ICANON | LocalModes::ECHO;
        // A read returns after a key or 100 ms, so the thread sees the stop flag.
        cbreak.special_codes[SpecialCodeIndex::VMIN] = 0;
        cbreak.special_codes[SpecialCodeIndex::VTIME] = 1;
        *SAVED.lock().unwrap_or_else(PoisonError::into_inner) = Some(saved);
        if termios::tcsetattr(&stdin, OptionalActions::Now, &cbreak).is_err() {
            restore_terminal();
            return None;
        }
        let stopped = Arc::new(AtomicBool::new(false));
        let thread = {
            let stopped = Arc::clone(&stopped);
            std::thread::Builder::new()
                .name("loadlab-keys".to_owned())
                .spawn(move || read_keys(std::io::stdin(), &stopped, &paused, quit))
        };
        match thread {
            Ok(thread) => Some(Keys {
                stopped,
                thread: Some(thread),
            }),
            Err(_) => {
                restore_terminal();
                None
            }
        }
    }

    /// Stops reading keys and restores the terminal.
    pub fn finish(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        self.stopped.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        restore_terminal();
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Puts the terminal back as it was before [`Keys::start`]; a no-op otherwise. Call
/// it before exiting without unwinding (a second Ctrl-C).
pub fn restore_terminal() {
    let saved = SAVED.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some(saved) = saved {
        let _ = termios::tcsetattr(std::io::stdin(), OptionalActions::Now, &saved);
    }
}

fn in_foreground(stdin: &impl AsFd) -> bool {
    termios::tcgetpgrp(stdin).is_ok_and(|group| group == rustix::process::getpgrp())
}

fn read_keys(
    input: impl AsFd,
    stopped: &AtomicBool,
    paused: &AtomicBool,
    quit: Box<dyn FnOnce() + Send>,
) {
    let mut quit = Some(quit);
    let mut byte = [0u8; 1];
    while !stopped.load(Ordering::Relaxed) {
        match rustix::io::read(&input, &mut byte) {
            Ok(1) => match KeyAction::of(byte[0]) {
                Some(KeyAction::TogglePause) => {
                    paused.fetch_xor(true, Ordering::Relaxed);
                }
                Some(KeyAction::Quit) => {
                    if let Some(quit) = quit.take() {
                        quit();
                    }
                }
                None => {}
            },
            // A timeout (no key within 100 ms) or an interrupted read: look again.
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            // The terminal went away (hung up): no more keys.
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_bytes_map_to_actions() {
        let rows = [
            (b'p', Some(KeyAction::TogglePause)),
            (b'P', Some(KeyAction::TogglePause)),
            (b' ', Some(KeyAction::TogglePause)),
            (b'q', Some(KeyAction::Quit)),
            (b'Q', Some(KeyAction::Quit)),
            (b'x', None),
            (b'\n', None),
            (0x1b, None),
        ];
        for (byte, want) in rows {
            assert_eq!(KeyAction::of(byte), want, "{byte:#x}");
        }
    }

    #[test]
    fn keys_pause_and_quit_once() {
        let (reader, writer) = rustix::pipe::pipe().expect("pipe");
        let stopped = Arc::new(AtomicBool::new(false));
        let paused = Arc::new(AtomicBool::new(false));
        let (quits, quitted) = std::sync::mpsc::channel();
        let thread = {
            let (stopped, paused) = (Arc::clone(&stopped), Arc::clone(&paused));
            std::thread::spawn(move || {
                let quit = Box::new(move || quits.send(()).expect("send"));
                read_keys(reader, &stopped, &paused, quit);
            })
        };
        rustix::io::write(&writer, b"xpppqq").expect("write");
        quitted
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("q quits");
        stopped.store(true, Ordering::Relaxed);
        drop(writer);
        thread.join().expect("the key thread ends");
        assert!(paused.load(Ordering::Relaxed), "three toggles: paused");
        assert!(quitted.try_recv().is_err(), "the second q does nothing");
    }

    #[test]
    fn without_a_terminal_no_keys_are_read_and_nothing_is_restored() {
        // Test runners give no terminal on stdin; when one does, skip.
        if std::io::stdin().is_terminal() {
            return;
        }
        let keys = Keys::start(Arc::new(AtomicBool::new(false)), Box::new(|| {}));
        assert!(keys.is_none());
        restore_terminal();
        assert!(
            SAVED
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_none()
        );
    }
}
