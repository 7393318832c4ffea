//! The kernel matrix: Debian's own kernels booted under QEMU (TCG: KVM hangs the guest on
//! this kind of VM) with the host's root file system shared read-only over virtio-9p and a
//! tmpfs overlay on it (tests/vm/init), so a test binary built here runs there unchanged.
//! Kernels and their initramfs come from tests/vm/fetch-kernels.sh (run by .ci/deps),
//! cached outside the repository.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One kernel of the matrix, ready to boot.
pub struct Kernel {
    /// "5.10", "6.1", "6.12".
    pub series: &'static str,
    /// The package's release, e.g. "6.1.0-56-amd64".
    pub release: String,
    dir: PathBuf,
}

pub fn cache_dir() -> PathBuf {
    std::env::var_os("TTOP_KERNEL_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/ttop-kernels"))
}

/// The kernel of `series`, fetching it if it is not cached yet. None (with the reason
/// printed) when it cannot be had; under CI=true that is a failure, never a skip.
pub fn kernel(series: &'static str) -> Option<Kernel> {
    let dir = cache_dir().join(series);
    let ready = |d: &Path| {
        ["vmlinuz", "initrd.gz", "release"]
            .iter()
            .all(|f| d.join(f).exists())
    };
    if !ready(&dir) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vm/fetch-kernels.sh");
        let st = Command::new("bash").arg(&script).status();
        eprintln!("kernel matrix: {} exited {st:?}", script.display());
    }
    let missing = |why: String| {
        if super::is_ci() {
            panic!("kernel matrix {series}: {why}: CI=true runs the matrix, never skips it");
        }
        eprintln!("SKIPPED kernel matrix {series}: {why}");
        None
    };
    if !cfg!(target_arch = "x86_64") {
        return missing("the matrix boots x86_64 kernels only".into());
    }
    if Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .is_err()
    {
        return missing("qemu-system-x86_64 is not installed (bash .ci/deps)".into());
    }
    if !ready(&dir) {
        return missing(format!(
            "no kernel in {} (tests/vm/fetch-kernels.sh could not fetch it)",
            dir.display()
        ));
    }
    let release = std::fs::read_to_string(dir.join("release"))
        .unwrap_or_default()
        .trim()
        .to_string();
    Some(Kernel {
        series,
        release,
        dir,
    })
}

/// What a boot produced.
pub struct Boot {
    /// The serial console (kernel messages and the init's lines).
    pub console: String,
    /// The files the guest wrote into /out (the host directory `out`).
    pub out: PathBuf,
    /// run.sh's exit status, as the guest wrote it (None: it never got there).
    pub rc: Option<i32>,
    pub secs: f64,
}

impl Boot {
    /// A file the guest wrote into /out.
    pub fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.out.join(name)).unwrap_or_default()
    }
}

/// Boot `k` with 2 CPUs and run `script` (sh, in the chroot of the host's root) there;
/// `script` may write results to /out. Killed after `limit`.
pub fn boot(k: &Kernel, script: &str, limit: Duration) -> Boot {
    boot_in(k, k.series, script, limit)
}

/// [`boot`], with the guest's files in a directory of its own name: guests that run at
/// once, even of one kernel, each have theirs.
pub fn boot_in(k: &Kernel, name: &str, script: &str, limit: Duration) -> Boot {
    // Emptied first.
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("vm").join(name);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("run.sh"), format!("{script}\necho $? > /out/rc\n")).unwrap();
    let initrd = with_current_init(&k.dir.join("initrd.gz"), &out);
    let t0 = Instant::now();
    let mut child = Command::new("qemu-system-x86_64")
        .args([
            "-accel",
            "tcg,thread=single",
            "-cpu",
            "max",
            "-smp",
            "2",
            "-m",
            "2048",
        ])
        .args(["-nographic", "-no-reboot", "-net", "none"])
        .arg("-kernel")
        .arg(k.dir.join("vmlinuz"))
        .arg("-initrd")
        .arg(&initrd)
        .args([
            "-append",
            // Warnings and worse (a soft lockup, an RCU stall) reach the console.
            // psi=1: Debian builds PSI in but off by default (the cgroup tests read it).
            "console=ttyS0 panic=-1 quiet loglevel=4 psi=1",
            "-virtfs",
            "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
            "-virtfs",
        ])
        .arg(format!(
            "local,path={},mount_tag=out,security_model=none",
            out.display()
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start qemu-system-x86_64");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut b);
        String::from_utf8_lossy(&b).into_owned()
    });
    let finished = super::wait_timeout(&mut child, limit);
    let mut console = reader.join().unwrap_or_default();
    if !finished {
        console.push_str(&format!("\n[killed after {limit:?}]\n"));
    }
    let rc = std::fs::read_to_string(out.join("rc"))
        .ok()
        .and_then(|s| s.trim().parse().ok());
    Boot {
        console,
        out,
        rc,
        secs: t0.elapsed().as_secs_f64(),
    }
}

/// The cached initramfs (busybox and the kernel's modules, made when the kernel was
/// fetched) followed by a second archive holding this checkout's tests/vm/init: the
/// kernel unpacks both in order, so the init that runs is always the current one, not
/// the one of the day the kernel was cached.
fn with_current_init(base: &Path, out: &Path) -> PathBuf {
    let dir = out.join("init-cpio");
    std::fs::create_dir_all(&dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vm/init");
    std::fs::copy(&src, dir.join("init")).unwrap();
    let cpio = Command::new("sh")
        .arg("-c")
        .arg("chmod 755 init && echo init | cpio -o -H newc --quiet | gzip -1")
        .current_dir(&dir)
        .output()
        .expect("cpio (apt-get install cpio)");
    assert!(
        cpio.status.success() && !cpio.stdout.is_empty(),
        "cpio of tests/vm/init failed"
    );
    let mut all = std::fs::read(base).unwrap_or_else(|e| panic!("{}: {e}", base.display()));
    all.extend_from_slice(&cpio.stdout);
    let path = out.join("initrd.gz");
    std::fs::write(&path, all).unwrap();
    path
}
