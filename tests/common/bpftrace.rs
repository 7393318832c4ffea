//! bpftrace as an independent reference: a script that counts what ttop counts, from the
//! same tracepoints but with none of ttop's code, run beside it over the same seconds.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

use super::*;

/// Whether bpftrace can be used: installed (`.ci/deps` installs it), else the test is
/// skipped, never under CI.
pub fn require_bpftrace(test: &str) -> bool {
    let ok = Command::new("bpftrace")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            !is_ci(),
            "{test}: CI=true but bpftrace is missing (.ci/deps installs it)"
        );
        eprintln!("SKIPPED {test}: needs bpftrace as its reference (apt-get install bpftrace)");
    }
    ok
}

/// A running bpftrace script; its maps are printed when it stops.
pub struct Bpftrace {
    child: Child,
    out: std::thread::JoinHandle<String>,
}

impl Bpftrace {
    /// Start `script` and return once its probes are attached (its BEGIN block, which
    /// bpftrace runs after attaching every probe, prints a mark).
    pub fn start(script: &str) -> Self {
        // Classic tracepoints need tracefs mounted; ttop's own helper mounts it.
        ttop::collect::bpf::tracefs::root().expect("tracefs for bpftrace");
        let script = format!("BEGIN {{ printf(\"ttop-ref-ready\\n\"); }}\n{script}");
        let mut child = Command::new("bpftrace")
            .args(["-e", &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run bpftrace");
        let mut err = child.stderr.take().unwrap();
        let errs = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let (tx, rx) = channel();
        let stdout = child.stdout.take().unwrap();
        let out = std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains("ttop-ref-ready") {
                    let _ = tx.send(());
                }
                all.push_str(&line);
                all.push('\n');
            }
            all
        });
        if rx.recv_timeout(Duration::from_secs(60)).is_err() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bpftrace did not start: {}", errs.join().unwrap());
        }
        Self { child, out }
    }

    /// Stop it (SIGINT, as Ctrl-C) and return what it printed, its maps included.
    pub fn stop(mut self) -> String {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        assert!(
            wait_timeout(&mut self.child, Duration::from_secs(30)),
            "bpftrace did not stop"
        );
        self.out.join().unwrap()
    }
}

/// The entries of map `@name` as bpftrace prints them (`@name[KEY]: VALUE`), by key.
pub fn map(out: &str, name: &str) -> BTreeMap<String, u64> {
    let head = format!("@{name}[");
    out.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(&head)?;
            let (k, v) = rest.split_once("]: ")?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}
