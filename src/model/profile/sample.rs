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
use serde::{Deserialize, Serialize};

use super::located::{self, LocatedStack, PprofStack};

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

/// One distinct stack and how many samples it got in an interval (a Sample's profile:
/// deduplicated stacks, never raw samples).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileStack {
    pub pid: u32,
    pub process: String,
    pub thread: String,
    /// Outermost first; kernel frames end in `_[k]`.
    pub frames: Vec<String>,
    pub count: u64,
    /// Each frame's source file and line, in the order of `frames`, where the profiler
    /// kept them (the dashboard and `ttop record`); empty in recordings made before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<located::FrameLine>,
}

/// The on-CPU samples of one interval (`Sample::profile`). Unlike the Sample's other
/// counters these are the interval's, not cumulative: a cumulative profile would repeat
/// every stack in every Sample of a recording.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileSample {
    /// Samples per second per CPU.
    pub hz: u64,
    /// Biggest first, then by stack: deterministic.
    pub stacks: Vec<ProfileStack>,
    /// Samples the kernel could not deliver this interval (ring buffer full), and kernel
    /// stacks it could not store (those samples are counted without their kernel part).
    pub lost: u64,
    pub lost_kstacks: u64,
    /// Off-CPU: each stack's count is microseconds off the CPU (the first frame says
    /// why), not samples. Recordings from before it existed are on-CPU.
    #[serde(default)]
    pub off_cpu: bool,
    /// Off-CPU: the watched threads' switch-outs in the interval, and how many of them
    /// were kept with their stack; the others are stood for by the kept ones' weights
    /// (one in N kept at random, counted N times, when they come faster than the
    /// reader can unwind). None on-CPU and in recordings made before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_waits: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_waits_kept: Option<u64>,
}

impl ProfileSample {
    pub fn samples(&self) -> u64 {
        self.stacks.iter().map(|s| s.count).sum()
    }
}

/// How many stacks a `--json` frame lists (the rest are counted in `cut_*`).
pub const FRAME_STACKS: usize = 50;

/// A frame's profile (`--json`): the interval's folded stacks with their counts, the
/// biggest `FRAME_STACKS`, and what was cut.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProfileFrame {
    pub hz: u64,
    /// The counts are microseconds off the CPU, not samples (`o` in the profile view,
    /// `--profile --off-cpu`).
    pub off_cpu: bool,
    /// Samples in the interval (all stacks, cut ones included).
    pub samples: u64,
    pub stacks: Vec<FoldedCount>,
    /// Stacks not listed, and their samples.
    pub cut_stacks: u64,
    pub cut_samples: u64,
    pub lost: u64,
    pub lost_kstacks: u64,
    /// Off-CPU: the watched threads' switch-outs in the interval and the ones kept with
    /// their stack (the rest are counted through the kept ones' weights); null on-CPU.
    pub off_waits: Option<u64>,
    pub off_waits_kept: Option<u64>,
    /// Every stack of the interval, biggest first (the profile view draws them all).
    #[serde(skip)]
    pub all: Vec<FoldedCount>,
    /// The same stacks with their source lines, for the view's pprof export: every
    /// stack whose Sample kept its lines (`ProfileStack::lines`), as
    /// `FoldedProfile::located_stacks` gives them.
    #[serde(skip)]
    pub located: Vec<PprofStack>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FoldedCount {
    /// `process-PID;thread group;outermost;...;leaf`, as `ttop profile` writes it.
    pub stack: String,
    pub count: u64,
}

impl ProfileFrame {
    pub fn of(p: &ProfileSample) -> Self {
        let mut folded = FoldedProfile::default();
        for s in &p.stacks {
            if let Some(locations) = located::locations_of(&s.frames, &s.lines) {
                folded.add_located(
                    LocatedStack {
                        pid: s.pid,
                        process: s.process.clone(),
                        thread: s.thread.clone(),
                        locations,
                    },
                    s.count,
                );
            }
            folded.add(
                StackKey {
                    pid: s.pid,
                    process: s.process.clone(),
                    thread: s.thread.clone(),
                    frames: s.frames.clone(),
                },
                s.count,
            );
        }
        let mut lines = folded.folded_counts();
        lines.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let samples = folded.total();
        let all: Vec<FoldedCount> = lines
            .iter()
            .map(|(stack, count)| FoldedCount {
                stack: stack.clone(),
                count: *count,
            })
            .collect();
        let cut = lines.split_off(lines.len().min(FRAME_STACKS));
        Self {
            located: folded.located_stacks(),
            all,
            hz: p.hz,
            samples,
            cut_stacks: cut.len() as u64,
            cut_samples: cut.iter().map(|c| c.1).sum(),
            stacks: lines
                .into_iter()
                .map(|(stack, count)| FoldedCount { stack, count })
                .collect(),
            lost: p.lost,
            lost_kstacks: p.lost_kstacks,
            off_cpu: p.off_cpu,
            off_waits: p.off_waits,
            off_waits_kept: p.off_waits_kept,
        }
    }
}

