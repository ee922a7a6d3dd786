#!/usr/bin/env python3
"""Checks one run of test-ha-leader-kill: `bindtrace --json` given every etcd member while the
etcd leader was killed in the middle of a burst of binds.

    check_leader_kill.py BINDS.jsonl PODS.txt KILL_MONO_NS GONE_MONO_NS OLD_LEADER NEW_LEADER
                         KILLED_PID

PODS.txt is the namespace's pods as the API has them (name, node, resourceVersion, tab-separated),
the leaders are member ids (hex, as bindtrace writes them), KILL_MONO_NS the CLOCK_MONOTONIC time
just before the SIGKILL, GONE_MONO_NS when its process was seen gone (a syscall it was in, an
fsync, may end after the signal). It fails when:
  - a bound pod has no bound timeline, or two; a timeline names a node or revision other than the
    API's, or a pod the API does not have (something invented or lost);
  - a stage is missing without a reason, or a stage is attributed to the killed member after its
    death;
  - a bind's raft leader is not the leader of its term as observed (the old leader before the kill,
    the new one after), or a leader change is reported where none happened (a bind wholly before
    the kill, or wholly after the new leader was in place);
  - a bind in flight at the kill (its Binding sent before, its answer after) neither shows the leader
    change, nor says what is missing, nor had its entry committed before the kill;
  - the scheduler's give-up after a failed bind (PodScheduled False, SchedulerError) is not a
    scheduler_error entry naming that failed bind, or says "the pod fits no node";
  - a failed bind whose Txn got no TxnResponse does not say where it went and what came of it
    (etcd's gRPC error, or no answer), or, in flight at the kill, that the killed leader exited.
It prints the counts, and every bind in flight at the kill with what its timeline says."""
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_timeline as ct  # noqa: E402  (the schema check and the stage list)


def stage_times(b):
    """Every (where, mono_ns, pid) the timeline attributes to a process."""
    out = []
    for name, st in b["stages"].items():
        if isinstance(st, dict) and "missing" not in st and "pid" in st:
            for k in ("first_mono_ns", "mono_ns", "last_mono_ns"):
                if isinstance(st.get(k), int):
                    out.append((name, st[k], st["pid"]))
    r = b.get("raft") or {}
    for m in r.get("members", []):
        a = m.get("raft_appended", {})
        if m.get("pid") and "missing" not in a:
            for k in ("first_mono_ns", "mono_ns", "last_mono_ns"):
                if isinstance(a.get(k), int):
                    out.append((f"member {m['id']} raft_appended", a[k], m["pid"]))
        for k in ("msgapp_received_mono_ns", "ack_sent_mono_ns"):
            if m.get("pid") and isinstance(m.get(k), int):
                out.append((f"member {m['id']} {k}", m[k], m["pid"]))
    return out


def when(b, stage):
    st = b["stages"].get(stage, {})
    return None if "missing" in st else st.get("mono_ns")


def describe(b):
    r = b.get("raft")
    text = f"{b['pod']['name']}: {b['result']} {b['status_code']}, missing {b['missing_stages']}"
    for a in b.get("etcd_txn_attempts") or []:
        text += (f", Txn at {a['sent_mono_ns']} " +
                 ("answered" if a.get("responded") else "never answered"))
    if r:
        text += (f"; raft entry {r.get('index')} term {r.get('term')} leader {r.get('leader')} "
                 f"answered by {r.get('answering_member')}, quorum {r.get('quorum')}, "
                 f"leader_change {r.get('leader_change')!r}")
        for s in ("raft_proposed", "raft_appended", "raft_committed", "raft_applied"):
            if "missing" in r.get(s, {}):
                text += f"; {s}: {r[s]['missing']}"
        dead = [m["id"] for m in r.get("members", []) if m.get("exited")]
        if dead:
            text += f"; exited {dead}"
    for s in ct.STAGES:
        why = b["stages"][s].get("missing")
        if why:
            text += f"; {s}: {why}"
    return text


