//! The on-CPU profiler for the dashboard, record and serve (`--profile`): `Profiler` on
//! a thread of its own, draining and unwinding every 100 ms, so that the collector's
//! tick only takes what was counted (`take`). The Profiler is made and used on that
//! thread only (its ring buffer callback is not Send).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::collect::profile::{ProfileConfig, Profiler};
use crate::model::profile::{FoldedProfile, ProfileSample};

#[derive(Default)]
struct Shared {
    profile: FoldedProfile,
    /// Lost samples (ring buffer full, kernel stack not stored), cumulative.
    lost: (u64, u64),
    /// Off-CPU: watched switch-outs seen and sent with a stack, cumulative.
    waits: (u64, u64),
    /// Processes to watch from the next drain on, when the filter changed (the inner
    /// None: every process).
    pids: Option<Option<Vec<u32>>>,
}

pub struct ProfileRunner {
    hz: u64,
    off_cpu: bool,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Lost counts already reported.
    lost_seen: (u64, u64),
    waits_seen: (u64, u64),
}

impl ProfileRunner {
    /// Load and attach on the profiler's thread; Err is the one-line reason it failed.
    pub fn start(cfg: ProfileConfig) -> Result<Self, String> {
        let shared: Arc<Mutex<Shared>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = sync_channel(1);
        let (sh, st, hz, off_cpu) = (shared.clone(), stop.clone(), cfg.hz, cfg.off_cpu);
        let thread = std::thread::Builder::new()
            .name("ttop-profile".into())
            .spawn(move || {
                let mut p = match Profiler::start(&cfg) {
                    Ok(p) => {
                        let _ = tx.send(Ok(()));
                        p
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                while !st.load(Ordering::Relaxed) {
                    p.poll(Duration::from_millis(100));
                    let counted = p.take_profile();
                    let lost = p.lost();
                    let waits = p.waits();
                    let pids = {
                        let mut s = sh.lock().unwrap_or_else(|e| e.into_inner());
                        s.profile.merge(counted);
                        s.lost = lost;
                        s.waits = waits;
                        s.pids.take()
                    };
                    if let Some(pids) = pids {
                        p.set_pids(pids.as_deref());
                    }
                }
            })
            .map_err(|e| format!("eBPF profiler: thread: {e}"))?;
        match rx.recv() {
            Ok(Ok(())) => Ok(Self {
                hz,
                off_cpu,
                shared,
                stop,
                thread: Some(thread),
                lost_seen: (0, 0),
                waits_seen: (0, 0),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err("eBPF profiler: its thread ended before it started".into())
            }
        }
    }

    /// Samples per second per CPU it was started with.
    pub fn hz(&self) -> u64 {
        self.hz
    }

    pub fn off_cpu(&self) -> bool {
        self.off_cpu
    }

    /// Watch exactly these processes from the next drain on (None: every process).
    pub fn set_pids(&self, pids: Option<Vec<u32>>) {
        self.shared.lock().unwrap_or_else(|e| e.into_inner()).pids = Some(pids);
    }

    /// What was counted since the last call (drained up to 100 ms ago).
    pub fn take(&mut self) -> ProfileSample {
        let (mut sample, lost, waits) = {
            let mut s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
            (s.profile.take_sample(self.hz), s.lost, s.waits)
        };
        if self.off_cpu {
            sample.off_waits = Some(waits.0.saturating_sub(self.waits_seen.0));
            sample.off_waits_kept = Some(waits.1.saturating_sub(self.waits_seen.1));
        }
        self.waits_seen = waits;
        sample.off_cpu = self.off_cpu;
        sample.lost = lost.0.saturating_sub(self.lost_seen.0);
        sample.lost_kstacks = lost.1.saturating_sub(self.lost_seen.1);
        self.lost_seen = lost;
        sample
    }
}

impl Drop for ProfileRunner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