#[derive(Debug, Default, Clone)]
pub struct FoldedProfile {
    counts: HashMap<StackKey, u64>,
    total: u64,
    /// The same samples with source lines, when the profiler keeps them (`add_located`).
    located: HashMap<LocatedStack, u64>,
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

/// The two frames a stack starts with: `process-PID` and the thread group.
fn root_frames(process: &str, pid: u32, thread: &str) -> [String; 2] {
    [
        format!("{}-{pid}", clean(process)),
        clean(&thread_group(thread, process)),
    ]
}

impl FoldedProfile {
    pub fn add(&mut self, key: StackKey, n: u64) {
        *self.counts.entry(key).or_default() += n;
        self.total += n;
    }

    /// Count `n` for the source lines of a stack counted with `add`.
    pub fn add_located(&mut self, stack: LocatedStack, n: u64) {
        *self.located.entry(stack).or_default() += n;
    }

    /// Add everything `other` counted.
    pub fn merge(&mut self, other: FoldedProfile) {
        for (k, n) in other.counts {
            self.add(k, n);
        }
        for (k, n) in other.located {
            self.add_located(k, n);
        }
    }

    /// The stacks with source lines, for pprof: the folded line's process and thread
    /// group frames at the root, names cleaned as the folded lines clean them; in the
    /// folded lines' order (then by lines), so a file is the same for the same samples.
    pub fn located_stacks(&self) -> Vec<PprofStack> {
        let mut out: Vec<(String, PprofStack)> = self
            .located
            .iter()
            .map(|(k, n)| {
                let root = root_frames(&k.process, k.pid, &k.thread);
                let mut line = root.join(";");
                let mut locs: Vec<located::Location> =
                    root.into_iter().map(located::named).collect();
                for l in &k.locations {
                    // Shared as it is unless a name needs cleaning (seldom).
                    let l = if l.iter().any(|f| f.name.contains([';', '\n'])) {
                        l.iter()
                            .map(|f| located::SrcFrame {
                                name: clean(&f.name),
                                ..f.clone()
                            })
                            .collect()
                    } else {
                        l.clone()
                    };
                    for f in l.iter().rev() {
                        line.push(';');
                        line.push_str(&f.name);
                    }
                    locs.push(l);
                }
                (line, (locs, *n))
            })
            .collect();
        out.sort_by(|a, b| (&a.0, &a.1.0).cmp(&(&b.0, &b.1.0)));
        out.into_iter().map(|(_, s)| s).collect()
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
        let mut out: Vec<String> = self
            .folded_counts()
            .into_iter()
            .map(|(l, n)| format!("{l} {n}"))
            .collect();
        out.sort();
        out
    }

    /// The folded stacks (without their counts) and their counts, unordered.
    pub fn folded_counts(&self) -> Vec<(String, u64)> {
        let mut lines: HashMap<String, u64> = HashMap::default();
        for (k, n) in &self.counts {
            let mut line = root_frames(&k.process, k.pid, &k.thread).join(";");
            for f in &k.frames {
                line.push(';');
                line.push_str(&clean(f));
            }
            *lines.entry(line).or_default() += n;
        }
        lines.into_iter().collect()
    }

