#!/usr/bin/env python3
"""Checks `bindtrace --json` output for test-faults: the README's schema (check_timeline.py), and
that nothing is invented when the tracer met faults: every stage that is there was seen in the
process of its role, in causal order, on the pod's real node and revision; every stage that is
not there says why. Prints what it finds; exits 1 on the first failure.

  check_faults.py FILE PODS PREFIX KIND [ROLE=PID...] [min=N] [count=N] [drops=1] [after=1]
    PODS    lines "name node resourceVersion" (kubectl), the truth to compare with
    PREFIX  the binds of pods whose name starts with it are checked
    KIND    complete: every stage seen, the etcd side included
            partial:  any stage may be missing, with a reason
    ROLE=PID  scheduler=, apiserver=, etcd=: the pid each role's stages must come from
              (several allowed, comma-separated)
    min=N   at least N binds, one per pod; count=N exactly N, one per pod
    drops=1 at least one bind says drops, and every incomplete one says drops or gap
    after=1 every bind began after the tracer attached: none may say started_midway
Always: at most one timeline per pod; an incomplete timeline says why it is incomplete (drops,
gap or started_midway), never only 'not observed'.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_timeline import CREATE_STAGES, ORDER, STAGES, load  # noqa: E402

ROLE = {
    "bind_request": "scheduler", "apiserver_received": "apiserver",
    "etcd_txn_sent": "apiserver", "etcd_txn_received": "etcd", "etcd_wal_fsync": "etcd",
    "etcd_txn_response": "etcd", "etcd_watch_event": "apiserver",
    "bind_response": "apiserver", "bind_response_received": "scheduler",
}
KNOWN_REASONS = (
    "ring buffer drops while this bind was in flight",
    "bytes lost on a connection of this bind (capture gap)",
    "the bind began before bindtrace attached",
    "not observed",
)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def describe(b):
    """What a failing timeline holds, to tell from the test log why a stage is missing: each
    stage's process, connection and stream, and the Txn attempts."""
    for s in STAGES:
        st = b["stages"][s]
        if "missing" in st:
            print(f"    {s}: missing ({st['missing']})")
        else:
            print(f"    {s}: pid {st.get('pid')} conn {st.get('conn')} "
                  f"{st.get('laddr')} -> {st.get('raddr')} stream {st.get('stream_id')} "
                  f"at {st.get('mono_ns')}")
    for a in b.get("etcd_txn_attempts") or []:
        print(f"    txn attempt: {a}")


