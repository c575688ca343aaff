#!/usr/bin/env python3
"""When each watch event behind a capacity change reached headroom's socket, against when headroom
read it (#62): splits "the API server delivered it late" from "headroom read it late".

    bench/wire/socket_to_read.py OUT_DIR HEADROOM_LOG [FROM_EPOCH]

OUT_DIR is bench/wire/capture.sh's (apiserver.pcap, keys.log, port, connections); HEADROOM_LOG is
headroom's JSON log (many_scale_sets_bench keeps it in /tmp/many_scale_sets_headroom.log). Each
`capacity` line names its watch event (event_rv) and how long before the line headroom read it
(since_event_ms). tshark decrypts headroom's HTTP/2 connections with the TLS key log and finds the
DATA frame that completed the event's line. Prints one JSON line of percentiles (only changes
after FROM_EPOCH, when given) and the slowest reads.
"""
import bisect
import datetime
import json
import re
import subprocess
import sys


def arrivals(out_dir, port, local_port):
    """resourceVersion -> (epoch when its event line was complete at the socket, event type)."""
    fields = subprocess.run(
        ["tshark", "-r", f"{out_dir}/apiserver.pcap", "-o", f"tls.keylog_file:{out_dir}/keys.log",
         "-Y", f"http2.type == 0 && tcp.srcport == {port} && tcp.dstport == {local_port}",
         "-T", "fields", "-E", "occurrence=a", "-E", "separator=|",
         "-e", "frame.time_epoch", "-e", "http2.streamid", "-e", "http2.data.data"],
        check=True, capture_output=True, text=True).stdout
    streams = {}  # stream id -> (bytes so far, [(end offset, epoch)])
    for line in fields.splitlines():
        parts = line.split("|")
        if len(parts) < 3:
            continue
        at = float(parts[0])
        for sid, data in zip(parts[1].split(","), parts[2].split(",")):
            if data:
                buf, marks = streams.setdefault(sid, (bytearray(), []))
                buf += bytes.fromhex(data)
                marks.append((len(buf), at))
    out = {}
    for buf, marks in streams.values():
        ends = [m[0] for m in marks]
        start = 0
        while (nl := buf.find(b"\n", start)) >= 0:
            line = bytes(buf[start:nl])
            if line.startswith(b'{"type":'):
                m = re.search(rb'"resourceVersion":"(\d+)"', line)
                if m:
                    frame = min(bisect.bisect_left(ends, nl + 1), len(marks) - 1)
                    kind = line[9:line.index(b'"', 9)].decode(errors="replace")
                    out.setdefault(m.group(1).decode(), (marks[frame][1], kind))
            start = nl + 1
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out_dir, log = sys.argv[1], sys.argv[2]
    since = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    port = open(f"{out_dir}/port").read().strip()
    ours = sorted({l.split()[0].rsplit(":", 1)[1] for l in open(f"{out_dir}/connections") if '"headroom"' in l})
    if not ours:
        sys.exit("socket_to_read: no connection of headroom's in " + out_dir + "/connections")
    arrive = {}
    for local in ours:
        arrive.update(arrivals(out_dir, port, local))
    rows = []
    for line in open(log):
        if '"event_rv"' not in line or '"msg":"capacity"' not in line:
            continue
        d = json.loads(line)
        logged = datetime.datetime.fromisoformat(d["ts"].replace("Z", "+00:00")).timestamp()
        read = logged - d["since_event_ms"] / 1000
        a = arrive.get(d["event_rv"])
        if a is None or a[0] < since:
            continue
        rows.append(((read - a[0]) * 1000, d["event_rv"], d["scale_set"], a[1], a[0]))
    if not rows:
        sys.exit("socket_to_read: no capacity change matched an event on headroom's connections")
    gaps = sorted(r[0] for r in rows)
    pct = lambda q: gaps[min(len(gaps) - 1, int(q * (len(gaps) - 1) + 0.5))]
    # The log's ts has millisecond resolution: a read can show up to 1 ms before its arrival.
    print(json.dumps({"mode": "socket_to_read", "connections": len(ours), "events_on_the_wire": len(arrive),
                      "changes": len(rows), "p50_ms": round(pct(0.5), 1), "p99_ms": round(pct(0.99), 1),
                      "max_ms": round(gaps[-1], 1)}))
    for gap, rv, scale_set, kind, at in sorted(rows)[-5:]:
        print(f"[socket_to_read] {scale_set} rv {rv} ({kind}): on headroom's socket at {at:.3f}, read {gap:.1f} ms later")


if __name__ == "__main__":
    main()
