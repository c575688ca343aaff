#!/usr/bin/env bash
# One layer blob of the image (tar+gzip) as a scanner unpacking it meets it: GNU tar, unmodified,
# lists it with exit 0 and nothing on stderr (and, with DIR, extracts it there the same way); the
# tar ends as tar must, after its last member's padded data only zeros, at least two 512-byte zero
# blocks (`umoci insert` 0.4.7 wrote neither the padding nor the blocks, and GNU tar and Python's
# tarfile dropped the last member); Python's tarfile reads it whole, the same members as GNU tar.
#   check-layer.sh LAYER_BLOB [DIR]
set -euo pipefail
blob=$1 dir=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-layer: $blob: $*" >&2; exit 1; }

tar -tzf "$blob" >"$tmp/list" 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "GNU tar -t exits non-zero"; }
[ ! -s "$tmp/err" ] || { cat "$tmp/err" >&2; fail "GNU tar -t complains"; }
if [ -n "$dir" ]; then
  mkdir -p "$dir"
  tar -xzf "$blob" -C "$dir" 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "GNU tar -x exits non-zero"; }
  [ ! -s "$tmp/err" ] || { cat "$tmp/err" >&2; fail "GNU tar -x complains"; }
fi
python3 - "$blob" "$tmp/list" <<'PY'
import gzip, io, sys, tarfile
blob, listing = sys.argv[1], sys.argv[2]
data = gzip.decompress(open(blob, "rb").read())
try:
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        names = [m.name for m in t.getmembers()]
        end = t.offset  # just after the last member's padded data
except tarfile.TarError as e:
    sys.exit(f"check-layer: {blob}: Python's tarfile: {e}")
if len(data) % 512:
    sys.exit(f"check-layer: {blob}: {len(data)} bytes, not whole 512-byte blocks")
if len(data) - end < 1024 or data[end:].strip(b"\0"):
    sys.exit(f"check-layer: {blob}: after the last member ({end} of {len(data)} bytes) not two zero blocks and only zeros")
norm = lambda n: n.rstrip("/").removeprefix("./") or "."
gnu = [norm(n) for n in open(listing).read().splitlines()]
if [norm(n) for n in names] != gnu:
    sys.exit(f"check-layer: {blob}: Python's tarfile read {len(names)} members, GNU tar {len(gnu)}")
print(f"check-layer: {len(names)} members, {len(data) - end} zero bytes at the end; GNU tar and tarfile agree")
PY
