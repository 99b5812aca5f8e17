//! [`Poller`]: a thin epoll wrapper with nanosecond timeouts (`epoll_pwait2`), so the
//! pacer can sleep exactly until the next request is due instead of a whole millisecond.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use rustix::event::Timespec;
use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};

pub(crate) struct Poller {
    epoll: OwnedFd,
}

/// Registered interest: edge-triggered read and write readiness plus peer shutdown,
/// registered once per socket so sending a request costs no `epoll_ctl`.
const INTEREST: EventFlags = EventFlags::IN
    .union(EventFlags::OUT)
    .union(EventFlags::RDHUP)
    .union(EventFlags::ET);

impl Poller {
    pub(crate) fn new() -> io::Result<Poller> {
        Ok(Poller {
            epoll: epoll::create(CreateFlags::CLOEXEC)?,
        })
    }

    pub(crate) fn add(&self, fd: impl AsFd, token: u64) -> io::Result<()> {
        Ok(epoll::add(
            &self.epoll,
            fd,
            EventData::new_u64(token),
            INTEREST,
        )?)
    }

    /// Registers a level-triggered read interest (for the stop eventfd).
    pub(crate) fn add_level_read(&self, fd: impl AsFd, token: u64) -> io::Result<()> {
        Ok(epoll::add(
            &self.epoll,
            fd,
            EventData::new_u64(token),
            EventFlags::IN,
        )?)
    }

    /// Waits for events into `events` (cleared first), at most `timeout_ns` (`None`:
    /// until something happens).
    pub(crate) fn wait(&self, events: &mut Vec<Event>, timeout_ns: Option<u64>) -> io::Result<()> {
        events.clear();
        let timeout = timeout_ns.map(|ns| Timespec {
            tv_sec: (ns / 1_000_000_000) as i64,
            tv_nsec: (ns % 1_000_000_000) as i64,
        });
        loop {
            match epoll::wait(
                &self.epoll,
                rustix::buffer::spare_capacity(events),
                timeout.as_ref(),
            ) {
                Ok(_) => return Ok(()),
                Err(rustix::io::Errno::INTR) => {}
                Err(err) => return Err(err.into()),
            }
        }
    }
}
