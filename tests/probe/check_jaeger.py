#!/usr/bin/env python3
"""Checks Jaeger's traces of binds against the tracer's --json (tests/probe/test-otlp-jaeger).

Usage: check_jaeger.py QUERY_URL BINDS.jsonl N

For each of the N binds in BINDS.jsonl (one JSON object per line, bindtrace --json), Jaeger's
query API must return exactly one trace for the pod (searching by k8s.pod.name), whose id is the
one derived from the pod's UID (first 16 bytes of SHA-256 of "bindtrace/v1/trace\\0UID\\0"), and
in it one span per leg the JSON has: the root "bind" for the total, one per path leg, per
watcher its fanout and delivery; each span's duration equal to its leg (Jaeger keeps
microseconds: the JSON's ns truncated, give or take one for the start's rounding; the
bindtrace.leg.duration_ns tag exactly), the legs under the root, from the processes that did
them, with the semantic-convention attributes. Waits up to 30 s for Jaeger to have them all.
Prints one line per bind; exits 1 on the first bind that does not match after the wait.
"""
import hashlib
import json
import sys
import time
import urllib.parse
import urllib.request


def derive(kind, uid, n):
    return hashlib.sha256(b"bindtrace/v1/" + kind.encode() + b"\0" + uid.encode() + b"\0").digest()[:n].hex()


def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)


def tags(obj):
    return {t["key"]: t["value"] for t in obj.get("tags", [])}


def expected_spans(b):
    """(leg, duration_ns) for every span the bind should have, the root as ('total', ns)."""
    want = []
    for leg, ns in b["legs_ns"].items():
        if ns is not None:
            want.append((leg, ns))
    for w in b.get("watchers", []):
        if w.get("fanout_ns") is not None:
            want.append(("watch_fanout", w["fanout_ns"]))
        if w.get("delivery_ns") is not None:
            want.append(("watch_delivery", w["delivery_ns"]))
    return sorted(want)


OWNER = {  # the service that did each leg's end (the total: the scheduler, which began it)
    "total": "kube-scheduler",
    "scheduler_to_apiserver": "kube-apiserver",
    "apiserver_handling": "kube-apiserver",
    "apiserver_to_etcd": "etcd",
    "etcd_commit": "etcd",
    "wal_fsync": "etcd",
    "etcd_watch": "kube-apiserver",
    "apiserver_respond": "kube-apiserver",
    "apiserver_to_scheduler": "kube-scheduler",
    "watch_fanout": "kube-apiserver",
}


def check_bind(base, b):
    """None when Jaeger has the bind right, else why not."""
    pod = b["pod"]
    uid = pod["uid"]
    tid = derive("trace", uid, 16)
    root_id = derive("root", uid, 8)
    q = urllib.parse.urlencode({
        "service": "kube-apiserver",
        "tags": json.dumps({"k8s.pod.name": pod["name"]}),
        "lookback": "2h",
        "limit": "20",
    })
    found = get(f"{base}/api/traces?{q}")["data"] or []
    if len(found) != 1:
        return f"{len(found)} traces for pod {pod['name']} (want 1)"
    t = found[0]
    if t["traceID"] != tid:
        return f"trace id {t['traceID']}, want {tid} (from UID {uid})"
    procs = t["processes"]
    got = []
    for s in t["spans"]:
        st = tags(s)
        proc = procs[s["processID"]]
        leg = st.get("bindtrace.leg")
        if s["operationName"] == "bind":
            if s["spanID"] != root_id or s.get("references"):
                return f"root span {s['spanID']} refs {s.get('references')}, want {root_id} without parent"
            for k, v in (("http.request.method", "POST"), ("http.response.status_code", 201),
                         ("url.path", f"/api/v1/namespaces/{pod['namespace']}/pods/{pod['name']}/binding")):
                if st.get(k) != v:
                    return f"root: {k} = {st.get(k)!r}, want {v!r}"
        else:
            refs = s.get("references") or []
            if len(refs) != 1 or refs[0]["spanID"] != root_id or refs[0]["refType"] != "CHILD_OF":
                return f"{leg}: references {refs}, want CHILD_OF the root {root_id}"
        ns = st.get("bindtrace.leg.duration_ns")
        if ns is None:
            return f"{s['operationName']}: no bindtrace.leg.duration_ns"
        want_us = max(ns, 0) // 1000
        if abs(s["duration"] - want_us) > 1:
            return f"{leg}: Jaeger's duration {s['duration']} us, the leg {ns} ns"
        for k, v in (("k8s.pod.name", pod["name"]), ("k8s.namespace.name", pod["namespace"]),
                     ("k8s.pod.uid", uid)):
            if st.get(k) != v:
                return f"{leg}: {k} = {st.get(k)!r}, want {v!r}"
        if leg == "apiserver_to_etcd" and (st.get("rpc.system") != "grpc" or
                                           st.get("rpc.method") != "etcdserverpb.KV/Txn"):
            return f"{leg}: rpc.system {st.get('rpc.system')!r} rpc.method {st.get('rpc.method')!r}"
        if leg in OWNER and proc["serviceName"] != OWNER[leg]:
            return f"{leg}: from service {proc['serviceName']}, want {OWNER[leg]}"
        pt = tags(proc)
        if not pt.get("k8s.node.name") or not pt.get("service.instance.id"):
            return f"{leg}: process tags {pt} lack k8s.node.name or service.instance.id"
        got.append((leg, ns))
    want = expected_spans(b)
    if sorted(got) != want:
        return f"spans (leg, ns) {sorted(got)}\n   want (the JSON's legs) {want}"
    return None


def main():
    base, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    binds = [json.loads(line) for line in open(path) if line.strip()]
    binds = [b for b in binds if b.get("result") == "bound"]
    if len(binds) != n:
        print(f"{len(binds)} bound binds in {path}, want {n}")
        return 1
    deadline = time.time() + 30
    spans = 0
    for b in binds:
        while True:
            try:
                why = check_bind(base, b)
            except Exception as e:  # Jaeger not answering yet is a reason to wait, too
                why = f"query failed: {e}"
            if why is None or time.time() > deadline:
                break
            time.sleep(0.5)
        name = b["pod"]["name"]
        if why:
            print(f"FAIL {name}: {why}")
            return 1
        k = len(expected_spans(b))
        spans += k
        print(f"ok {name}: one trace {derive('trace', b['pod']['uid'], 16)}, {k} spans = its legs")
    print(f"{len(binds)} binds, {spans} spans: each one trace in Jaeger, durations equal to the legs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
