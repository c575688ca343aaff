#!/usr/bin/env bash
# Runs the image's headroom (ROOTFS/usr/local/bin/headroom) in a chroot of the image's rootfs, in a
# mount namespace of its own where the host's /tmp (the test's config, kubeconfig and
# certificates) and /proc are mounted. Every step execs, so the caller's pid is headroom's and its
# signals reach it.
#   run-in-image.sh ROOTFS [headroom args…]
set -euo pipefail
rootfs=$1
shift
exec /usr/bin/unshare --mount /bin/bash -c '
  set -e
  /usr/bin/mount --make-rprivate /
  /usr/bin/mount --bind /tmp "$0/tmp"
  /usr/bin/mkdir -p "$0/proc"
  /usr/bin/mount -t proc proc "$0/proc"
  exec /usr/sbin/chroot "$0" /usr/local/bin/headroom "$@"' "$rootfs" "$@"
