//! A `ttop --json` read frame by frame, and the helpers the contention tests share to
//! read it and their workloads' `key=value` output.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::Value;

use super::*;

/// A ttop --json whose frames arrive line by line, so a test can start its workload
/// only once ttop has produced a frame (its probes are attached and it has a baseline).
pub struct Stream {
    child: Child,
    rx: Receiver<Value>,
    frames: Vec<Value>,
}

impl Stream {
    pub fn start(args: &[&str]) -> Self {
        Self::start_env(args, &[])
    }

    pub fn start_env(args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_under(&[], args, env)
    }

    /// ttop run under a wrapper command (`taskset -c 0 nice -n 19`), or directly when
    /// `wrap` is empty.
    pub fn start_under(wrap: &[&str], args: &[&str], env: &[(&str, &str)]) -> Self {
        let bin = ttop_bin();
        let mut cmd = match wrap.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(&bin);
                c
            }
            None => Command::new(&bin),
        };
        let mut child = cmd
            .args(super::live_args(args))
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn ttop");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(l) = line else { break };
                let v: Value =
                    serde_json::from_str(&l).unwrap_or_else(|e| panic!("bad JSON {l:?}: {e}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut s = Self {
            child,
            rx,
            frames: Vec::new(),
        };
        let first =
            s.rx.recv_timeout(Duration::from_secs(30))
                .expect("ttop printed no frame within 30 s");
        s.frames.push(first);
        s
    }

    /// The process running ttop (the wrapper's, which execs it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Every frame so far and `more` frames begun after this call, then stop ttop: once
    /// the workload is gone, its counts are final in every view.
    pub fn stop_after(mut self, more: usize) -> Vec<Value> {
        while let Ok(v) = self.rx.try_recv() {
            self.frames.push(v);
        }
        for _ in 0..more {
            let v = self
                .rx
                .recv_timeout(Duration::from_secs(30))
                .expect("ttop stopped printing frames");
            self.frames.push(v);
        }
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        assert!(
            wait_timeout(&mut self.child, Duration::from_secs(10)),
            "ttop did not exit"
        );
        self.frames
    }

    /// Every frame up to the end of the run (ttop stops after its -n COUNT).
    pub fn finish(mut self) -> Vec<Value> {
        while let Ok(v) = self.rx.recv_timeout(Duration::from_secs(30)) {
            self.frames.push(v);
        }
        assert!(
            wait_timeout(&mut self.child, Duration::from_secs(10)),
            "ttop did not exit"
        );
        self.frames
    }
}

/// The first line a workload prints (its pid and addresses), read while it runs.
pub fn first_line(
    child: &mut Child,
) -> (
    std::collections::HashMap<String, String>,
    BufReader<ChildStdout>,
) {
    let mut r = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    (parse_kv(&line), r)
}

pub fn rest(mut r: BufReader<ChildStdout>) -> std::collections::HashMap<String, String> {
    let mut s = String::new();
    r.read_to_string(&mut s).unwrap();
    parse_kv(&s)
}

pub fn num(m: &std::collections::HashMap<String, String>, k: &str) -> f64 {
    m.get(k)
        .unwrap_or_else(|| panic!("workload did not print {k}"))
        .parse()
        .unwrap()
}

pub fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

pub fn problems(frames: &[Value]) -> Vec<String> {
    frames[0]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap_or("").to_string())
        .collect()
}

/// The `procs` row of process `pid` in one frame; panics naming `what` when it is missing.
pub fn proc_row<'a>(frame: &'a Value, pid: u64, what: &str) -> &'a Value {
    frame["procs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"].as_u64() == Some(pid))
        .unwrap_or_else(|| panic!("no row for {what} {pid}"))
}
