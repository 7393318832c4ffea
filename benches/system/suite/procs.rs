//! Running things to measure: the ttop binary (in a pseudo-terminal for the real
//! dashboard, or --json), top, and the C workloads; and reading what a process cost
//! (/proc/PID/stat user+sys, /proc/PID/status VmHWM).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use crate::common::{parse_kv, ttop_bin, wait_timeout};

/// Compile tests/workloads/NAME.c once per run and return the binary.
pub fn workload_bin(name: &str) -> PathBuf {
    crate::common::workload(name)
}

/// USER_HZ.
pub fn clk_tck() -> f64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64
}

/// User+system CPU seconds of a whole process (all its threads, dead ones included).
pub fn cpu_secs(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    // After "pid (comm) ": field 3 is state (index 0), utime is field 14 (index 11).
    let ut: u64 = f.get(11)?.parse().ok()?;
    let st: u64 = f.get(12)?.parse().ok()?;
    Some((ut + st) as f64 / clk_tck())
}

/// Wait for a child to exit (SIGKILL after `limit`) and return the user+sys CPU seconds
/// it used, from wait4 (microsecond resolution). The child is reaped here: do not wait
/// on it again.
pub fn reap_cpu(child: &mut Child, limit: Duration) -> Option<f64> {
    let pid = child.id() as i32;
    let t0 = Instant::now();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let mut killed = false;
    loop {
        let mut status = 0;
        // SAFETY: rusage is plain data; wait4 fills it in.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waiting on our own child with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            return Some(tv(ru.ru_utime) + tv(ru.ru_stime));
        }
        if r < 0 {
            return None;
        }
        if !killed && t0.elapsed() > limit {
            // SAFETY: kill on our own, not yet reaped child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A line of /proc/PID/status in kB (VmHWM, VmRSS).
pub fn status_kb(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// SIGTERM, then wait up to `limit` (SIGKILL after). Returns whether it exited by itself.
pub fn terminate(child: &mut Child, limit: Duration) -> bool {
    // SAFETY: kill on a pid we own and have not reaped yet.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    wait_timeout(child, limit)
}

/// The dashboard in a pseudo-terminal of a fixed size, its output drained (and
/// searched for the first complete screen) on a thread.
pub struct Tui {
    pub child: Child,
    pub started: Instant,
    first_screen: Arc<Mutex<Option<Instant>>>,
    reader: Option<JoinHandle<()>>,
}

/// The title of the process table: on screen only once a Sample has been drawn.
const SCREEN_MARK: &[u8] = b" Processes ";

impl Tui {
    pub fn spawn(args: &[&str], cols: u16, rows: u16) -> Tui {
        Self::spawn_bin(&ttop_bin(), args, cols, rows)
    }

    /// The same with another build of ttop (the "before" of a before/after run).
    pub fn spawn_bin(bin: &std::path::Path, args: &[&str], cols: u16, rows: u16) -> Tui {
        let ws = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let (mut m, mut s) = (-1, -1);
        // SAFETY: openpty writes two fds; the name and termios pointers may be null.
        let rc =
            unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), &ws) };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both fds were just returned by openpty and are owned here.
        let (master, slave) = unsafe { (File::from_raw_fd(m), OwnedFd::from_raw_fd(s)) };
        // A settings directory of its own for each dashboard: one that switched views
        // (item 4 opens the profile view) would otherwise save it in root's
        // ~/.config/ttop/ and every later dashboard would open there.
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let config_home =
            std::env::temp_dir().join(format!("ttop-bench-config-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&config_home);
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .env("TERM", "xterm-256color")
            .env("XDG_CONFIG_HOME", &config_home)
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: setsid and ioctl are async-signal-safe; they make the pty the child's
        // controlling terminal, as a login shell would.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                libc::ioctl(0, libc::TIOCSCTTY, 0);
                Ok(())
            });
        }
        let started = Instant::now();
        let child = cmd.spawn().expect("spawn ttop in a pty");
        drop(cmd); // closes our copies of the slave side
        let first_screen = Arc::new(Mutex::new(None));
        let fs = first_screen.clone();
        let reader = std::thread::spawn(move || {
            let mut master = master;
            let mut buf = vec![0u8; 65536];
            let mut tail: Vec<u8> = Vec::new();
            loop {
                match master.read(&mut buf) {
                    Ok(0) | Err(_) => break, // EIO once the child is gone
                    Ok(n) => {
                        let mut f = fs.lock().unwrap();
                        if f.is_none() {
                            tail.extend_from_slice(&buf[..n]);
                            if tail.windows(SCREEN_MARK.len()).any(|w| w == SCREEN_MARK) {
                                *f = Some(Instant::now());
                                tail.clear();
                            } else if tail.len() > 64 {
                                tail.drain(..tail.len() - 64);
                            }
                        }
                    }
                }
            }
        });
        Tui {
            child,
            started,
            first_screen,
            reader: Some(reader),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Time from spawn to the first screen with the process table, waiting up to `limit`.
    pub fn wait_first_screen(&self, limit: Duration) -> Option<Duration> {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if let Some(t) = *self.first_screen.lock().unwrap() {
                return Some(t - self.started);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        None
    }

    /// SIGTERM (ttop restores the terminal and exits); true when it exited cleanly.
    pub fn stop(mut self) -> bool {
        let ok = terminate(&mut self.child, Duration::from_secs(10));
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        ok
    }
}

/// Any command in the background, stdout and stderr to /dev/null (top -b, ttop --json).
pub fn spawn_quiet(bin: &Path, args: &[&str]) -> Child {
    spawn_quiet_env(bin, args, &[])
}

/// The same, with these environment variables set.
pub fn spawn_quiet_env(bin: &Path, args: &[&str], env: &[(&str, &str)]) -> Child {
    Command::new(bin)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()))
}

