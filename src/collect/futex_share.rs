//! The maps the contention object shares with the scheduler object (bpf/futex_shared.h),
//! so that the scheduler's one sched_switch program also counts the futex waits that
//! slept: one program and one clock read per context switch, where there were two.
//!
//! The two objects still load side by side (collector.rs). The contention object creates
//! the maps before its programs load (`bpf_object__prepare`) and offers them; the
//! scheduler object takes them (`reuse_fd`) before it loads, and answers whether its
//! switch program counts the waits. The contention object attaches its own switch
//! program only when the answer is no (a kernel whose verifier rejects the merged
//! program, or a scheduler object that failed to load).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::mpsc::{Receiver, Sender, channel};

use libbpf_rs::AsRawLibbpf;
use libbpf_rs::OpenObject;

/// The maps of bpf/futex_shared.h, by their libbpf names.
pub const MAPS: [&str; 9] = [
    "thread_state",
    "futexes",
    "ustacks",
    "ustacks_spill",
    "ustack_copies",
    "ustack_scratch",
    "mmap_ustack_copies",
    "futex_hist",
    ".data.fshare",
];

/// The shared maps, created by the contention object.
pub struct SharedMaps {
    fds: Vec<(&'static str, OwnedFd)>,
}

impl SharedMaps {
    /// Create `obj`'s maps now (its programs load later, with `load()`) and keep them.
    /// Everything that changes what `load()` loads must be set before this.
    pub fn prepare(obj: &mut OpenObject) -> Result<Self, String> {
        let ptr = obj.as_libbpf_object().as_ptr();
        // SAFETY: `obj` is an open, not yet loaded object; libbpf checks its state.
        let rc = unsafe { libbpf_rs::libbpf_sys::bpf_object__prepare(ptr) };
        if rc != 0 {
            return Err(format!(
                "bpf_object__prepare: {}",
                std::io::Error::from_raw_os_error(-rc)
            ));
        }
        let mut fds = Vec::new();
        for name in MAPS {
            let Some(m) = obj.maps().find(|m| m.name().to_str() == Some(name)) else {
                return Err(format!("no map {name} in the contention object"));
            };
            // SAFETY: a map of a prepared object; its fd lives as long as `obj`.
            let fd = unsafe { libbpf_rs::libbpf_sys::bpf_map__fd(m.as_libbpf_object().as_ptr()) };
            if fd < 0 {
                return Err(format!("map {name} was not created"));
            }
            // SAFETY: fd is open (above); it is duplicated, not taken.
            let owned = unsafe { BorrowedFd::borrow_raw(fd) }
                .try_clone_to_owned()
                .map_err(|e| format!("dup map {name}: {e}"))?;
            fds.push((name, owned));
        }
        Ok(SharedMaps { fds })
    }

    /// Make `obj`'s maps of the same names these (before it loads).
    pub fn reuse_in(&self, obj: &mut OpenObject) -> Result<(), libbpf_rs::Error> {
        for mut m in obj.maps_mut() {
            let name = m.name().to_str().unwrap_or("").to_string();
            if let Some((_, fd)) = self.fds.iter().find(|(n, _)| *n == name) {
                m.reuse_fd(fd.as_fd())?;
            }
        }
        Ok(())
    }

    pub fn try_clone(&self) -> std::io::Result<Self> {
        let mut fds = Vec::new();
        for (n, fd) in &self.fds {
            fds.push((*n, fd.try_clone()?));
        }
        Ok(SharedMaps { fds })
    }
}

/// What copy_ustack (bpf/futex_shared.h) uses: a global function, verified on its own
/// even where only dead code calls it, so these small maps (empty hashes allocated on
/// use, one per-CPU slot, the counters) are created even when nothing is shared.
const COPY_USTACK_MAPS: [&str; 4] = [
    "ustack_scratch",
    "ustack_copies",
    "mmap_ustack_copies",
    ".data.fshare",
];

/// Create none of the other shared maps in `obj` (the scheduler object, not counting
/// futex waits: its switch program's futex code is then dead, and the verifier drops
/// it; the stack maps alone would take megabytes).
pub fn not_created(obj: &mut OpenObject) -> Result<(), libbpf_rs::Error> {
    for mut m in obj.maps_mut() {
        let name = m.name().to_str().unwrap_or("");
        if MAPS.contains(&name) && !COPY_USTACK_MAPS.contains(&name) {
            m.set_autocreate(false)?;
        }
    }
    Ok(())
}

/// The contention object's end: it offers the maps (None: it does not count the waits
/// that slept), then hears whether the scheduler object counts them.
pub struct Offer {
    offer: Option<Sender<Option<SharedMaps>>>,
    verdict: Receiver<bool>,
}

impl Offer {
    /// Offer `maps` (once; later calls do nothing).
    pub fn send(&mut self, maps: Option<SharedMaps>) {
        if let Some(tx) = self.offer.take() {
            let _ = tx.send(maps);
        }
    }

    /// Whether the scheduler object's switch program counts the waits (false if it
    /// failed or never answered). Sends "none" first if nothing was offered.
    pub fn sched_counts(&mut self) -> bool {
        self.send(None);
        self.verdict.recv().unwrap_or(false)
    }
}

/// The scheduler object's end.
pub struct Take {
    offer: Receiver<Option<SharedMaps>>,
    verdict: Option<Sender<bool>>,
}

impl Take {
    /// The maps offered (None: none, or the contention object failed before offering).
    pub fn maps(&self) -> Option<SharedMaps> {
        self.offer.recv().ok().flatten()
    }

    /// Say whether the switch program counts the waits (once).
    pub fn answer(&mut self, counts: bool) {
        if let Some(tx) = self.verdict.take() {
            let _ = tx.send(counts);
        }
    }
}

/// The two ends. A dropped end answers "no" / "nothing offered".
pub fn link() -> (Offer, Take) {
    let (otx, orx) = channel();
    let (vtx, vrx) = channel();
    (
        Offer {
            offer: Some(otx),
            verdict: vrx,
        },
        Take {
            offer: orx,
            verdict: Some(vtx),
        },
    )
}
