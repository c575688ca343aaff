#!/usr/bin/env bash
# Kueue's manager (sigs.k8s.io/kueue, the job queueing a gates user would pick instead of headroom)
# from its Go module, cached (go-tool.sh), for the side-by-side benchmarks. Prints the binary's path.
set -euo pipefail
KUEUE_VERSION=${HEADROOM_KUEUE_VERSION:-v0.19.1}
exec "$(dirname "$0")/go-tool.sh" kueue "$KUEUE_VERSION" sigs.k8s.io/kueue/cmd/kueue -trimpath -ldflags "-s -w"
