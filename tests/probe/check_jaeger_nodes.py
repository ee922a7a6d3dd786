#!/usr/bin/env python3
"""Checks Jaeger's traces of binds seen by one tracer per node (tests/probe/test-ha-jaeger).

Usage: check_jaeger_nodes.py QUERY_URL WORKDIR RUN N [TRACERS]

WORKDIR holds cp-1.jsonl, cp-2.jsonl, cp-3.jsonl: the --json of the tracers started with --node
cp-1 ... For each of the N pods RUN-1 ... RUN-N: Jaeger's query API returns exactly one trace
for the pod, whose id is derived from the pod's UID; its spans come from exactly the tracers
whose --json has the bind (told apart by their resource's k8s.node.name), and each tracer's spans
are its JSON's legs (one per leg, per watcher its fanout and delivery), each duration equal to
the leg (Jaeger keeps microseconds: the ns truncated, give or take one). Waits up to 30 s for
Jaeger to have them all. Prints how many traces hold spans of 1, 2 and 3 tracers, and the spans
per trace each tracer sent. With TRACERS, every pod's trace must hold spans of that many tracers.
"""
import collections
import json
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_jaeger import derive, expected_spans, get, tags  # noqa: E402


def load(work, run):
    """{pod name: {node: bind}} of the binds of this run that have legs to send."""
    by_pod = collections.defaultdict(dict)
    for n in (1, 2, 3):
        node = f"cp-{n}"
        for line in open(os.path.join(work, f"{node}.jsonl")):
            b = json.loads(line)
            name = b["pod"]["name"]
            if not name.startswith(run + "-") or b.get("result") in ("unschedulable",
                                                                     "scheduler_error"):
                continue
            if expected_spans(b):
                if node in by_pod[name]:
                    raise SystemExit(f"{node} emitted {name} twice")
                by_pod[name][node] = b
    return by_pod


def check_pod(base, name, per_node):
    uid = next(iter(per_node.values()))["pod"]["uid"]
    for node, b in per_node.items():
        if b["pod"]["uid"] != uid:
            return f"{node} says UID {b['pod']['uid']}, another tracer {uid}"
    q = urllib.parse.urlencode({
        "tags": json.dumps({"k8s.pod.name": name}),
        "service": "kube-apiserver",
        "lookback": "2h",
        "limit": "20",
    })
    found = get(f"{base}/api/traces?{q}")["data"] or []
    if len(found) != 1:
        return f"{len(found)} traces (want 1)"
    t = found[0]
    tid = derive("trace", uid, 16)
    if t["traceID"] != tid:
        return f"trace id {t['traceID']}, want {tid} (from UID {uid})"
    got = collections.defaultdict(list)
    for s in t["spans"]:
        st = tags(s)
        pt = tags(t["processes"][s["processID"]])
        node = pt.get("k8s.node.name")
        ns = st.get("bindtrace.leg.duration_ns")
        if ns is None:
            return f"span {s['operationName']}: no bindtrace.leg.duration_ns"
        if abs(s["duration"] - max(ns, 0) // 1000) > 1:
            return f"{node} {st.get('bindtrace.leg')}: Jaeger's {s['duration']} us, the leg {ns} ns"
        got[node].append((st.get("bindtrace.leg"), ns))
    if set(got) != set(per_node):
        return f"spans from {sorted(got)}, want from the tracers that emitted it: {sorted(per_node)}"
    for node, b in per_node.items():
        if sorted(got[node]) != expected_spans(b):
            return f"{node}: spans {sorted(got[node])}\n   want its JSON's legs {expected_spans(b)}"
    return None


def main():
    base, work, run, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    want_tracers = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    by_pod = load(work, run)
    if len(by_pod) != n:
        print(f"{len(by_pod)} pods of {run} emitted by the tracers, want {n}")
        return 1
    deadline = time.time() + 30
    spread = collections.Counter()
    per_tracer = collections.defaultdict(list)
    for name in sorted(by_pod, key=lambda s: int(s.rsplit("-", 1)[1])):
        per_node = by_pod[name]
        while True:
            try:
                why = check_pod(base, name, per_node)
            except Exception as e:  # Jaeger not answering yet is a reason to wait, too
                why = f"query failed: {e}"
            if why is None or time.time() > deadline:
                break
            time.sleep(0.5)
        if why:
            print(f"FAIL {name}: {why}")
            return 1
        spread[len(per_node)] += 1
        counts = {node: len(expected_spans(b)) for node, b in sorted(per_node.items())}
        for node, k in counts.items():
            per_tracer[node].append(k)
        print(f"ok {name}: one trace, {sum(counts.values())} spans: "
              + ", ".join(f"{k} from {node}" for node, k in counts.items()))
    print(f"{n} pods, each one trace in Jaeger with spans equal to its tracers' legs; "
          f"traces holding spans of 1 tracer: {spread[1]}, of 2: {spread[2]}, of 3: {spread[3]}")
    for node, ks in sorted(per_tracer.items()):
        print(f"{node}: spans in {len(ks)} traces, per trace min {min(ks)} "
              f"mean {sum(ks) / len(ks):.1f} max {max(ks)}")
    if want_tracers and spread[want_tracers] != n:
        print(f"FAIL: {n - spread[want_tracers]} of {n} traces do not hold spans of "
              f"{want_tracers} tracers")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
