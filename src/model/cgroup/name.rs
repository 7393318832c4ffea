//! Readable cgroup names: the last part of the path, with what systemd, Docker,
//! containerd, CRI-O, podman and Kubernetes put in it shortened to what a person
//! recognises ("docker 3f2a9c1b7d04", "pod 1c4f8e2a").

/// Container ids are 64 hex digits; 12 is what `docker ps` shows.
const ID_LEN: usize = 12;

fn is_hex_id(s: &str) -> bool {
    s.len() >= 32 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn short(id: &str) -> &str {
    &id[..id.len().min(ID_LEN)]
}

/// The display name of the cgroup at `path` (below the mount; "/" is the root).
pub fn readable(path: &str) -> String {
    let last = path.rsplit('/').next().unwrap_or(path);
    if last.is_empty() {
        return "/".to_string();
    }
    let scope = last
        .strip_suffix(".scope")
        .or_else(|| last.strip_suffix(".slice"));
    // Container runtimes under systemd: <runtime>-<id>.scope.
    for (prefix, runtime) in [
        ("docker-", "docker"),
        ("cri-containerd-", "containerd"),
        ("crio-conmon-", "crio-conmon"),
        ("crio-", "crio"),
        ("libpod-conmon-", "podman-conmon"),
        ("libpod-", "podman"),
    ] {
        if let Some(id) = scope.and_then(|s| s.strip_prefix(prefix))
            && is_hex_id(id)
        {
            return format!("{runtime} {}", short(id));
        }
    }
    // cgroupfs drivers: /docker/<id>, /kubepods/burstable/pod<uid>/<id>.
    if is_hex_id(last) {
        let parent = path.rsplit('/').nth(1).unwrap_or("");
        let runtime = if parent.starts_with("pod") || parent.contains("-pod") {
            "container"
        } else {
            parent.trim_end_matches(".slice")
        };
        return format!("{runtime} {}", short(last));
    }
    // Kubernetes pods: kubepods-burstable-pod<uid>.slice (systemd) or pod<uid>.
    let stem = scope.unwrap_or(last);
    if let Some(i) = stem.rfind("pod")
        && (i == 0 || stem[..i].ends_with('-'))
        && stem.len() - i > 3 + 8
    {
        let uid = stem[i + 3..].replace('_', "-");
        if uid.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
            return format!("pod {}", &uid[..8]);
        }
    }
    if let Some(qos) = stem.strip_prefix("kubepods-") {
        return format!("kubepods {qos}");
    }
    // systemd services, slices and scopes keep their own names.
    last.to_string()
}

#[cfg(test)]
mod tests {
    use super::readable;

    #[test]
    fn names_people_recognise() {
        let id = "3f2a9c1b7d04e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e";
        for (path, want) in [
            ("/", "/"),
            ("/system.slice/nginx.service", "nginx.service"),
            (
                "/user.slice/user-1000.slice/session-3.scope",
                "session-3.scope",
            ),
            (
                &format!("/system.slice/docker-{id}.scope"),
                "docker 3f2a9c1b7d04",
            ),
            (&format!("/docker/{id}"), "docker 3f2a9c1b7d04"),
            (
                &format!("/system.slice/libpod-{id}.scope"),
                "podman 3f2a9c1b7d04",
            ),
            (
                &format!("/kubepods.slice/kubepods-besteffort.slice/x/cri-containerd-{id}.scope"),
                "containerd 3f2a9c1b7d04",
            ),
            (
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1c4f8e2a_9b3d_4c5e_8f6a_7b8c9d0e1f2a.slice",
                "pod 1c4f8e2a",
            ),
            (
                "/kubepods/burstable/pod1c4f8e2a-9b3d-4c5e-8f6a-7b8c9d0e1f2a",
                "pod 1c4f8e2a",
            ),
            (
                &format!("/kubepods/burstable/pod1c4f8e2a-9b3d-4c5e-8f6a-7b8c9d0e1f2a/{id}"),
                "container 3f2a9c1b7d04",
            ),
            (
                "/kubepods.slice/kubepods-burstable.slice",
                "kubepods burstable",
            ),
            ("/ttop-test-42", "ttop-test-42"),
        ] {
            assert_eq!(readable(path), want, "{path}");
        }
    }
}
