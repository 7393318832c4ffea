#!/usr/bin/env bash
# fetch-kernels.sh: the kernel matrix's kernels (tests/kernel_matrix/), Debian's own,
# each with an initramfs that mounts the host's root over virtio-9p (mkinitramfs.sh).
#
#   5.10  bullseye's linux-image-5.10.0-N-amd64 (Debian 11; the oldest kernel servers run)
#   6.1   bookworm's linux-image-6.1.0-N-amd64 (Debian 12, from its updates/security suites)
#   6.12  trixie's linux-image-6.12.N+deb13-amd64 (Debian 13)
#
# The newest build of each is taken from the same mirror as the machine's own sources,
# through a private apt configuration (the system's sources are never touched), and kept
# in $TTOP_KERNEL_CACHE (default /var/cache/ttop-kernels), outside the repository:
# CACHE/SERIES/{vmlinuz,initrd.gz,release}. A kernel already there is not fetched again.
# Exits non-zero when a kernel could not be had; the tests then fail under CI=true.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${TTOP_KERNEL_CACHE:-/var/cache/ttop-kernels}
[ "$(uname -m)" = x86_64 ] || { echo "kernel matrix: x86_64 only (this is $(uname -m))"; exit 0; }

declare -A pattern=(
  [5.10]='^linux-image-5\.10\.0-[0-9]+-amd64$'
  [6.1]='^linux-image-6\.1\.0-[0-9]+-amd64$'
  [6.12]='^linux-image-6\.12\.[0-9]+\+deb13(\.[0-9]+)?-amd64$'
)
series=(5.10 6.1 6.12)

need=()
for s in "${series[@]}"; do
  [ -s "$cache/$s/vmlinuz" ] && [ -s "$cache/$s/initrd.gz" ] && [ -s "$cache/$s/release" ] || need+=("$s")
done
[ ${#need[@]} -eq 0 ] && exit 0

apt_dir=$cache/apt
mkdir -p "$apt_dir"/{lists/partial,archives/partial,sourceparts}
# The mirror the machine already uses (deb822 or one-line sources), else Debian's.
mirror=$(grep -rhE '^[[:space:]]*(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
  | grep -oE 'https?://[^ ]*/debian/?( |$)' | grep -v security | head -n 1 | tr -d ' ' || true)
mirror=${mirror:-http://deb.debian.org/debian}
mirror=${mirror%/}
security=${mirror%/debian}/debian-security
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
cat > "$apt_dir/sourceparts/ttop-kernels.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bullseye bookworm bookworm-updates trixie trixie-updates
Components: main
Signed-By: $keyring

Types: deb
URIs: $security
Suites: bullseye-security bookworm-security trixie-security
Components: main
Signed-By: $keyring
EOF
: > "$apt_dir/empty.list"
apt_opts=(
  -o "Dir::Etc::sourcelist=$apt_dir/empty.list"
  -o "Dir::Etc::sourceparts=$apt_dir/sourceparts"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache=$apt_dir"
  -o "APT::Sandbox::User=root"
  -o "Acquire::Retries=3"
)
echo "kernel matrix: fetching Debian kernels ${need[*]} into $cache"
apt-get "${apt_opts[@]}" -qq update

fail=0
for s in "${need[@]}"; do
  pkg=$(apt-cache "${apt_opts[@]}" pkgnames linux-image- | grep -E "${pattern[$s]}" | sort -V | tail -n 1 || true)
  if [ -z "$pkg" ]; then
    echo "kernel matrix: no package matching ${pattern[$s]} on $mirror" >&2
    fail=1
    continue
  fi
  work=$(mktemp -d)
  if ! (cd "$work" && apt-get "${apt_opts[@]}" -qq download "$pkg" >/dev/null); then
    echo "kernel matrix: could not download $pkg" >&2
    rm -rf "$work"
    fail=1
    continue
  fi
  dpkg-deb -x "$work"/*.deb "$work/root"
  rel=${pkg#linux-image-}
  mkdir -p "$cache/$s"
  cp "$work/root/boot/vmlinuz-$rel" "$cache/$s/vmlinuz"
  bash "$here/mkinitramfs.sh" "$work/root" "$rel" "$cache/$s/initrd.gz"
  echo "$rel" > "$cache/$s/release"
  rm -rf "$work"
  echo "kernel matrix: $s is $rel"
done
exit $fail