pub fn top_bin() -> PathBuf {
    PathBuf::from("top")
}

/// A workload whose stdout lines arrive on a channel (and are kept for parse_kv).
pub struct Workload {
    pub child: Child,
    pub pid: u32,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Workload {
    pub fn spawn(name: &str, args: &[String]) -> Workload {
        let mut child = Command::new(workload_bin(name))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn workload {name}: {e}"));
        let out = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let pid = child.id();
        Workload {
            child,
            pid,
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// Wait for a line starting with `prefix` (e.g. "started="); false on timeout or exit.
    pub fn wait_for(&mut self, prefix: &str, limit: Duration) -> bool {
        if self.seen.iter().any(|l| l.starts_with(prefix)) {
            return true;
        }
        let t0 = Instant::now();
        while let Some(left) = limit.checked_sub(t0.elapsed()) {
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    let hit = l.starts_with(prefix);
                    self.seen.push(l);
                    if hit {
                        return true;
                    }
                }
                Err(_) => return false,
            }
        }
        false
    }

    /// Stop it now (SIGKILL) and reap it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Wait for it to exit (killed after `limit`) and return every key=value it printed,
    /// and the user+sys CPU seconds it used (from wait4).
    pub fn finish(mut self, limit: Duration) -> (HashMap<String, String>, Option<f64>) {
        let cpu = reap_cpu(&mut self.child, limit);
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(500)) {
            self.seen.push(l);
        }
        (parse_kv(&self.seen.join("\n")), cpu)
    }
}

pub fn kv_f64(kv: &HashMap<String, String>, key: &str) -> f64 {
    kv.get(key).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
}

/// ttop --json in the background with its stdout collected on a thread.
pub struct JsonTtop {
    pub child: Child,
    out: Option<JoinHandle<String>>,
}

impl JsonTtop {
    pub fn spawn(args: &[&str]) -> JsonTtop {
        Self::spawn_env(args, &[])
    }

    pub fn spawn_env(args: &[&str], env: &[(&str, &str)]) -> JsonTtop {
        let mut child = Command::new(ttop_bin())
            .arg("--json")
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ttop --json");
        let mut stdout = child.stdout.take().unwrap();
        let out = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stdout.read_to_string(&mut s);
            s
        });
        JsonTtop {
            child,
            out: Some(out),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM and every frame it printed.
    pub fn stop(mut self) -> Vec<serde_json::Value> {
        terminate(&mut self.child, Duration::from_secs(10));
        let text = self.out.take().unwrap().join().unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// Median of a non-empty list (NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// A storm items 2 and 3 run under each monitor: a C workload that prints its rate and
/// its count of units of work.
pub struct Storm {
    pub key: &'static str,
    pub label: String,
    pub bin: &'static str,
    pub args: Vec<String>,
    /// The workload's count of units of work done (a key it prints), and the unit's name.
    pub units: &'static str,
    pub unit: &'static str,
}

/// The thread-churn and mutex storms, each run for `secs_each`.
pub fn storms(secs_each: f64) -> Vec<Storm> {
    vec![
        Storm {
            key: "churn",
            label: "thread churn (4 threads at a time, 100 µs of work each)".into(),
            bin: "bench_churn",
            args: vec![format!("{secs_each}"), "4".into(), "100".into()],
            units: "created",
            unit: "thread",
        },
        Storm {
            key: "mutex",
            label: "mutex storm (4 threads, one pthread mutex)".into(),
            bin: "bench_mutex",
            args: vec!["4".into(), format!("{secs_each}")],
            units: "ops",
            unit: "operation",
        },
    ]
}
