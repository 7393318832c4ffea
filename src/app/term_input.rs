//! Waiting for the dashboard's next event: a key, a resize, a new Sample, or the
//! terminal going away.
//!
//! crossterm 0.29 cannot be asked to wait on a terminal that may vanish: once the tty
//! is gone (an SSH session dropped, a tmux pane killed) it stays readable, `read`
//! returns 0, and crossterm's read loop retries forever inside `event::poll`, even with
//! a timeout (crossterm issue #793). A monitor left behind by a dropped session would
//! then burn a CPU and ignore SIGTERM. So ttop waits itself, with poll(2) on the tty and
//! on a wake-up socket, and only calls crossterm when the tty has input and has not hung
//! up. The same wait replaces a fixed 50 ms poll: the dashboard sleeps until something
//! happens (the collector wakes it when a Sample is ready, a signal through the
//! [`Stop`]) instead of waking 20 times a second.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crossterm::event::{self, Event};

use crate::stop::Stop;

/// What one wait brought.
pub enum Input {
    /// Events crossterm decoded (possibly none: a wake-up or a timeout).
    Events(Vec<Event>),
    /// The terminal hung up: nobody is looking any more.
    Gone,
}

/// Wakes a waiting [`TermInput`] from another thread.
pub struct Waker(UnixStream);

impl Waker {
    pub fn wake(&self) {
        // Non-blocking: a full socket already holds a pending wake-up.
        let _ = (&self.0).write(&[1]);
    }
}

pub struct TermInput {
    /// The tty crossterm reads (stdin if it is one, else /dev/tty opened here).
    tty: Option<RawFd>,
    _own_tty: Option<OwnedFd>,
    wake_r: UnixStream,
    wake_w: UnixStream,
    sigwinch: Option<signal_hook::SigId>,
    /// Readable once a stop was requested (a signal): the wait ends for it.
    stop: Stop,
}

impl TermInput {
    pub fn new(stop: &Stop) -> io::Result<Self> {
        let (wake_r, wake_w) = UnixStream::pair()?;
        wake_r.set_nonblocking(true)?;
        wake_w.set_nonblocking(true)?;
        // SAFETY: isatty has no preconditions.
        let (tty, own) = if unsafe { libc::isatty(libc::STDIN_FILENO) } == 1 {
            (Some(libc::STDIN_FILENO), None)
        } else {
            match std::fs::File::open("/dev/tty") {
                Ok(f) => {
                    let fd: OwnedFd = f.into();
                    (Some(fd.as_raw_fd()), Some(fd))
                }
                Err(_) => (None, None),
            }
        };
        // A resize arrives as SIGWINCH, which crossterm turns into an event: wake for it.
        let sigwinch = signal_hook::low_level::pipe::register(
            signal_hook::consts::SIGWINCH,
            wake_w.try_clone()?,
        )
        .ok();
        Ok(Self {
            tty,
            _own_tty: own,
            wake_r,
            wake_w,
            sigwinch,
            stop: stop.clone(),
        })
    }

    pub fn waker(&self) -> io::Result<Waker> {
        Ok(Waker(self.wake_w.try_clone()?))
    }

    /// Wait up to `timeout` (None: as long as it takes) for input, a wake-up, a stop or a
    /// hang-up.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<Input> {
        let mut fds = [
            libc::pollfd {
                fd: self.wake_r.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.tty.unwrap_or(-1),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.stop.fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ms = timeout.map_or(-1, crate::stop::poll_ms);
        // SAFETY: fds is a valid array of three pollfd (a negative fd is ignored by poll).
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            // A signal (SIGTERM, SIGWINCH...) interrupted the wait: the caller looks again.
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(Input::Events(Vec::new())),
                _ => Err(e),
            };
        }
        if fds[1].revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            return Ok(Input::Gone);
        }
        let woke = fds[0].revents & libc::POLLIN != 0;
        if woke {
            let mut sink = [0u8; 64];
            while matches!((&self.wake_r).read(&mut sink), Ok(n) if n > 0) {}
        }
        let mut events = Vec::new();
        // Without a tty to watch, crossterm is asked on every wake-up (its own source).
        if woke || fds[1].revents & libc::POLLIN != 0 || self.tty.is_none() {
            while event::poll(Duration::ZERO)? {
                events.push(event::read()?);
            }
        }
        Ok(Input::Events(events))
    }
}

impl Drop for TermInput {
    fn drop(&mut self) {
        if let Some(id) = self.sigwinch.take() {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// Last resort for a dashboard stuck on a dead terminal: once SIGHUP, SIGTERM or SIGINT
/// has arrived, give the normal shutdown `grace` to finish, then leave without touching
/// the terminal. A thread blocked on a socket: no wake-ups until a signal comes.
pub fn exit_if_stuck_after_signal(grace: Duration) -> io::Result<()> {
    let (mut r, w) = UnixStream::pair()?;
    for sig in [
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
    ] {
        signal_hook::low_level::pipe::register(sig, w.try_clone()?)?;
    }
    std::thread::Builder::new()
        .name("ttop-exit-guard".into())
        .spawn(move || {
            let mut b = [0u8; 1];
            if matches!(r.read(&mut b), Ok(1)) {
                std::thread::sleep(grace);
                // SAFETY: _exit ends the process at once; nothing is left half-done that
                // a normal exit would have completed (the normal exit is what got stuck).
                unsafe { libc::_exit(1) };
            }
        })?;
    Ok(())
}
