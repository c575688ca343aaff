#!/usr/bin/env bash
# Builds the minimal BigFleet shard test peer: tests/peers/bigfleet-shard/build.sh OUTPUT_BINARY
#
# The public shard (github.com/intUnderflow/bigfleet) is not served by the Go module proxy here
# (403 "This module version is not available" for every version), so this peer implements the
# same Shard service from headroom's own messages/proto files. Its Go code is generated at build
# time with Debian's protoc and the protoc-gen-go / protoc-gen-go-grpc plugins from the proxy.
set -euo pipefail
out=$(realpath -m "$1")
here=$(cd "$(dirname "$0")" && pwd)
proto=$(cd "$here/../../../messages/proto" && pwd)
export PATH="$PATH:/usr/local/go/bin" GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "go is not installed (the test peers and control plane need it)" >&2; exit 1; }
command -v protoc >/dev/null || { echo "protoc is not installed (scripts/install-deps installs it)" >&2; exit 1; }
tools=${HEADROOM_GO_TOOLS:-$HOME/.cache/headroom/go-tools}
mkdir -p "$tools"
[ -x "$tools/protoc-gen-go" ] || GOBIN=$tools go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.10
[ -x "$tools/protoc-gen-go-grpc" ] || GOBIN=$tools go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
mod=headroom.test/bigfleet-shard
maps="Mbigfleet/v1alpha1/capacity.proto=$mod/pb,Mbigfleet/v1alpha1/shard.proto=$mod/pb"
rm -rf "$here/pb" && mkdir -p "$here/pb"
protoc --proto_path="$proto" \
  --plugin=protoc-gen-go="$tools/protoc-gen-go" --plugin=protoc-gen-go-grpc="$tools/protoc-gen-go-grpc" \
  --go_out="$here/pb" --go_opt="module=$mod/pb,$maps" \
  --go-grpc_out="$here/pb" --go-grpc_opt="module=$mod/pb,$maps" \
  bigfleet/v1alpha1/capacity.proto bigfleet/v1alpha1/shard.proto
cd "$here"
exec go build -o "$out" .
