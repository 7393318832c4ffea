//! Checking what -p and --comm name: the kernel's cut of a name, notes on it, and
//! thread IDs refused as process IDs.

/// The longest name the kernel keeps for a task (TASK_COMM_LEN 16, with its NUL).
pub const COMM_LEN: usize = 15;

/// `name` as /proc/PID/comm shows it: cut to 15 bytes (on a character boundary).
pub fn kernel_comm(name: &str) -> &str {
    let mut end = name.len().min(COMM_LEN);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// What to tell a person about a `--comm NAME` before watching starts: a name the kernel
/// cuts, and a name no process has now (`running`: how many processes have the name as
/// the kernel keeps it).
pub fn comm_notes(name: &str, running: usize) -> Vec<String> {
    let kept = kernel_comm(name);
    let mut notes = Vec::new();
    if kept != name {
        notes.push(format!(
            "--comm {name}: the kernel keeps {COMM_LEN} characters of a name, so processes \
             named '{kept}' are watched"
        ));
    }
    if running == 0 {
        notes.push(format!(
            "--comm {kept}: no process has this name now (names as in /proc/PID/comm, \
             e.g. `ps -eo comm`); one that starts later is watched"
        ));
    }
    notes
}

/// -p takes process IDs: a thread's ID (its `Tgid` is another) is refused, naming its
/// process. `tgid_of` reads a task's process ID and name (None: no such task).
pub fn check_processes(
    pids: &[u32],
    tgid_of: impl Fn(u32) -> Option<(u32, String)>,
) -> Result<(), String> {
    for &pid in pids {
        if let Some((tgid, name)) = tgid_of(pid)
            && tgid != pid
        {
            return Err(format!(
                "{pid} is a thread of process {tgid} ({name}), not a process: -p takes \
                 process IDs (-p {tgid}; Enter on it in the dashboard shows its threads)"
            ));
        }
    }
    Ok(())
}

/// A task's process ID and its process's name, from /proc/PID/status (a thread's ID
/// works there too, though /proc does not list it).
pub fn tgid_of(pid: u32) -> Option<(u32, String)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let tgid = status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()?;
    let name = std::fs::read_to_string(format!("/proc/{tgid}/comm")).unwrap_or_default();
    Some((tgid, name.trim_end().to_string()))
}