def main(path, pods_file, prefix, kind, *opts):
    truth = {}
    for line in open(pods_file):
        f = line.split()
        if len(f) == 3:
            truth[f[0]] = (f[1], f[2])
    pids, opt = {}, {}
    for o in opts:
        k, v = o.split("=", 1)
        if k in ("scheduler", "apiserver", "etcd"):
            pids[k] = {int(p) for p in v.split(",") if p}
        else:
            opt[k] = v
    binds = [b for b in load(path) if b["pod"]["name"].startswith(prefix)]
    names = [b["pod"]["name"] for b in binds]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        fail(f"{prefix}*: {len(twice)} pods with more than one timeline: {twice[:5]}")
    if "count" in opt:
        want = int(opt["count"])
        if len(binds) != want:
            fail(f"{prefix}*: {len(binds)} timelines, want {want}")
    if len(binds) < int(opt.get("min", "0")):
        fail(f"{prefix}*: {len(binds)} timelines, want at least {opt['min']}")
    incomplete = 0
    unflagged = 0
    reasons = {}
    for b in binds:
        name = b["pod"]["name"]
        st = b["stages"]
        if name not in truth:
            fail(f"{name}: a bind of a pod that does not exist")
        node, rv = truth[name]
        # Invented facts: a node, a revision or a stage that is not what happened.
        # A node is known from the Binding the scheduler sent; without it, it stays "".
        if b["result"] == "bound" and not b["node"] and "missing" not in st["bind_request"]:
            fail(f"{name}: bound, its request seen, but no node")
        if b["node"] and b["node"] != node:
            fail(f"{name}: node {b['node']!r}, the pod is on {node!r}")
        if b["revision"] and str(b["revision"]) != rv:
            fail(f"{name}: revision {b['revision']}, the pod's resourceVersion is {rv}")
        for s in STAGES:
            if "missing" in st[s]:
                why = st[s]["missing"]
                if not why:
                    fail(f"{name}: {s} missing without a reason")
                reasons[why] = reasons.get(why, 0) + 1
                continue
            role = ROLE[s]
            if role in pids and st[s]["pid"] not in pids[role]:
                fail(f"{name}: {s} from pid {st[s]['pid']}, {role} is {sorted(pids[role])}")
            if st[s]["first_mono_ns"] > st[s]["last_mono_ns"]:
                fail(f"{name}: {s} ends before it begins")
        for a, c in ORDER:
            if "missing" not in st[a] and "missing" not in st[c]:
                if st[a]["mono_ns"] > st[c]["mono_ns"]:
                    fail(f"{name}: {a} after {c}")
        # The pod's create stages count as the bindtrace does: unless it was created before
        # bindtrace attached.
        missing = [s for s in STAGES if "missing" in st[s]]
        bind_path_missing = bool(missing)
        if not b.get("created_before_attach"):
            missing += [s for s in CREATE_STAGES if "missing" in st.get(s, {})]
        if b["result"] == "bound" and b["missing_stages"] != len(missing):
            fail(f"{name}: missing_stages {b['missing_stages']}, {len(missing)} stages missing")
        if missing:
            incomplete += 1
            if bind_path_missing and not (b["drops"] or b["gap"] or b["started_midway"]):
                unflagged += 1
            # A pod created over a client connection opened before bindtrace attached has its
            # create_request read without method and path (no HPACK state): it says so, not
            # only 'not observed'.
            why = st.get("create_request", {}).get("missing")
            if why == "not observed" and not b.get("created_before_attach") and \
                    not (b["drops"] or b["gap"]):
                fail(f"{name}: create_request missing, saying only 'not observed'")
            if incomplete <= 5:
                print(f"  {name}: {b['result']}, missing " +
                      ", ".join(f"{s} ({st[s]['missing']})" for s in missing) +
                      f"; drops={b['drops']} gap={b['gap']} started_midway={b['started_midway']}")
        if kind == "complete":
            if b["result"] != "bound" or b["status_code"] != 201:
                fail(f"{name}: result {b['result']} {b['status_code']}")
            if b["node"] != node or str(b["revision"]) != rv:
                fail(f"{name}: node {b['node']!r} revision {b['revision']}, the pod is on "
                     f"{node!r} at resourceVersion {rv}")
            if missing:
                describe(b)
                fail(f"{name}: missing {missing}: " +
                     "; ".join(st[s]["missing"] for s in missing))
        if opt.get("drops") == "1" and missing and not (b["drops"] or b["gap"]):
            fail(f"{name}: stages missing but neither drops nor gap: {missing}")
    if opt.get("drops") == "1" and not any(b["drops"] for b in binds):
        fail(f"{prefix}*: no timeline says drops")
    print(f"{prefix}*: {len(binds)} timelines, {incomplete} incomplete; missing reasons: " +
          (", ".join(f"{why!r} x{n}" for why, n in sorted(reasons.items())) or "none"))
    # An incomplete timeline says why; a bind that began after attaching did not begin midway.
    if unflagged:
        fail(f"{unflagged} incomplete timelines flag neither drops, gap nor started_midway "
             "(their stages say only 'not observed')")
    midway = [b["pod"]["name"] for b in binds if b["started_midway"]]
    if opt.get("after") == "1" and midway:
        fail(f"{len(midway)} timelines say started_midway, but every bind began after the "
             f"tracer attached: {midway[:5]}")
    unknown = [why for why in reasons if why not in KNOWN_REASONS]
    if unknown:
        print("note: other reasons:", unknown)


if __name__ == "__main__":
    if len(sys.argv) < 5:
        print(__doc__)
        sys.exit(2)
    main(*sys.argv[1:])
