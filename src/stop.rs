//! Stopping: SIGINT, SIGTERM and SIGHUP (an SSH drop sends SIGHUP), or the program
//! itself, set a flag *and* make a socket readable. A thread can then sleep until its
//! next tick or a stop, whichever comes first, instead of waking four times a second to
//! look at the flag (what ttop did before: eight wake-ups a second between two threads,
//! with nothing to do; seed 003 is about what needless wake-ups cost).
//!
//! A stop is final: the byte is never drained, so every waiter, now or later, sees the
//! socket readable.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use signal_hook::SigId;

/// The signals that end ttop cleanly (restore the terminal, close a recording).
const SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

/// A shared stop request. Cloning shares it.
#[derive(Clone)]
pub struct Stop(Arc<Inner>);

struct Inner {
    flag: Arc<AtomicBool>,
    r: UnixStream,
    w: UnixStream,
    signals: Vec<SigId>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for id in self.signals.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

impl Stop {
    /// A stop only the program sets (for the tests: no signal handlers in the test binary).
    #[cfg(test)]
    fn new() -> io::Result<Self> {
        Self::build(false)
    }

    /// A stop that SIGINT, SIGTERM and SIGHUP also set.
    pub fn on_signals() -> io::Result<Self> {
        Self::build(true)
    }

    fn build(signals: bool) -> io::Result<Self> {
        let (r, w) = UnixStream::pair()?;
        r.set_nonblocking(true)?;
        w.set_nonblocking(true)?;
        let flag = Arc::new(AtomicBool::new(false));
        let mut ids = Vec::new();
        if signals {
            for sig in SIGNALS {
                // The flag first: a waiter woken by the byte must find it set.
                ids.push(signal_hook::flag::register(sig, flag.clone())?);
                ids.push(signal_hook::low_level::pipe::register(sig, w.try_clone()?)?);
            }
        }
        Ok(Self(Arc::new(Inner {
            flag,
            r,
            w,
            signals: ids,
        })))
    }

    pub fn is_set(&self) -> bool {
        self.0.flag.load(Ordering::Relaxed)
    }

    pub fn set(&self) {
        self.0.flag.store(true, Ordering::Relaxed);
        // Non-blocking: a full socket already holds a byte, which is all a waiter needs.
        let _ = (&self.0.w).write(&[1]);
    }

    /// The descriptor that becomes readable on a stop, for a caller's own poll(2).
    pub fn fd(&self) -> RawFd {
        self.0.r.as_raw_fd()
    }

    /// Sleep until `timeout` has passed or a stop came; true if stopped.
    pub fn wait(&self, timeout: Duration) -> bool {
        if self.is_set() {
            return true;
        }
        let mut fd = libc::pollfd {
            fd: self.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd. EINTR (any signal) just ends the wait early; the
        // caller looks at the clock and the flag again.
        unsafe { libc::poll(&mut fd, 1, poll_ms(timeout)) };
        self.is_set()
    }
}

/// A poll(2) timeout in whole milliseconds, rounded up: rounded down, the last fraction
/// of a millisecond before a deadline became a run of zero-timeout polls (a spin).
pub(crate) fn poll_ms(timeout: Duration) -> i32 {
    timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_stop_ends_a_long_wait_at_once() {
        let stop = Stop::new().unwrap();
        let other = stop.clone();
        let t = std::thread::spawn(move || {
            let t0 = Instant::now();
            let stopped = other.wait(Duration::from_secs(30));
            (stopped, t0.elapsed())
        });
        std::thread::sleep(Duration::from_millis(50));
        stop.set();
        let (stopped, waited) = t.join().unwrap();
        assert!(stopped);
        assert!(waited < Duration::from_secs(10), "waited {waited:?}");
        // Final: later waits return at once, as many times as asked.
        for _ in 0..3 {
            assert!(stop.wait(Duration::from_secs(30)));
        }
    }

    #[test]
    fn poll_timeouts_round_up() {
        assert_eq!(poll_ms(Duration::ZERO), 0);
        assert_eq!(poll_ms(Duration::from_nanos(1)), 1);
        assert_eq!(poll_ms(Duration::from_micros(999)), 1);
        assert_eq!(poll_ms(Duration::from_millis(993)), 993);
        assert_eq!(poll_ms(Duration::from_secs(u64::MAX)), i32::MAX);
    }

    #[test]
    fn without_a_stop_the_wait_lasts_its_timeout() {
        let stop = Stop::new().unwrap();
        let t0 = Instant::now();
        assert!(!stop.wait(Duration::from_millis(100)));
        assert!(t0.elapsed() >= Duration::from_millis(100));
    }
}
