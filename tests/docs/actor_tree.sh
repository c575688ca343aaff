#!/usr/bin/env bash
# `headroom --print-actor-tree` (printed from the registry) is the tree docs/architecture.md shows
# between its actor-tree markers. Usage: actor_tree.sh [--write] HEADROOM_BINARY DOC
# (--write: rewrite that block from the binary; scripts/gen-docs does, with the other references).
set -euo pipefail
write=false
if [ "${1:-}" = --write ]; then write=true; shift; fi
bin=$1 doc=$2
documented=$(sed -n '/^<!-- actor-tree -->$/,/^<!-- \/actor-tree -->$/p' "$doc" | sed '1,2d' | sed '$d' | sed '$d')
printed=$("$bin" --print-actor-tree)
if $write; then
  python3 - "$doc" "$printed" <<'PY'
import re, sys
doc, tree = sys.argv[1], sys.argv[2]
text = open(doc).read()
block = "<!-- actor-tree -->\n```\n" + tree + "\n```\n<!-- /actor-tree -->"
new, n = re.subn(r"<!-- actor-tree -->\n```\n.*?\n```\n<!-- /actor-tree -->", lambda _: block, text, flags=re.S)
if n != 1:
    sys.exit(f"{doc}: no actor-tree block between its markers")
open(doc, "w").write(new)
PY
  exit 0
fi
if [ "$documented" != "$printed" ]; then
  echo "docs/architecture.md's actor tree differs from headroom --print-actor-tree:"
  diff -u <(echo "$documented") <(echo "$printed") || true
  echo "(scripts/gen-docs rewrites it from the binary)"
  exit 1
fi
echo "actor tree: docs/architecture.md matches the registry ($(echo "$printed" | wc -l) lines)"
