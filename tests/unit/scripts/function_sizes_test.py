#!/usr/bin/env python3
"""CTest function_sizes_scan: scripts/function-sizes finds exactly the functions that
function_sizes_cases.cpp announces (`// expect: <name> <lines>` before each), with their sizes."""
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parents[3]
cases = pathlib.Path(__file__).with_name("function_sizes_cases.cpp")
expected = re.findall(r"^\s*// expect: (\S+) (\d+)$", cases.read_text(), re.M)
out = subprocess.run([str(root / "scripts/function-sizes"), str(cases)], capture_output=True, text=True, check=True).stdout
found = [tuple(line.rsplit(":", 1)[1].split(" ")) for line in out.splitlines()]
if found != expected:
    print("expected:", expected, "\nfound:   ", found, sep="\n")
    sys.exit(1)
print(f"function_sizes_scan: {len(found)} functions found as announced")
