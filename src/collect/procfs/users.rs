//! User names by uid, from /etc/passwd: read once, and again only when the file changes
//! (its mtime, looked at no more than once per scan, and only when a uid is unknown).
//! Names come from the file alone (no NSS: a directory service's users show as numbers).

use foldhash::{HashMap, HashMapExt};
use std::sync::Arc;
use std::time::SystemTime;

const PASSWD: &str = "/etc/passwd";

#[derive(Default)]
pub struct Users {
    names: HashMap<u32, Arc<str>>,
    /// The mtime of the file when it was read (None: never read).
    read: Option<Option<SystemTime>>,
    /// The scan in which the file's mtime was last looked at.
    checked: u64,
}

/// name:password:uid:... lines into uid -> name (the first name of a uid wins).
fn parse_passwd(text: &str) -> HashMap<u32, Arc<str>> {
    let mut names = HashMap::new();
    for line in text.lines() {
        let mut f = line.split(':');
        let (Some(name), Some(_), Some(uid)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if let Ok(uid) = uid.parse::<u32>()
            && !name.is_empty()
        {
            names.entry(uid).or_insert_with(|| name.into());
        }
    }
    names
}

fn mtime() -> Option<SystemTime> {
    std::fs::metadata(PASSWD).and_then(|m| m.modified()).ok()
}

impl Users {
    /// The name of `uid` (empty when /etc/passwd does not name it); `scan` numbers the
    /// scans, so an unknown uid costs at most one stat of the file per scan.
    pub fn name(&mut self, uid: u32, scan: u64) -> Arc<str> {
        if let Some(n) = self.names.get(&uid) {
            return n.clone();
        }
        if self.checked != scan {
            self.checked = scan;
            let now = mtime();
            if self.read != Some(now) {
                self.read = Some(now);
                self.names = std::fs::read_to_string(PASSWD)
                    .map(|t| parse_passwd(&t))
                    .unwrap_or_default();
                if let Some(n) = self.names.get(&uid) {
                    return n.clone();
                }
            }
        }
        Arc::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwd_lines_name_uids() {
        let m = parse_passwd(
            "root:x:0:0:root:/root:/bin/bash\n#bad\nnobody:x:65534:65534::/:/x\nalias:x:0:0::/:/x\n",
        );
        assert_eq!(m.get(&0).map(|s| &**s), Some("root"));
        assert_eq!(m.get(&65534).map(|s| &**s), Some("nobody"));
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn root_is_named_and_an_unknown_uid_is_not() {
        let mut u = Users::default();
        assert_eq!(&*u.name(0, 1), "root");
        assert_eq!(&*u.name(4_000_000_000, 1), "");
        assert_eq!(&*u.name(4_000_000_000, 2), "");
    }
}
