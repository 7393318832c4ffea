//! Real cgroups (v2) for the tests: a parent made for the test under the cgroup2 mount,
//! with the controllers the test needs enabled for its children, and children with
//! limits that workloads are moved into. Dropping one kills what is in it and removes it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The cgroup2 mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host).
pub fn mount() -> Option<PathBuf> {
    let mi = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mi.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2")
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
    })
}

pub struct Cg {
    pub dir: PathBuf,
    /// The path below the mount, as ttop names it ("/ttop-test-1234/thr").
    pub rel: String,
}

fn write(path: &Path, v: &str) {
    std::fs::write(path, v).unwrap_or_else(|e| panic!("write {v:?} to {}: {e}", path.display()));
}

impl Cg {
    /// A parent cgroup for `test` whose children have `controllers`, or None (with the
    /// reason printed; a failure under CI) when this host cannot give them: no cgroup2
    /// mount, or a controller bound to a cgroup v1 hierarchy.
    pub fn parent(test: &str, controllers: &[&str]) -> Option<Cg> {
        // On a host without the controllers in v2 (a hybrid hierarchy, as this
        // project's CI machine has) the same tests run in a Debian 6.12 guest, by
        // kernel_cgroup::under_qemu_with_every_controller; there (TTOP_VM) and on a
        // host that has cgroup v2, CI=true must run them.
        let skip = |why: String| {
            if super::is_ci() && std::env::var_os("TTOP_VM").is_some() {
                panic!("{test}: {why}: CI=true must run it");
            }
            eprintln!(
                "SKIPPED {test} on this host: {why}; it runs under QEMU in \
                 kernel_cgroup::under_qemu_with_every_controller"
            );
            None
        };
        let Some(m) = mount() else {
            return skip("no cgroup2 hierarchy is mounted".into());
        };
        let have = std::fs::read_to_string(m.join("cgroup.controllers")).unwrap_or_default();
        let missing: Vec<&str> = controllers
            .iter()
            .copied()
            .filter(|c| !have.split_whitespace().any(|h| h == *c))
            .collect();
        if !missing.is_empty() {
            return skip(format!(
                "the {} controller(s) are not available in cgroup v2 at {} (bound to a v1 \
                 hierarchy: see /proc/cgroups; boot with systemd.unified_cgroup_hierarchy=1)",
                missing.join(", "),
                m.display()
            ));
        }
        let enable: String = controllers.iter().map(|c| format!("+{c} ")).collect();
        if !controllers.is_empty() {
            write(&m.join("cgroup.subtree_control"), enable.trim());
        }
        let name = format!("ttop-test-{}-{test}", std::process::id());
        let cg = Cg::make(&m, &format!("/{name}"));
        if !controllers.is_empty() {
            write(&cg.dir.join("cgroup.subtree_control"), enable.trim());
        }
        Some(cg)
    }

    fn make(mount: &Path, rel: &str) -> Cg {
        let dir = mount.join(rel.trim_start_matches('/'));
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        Cg {
            dir,
            rel: rel.to_string(),
        }
    }

    /// A child of this cgroup.
    pub fn child(&self, name: &str) -> Cg {
        let mount = mount().unwrap();
        Cg::make(&mount, &format!("{}/{name}", self.rel))
    }

    pub fn set(&self, file: &str, v: &str) {
        write(&self.dir.join(file), v);
    }

    pub fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.dir.join(file)).unwrap()
    }

    /// A `key value` figure of cpu.stat (or memory.events, ...).
    pub fn stat(&self, file: &str, key: &str) -> u64 {
        self.read(file)
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{key} not in {file}"))
    }

    /// Move process `pid` (all its threads) into this cgroup.
    pub fn add(&self, pid: u32) {
        self.set("cgroup.procs", &pid.to_string());
    }

    /// Freeze (or thaw) everything in it and wait until the kernel says it is done.
    pub fn freeze(&self, on: bool) {
        self.set("cgroup.freeze", if on { "1" } else { "0" });
        let want = format!("frozen {}", u8::from(on));
        let t = Instant::now();
        while !self.read("cgroup.events").lines().any(|l| l == want) {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "{} never {want}",
                self.rel
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Cg {
    fn drop(&mut self) {
        // Children are dropped before their parent (declared after it in the test). Kill
        // what is left, wait until the kernel says the cgroup is empty, then remove it.
        let _ = std::fs::write(self.dir.join("cgroup.freeze"), "0");
        let _ = std::fs::write(self.dir.join("cgroup.kill"), "1");
        let t = Instant::now();
        while std::fs::read_to_string(self.dir.join("cgroup.events"))
            .is_ok_and(|e| e.lines().any(|l| l == "populated 1"))
            && t.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            eprintln!("could not remove {}: {e}", self.dir.display());
        }
    }
}
