//! The pane the dashboard runs in: a tmux session on a socket of its own, keys sent to
//! it and its screen read back; and the ttop command lines the tests start in it.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

/// One tmux server per session, on a socket of its own (`tmux -S`, removed on drop). With
/// the default socket, a session started right after the last one was killed could reach
/// the server while it was exiting ("server exited unexpectedly").
pub struct Tmux {
    pub name: String,
}

static SESSIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

pub fn socket(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("{name}.tmux"))
}

pub fn tmux(name: &str) -> Command {
    let mut c = Command::new("tmux");
    c.arg("-S").arg(socket(name));
    c
}

impl Tmux {
    pub fn start(cmd: &str, w: u16, h: u16) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            assert!(!is_ci(), "tmux missing under CI (.ci/deps installs it)");
            eprintln!("SKIPPED: tmux not installed");
            return None;
        }
        let n = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("ttop-test-{}-{n}", std::process::id());
        let ok = tmux(&name)
            .args([
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
            ])
            .arg(format!("{cmd}; echo TTOP-EXITED $?; sleep 30"))
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session failed");
        Some(Tmux { name })
    }

    /// An interactive shell (job control: Ctrl-Z and fg work as for a person) in a new
    /// session; `line` types commands into it.
    pub fn shell(w: u16, h: u16) -> Option<Tmux> {
        Tmux::start("exec bash --norc --noprofile -i", w, h)
    }

    /// Type a command line into the pane and press Enter.
    pub fn line(&self, text: &str) {
        tmux(&self.name)
            .args(["send-keys", "-t", &self.name, "-l", text])
            .status()
            .unwrap();
        self.keys(&["Enter"]);
    }

    pub fn screen(&self) -> String {
        let out = tmux(&self.name)
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        tmux(&self.name)
            .args(["send-keys", "-t", &self.name])
            .args(keys)
            .status()
            .unwrap();
    }

    /// Wait until the screen contains `what` (or fail with the screen).
    pub fn wait_for(&self, what: &str) -> String {
        let t0 = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(what) {
                return s;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(15),
                "waited for {what:?}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Wait until the screen no longer contains `what` (or fail with the screen).
    pub fn wait_without(&self, what: &str) -> String {
        let t0 = Instant::now();
        loop {
            let s = self.screen();
            if !s.contains(what) {
                return s;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(15),
                "waited for {what:?} to go; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A left click on the cell at (x, y), counted from 0: a press and a release, as a
    /// terminal in SGR mouse mode (1006) reports them.
    pub fn click(&self, x: usize, y: usize) {
        let (x, y) = (x + 1, y + 1);
        tmux(&self.name)
            .args(["send-keys", "-t", &self.name, "-l"])
            .arg(format!("\x1b[<0;{x};{y}M\x1b[<0;{x};{y}m"))
            .status()
            .unwrap();
    }

    /// Whether the program in the pane has asked for mouse reports (any mode).
    pub fn mouse_on(&self) -> bool {
        let out = tmux(&self.name)
            .args(["display", "-p", "-t", &self.name])
            .arg("#{mouse_any_flag}#{mouse_standard_flag}#{mouse_button_flag}#{mouse_sgr_flag}")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).contains('1')
    }

    /// Whether the program asked for every pointer motion (mode 1003).
    pub fn mouse_motion(&self) -> bool {
        let out = tmux(&self.name)
            .args(["display", "-p", "-t", &self.name, "#{mouse_all_flag}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    pub fn pane_pid(&self) -> u32 {
        let out = tmux(&self.name)
            .args(["list-panes", "-t", &self.name, "-F", "#{pane_pid}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = tmux(&self.name)
            .args(["kill-session", "-t", &self.name])
            .status();
        let _ = std::fs::remove_file(socket(&self.name));
    }
}

/// A settings file of this test's own (the dashboard writes the one in the home
/// directory when its settings change: the tests must neither read nor write it).
pub fn own_config() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tui-config");
    std::fs::create_dir_all(&dir).unwrap();
    let n = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!("{}-{n}.toml", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

pub fn ttop_cmd() -> String {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    format!(
        "{} --config {} {}",
        ttop_bin().display(),
        own_config().display(),
        if root { "" } else { "--no-bpf" }
    )
}

/// ttop without eBPF, for tests of keys and screens only (quick to start, and it loads
/// nothing into the kernel).
pub fn ttop_ui_cmd() -> String {
    format!(
        "{} --no-bpf --config {}",
        ttop_bin().display(),
        own_config().display()
    )
}

/// The ttop process started by the pane's shell.
pub fn ttop_pid(t: &Tmux) -> u32 {
    let shell = t.pane_pid();
    let out = Command::new("pgrep")
        .args(["-P", &shell.to_string(), "ttop"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .expect("ttop is running")
        .trim()
        .parse()
        .unwrap()
}
