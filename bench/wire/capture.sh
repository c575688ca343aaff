#!/usr/bin/env bash
# Captures the next kube-apiserver's loopback traffic from its first connection on, and records
# which process holds each connection to it (#62: when a watch event reached headroom's socket).
#
#   bench/wire/capture.sh OUT_DIR &
#   SSLKEYLOGFILE=OUT_DIR/keys.log build/release/bench/many_scale_sets_bench …
#   bench/wire/socket_to_read.py OUT_DIR /tmp/many_scale_sets_headroom.log [PHASE_START_EPOCH]
#
# Waits for a kube-apiserver to listen (start it before the bench starts headroom: the bench's own
# cluster does), then runs tcpdump on its port until that kube-apiserver exits. headroom's libcurl
# writes its TLS secrets to SSLKEYLOGFILE (the bench passes it through), which is what lets the
# capture be read: the key log is a secret, kept only beside the capture. Needs root; installs
# Debian's tcpdump and tshark when missing.
set -euo pipefail
out=${1:?usage: bench/wire/capture.sh OUT_DIR}
mkdir -p "$out"
if ! command -v tcpdump >/dev/null || ! command -v tshark >/dev/null; then
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q tcpdump tshark >/dev/null
fi
port=""
while [ -z "$port" ]; do
  port=$(ss -ltnp 2>/dev/null | awk '/"kube-apiserver"/ {n = split($4, a, ":"); print a[n]; exit}')
  [ -n "$port" ] || sleep 0.2
done
echo "$port" >"$out/port"
tcpdump -i lo -s 0 -B 65536 -w "$out/apiserver.pcap" "tcp port $port" 2>"$out/tcpdump.log" &
dump=$!
trap 'kill $dump 2>/dev/null || true' EXIT
: >"$out/connections"
while pgrep -x kube-apiserver >/dev/null; do
  ss -tnp 2>/dev/null | awk -v p=":$port" '$5 ~ p"$" {print $4, $6}' >>"$out/connections"
  sleep 5
done
sort -u -o "$out/connections" "$out/connections"
