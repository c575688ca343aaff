#!/usr/bin/env python3
"""Checks that the Grafana dashboard names only metrics a real headroom run exports.

  dashboard-check.py DASHBOARD ROW METRICS_FILE|-

Reads the Prometheus text exposition of a real run (a file, or - for stdin) and the metric names
of every query in the dashboard row titled ROW ("Runtime", "Reactive scaling", ...). Exits 1,
naming each one, when a metric the row queries is not among the exported series. A histogram's
_bucket/_sum/_count series count as the histogram.

Families that exist only after their first event (a supervised child's exit, restart or
escalation) cannot appear in a healthy run; they are listed in AFTER_FIRST_EVENT with that reason,
must then be a family name registered in headroom's source (runtime/, actors/, app/), and are
reported as such, never silently passed.

It also checks the run against the metrics reference: every family the run exports (its `# TYPE`
line) must be in docs/metrics.md with that type (scripts/gen-metrics-docs writes the page from
the code; a family registered where that script does not look fails here).
"""
import json
import pathlib
import re
import sys

SOURCE = pathlib.Path(__file__).resolve().parents[2]

AFTER_FIRST_EVENT = {
    "headroom_supervisor_child_exits_total": "a supervised child exited",
    "headroom_supervisor_restarts_total": "a supervised child was restarted",
    "headroom_supervisor_escalations_total": "a supervisor gave up",
    "headroom_supervisor_child_last_exit_info": "a supervised child exited",
}
NAME = re.compile(r"\b((?:gha|headroom|process)_[a-z0-9_]+)")


def registered(name):
    for d in ("runtime", "actors", "app"):
        for f in (SOURCE / d).rglob("*.cpp"):
            if f'"{name}"' in f.read_text(errors="replace"):
                return True
    return False


def row_metrics(dashboard, row):
    names, current, found = set(), None, False
    for panel in dashboard["panels"]:
        if panel.get("type") == "row":
            current = panel["title"]
            found = found or current == row
            continue
        if current != row:
            continue
        for target in panel.get("targets", []):
            for name in NAME.findall(re.sub(r"\{[^}]*\}", "", target["expr"])):
                names.add(re.sub(r"_(bucket|sum|count)$", "", name) if name.endswith(("_bucket",)) else name)
    if not found:
        sys.exit(f"dashboard-check: no row titled {row!r}")
    return names


def exported(text):
    out = set()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name = re.split(r"[{ ]", line, 1)[0]
            out.add(name)
            out.add(re.sub(r"_(bucket|sum|count)$", "", name))
    return out


def undocumented(text):
    """Families the run exports that docs/metrics.md lacks, or lists with another type."""
    doc = {}
    for m in re.finditer(r"^\| `([a-z0-9_]+)` \| (\w+) \|", (SOURCE / "docs/metrics.md").read_text(), re.M):
        doc[m.group(1)] = m.group(2)
    bad = []
    for m in re.finditer(r"^# TYPE (\S+) (\S+)$", text, re.M):
        name, kind = m.group(1), m.group(2)
        if doc.get(name) != kind:
            bad.append(f"{name} ({kind}; docs/metrics.md: {doc.get(name, 'absent')})")
    return bad


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    dashboard = json.load(open(sys.argv[1]))
    text = sys.stdin.read() if sys.argv[3] == "-" else open(sys.argv[3]).read()
    wanted = row_metrics(dashboard, sys.argv[2])
    have = exported(text)
    missing = sorted(n for n in wanted if n not in have and (n not in AFTER_FIRST_EVENT or not registered(n)))
    waived = sorted(n for n in wanted if n not in have and n in AFTER_FIRST_EVENT and registered(n))
    for n in waived:
        print(f"dashboard-check: {n} not in this run (exists only after {AFTER_FIRST_EVENT[n]})")
    if missing:
        print(f"dashboard-check: row {sys.argv[2]!r} queries metrics this run did not export: {', '.join(missing)}")
        sys.exit(1)
    if bad := undocumented(text):
        print("dashboard-check: families this run exports that docs/metrics.md does not list as such "
              f"(run scripts/gen-metrics-docs): {', '.join(bad)}")
        sys.exit(1)
    print(f"dashboard-check: row {sys.argv[2]!r}: {len(wanted)} metrics, {len(wanted) - len(waived)} exported, {len(waived)} after first event")


if __name__ == "__main__":
    main()
