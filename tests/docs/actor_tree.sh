#!/usr/bin/env bash
# `headroom --print-actor-tree` (printed from the registry) is the tree docs/architecture.md shows
# between its actor-tree markers. Usage: actor_tree.sh HEADROOM_BINARY DOC
set -euo pipefail
bin=$1 doc=$2
documented=$(sed -n '/^<!-- actor-tree -->$/,/^<!-- \/actor-tree -->$/p' "$doc" | sed '1,2d' | sed '$d' | sed '$d')
printed=$("$bin" --print-actor-tree)
if [ "$documented" != "$printed" ]; then
  echo "docs/architecture.md's actor tree differs from headroom --print-actor-tree:"
  diff -u <(echo "$documented") <(echo "$printed") || true
  echo "(regenerate the block between <!-- actor-tree --> markers from the binary)"
  exit 1
fi
echo "actor tree: docs/architecture.md matches the registry ($(echo "$printed" | wc -l) lines)"
