//! Which cgroup (v2) a process is in, from /proc/PID/cgroup, read with the scan. The
//! paths are interned: the processes of one cgroup share one string, and a tick with
//! no new cgroup allocates nothing.

use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::Arc;

use crate::collect::cgroup::parse::proc_cgroup;
use crate::collect::procfs::files::read_at;

#[derive(Default)]
pub struct CgroupOf {
    names: foldhash::HashSet<Arc<str>>,
    buf: Vec<u8>,
    /// The host has no cgroup v2 line in /proc/PID/cgroup: stop asking.
    none: bool,
}

impl CgroupOf {
    /// The cgroup v2 path of the process whose /proc directory is `dir` (`name` is its
    /// "PID/cgroup" below it); empty when unknown.
    pub fn read(&mut self, dir: RawFd, name: &CStr) -> Arc<str> {
        if self.none || !read_at(dir, name, &mut self.buf) {
            return Arc::default();
        }
        let Some(path) = std::str::from_utf8(&self.buf)
            .ok()
            .and_then(proc_cgroup)
            .map(str::trim_end)
        else {
            // Readable but without a "0::" line: a cgroup v1-only host.
            self.none = true;
            return Arc::default();
        };
        if let Some(a) = self.names.get(path) {
            return a.clone();
        }
        // A cgroup removed long ago keeps its string: drop them all now and then.
        if self.names.len() > 4096 {
            self.names.clear();
        }
        let a: Arc<str> = path.into();
        self.names.insert(a.clone());
        a
    }
}
