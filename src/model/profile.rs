//! A profile as counted stacks, and Brendan Gregg's folded format for it
//! (`root;...;leaf COUNT`, one line per distinct stack), which inferno, flamegraph.pl
//! and speedscope read.
//!
//! Each stack starts with two frames that keep processes and threads apart: the
//! process as `name-PID` and the thread's name with its trailing number made `*`
//! (`worker-3` and `worker-12` are both `worker-*`; a thread named as its process keeps
//! the name), so a flame graph splits by process
//! first and by thread group under it. Then the user frames, outermost first, then the
//! kernel frames, marked `_[k]` as stackcollapse-perf marks them.

use foldhash::HashMap;

/// One distinct stack.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StackKey {
    pub pid: u32,
    pub process: String,
    /// The thread's own name (comm).
    pub thread: String,
    /// Outermost first.
    pub frames: Vec<String>,
}

#[derive(Debug, Default, Clone)]
pub struct FoldedProfile {
    counts: HashMap<StackKey, u64>,
    total: u64,
}

/// A thread's name with its trailing number made `*`: the group it belongs to. A thread
/// named as its process (the main thread, and threads that were never named) keeps the
/// name whole.
pub fn thread_group(name: &str, process: &str) -> String {
    if name == process {
        return name.to_string();
    }
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if base.len() == name.len() || base.is_empty() {
        name.to_string()
    } else {
        format!("{base}*")
    }
}

/// A frame name as a folded line can hold it: `;` separates frames, a newline ends the
/// line.
fn clean(name: &str) -> String {
    name.replace([';', '\n'], ":")
}

impl FoldedProfile {
    pub fn add(&mut self, key: StackKey, n: u64) {
        *self.counts.entry(key).or_default() += n;
        self.total += n;
    }

    /// Samples counted.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Distinct stacks.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The folded lines, sorted (identical stacks of threads of one group are one line).
    pub fn folded(&self) -> Vec<String> {
        let mut lines: HashMap<String, u64> = HashMap::default();
        for (k, n) in &self.counts {
            let mut line = format!(
                "{}-{};{}",
                clean(&k.process),
                k.pid,
                clean(&thread_group(&k.thread, &k.process))
            );
            for f in &k.frames {
                line.push(';');
                line.push_str(&clean(f));
            }
            *lines.entry(line).or_default() += n;
        }
        let mut out: Vec<String> = lines.into_iter().map(|(l, n)| format!("{l} {n}")).collect();
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(pid: u32, thread: &str, frames: &[&str]) -> StackKey {
        StackKey {
            pid,
            process: "db".into(),
            thread: thread.into(),
            frames: frames.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn threads_group_by_name_without_their_number() {
        assert_eq!(thread_group("worker-12", "db"), "worker-*");
        assert_eq!(thread_group("worker3", "db"), "worker*");
        assert_eq!(thread_group("db", "db"), "db");
        assert_eq!(thread_group("burn31", "burn31"), "burn31");
        assert_eq!(thread_group("123", "db"), "123");
        assert_eq!(thread_group("", "db"), "");
    }

    #[test]
    fn folds_stacks_of_one_group_into_one_line() {
        let mut p = FoldedProfile::default();
        p.add(key(7, "worker-1", &["main", "run", "spin"]), 3);
        p.add(key(7, "worker-2", &["main", "run", "spin"]), 2);
        p.add(key(7, "worker-2", &["main", "a;b", "do_syscall_64_[k]"]), 1);
        p.add(key(8, "worker-2", &["main", "run", "spin"]), 4);
        assert_eq!(p.total(), 10);
        assert_eq!(
            p.folded(),
            vec![
                "db-7;worker-*;main;a:b;do_syscall_64_[k] 1",
                "db-7;worker-*;main;run;spin 5",
                "db-8;worker-*;main;run;spin 4",
            ]
        );
    }
}
