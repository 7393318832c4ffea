#!/usr/bin/env bash
# mkinitramfs.sh ROOT VERSION OUT: the kernel matrix's initramfs for the kernel package
# unpacked in ROOT (lib/modules/VERSION or usr/lib/modules/VERSION): the static busybox,
# the package's own virtio, 9p, netfs/fscache and overlay modules (uncompressed, so busybox's
# depmod and modprobe take them) and tests/vm/init.
set -euo pipefail
root=$1 ver=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
mods=$root/lib/modules/$ver
[ -d "$mods" ] || mods=$root/usr/lib/modules/$ver
[ -d "$mods" ] || { echo "no modules for $ver under $root" >&2; exit 1; }
bb=$(command -v busybox || true)
[ -n "$bb" ] && file -L "$bb" 2>/dev/null | grep -q 'statically linked' || bb=/bin/busybox
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"/{bin,dev,proc,sys,mnt,lib/modules/$ver}
cp "$bb" "$tmp/bin/busybox"
cp "$here/init" "$tmp/init"
chmod +x "$tmp/init"
for d in kernel/drivers/virtio kernel/net/9p kernel/fs/9p kernel/fs/netfs kernel/fs/fscache \
         kernel/fs/overlayfs; do
  [ -d "$mods/$d" ] || continue
  mkdir -p "$tmp/lib/modules/$ver/$d"
  cp -r "$mods/$d/." "$tmp/lib/modules/$ver/$d/"
done
find "$tmp/lib/modules" -name '*.ko.xz' -exec xz -d {} +
find "$tmp/lib/modules" -name '*.ko.zst' -exec zstd -q -d --rm {} +
cp "$mods"/modules.builtin* "$tmp/lib/modules/$ver/" 2>/dev/null || true
(cd "$tmp" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out.tmp"
mv "$out.tmp" "$out"