def main():
    path, pods_file, kill_ns, gone_ns, old, new, killed_pid = sys.argv[1:8]
    kill_ns, gone_ns, killed_pid = int(kill_ns), int(gone_ns), int(killed_pid)
    binds = ct.load(path)
    truth = ct.truth_of(pods_file)
    bad = []
    bound = {}
    for b in binds:
        name = b["pod"]["name"]
        if name not in truth:
            bad.append(f"{name}: a timeline of a pod the API does not have")
            continue
        if b["result"] == "bound":
            bound.setdefault(name, []).append(b)
            node, rv, _, _ = truth[name]
            if b["node"] != node or str(b["revision"]) != rv:
                bad.append(f"{name}: node {b['node']} revision {b['revision']}, the API says "
                           f"{node} {rv}")
        for where, t, pid in stage_times(b):
            if pid == killed_pid and t > gone_ns:
                bad.append(f"{name}: {where} by the killed member (pid {pid}) "
                           f"{(t - gone_ns) / 1e6:.1f} ms after it was gone")
    api_bound = {n for n, (node, _, _, _) in truth.items() if node}
    for n in sorted(api_bound):
        if len(bound.get(n, [])) != 1:
            bad.append(f"{n}: {len(bound.get(n, []))} bound timelines, want 1")
    complete = sum(1 for b in binds if b["result"] == "bound" and b["missing_stages"] == 0)
    terms = {}
    in_flight, across, changes, committed_before = [], [], 0, 0
    for b in binds:
        r = b.get("raft")
        sent = when(b, "bind_request") or when(b, "apiserver_received")
        answered = when(b, "bind_response") or when(b, "etcd_txn_response")
        if sent is not None and sent < kill_ns and (answered is None or answered > kill_ns):
            in_flight.append(b)
        if not r or not r.get("entry_seen"):
            continue
        if r.get("leader"):  # null: not known, and said so
            terms.setdefault(r["term"], set()).add(r["leader"])
        if r.get("leader_change"):
            changes += 1
    # The old leader's term is the lowest seen; every later one is the new leader's.
    if terms:
        first = min(terms)
        for term, leaders in sorted(terms.items()):
            want = old if term == first else new
            if leaders - {want}:
                bad.append(f"term {term}: leader {sorted(leaders)}, want {want}")
    for b in binds:
        r = b.get("raft") or {}
        ch = r.get("leader_change")
        sent = when(b, "bind_request") or when(b, "apiserver_received")
        answered = when(b, "bind_response") or when(b, "etcd_txn_response")
        if ch and answered is not None and answered < kill_ns:
            bad.append(f"{b['pod']['name']}: a leader change reported for a bind answered "
                       f"before the kill: {ch}")
    failed = []
    for b in in_flight:
        r = b.get("raft") or {}
        com = r.get("raft_committed", {"missing": "no raft entry"})
        if r.get("entry_seen") and "missing" not in com and com.get("mono_ns", kill_ns) < kill_ns:
            committed_before += 1
        elif r.get("leader_change") or (r.get("entry_seen") and terms and
                                        r.get("term") != min(terms)):
            across.append(b)  # the change shown, or proposed and committed under the new leader
        elif b["result"] != "bound" or b["missing_stages"]:
            failed.append(b)  # its answer, or what it lacks, said with reasons
        else:
            bad.append(f"{b['pod']['name']}: in flight at the kill, complete, committed after "
                       f"it in the old term, and no leader change said: {describe(b)}")
    several = {n: v for n, v in bound.items() if
               sum(1 for b in binds if b["pod"]["name"] == n) > 1}
    print(f"{len(binds)} timelines, {len(bound)} pods bound in them, {len(api_bound)} bound in "
          f"the API, {complete} complete; {changes} show a leader change; {len(in_flight)} in "
          f"flight at the kill: {committed_before} committed before it, {len(across)} across "
          f"the leader change, {len(failed)} failed or incomplete with reasons; "
          f"{len(several)} pods bound after a failed attempt")
    print(f"terms and their leaders: { {t: sorted(v) for t, v in sorted(terms.items())} }")
    for b in in_flight:
        print("   in flight:", describe(b))
    for n in sorted(several):
        for b in binds:
            if b["pod"]["name"] == n and b not in in_flight:
                print(f"   {n}, timeline {b['seq']}:", describe(b))
    for b in binds:
        if b["missing_stages"] and b not in in_flight and b["pod"]["name"] not in several:
            print("   incomplete:", describe(b))
    # The scheduler's give-up after a failed bind (PodScheduled False, SchedulerError): a
    # scheduler_error entry naming the failed bind of its pod, never "the pod fits no node".
    by_seq = {b["seq"]: b for b in binds}
    gave_up, unanswered = [], []
    for b in binds:
        name = b["pod"]["name"]
        if b.get("status_reason") != "SchedulerError" and b["result"] != "scheduler_error":
            continue
        gave_up.append(b)
        if b["result"] != "scheduler_error":
            bad.append(f"{name}: a give-up with reason {b.get('status_reason')!r} shown as "
                       f"{b['result']!r}, not scheduler_error")
        for s, st in b["stages"].items():
            if "fits no node" in st.get("missing", ""):
                bad.append(f"{name}: give-up after an error, yet {s}: {st['missing']}")
        fb = b.get("failed_bind")
        if fb is not None:
            f = by_seq.get(fb.get("seq"))
            if (not f or f["pod"]["name"] != name or f["status_code"] != fb.get("status_code")
                    or 200 <= f["status_code"] < 300):
                bad.append(f"{name}: failed_bind {fb} is no failed bind of this pod")
    # A failed bind whose last Txn got no TxnResponse says where it went and what came of it
    # (etcd's error answer, or none), and, in flight at the kill, that the killed leader exited.
    for b in binds:
        atts = b.get("etcd_txn_attempts") or []
        if b["result"] == "bound" or not b["status_code"] or not atts or atts[-1]["responded"]:
            continue
        unanswered.append(b)
        a = atts[-1]
        name = b["pod"]["name"]
        why = b["stages"]["etcd_txn_response"].get("missing", "")
        want = f"no etcd write ({b['status_code']}): Txn sent to etcd pid "
        if not why.startswith(want) or ("; no answer" not in why and "; answered at" not in why):
            bad.append(f"{name}: an unanswered Txn's reason is {why!r}")
        if ("grpc_status" in a) != ("; answered at" in why):
            bad.append(f"{name}: etcd's error answer {a.get('grpc_status')} against {why!r}")
        answered = when(b, "bind_response")
        began = when(b, "bind_request") or when(b, "apiserver_received") or a["sent_mono_ns"]
        if (began < kill_ns and (answered is None or answered > kill_ns) and
                f"member {old} exited" not in why and
                not ("that member exited" in why and a.get("etcd_pid") == killed_pid)):
            bad.append(f"{name}: Txn in flight at the kill, the killed leader's exit not said: "
                       f"{why!r}")
    print(f"{len(gave_up)} give-ups after an error (scheduler_error), {len(unanswered)} failed "
          f"binds whose Txn got no TxnResponse")
    for b in gave_up + unanswered:
        if b not in in_flight:
            print("   failed or given up:", describe(b))
    for x in bad[:20]:
        print("FAIL:", x)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