    /// Everything counted, as a Sample's profile, and start again from nothing. With
    /// lines kept (`add_located`), a stack whose frames sit at different lines is one
    /// ProfileStack per set of lines, each with its own count.
    pub fn take_sample(&mut self, hz: u64) -> ProfileSample {
        let located = std::mem::take(&mut self.located);
        let counts = std::mem::take(&mut self.counts);
        let with_lines: u64 = located.values().sum();
        let mut stacks: Vec<ProfileStack> = if !located.is_empty() && with_lines == self.total {
            located
                .into_iter()
                .map(|(k, count)| ProfileStack {
                    pid: k.pid,
                    process: k.process,
                    thread: k.thread,
                    frames: k
                        .locations
                        .iter()
                        .flat_map(|l| l.iter().rev().map(|f| f.name.clone()))
                        .collect(),
                    lines: located::frame_lines(&k.locations),
                    count,
                })
                .collect()
        } else {
            counts
                .into_iter()
                .map(|(k, count)| ProfileStack {
                    pid: k.pid,
                    process: k.process,
                    thread: k.thread,
                    frames: k.frames,
                    lines: Vec::new(),
                    count,
                })
                .collect()
        };
        self.total = 0;
        stacks.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| (a.pid, &a.thread, &a.frames).cmp(&(b.pid, &b.thread, &b.frames)))
                .then_with(|| {
                    a.lines
                        .iter()
                        .map(|l| (&l.file, l.line, l.inlined))
                        .cmp(b.lines.iter().map(|l| (&l.file, l.line, l.inlined)))
                })
        });
        ProfileSample {
            hz,
            stacks,
            lost: 0,
            lost_kstacks: 0,
            off_cpu: false,
            off_waits: None,
            off_waits_kept: None,
        }
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

    /// A Sample keeps each frame's line (inlined calls marked), and a Frame made from it
    /// gives pprof the same located stacks as the profiler's own FoldedProfile; it
    /// survives the recording's JSON.
    #[test]
    fn samples_keep_the_lines_a_frame_gives_pprof() {
        use std::sync::Arc;
        let at = |fs: &[(&str, u32)]| -> located::Location {
            fs.iter()
                .map(|&(n, l)| located::SrcFrame {
                    name: n.into(),
                    file: if l > 0 {
                        "/src/db.c".into()
                    } else {
                        String::new()
                    },
                    line: l,
                })
                .collect::<Vec<_>>()
                .into()
        };
        // run inlined into main (innermost first), then spin at two lines, then a
        // kernel frame with no line.
        let stack = |line: u32| LocatedStack {
            pid: 7,
            process: "db".into(),
            thread: "worker-1".into(),
            locations: vec![
                at(&[("run", 12), ("main", 3)]),
                at(&[("spin", line)]),
                Arc::new([located::SrcFrame::named("do_syscall_64_[k]")]),
            ],
        };
        let names = ["main", "run", "spin", "do_syscall_64_[k]"];
        let mut p = FoldedProfile::default();
        for (line, n) in [(20, 3), (21, 2)] {
            p.add(key(7, "worker-1", &names), n);
            p.add_located(stack(line), n);
        }
        let want = p.located_stacks();
        let sample = p.take_sample(99);
        assert_eq!(sample.stacks.len(), 2, "one per set of lines");
        assert_eq!(sample.stacks[0].count, 3);
        assert_eq!(sample.stacks[0].frames, names);
        let inl: Vec<bool> = sample.stacks[0].lines.iter().map(|l| l.inlined).collect();
        assert_eq!(inl, [false, true, false, false]);
        let json = serde_json::to_string(&sample).unwrap();
        let back: ProfileSample = serde_json::from_str(&json).unwrap();
        let f = ProfileFrame::of(&back);
        assert_eq!(f.located, want);
        assert_eq!(f.all.len(), 1, "one folded line");
        assert_eq!(f.all[0].count, 5);
        // A Sample without lines (recorded before they were kept) reads, with none.
        let old = json.replace(",\"lines\":", ",\"x\":");
        let old: ProfileSample = serde_json::from_str(&old).unwrap();
        assert!(ProfileFrame::of(&old).located.is_empty());
        assert_eq!(ProfileFrame::of(&old).all, f.all);
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

    #[test]
    fn a_frame_lists_the_biggest_stacks_and_counts_the_rest() {
        let mut p = FoldedProfile::default();
        for i in 0..(FRAME_STACKS as u64 + 10) {
            p.add(key(7, "db", &["main", &format!("f{i}")]), i + 1);
        }
        let s = p.take_sample(99);
        assert!(
            p.is_empty() && p.total() == 0,
            "taken: counting starts again"
        );
        assert_eq!(s.samples(), (1..=60).sum::<u64>());
        assert_eq!(s.stacks[0].count, 60, "biggest first");
        let f = ProfileFrame::of(&s);
        assert_eq!(f.stacks.len(), FRAME_STACKS);
        assert_eq!(f.stacks[0].stack, "db-7;db;main;f59");
        assert_eq!(f.stacks[0].count, 60);
        assert_eq!((f.cut_stacks, f.cut_samples), (10, (1..=10).sum()));
        assert_eq!(f.samples, s.samples());
        // A Sample's profile survives a recording (JSON) unchanged.
        let back: ProfileSample = serde_json::from_slice(&serde_json::to_vec(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
}
