//! The thread that runs the collector: it takes a Sample every interval and hands it to
//! the UI over a bounded channel, answers the UI's requests (filter, futex hooks,
//! profiles) between samples, and can run at real-time priority.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Collector;
use crate::model::sample::{FilterSpec, Sample};
use crate::stop::Stop;

/// Make the calling thread SCHED_FIFO 1 so a saturated machine cannot starve the
/// collector (top, at nice 0, is starved exactly when it matters). Needs root.
pub fn raise_priority() -> Result<(), String> {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: plain syscall on the current thread with a valid param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

/// The nice value ttop takes when it may and was started at 0: under thread churn on
/// 2 CPUs a nice-0 collector got ~1% of a CPU and its 1 s ticks stretched to 2-7 s;
/// at -10 they stayed at ~1 s. ttop's own CPU is small (tens of ms a second at worst),
/// so what it takes from the workload is that, sooner. atop does the same (nice -20).
pub const NICE: i32 = -10;

/// Lower the calling thread's nice to NICE (threads started after inherit it), unless
/// the user chose one (`nice -n 5 ttop` is kept) or may not (not root: nothing
/// changes). Returns the nice now in force.
pub fn default_nice() -> i32 {
    // SAFETY: plain syscalls on the calling thread (who 0). glibc's getpriority returns
    // the nice itself, and -1 both for nice -1 and an error: errno tells them apart.
    unsafe {
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, 0);
        if now != 0 || *libc::__errno_location() != 0 {
            return now;
        }
        if libc::setpriority(libc::PRIO_PROCESS, 0, NICE) == 0 {
            NICE
        } else {
            0
        }
    }
}

/// Calls the UI's wake-up after each Sample, and once more when the thread ends.
struct WakeOnExit(Option<Box<dyn Fn() + Send>>);

impl WakeOnExit {
    fn wake(&self) {
        if let Some(n) = &self.0 {
            n();
        }
    }
}

impl Drop for WakeOnExit {
    fn drop(&mut self) {
        self.wake();
    }
}

/// What the UI thread may ask of the collector thread (the UI never touches the kernel).
#[derive(Debug, Clone)]
pub enum Request {
    /// Watch only these processes from the next tick on (None: everything).
    SetFilter(Option<FilterSpec>),
    /// Start sampling stacks (the profile view opened), at 99 Hz unless already on.
    StartProfile,
    /// Hook every futex call (true: the futex view opened) or count only the waits that
    /// slept again (false: it closed). Nothing unless loaded for it (futex_on_demand).
    FutexCalls(bool),
    /// Count the call/call-single split of the IPIs received (true: the IPI view
    /// opened), or leave it to /proc/interrupts' total (false).
    IpiSplit(bool),
    /// Switch between on-CPU and off-CPU stacks (`o`), of these processes (None: the
    /// filter's).
    ProfileMode {
        off_cpu: bool,
        pids: Option<Vec<u32>>,
    },
}

/// Run the collector on its own thread: a first Sample at once, then one per interval,
/// each sent over the bounded channel. Stops when `stop` is set or the receiver is gone.
pub fn spawn(
    collector: Collector,
    interval: Duration,
    rt: bool,
    tx: SyncSender<Sample>,
    stop: Stop,
) -> JoinHandle<()> {
    spawn_with_requests(collector, interval, rt, tx, stop, None, None)
}

/// `spawn`, also taking Requests from the UI between ticks (applied as they arrive;
/// the UI dropping its sender ends the thread at once), and calling `notify` after each
/// Sample is sent so that the UI can sleep until then. Between ticks the thread sleeps
/// until the next one is due: a stop wakes it (without requests, through `stop`; with
/// them, the UI drops its sender when it stops), so it wakes once per interval.
pub fn spawn_with_requests(
    mut collector: Collector,
    interval: Duration,
    rt: bool,
    tx: SyncSender<Sample>,
    stop: Stop,
    requests: Option<Receiver<Request>>,
    notify: Option<Box<dyn Fn() + Send>>,
) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("ttop-collect".into())
        .spawn(move || {
            // Also on the way out, a panic included: a UI sleeping until the next Sample
            // must learn that none will come.
            let notify = WakeOnExit(notify);
            if rt {
                let _ = raise_priority();
            }
            collector.set_interval(interval);
            let mut next = Instant::now();
            let mut priming = true;
            'ticks: while !stop.is_set() {
                let s = collector.sample();
                if tx.send(s).is_err() {
                    break;
                }
                notify.wake();
                // The first Sample only primes, and can take long (the first full /proc
                // listing): the schedule starts when it is done, or the first interval
                // shown would be what was left of one (0.09 s of 0.5 under 200 spinners).
                if std::mem::take(&mut priming) {
                    next = Instant::now();
                }
                next += interval;
                let now = Instant::now();
                if next < now {
                    // We fell behind (a starved machine): start afresh rather than burst.
                    next = now + interval;
                }
                while !stop.is_set() {
                    let now = Instant::now();
                    if now >= next {
                        break;
                    }
                    let left = next - now;
                    match &requests {
                        Some(rx) => match rx.recv_timeout(left) {
                            Ok(Request::SetFilter(f)) => collector.set_filter(f),
                            Ok(Request::StartProfile) => collector.start_profile(99),
                            Ok(Request::FutexCalls(on)) => collector.set_futex_calls(on),
                            Ok(Request::IpiSplit(on)) => collector.set_ipi_split(on),
                            Ok(Request::ProfileMode { off_cpu, pids }) => {
                                collector.set_profile_mode(off_cpu, pids)
                            }
                            Err(RecvTimeoutError::Timeout) => {}
                            Err(RecvTimeoutError::Disconnected) => break 'ticks,
                        },
                        None => {
                            stop.wait(left);
                        }
                    }
                }
            }
            // Dropping the collector would wait ~0.6 s for the kernel: let a child do it.
            crate::collect::bpf::detach::detach_in_background();
        })
        .expect("spawn the collector thread")
}
