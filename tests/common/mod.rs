//! Shared by the integration tests: root/eBPF gating, building the C helper workloads,
//! running the ttop binary, and one lock so kernel-facing tests never overlap.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

pub mod bpftrace;
pub mod cgroup;
pub mod locks;
pub mod profile;
pub mod runnable;
pub mod scrape;
pub mod screen;
pub mod stream;
pub mod vm;
pub mod watch;

static KERNEL: RwLock<()> = RwLock::new(());

/// Serialise tests that load eBPF or measure the machine (one test binary at a time runs
/// anyway; this covers the tests inside one binary).
pub fn kernel_lock() -> RwLockWriteGuard<'static, ()> {
    KERNEL.write().unwrap_or_else(|e| e.into_inner())
}

/// Shared with the other holders of this one, never with `kernel_lock`: for QEMU guests,
/// which measure their own kernel on their own (single-threaded TCG) host thread, so two
/// may run side by side, but never beside a test that measures this machine.
pub fn kernel_lock_shared() -> RwLockReadGuard<'static, ()> {
    KERNEL.read().unwrap_or_else(|e| e.into_inner())
}

pub fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// True when the test may use eBPF. Without root it prints why it skips; under CI=true
/// (which runs as root) a missing capability is a failure, never a skip.
pub fn require_root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        return true;
    }
    if is_ci() {
        panic!("{test}: CI=true but not running as root: kernel tests must run, not skip");
    }
    eprintln!("SKIPPED {test}: needs root for eBPF (run `sudo -E cargo test --release`)");
    false
}

pub fn ttop_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ttop"))
}

