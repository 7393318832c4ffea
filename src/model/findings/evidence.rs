//! Evidence a rule cites from the Frame's tables beyond its own trigger figures: which
//! futex word a churning process's threads queue on (seed 000). Pure, like the rules.

use std::collections::BTreeMap;

use crate::model::contention::frame::FutexFrame;
use crate::model::findings::Finding;
use crate::model::findings::fig;
use crate::model::frame::Frame;

/// What a rule cites besides its trigger: the words involved, their figures and the
/// clause saying so. `judge` keeps the strongest seen during the finding's run (a lock
/// contended in bursts shows in some intervals of a churn, not all) and merges it into
/// the finding.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    pub addrs: Vec<String>,
    pub figures: BTreeMap<&'static str, f64>,
    /// Inserted into the summary at `Finding::evidence_at`.
    pub clause: String,
    /// How strongly this sighting shows the pattern, set by the rule that cites it:
    /// `judge` keeps the strongest of a run (then the latest).
    pub weight: f64,
}

impl Finding {
    /// Merge `ev` (this finding's own, or one carried from earlier in its run) into
    /// addrs, figures and summary. The finding's own trigger figures win a clash.
    pub fn add_evidence(&mut self, ev: Option<Evidence>) {
        self.evidence = None;
        let Some(ev) = ev else { return };
        for a in ev.addrs {
            if !self.addrs.contains(&a) {
                self.addrs.push(a);
            }
        }
        for (k, v) in ev.figures {
            self.figures.entry(k).or_insert(v);
        }
        let at = self.evidence_at.min(self.summary.len());
        if self.summary.is_char_boundary(at) {
            self.summary.insert_str(at, &ev.clause);
        }
    }
}

/// glibc's thread-stack functions that take its stack-cache lock (`dl_stack_cache_lock`):
/// pthread_create's side (allocate_stack, get_cached_stack) and pthread_join's
/// (__nptl_deallocate_stack; `__nptl_free_stacks` runs with the lock already held). A
/// churning process whose threads sleep in a lock wait called from one of them queues
/// on that one lock (seed 000's picture).
pub const STACK_CACHE_FNS: &[&str] = &[
    "allocate_stack",
    "get_cached_stack",
    "__nptl_deallocate_stack",
];

/// The futex word of `pid` that its threads sleep on inside glibc's thread-stack code:
/// `__lll_lock_wait_private` called straight from a thread-stack function
/// (STACK_CACHE_FNS; `lll_lock` is a macro, so nothing sits between). The most
/// contended such word; None when no waiter stack was named that way (no debug names
/// for the C library, or no such waits). Locks taken further in are other locks: the
/// dynamic linker's TLS lock (`__lll_lock_wait` <- `pthread_mutex_lock` <-
/// `_dl_allocate_tls_init` <- `get_cached_stack`) is not the stack cache's.
pub fn stack_cache_word(fr: &Frame, pid: u32) -> Option<&FutexFrame> {
    let base = |f: &String| {
        let name = f.split(['+', ' ']).next().unwrap_or("");
        name.strip_prefix("__GI_").unwrap_or(name).to_string()
    };
    fr.contention
        .futexes
        .iter()
        .filter(|w| w.pid == pid && w.contended > 0)
        .filter(|w| {
            let names: Vec<String> = w.stack.iter().map(base).collect();
            names.windows(2).any(|p| {
                p[0] == "__lll_lock_wait_private" && STACK_CACHE_FNS.contains(&p[1].as_str())
            })
        })
        .max_by_key(|w| w.contended)
}

/// thread_churn's evidence about `pid` in a frame of `secs`: glibc's stack-cache lock
/// word its threads queue on (stack_cache_word), its waits per second and threads, and
/// the summary's clause. None when no waiter stack shows it.
pub fn stack_cache_evidence(fr: &Frame, pid: u32, secs: f64) -> Option<Evidence> {
    let w = stack_cache_word(fr, pid)?;
    let per_s = w.contended as f64 / secs;
    let mut figures = fig(&[("stack_cache_waits_per_s", per_s)]);
    let clause = match w.waiters {
        Some(n) => {
            figures.insert("stack_cache_threads", f64::from(n));
            format!(
                "; {n} of its threads queue on glibc's thread-stack cache lock ({per_s:.0} waits/s)"
            )
        }
        None => {
            format!("; its threads queue on glibc's thread-stack cache lock ({per_s:.0} waits/s)")
        }
    };
    Some(Evidence {
        addrs: vec![format!("{}:{:#x}", w.pid, w.uaddr)],
        figures,
        clause,
        // The threads on the word, else (no waiter count) its waits per second.
        weight: w.waiters.map_or(per_s, f64::from),
    })
}
