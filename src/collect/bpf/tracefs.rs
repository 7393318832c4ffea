//! tracefs, which classic `tracepoint/` programs need (libbpf reads each event's id from
//! it). Found where libbpf looks for it, and mounted at /sys/kernel/tracing when it is
//! missing and we may (root), as the kernel documentation suggests.

use std::path::{Path, PathBuf};

/// libbpf uses the debugfs path whenever it exists, else /sys/kernel/tracing.
const DEBUGFS: &str = "/sys/kernel/debug/tracing";
const TRACEFS: &str = "/sys/kernel/tracing";

/// The tracefs root libbpf will use, mounting tracefs first if needed. Err: why there is
/// none, in words a user can act on.
pub fn root() -> Result<PathBuf, String> {
    let debugfs = Path::new(DEBUGFS);
    if debugfs.exists() {
        // An automount of tracefs: reading into it mounts it.
        return if debugfs.join("events").is_dir() {
            Ok(debugfs.to_path_buf())
        } else {
            Err(format!("{DEBUGFS} has no events directory"))
        };
    }
    let tracefs = Path::new(TRACEFS);
    if tracefs.join("events").is_dir() {
        return Ok(tracefs.to_path_buf());
    }
    if !tracefs.is_dir() {
        return Err(format!(
            "{TRACEFS} does not exist (no tracefs in this kernel?)"
        ));
    }
    mount_tracefs(TRACEFS)?;
    if tracefs.join("events").is_dir() {
        Ok(tracefs.to_path_buf())
    } else {
        Err(format!(
            "tracefs mounted at {TRACEFS} has no events directory"
        ))
    }
}

fn mount_tracefs(at: &str) -> Result<(), String> {
    let target = std::ffi::CString::new(at).expect("no NUL in a constant path");
    // SAFETY: NUL-terminated constant strings; a failure is reported through errno.
    let rc = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "tracefs is not mounted, and mounting it at {at} failed: {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// Does this kernel have the tracepoint `category:name`?
pub fn has_event(root: &Path, category: &str, name: &str) -> bool {
    root.join("events")
        .join(category)
        .join(name)
        .join("id")
        .exists()
}