/// Compile tests/workloads/NAME.c (or NAME.cpp, with c++) once per test run and return
/// the binary's path.
pub fn workload(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads");
    let cpp = dir.join(format!("{name}.cpp"));
    let (src, cc) = if cpp.exists() {
        (cpp, "c++")
    } else {
        (dir.join(format!("{name}.c")), "cc")
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("workloads");
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join(name);
    // The source and the headers it may include (storm.h) from the same directory.
    let newest_src = std::fs::read_dir(src.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p == &src || p.extension().is_some_and(|x| x == "h"))
        .filter_map(|p| std::fs::metadata(p).ok()?.modified().ok())
        .max();
    let fresh = match (std::fs::metadata(&bin), newest_src) {
        (Ok(b), Some(s)) => b.modified().unwrap() >= s,
        _ => false,
    };
    if !fresh {
        let out = Command::new(cc)
            .args(["-O2", "-g", "-pthread", "-Wall", "-o"])
            .arg(&bin)
            .arg(&src)
            .output()
            .unwrap_or_else(|e| panic!("run {cc} (apt-get install gcc g++): {e}"));
        assert!(
            out.status.success(),
            "{cc} {}: {}",
            src.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    bin
}

/// Start a workload; its stdout is piped so the test can read what it counted.
pub fn spawn_workload(name: &str, args: &[&str]) -> Child {
    Command::new(workload(name))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn workload")
}

/// Read `key=value` pairs that a workload printed on stdout.
pub fn parse_kv(text: &str) -> std::collections::HashMap<String, String> {
    text.split_whitespace()
        .filter_map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// The arguments of a live ttop as the kernel tests run it: with no ceiling on its own
/// BPF cost (`--bpf-budget off`, in front) unless the test gives a budget. The ceiling
/// (on by default, at 3% of a CPU) samples kernel-lock stacks and stops futex user stack
/// walks under a storm, and when it does depends on how fast this machine runs the
/// programs (a TCG guest runs them many times slower): the tests that compare callers,
/// stacks and walks would then compare that. tests/kernel_cost_ceiling.rs tests the
/// ceiling itself, with the default. Subcommands that collect nothing keep their args.
pub fn live_args<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let quiet = ["replay", "probe", "profile", "completions", "man", "help"];
    if args.contains(&"--bpf-budget") || args.first().is_some_and(|a| quiet.contains(a)) {
        return args.to_vec();
    }
    let mut v = vec!["--bpf-budget", "off"];
    v.extend_from_slice(args);
    v
}

/// Run `ttop ARGS` to completion (as a kernel test runs it: `live_args`) and parse every
/// stdout line as JSON.
pub fn ttop_json(args: &[&str]) -> Vec<serde_json::Value> {
    ttop_json_as_given(&live_args(args))
}

/// ttop_json with exactly these arguments: ttop's defaults, the ceiling included.
pub fn ttop_json_as_given(args: &[&str]) -> Vec<serde_json::Value> {
    let out = Command::new(ttop_bin())
        .args(args)
        .output()
        .expect("run ttop");
    assert!(
        out.status.success(),
        "ttop {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// A ttop running in the background whose stdout is drained on a thread (a JSON frame can
/// be larger than a pipe buffer, so an unread pipe would stall it).
pub struct Bg {
    pub child: Child,
    out: Option<std::thread::JoinHandle<String>>,
}

impl Bg {
    /// Wait for it to exit (killing it after `limit`) and return all it printed.
    pub fn finish(mut self, limit: Duration) -> String {
        assert!(
            wait_timeout(&mut self.child, limit),
            "ttop did not finish within {limit:?}"
        );
        self.out.take().unwrap().join().unwrap()
    }

    /// finish(), each line parsed as JSON.
    pub fn frames(self, limit: Duration) -> Vec<serde_json::Value> {
        self.finish(limit)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
            .collect()
    }
}

/// Start `ttop ARGS` in the background.
pub fn ttop_spawn(args: &[&str]) -> Bg {
    ttop_spawn_env(args, &[])
}

/// ttop_spawn with extra environment variables.
pub fn ttop_spawn_env(args: &[&str], env: &[(&str, &str)]) -> Bg {
    let mut child = Command::new(ttop_bin())
        .args(live_args(args))
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn ttop");
    let mut stdout = child.stdout.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).unwrap();
        s
    });
    Bg {
        child,
        out: Some(out),
    }
}

/// Wait for a child with a deadline; kill it if it overstays.
pub fn wait_timeout(child: &mut Child, limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Ok(Some(_)) = child.try_wait() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}

/// Stop a workload meant to outlast ttop's frames (started to run far longer, so a slow
/// start of ttop on a loaded machine cannot end it first): it must still be running, or
/// the frames saw less of it than the test assumes. Then kill and reap it.
pub fn stop_running(child: &mut Child, what: &str) {
    stop_all_running(&mut [(child, what)]);
}

/// `stop_running` for several workloads: every one is stopped before any assertion, so
/// a failed one leaves none running into the next test.
pub fn stop_all_running(children: &mut [(&mut Child, &str)]) {
    let ran: Vec<bool> = children
        .iter_mut()
        .map(|(c, _)| matches!(c.try_wait(), Ok(None)))
        .collect();
    let reaped: Vec<bool> = children
        .iter_mut()
        .map(|(c, _)| {
            let _ = c.kill();
            wait_timeout(c, Duration::from_secs(30))
        })
        .collect();
    for (((_, what), ran), reaped) in children.iter().zip(ran).zip(reaped) {
        assert!(reaped, "{what} hung");
        assert!(ran, "{what} ended before ttop's last frame");
    }
}

/// The median (the mean of the middle two for an even count; NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Assert |got - want| <= tol * want, with a message that shows both.
pub fn assert_within(what: &str, got: f64, want: f64, tol: f64) {
    let err = (got - want).abs();
    assert!(
        err <= tol * want.abs().max(1e-9),
        "{what}: got {got:.3}, expected {want:.3} within {:.0}% (off by {:.1}%)",
        tol * 100.0,
        100.0 * err / want.abs().max(1e-9)
    );
}

/// The sum over all of `pid`'s threads of the named counters in
/// /proc/PID/task/TID/status (e.g. "voluntary_ctxt_switches"): what the kernel itself
/// counted for that process.
pub fn task_status_sum(pid: u32, fields: &[&str]) -> u64 {
    let mut n = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        for l in status.lines() {
            if let Some((k, v)) = l.split_once(':')
                && fields.contains(&k)
            {
                n += v.trim().parse::<u64>().unwrap();
            }
        }
    }
    n
}

/// A free TCP port on 127.0.0.1 (bound and released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child killed (and reaped) when it goes out of scope, also when an assertion ends
/// the test first: nothing is left running or listening.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The Go toolchain: `go` on PATH, else where the official tarball installs it.
pub fn go_bin() -> Option<PathBuf> {
    let on_path = Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if on_path {
        return Some("go".into());
    }
    let local = PathBuf::from("/usr/local/go/bin/go");
    local.exists().then_some(local)
}
