#!/usr/bin/env python3
"""Checks `bindtrace --json` output for test-timeline: the schema the README documents, and the
facts of each scenario. Prints what it finds; exits 1 on the first scenario failure."""
import json
import os
import sys

STAGES = [
    "bind_request", "apiserver_received", "etcd_txn_sent", "etcd_txn_received", "etcd_wal_fsync",
    "etcd_txn_response", "etcd_watch_event", "bind_response", "bind_response_received",
]
# Causal order: each pair must hold (a before or at b). etcd notifies its watchers and answers
# the Txn independently once the entry is committed, so the watch event may come first.
ORDER = [
    ("bind_request", "apiserver_received"), ("apiserver_received", "etcd_txn_sent"),
    ("etcd_txn_sent", "etcd_txn_received"), ("etcd_txn_received", "etcd_wal_fsync"),
    ("etcd_wal_fsync", "etcd_txn_response"), ("etcd_txn_response", "bind_response"),
    ("etcd_wal_fsync", "etcd_watch_event"), ("bind_response", "bind_response_received"),
]
# The pod's path before the bind: present for every pod created while the tracer ran.
CREATE_STAGES = ["create_request", "create_txn_response", "scheduler_informed"]
SCHEMA_VERSION = 1  # the README's
TOP = {"schema_version": int, "seq": int, "pod": dict, "node": str, "result": str, "status_code": int,
       "status_reason": str, "revision": int, "stages": dict, "watchers": list,
       "legs_ns": dict, "etcd_txn_attempts": list, "missing_stages": int, "gap": bool,
       "drops": bool, "started_midway": bool}
SEEN_STAGE = {"mono_ns": int, "wall_ns": int, "first_mono_ns": int, "last_mono_ns": int,
              "pid": int, "comm": str, "role": str}
# A stage timed by a bound, not by its message (the README's "timing"): only create_request, when
# the apiserver's Reads are not probed and its client is not traced; its note says what it is.
TIMINGS = {"upper_bound_last_read", "upper_bound_create_txn"}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check_schema(b):
    for key, typ in TOP.items():
        if not isinstance(b.get(key), typ):
            fail(f"bind {b.get('seq')}: '{key}' missing or not {typ.__name__}")
    if b["schema_version"] != SCHEMA_VERSION:
        fail(f"bind {b.get('seq')}: schema_version {b['schema_version']}, want {SCHEMA_VERSION}")
    if "citation" not in b:
        fail("no 'citation' key")
    for s in STAGES:
        st = b["stages"].get(s)
        if not isinstance(st, dict):
            fail(f"stage {s} missing from 'stages'")
        if "missing" in st:
            if not isinstance(st["missing"], str):
                fail(f"stage {s}: 'missing' is not a reason")
            continue
        for key, typ in SEEN_STAGE.items():
            if not isinstance(st.get(key), typ):
                fail(f"stage {s}: '{key}' missing or not {typ.__name__}")
        if "timing" in st:
            if s != "create_request" or st["timing"] not in TIMINGS or st["role"] != "kube-apiserver":
                fail(f"stage {s}: timing {st['timing']!r} by {st['role']}")
            if "at the latest" not in st.get("timing_note", ""):
                fail(f"stage {s}: timing {st['timing']!r} without a note saying it is a bound")
    for w in b["watchers"]:
        for key in ("watch_event_sent", "watch_event_received", "address", "encoding",
                    "node_before", "node_after", "pid", "comm"):
            if key not in w:
                fail(f"watcher without '{key}'")


def load(path):
    binds = []
    for line in open(path):
        line = line.strip()
        if line:
            b = json.loads(line)
            check_schema(b)
            binds.append(b)
    return binds


# A member of several etcd members may answer before its own WAL fsync of the entry ended (the
# others' quorum made it durable first): bindtrace says so in place of the fsync stage. With
# ETCD_MEMBERS > 1 (test-timeline sets it from the bed) that reason counts as the stage's; the
# order checks skip the fsync then.
LATE_FSYNC = ("answered during this member's WAL fsync", "answered before this member's WAL fsync")
late_fsyncs = set()


# RAFT=1 (test-timeline on a bed of several etcd members, the tracer given every member): each
# bind's raft entry with its stages, the leader, the quorum and each member's WAL fsync, and
# consistent: raft_committed after the quorum's fsyncs ended, the answer after raft_applied.
# RAFT=0: no raft at all (a single member: no 'raft' object, no raft legs).
RAFT_LEGS = ("propose", "replicate", "quorum_fsync", "commit_to_apply")
raft_counts = {"leader_answered": 0, "follower_answered": 0, "leader_changes": 0}


def check_raft(b):
    """What is wrong with b's raft part (a list, empty when right)."""
    if os.environ.get("RAFT", "0") != "1":
        extra = [leg for leg in RAFT_LEGS if leg in b["legs_ns"]]
        return (["a 'raft' object on a single member"] if "raft" in b else []) + \
            [f"raft leg {leg} on a single member" for leg in extra]
    r = b.get("raft")
    if not isinstance(r, dict):
        return ["no 'raft' object"]
    why = []
    if not r["entry_seen"]:
        return ["the entry not seen: " + r["raft_committed"].get("missing", "")]
    if not r["leader"] or not r["answering_member"]:
        why.append(f"leader {r['leader']} answering {r['answering_member']}")
    if len(r["quorum"]) != r["quorum_size"] or r["voters"] < 3:
        why.append(f"quorum {r['quorum']} of {r['quorum_size']}, {r['voters']} voters")
    led = r["leader"] == r["answering_member"]
    raft_counts["leader_answered" if led else "follower_answered"] += 1
    if r["leader_change"]:
        raft_counts["leader_changes"] += 1
    for s in ("raft_appended", "raft_quorum_fsync", "raft_committed", "raft_applied"):
        if "missing" in r[s]:
            why.append(f"{s} missing ({r[s]['missing']})")
    p = r["raft_proposed"]
    if led and not p.get("missing", "").startswith("the answering member was the leader"):
        why.append(f"leader answered, raft_proposed {p}")
    if not led and "missing" in p:
        why.append(f"raft_proposed missing ({p['missing']})")
    members = {m["id"]: m for m in r["members"]}
    for m in r["members"]:
        a = m["raft_appended"]
        if m["pid"] is None:
            continue
        if "missing" in a:
            why.append(f"member {m['id']} raft_appended missing ({a['missing']})")
        elif not a["first_mono_ns"] <= a["last_mono_ns"]:
            why.append(f"member {m['id']}: fsync end before start")
    if why:
        return why
    # Consistency: the commit announced after the quorum's fsyncs ended; the answer after the
    # answering member learned the commit.
    committed = r["raft_committed"]["mono_ns"]
    for q in r["quorum"]:
        end = members[q]["raft_appended"]["last_mono_ns"]
        if end > committed:
            why.append(f"raft_committed {committed} before quorum member {q}'s fsync ended {end}")
    answer = b["stages"]["etcd_txn_response"]
    if "missing" not in answer and answer["mono_ns"] < r["raft_applied"]["mono_ns"]:
        why.append(f"etcd answered ({answer['mono_ns']}) before raft_applied "
                   f"({r['raft_applied']['mono_ns']})")
    for leg in RAFT_LEGS:
        if leg == "propose" and led:
            continue
        if b["legs_ns"].get(leg) is None:
            why.append(f"raft leg {leg} not measured")
    return why


def complete(b):
    several = int(os.environ.get("ETCD_MEMBERS", "1")) > 1
    missing = []
    for s in STAGES:
        why = b["stages"][s].get("missing")
        if why is None:
            continue
        if s == "etcd_wal_fsync" and several and why.startswith(LATE_FSYNC):
            late_fsyncs.add(b["seq"])
            continue
        missing.append(s)
    return not missing, missing


def out_of_order(b):
    t = {s: b["stages"][s]["mono_ns"] for s in STAGES if "missing" not in b["stages"][s]}
    return [(a, t[a], c, t[c]) for a, c in ORDER if a in t and c in t and t[a] > t[c]]


def check_release(c, inspect_path):
    """The citation names the scheduler's release and commit as `bindtrace inspect` reads them
    from its binary (test-release checks inspect against the binary's own --version)."""
    rel = json.load(open(inspect_path))["release"]
    want_version = rel["release"]["value"] if rel["release"] else ""
    want_commit = rel["commit"]["value"] if rel["commit"] else ""
    if c.get("kubernetes_version") != want_version or c.get("commit") != want_commit:
        fail(f"citation names {c.get('kubernetes_version')!r} commit {c.get('commit')!r}, the "
             f"scheduler's binary states {want_version!r} commit {want_commit!r}")
    if c["kubernetes_version"] == "(devel)":
        fail("citation.kubernetes_version is (devel)")
    if c["commit"] and not all(ch in "0123456789abcdef" for ch in c["commit"]):
        fail(f"citation.commit {c['commit']!r} is not hex")
    print(f"citation: k8s {want_version or '(unknown)'}, commit {want_commit or '(unknown)'}")


def check_create(b):
    """The pod was created while traced: every create stage seen, in order before the bind, and
    the create's revision below the bind's."""
    missing = [s for s in CREATE_STAGES if "missing" in b["stages"].get(s, {"missing": "absent"})]
    if missing or b.get("created_before_attach"):
        # Each with the tracer's reason, and whether the bind saw drops or gaps: a CI log then
        # tells a lost record from one never decoded.
        why = {s: b["stages"].get(s, {}).get("missing", "absent") for s in missing}
        return (f"create stages missing: {why}; created_before_attach "
                f"{b.get('created_before_attach')}, create_revision {b.get('create_revision')}, "
                f"drops {b.get('drops')}, gap {b.get('gap')}")
    # etcd answers the create and notifies its watchers each on its own once it is applied:
    # the ADDED event can reach the scheduler before etcd has written its TxnResponse.
    t = {s: b["stages"][s]["mono_ns"] for s in CREATE_STAGES + ["bind_request"]}
    if not (t["create_request"] < t["create_txn_response"] and
            t["create_request"] < t["scheduler_informed"] < t["bind_request"]):
        return f"create stages out of order: {t}"
    if not 0 < b.get("create_revision", 0) < b["revision"]:
        return f"create_revision {b.get('create_revision')} vs revision {b['revision']}"
    return None


def release_source(c):
    """The release's source of a k8s.io/kubernetes path: the module cache's copy at the cited
    release (GOMODCACHE, else ~/go/pkg/mod), fetched through the module proxy (go mod download)
    when the cache lacks it; None when it cannot be had."""
    import subprocess
    version = c["kubernetes_version"]
    try:
        out = subprocess.run(["go", "mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
                             capture_output=True, text=True, cwd="/", timeout=600)
        d = json.loads(out.stdout or "{}").get("Dir", "")
        if d and os.path.isdir(d):
            return d
        print(f"go mod download k8s.io/kubernetes@{version}: "
              f"{(out.stdout + out.stderr).strip()[:300]}")
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        print(f"go mod download k8s.io/kubernetes@{version}: {e}")
    return None


def source_line(src, path, line):
    rel = path.split("k8s.io/kubernetes", 1)[1]
    rel = rel.split("/", 1)[1] if rel.startswith("@") else rel.lstrip("/")
    lines = open(f"{src}/{rel}").read().split("\n")
    return lines, lines[line - 1]


def expected_line(lines, func, call):
    """The line (1-based) in the body of the function whose declaration starts with func that
    first contains call; 0 when there is none. Read from the release's source, so each release's
    expected line is found, not written down."""
    inside = False
    for i, text in enumerate(lines, 1):
        if text.startswith(func):
            inside = True
        elif inside and text.startswith("}"):
            return 0
        if inside and call in text:
            return i
    return 0


def check_citation(c, async_calls=False):
    """The cited line is the scheduler's bind step in schedule_one.go, checked against the
    release's module source: at that line (*Scheduler).bind calls RunBindPlugins; its caller is
    the binding cycle's call of sched.bind; the chain ends at the POST. With async API calls the
    POST came from a dispatcher goroutine and was joined with the stack that queued it."""
    if c.get("rule") != "bind_step" or not c["file"].endswith("pkg/scheduler/schedule_one.go") \
            or not c["function"].endswith(".(*Scheduler).bind"):
        fail(f"cited {c['file']}:{c['line']} {c['function']} (rule {c.get('rule')}), not the "
             "bind step in schedule_one.go")
    caller = c.get("caller") or {}
    if not caller.get("function", "").endswith(".(*Scheduler).bindingCycle"):
        fail(f"caller {caller}, not the binding cycle")
    chain = c.get("chain") or []
    if not chain or not chain[-1]["function"].endswith("v1.(*pods).Bind"):
        fail(f"the chain does not end at the POST ((*pods).Bind): {chain[-1:]}")
    # A module-zip build has no commit (check_release holds it to what the binary states).
    if c.get("commit") and len(c["commit"]) != 40:
        fail(f"citation.commit {c.get('commit')!r} is not 40 hex digits")
    src = release_source(c)
    if not src:
        fail(f"no module source of k8s.io/kubernetes@{c['kubernetes_version']} to check against")
    lines, text = source_line(src, c["file"], c["line"])
    want = expected_line(lines, "func (sched *Scheduler) bind(", "RunBindPlugins(")
    want_caller = expected_line(lines, "func (sched *Scheduler) bindingCycle(", "sched.bind(")
    print(f"expected from the source of {c['kubernetes_version']}: schedule_one.go:{want} "
          f"(bind calls RunBindPlugins), caller :{want_caller} (bindingCycle calls sched.bind)")
    if not want or not want_caller:
        fail(f"the source of {c['kubernetes_version']} has no bind step's call ({want}) or no "
             f"binding cycle's call of it ({want_caller})")
    if c["line"] != want:
        fail(f"cited {c['file']}:{c['line']} ({text.strip()!r}), the bind step's call is at "
             f":{want} in {c['kubernetes_version']}")
    _, ctext = source_line(src, caller["file"], caller["line"])
    if not caller["file"].endswith("pkg/scheduler/schedule_one.go") or \
            caller["line"] != want_caller:
        fail(f"caller {caller['file']}:{caller['line']} ({ctext.strip()!r}), the binding "
             f"cycle's call is at schedule_one.go:{want_caller} in {c['kubernetes_version']}")
    queued = c.get("queued")
    dispatched = [f for f in chain if f.get("goroutine") == "dispatcher"]
    if async_calls and (not queued or not dispatched or
                        not queued["probe"].endswith("(*APICache).BindPod")):
        fail(f"async API calls: the POST was not joined with its queueing stack: {queued}")
    if not async_calls and (queued or dispatched):
        fail(f"a queueing stack without async API calls: {queued}")
    print(f"cited line at {c['kubernetes_version']} ({src}): {c['file']}:{c['line']}: "
          f"{text.strip()}; caller :{caller['line']}: {ctext.strip()}"
          + (f"; POST by a dispatcher goroutine, queued by tid {queued['tid']}" if queued else ""))


def kubectl_frames(watch_path, pod):
    """(NAME, NODE) of each line `kubectl get pods -w -o wide` printed for the pod, in order; the
    NODE column found by the header; "<none>" read as ""."""
    lines = open(watch_path).read().split("\n")
    header = next((l for l in lines if l.startswith("NAME ")), None)
    if header is None:
        fail(f"kubectl printed no header: {lines[:3]}")
    col = header.split().index("NODE")
    out = []
    for l in lines:
        f = l.split()
        if f and f[0] == pod:
            if len(f) <= col:
                fail(f"kubectl line without a NODE column: {l!r}")
            out.append("" if f[col] == "<none>" else f[col])
    return out


def check_frames(w, printed, node, rv, who):
    """A watcher's frames, ADDED to the MODIFIED that set nodeName, against what it printed (the
    lines up to the first with the node), and the check line bindtrace states for them."""
    upto = printed[:printed.index(node) + 1] if node in printed else printed
    frames = w.get("frames") or []
    got = [f["node_name"] for f in frames]
    if w.get("frames_start") != "added" or not frames or frames[0]["type"] != "ADDED":
        fail(f"{who}: frames do not begin at ADDED: {w.get('frames_start')} {frames[:1]}")
    if w.get("frames_not_kept"):
        fail(f"{who}: {w['frames_not_kept']} frames not kept")
    if got != upto:
        fail(f"{who}: bindtrace says it was sent nodeName {got}, it printed {upto}")
    if frames[-1]["type"] != "MODIFIED" or frames[-1]["resource_version"] != int(rv):
        fail(f"{who}: last frame {frames[-1]}, not the MODIFIED at the bind's revision {rv}")
    missed = [f for f in frames if f["received_mono_ns"] is None]
    if missed:
        fail(f"{who}: frames sent but not seen read: {missed}")
    def show(f):
        return f'{f["type"]} nodeName "{f["node_name"]}"'
    if len(frames) == 2:
        want = f'2 frames: {show(frames[0])}, {show(frames[1])}; nothing between'
        if w["frames_check"] != want:
            fail(f"{who}: check line {w['frames_check']!r}, want {want!r}")
    else:
        changed = [f for f in frames[1:-1] if f["node_name"] != ""]
        tail = (f"; {len(frames) - 2} between, none changed nodeName" if not changed else
                f"; {len(changed)} of {len(frames) - 2} between changed nodeName")
        if tail not in w["frames_check"]:
            fail(f"{who}: check line {w['frames_check']!r} lacks {tail!r}")
    print(f"{who} frames (as it printed {len(printed)} lines, {len(upto)} up to the bind): "
          f"{w['frames_check']}")


def one(path, node, rv, watcher_pid, inspect_path=None, watch_path=None):
    binds = load(path)
    if len(binds) != 1:
        fail(f"{len(binds)} timelines, want 1")
    b = binds[0]
    ok, missing = complete(b)
    if not ok:
        fail(f"missing stages: {missing}: " +
             "; ".join(b["stages"][s]["missing"] for s in missing))
    why = check_raft(b)
    if why:
        fail("raft: " + "; ".join(why))
    if "raft" in b:
        r = b["raft"]
        print(f"raft: entry {r['index']} term {r['term']}, leader {r['leader']}, answered by "
              f"{r['answering_member']}, quorum {','.join(r['quorum'])}; legs " +
              ", ".join(f"{leg} %.3f ms" % (b["legs_ns"][leg] / 1e6)
                        for leg in RAFT_LEGS if b["legs_ns"].get(leg) is not None))
    for a, ta, c, tc in out_of_order(b):
        fail(f"{a} ({ta}) after {c} ({tc})")
    if b["node"] != node:
        fail(f"node {b['node']!r}, pod's spec.nodeName {node!r}")
    if str(b["revision"]) != rv:
        fail(f"revision {b['revision']}, pod's resourceVersion {rv}")
    if b["result"] != "bound" or b["status_code"] != 201:
        fail(f"result {b['result']} {b['status_code']}")
    fs = b["stages"]["etcd_wal_fsync"]
    if "missing" in fs:
        print("etcd_wal_fsync:", fs["missing"])
    elif not fs["first_mono_ns"] <= fs["last_mono_ns"]:
        fail("fsync end before start")
    err = check_create(b)
    if err:
        fail(err)
    print("create: create_to_informed %.3f ms, scheduling %.3f ms, create revision %d" % (
        b["legs_ns"]["create_to_informed"] / 1e6, b["legs_ns"]["scheduling"] / 1e6,
        b["create_revision"]))
    c = b["citation"]
    if not c or not c.get("file") or not c.get("line"):
        fail(f"no citation: {c}")
    print(f"cited: {c['file']}:{c['line']} ({c['function']}), k8s {c['kubernetes_version']}")
    if inspect_path:
        check_release(c, inspect_path)
    import os
    check_citation(c, os.environ.get("SCHEDULER_ASYNC_API_CALLS") == "1")
    kubectl = [w for w in b["watchers"] if w["comm"] == "kubectl" or
               "kubectl" in w.get("user_agent", "") or str(w["pid"]) == watcher_pid]
    if not kubectl:
        fail("kubectl is not among the watchers: " +
             ", ".join(f"{w['comm']}({w['pid']}) {w['address']}" for w in b["watchers"]))
    for w in kubectl:
        if w["node_before"] != "" or w["node_after"] != node:
            fail(f"kubectl saw nodeName {w['node_before']!r} -> {w['node_after']!r}")
        got = w["watch_event_received"]
        if "missing" in got:
            fail(f"kubectl's watch_event_received missing: {got['missing']}")
        if got["comm"] != "kubectl" or got["mono_ns"] < w["watch_event_sent"]["mono_ns"]:
            fail(f"kubectl's watch_event_received: {got}")
        if watch_path:
            check_frames(w, kubectl_frames(watch_path, b["pod"]["name"]), node, rv, "kubectl")
    # The scheduler's own informer watches pods too (over HTTP/2, or HTTP/1.1 with
    # DISABLE_HTTP2=1, a stream begun long before the tracer attached).
    sched = [w for w in b["watchers"] if w["comm"] == "kube-scheduler"]
    if not sched or any("missing" in w["watch_event_received"] or
                        w["node_after"] != node for w in sched):
        fail("kube-scheduler's informer is not a watcher that received nodeName " + node)
    for w in sched:
        if w.get("frames_start") != "added" or w.get("frames_changed_node") or \
                not w["frames_check"].startswith("2 frames: ADDED"):
            fail(f"kube-scheduler's frames: {w.get('frames_check')}")
        print(f"kube-scheduler frames: {w['frames_check']}")
    print(f"watchers: " + ", ".join(
        f"{w['comm'] or '?'}({w['pid']}) {w['encoding']} {w['node_before']!r}->{w['node_after']!r}"
        for w in b["watchers"]))
    print("total %.3f ms" % (b["legs_ns"]["total"] / 1e6))


def truth_of(pods_file):
    """name -> (node, resourceVersion, PodScheduled reason, PodScheduled message) from the API
    (kubectl)."""
    truth = {}
    for line in open(pods_file):
        f = line.rstrip("\n").split("\t")
        if len(f) >= 3:
            truth[f[0]] = (f[1], f[2].strip(), f[3].strip() if len(f) > 3 else "",
                           f[4].strip() if len(f) > 4 else "")
    return truth


def problems(b, truth):
    """What is wrong with a bound pod's timeline: a stage missing (create stages included), out
    of causal order, or a node or revision other than the API's (truth_of) for its name."""
    ok, missing = complete(b)
    why = []
    if not ok:
        why.append("missing " + ", ".join(f"{s} ({b['stages'][s]['missing']})"
                                          for s in missing))
    err = check_create(b)
    if err:
        why.append(err)
    if b["result"] != "bound" or b["status_code"] != 201:
        why.append(f"result {b['result']} {b['status_code']}")
    node, rv, _, _ = truth.get(b["pod"]["name"], ("?", "?", "", ""))
    if b["node"] != node:
        why.append(f"node {b['node']!r}, the API says {node!r}")
    if str(b["revision"]) != rv:
        why.append(f"revision {b['revision']}, the API says resourceVersion {rv}")
    if ok:
        why += [f"{a} after {c}" for a, _, c, _ in out_of_order(b)]
    why += ["raft: " + w for w in check_raft(b)]
    return why


def generated(path, name, pods_file, prefix):
    """A pod created with metadata.generateName PREFIX, named NAME by the apiserver's 201 (as the
    creating client printed it): one timeline, under that name, complete and consistent with the
    API, its create_request (read before the name existed) included."""
    binds = load(path)
    truth = truth_of(pods_file)
    if not name.startswith(prefix) or len(name) <= len(prefix):
        fail(f"the client named the pod {name!r}: not one generated from {prefix!r}")
    if name not in truth:
        fail(f"the API has no pod {name!r}")
    if len(binds) != 1:
        fail(f"{len(binds)} timelines ({[b['pod']['name'] for b in binds]}), want 1")
    b = binds[0]
    if b["pod"]["name"] != name:
        fail(f"the timeline names the pod {b['pod']['name']!r}, its 201 named it {name!r}")
    why = problems(b, truth)
    if why:
        fail(f"{name}: " + "; ".join(why))
    cr = b["stages"]["create_request"]
    print(f"{name} (generateName {prefix!r}): complete, node {b['node']}, revision "
          f"{b['revision']}, create_request by {cr['comm']}({cr['pid']}, timed by "
          f"{cr.get('timing', 'its message')}), create revision {b['create_revision']}")
    return b


def untraced(path, name, pods_file, prefix):
    """As generated, for a pod created by a client bindtrace does not trace: with the apiserver's
    Reads not probed (the default) its create_request is the apiserver's, on the client's
    connection, a bound said to be one, before the create's answer from etcd."""
    b = generated(path, name, pods_file, prefix)
    cr = b["stages"]["create_request"]
    probed = os.environ.get("BINDTRACE_READS_VIA_SYSCALL") in ("0", "peers")
    if probed:
        if "timing" in cr:
            fail(f"{name}: the apiserver's Reads probed, yet create_request timed by {cr['timing']}")
        return
    if cr.get("timing") not in TIMINGS:
        fail(f"{name}: created by a client not traced, create_request timed by "
             f"{cr.get('timing', 'its message')!r}, want a bound")
    if cr["role"] != "kube-apiserver" or "conn" not in cr:
        fail(f"{name}: create_request by {cr['role']}, conn {cr.get('conn')}")
    print(f"   {name}: create_request {cr['timing']} "
          f"({(b['stages']['create_txn_response']['mono_ns'] - cr['mono_ns']) / 1e6:.3f} ms "
          f"before etcd answered the create)")


def burst(path, n, pods_file, prefix="burst"):
    """n pods PREFIX1..PREFIXn: one complete timeline each, in causal order, bound with 201 to
    the node the API shows, at the pod's resourceVersion."""
    binds = load(path)
    truth = truth_of(pods_file)
    want = {f"{prefix}{i}" for i in range(1, int(n) + 1)}
    names = {}
    for b in binds:
        names.setdefault(b["pod"]["name"], []).append(b)
    bad = []
    for b in binds:
        why = problems(b, truth)
        if why:
            bad.append((b["pod"]["name"], why))
    # BURST_WATCHER_PID: a `kubectl get pods -w` ran through the burst: each bind's MODIFIED
    # frame to it, received, with the bind's node.
    kpid = os.environ.get("BURST_WATCHER_PID")
    if kpid:
        seen = 0
        for b in binds:
            got = [w for w in b["watchers"] if str(w["pid"]) == kpid and
                   w["node_after"] == b["node"] and
                   "missing" not in w["watch_event_received"]]
            if got:
                seen += 1
            else:
                bad.append((b["pod"]["name"], [f"kubectl -w (pid {kpid}) not a watcher that "
                                               f"received the bind's frame"]))
        print(f"   kubectl -w (pid {kpid}) received the bind's frame in {seen} of {len(binds)}")
    dup = sorted(k for k, v in names.items() if len(v) > 1)
    absent = sorted(want - set(names))
    extra = sorted(set(names) - want)
    print(f"{len(binds)} timelines, {len(names)} pods, {len(bad)} wrong or incomplete, "
          f"{len(dup)} pods twice, {len(absent)} pods without one, {len(extra)} others")
    timings = {}
    for b in binds:
        t = b["stages"].get("create_request", {}).get("timing", "its message")
        timings[t] = timings.get(t, 0) + 1
    print("   create_request timed by: " +
          ", ".join(f"{k} {v}" for k, v in sorted(timings.items())))
    if late_fsyncs:
        print(f"   {len(late_fsyncs)} answered by their etcd member before its own WAL fsync "
              "ended (the other members' quorum made them durable)")
    if os.environ.get("RAFT", "0") == "1":
        print(f"   raft: {raft_counts['follower_answered']} answered by a follower, "
              f"{raft_counts['leader_answered']} by the leader, "
              f"{raft_counts['leader_changes']} leader changes")
    for x in bad[:5]:
        print("  ", x[0] + ":", "; ".join(x[1]))
    if absent:
        print("   without a timeline:", absent[:10])
    if bad or dup or absent or extra or len(binds) != int(n):
        fail(f"want {n} complete timelines, one per pod, node and revision as the API says, "
             "in causal order, every create stage present")


def check_giveup(c, inspect_path):
    """The give-up is cited in the scheduler's failure handler in schedule_one.go, at its release
    and commit, and the cited line, read in the release's module source, is inside
    `func (sched *Scheduler) handleSchedulingFailure(` and calls updatePod (the status PATCH)."""
    if not c or not c.get("gave_up") or c.get("rule") != "failure_handler" or \
            not c.get("file", "").endswith("pkg/scheduler/schedule_one.go") or \
            not c.get("function", "").endswith(".(*Scheduler).handleSchedulingFailure"):
        fail(f"give-up not cited in the failure handler: "
             f"{c and (c.get('rule'), c.get('file'), c.get('line'), c.get('function'))}")
    check_release(c, inspect_path)
    if c.get("commit") and len(c["commit"]) != 40:
        fail(f"citation.commit {c['commit']!r} is not 40 hex digits")
    src = release_source(c)
    if not src:
        fail(f"no module source of k8s.io/kubernetes@{c['kubernetes_version']} to check against")
    lines, text = source_line(src, c["file"], c["line"])
    func = next((l for l in reversed(lines[:c["line"]]) if l.startswith("func ")), "")
    want = expected_line(lines, "func (sched *Scheduler) handleSchedulingFailure(", "updatePod(")
    print(f"expected from the source of {c['kubernetes_version']}: schedule_one.go:{want} "
          "(handleSchedulingFailure calls updatePod)")
    if not want or c["line"] != want:
        fail(f"{c['file']}:{c['line']} at {c['kubernetes_version']} reads {text.strip()!r} in "
             f"{func[:70]!r}: the failure handler's status update is at :{want}")
    chain = c.get("chain") or []
    if not chain or not chain[-1]["function"].endswith("scheduler.updatePod"):
        fail(f"the chain does not end at updatePod: {chain[-1:]}")
    # With SchedulerAsyncAPICalls updatePod hands the PATCH to the API cache (a dispatcher
    # goroutine sends it): the stack is still the failure handler's, and says so.
    async_calls = os.environ.get("SCHEDULER_ASYNC_API_CALLS") == "1"
    if c.get("patch_dispatched") is not async_calls:
        fail(f"citation.patch_dispatched {c.get('patch_dispatched')!r} with async API calls "
             f"{'on' if async_calls else 'off'}")
    print(f"gave up at {c['file']}:{c['line']} ({src}): {text.strip()} in {func[:70]}; "
          f"PATCH {'by a dispatcher goroutine' if async_calls else 'from updatePod itself'}")


def unschedulable(path, name, pods_file, inspect_path=None):
    """One entry, for this pod only: unschedulable, no node, the reason the API shows in its
    PodScheduled condition; and the API shows no node."""
    binds = load(path)
    truth = truth_of(pods_file)
    node, _, reason, message = truth.get(name, ("?", "?", "?", "?"))
    if node:
        fail(f"{name}: the API shows it on node {node!r}: not a pod that fits no node")
    if len(binds) != 1 or binds[0]["pod"]["name"] != name:
        fail(f"{len(binds)} entries ({[b['pod']['name'] for b in binds]}), want one, for {name}")
    b = binds[0]
    if b["result"] != "unschedulable":
        fail(f"{name}: result {b['result']}")
    if b["node"]:
        fail(f"{name}: a node {b['node']!r}")
    if b["status_reason"] != reason:
        fail(f"{name}: status_reason {b['status_reason']!r}, PodScheduled says {reason!r}")
    # The scheduler's message, from its PATCH or the patched Pod: the API's (the first one, when
    # a retry has since rewritten it with the same text).
    if not isinstance(b.get("status_message"), str) or not b["status_message"]:
        fail(f"{name}: no status_message (the scheduler's PodScheduled message)")
    if b["status_message"] != message[:len(b["status_message"])] or not message:
        fail(f"{name}: status_message {b['status_message']!r}, PodScheduled says {message!r}")
    print(f"{name}: unschedulable ({b['status_reason']}): {b['status_message']}")
    if inspect_path:
        check_giveup(b.get("citation"), inspect_path)


def report(md_path, jsonl_path):
    """The report's exercise section, against the same bind's JSON: the sub-path's four steps
    each observed, schedule_one.go cited at the citation's line and commit, etcd's nodeName
    before/after and each watcher's check line, and the four reasons for a separate write each
    observed with the bind's own values (UID, compared revision, the apiserver's pid)."""
    md = open(md_path).read()
    b = load(jsonl_path)[0]
    if "## The exercise, from this bind's evidence" not in md:
        fail("no exercise section in the report")
    ex = md.split("## The exercise, from this bind's evidence", 1)[1].split("\n## ", 1)[0]
    if "*Not observed*" in ex:
        fail("a claim of the exercise not observed: " +
             "; ".join(l for l in ex.split("\n") if "*Not observed*" in l))
    c = b["citation"]
    want = [
        "1. **watch cache** (kube-apiserver): sent the pod's ADDED",
        "2. **scheduler informer** (kube-scheduler): read the ADDED",
        f"3. **schedule_one.go**: `{c['file']}:{c['line']}`",
        f"`{c['caller']['file']}:{c['caller']['line']}`",
        f"commit `{c['commit']}`" if c["commit"] else "3. **schedule_one.go**",
        f"4. **Binding**: kube-scheduler POSTed `pods/{b['pod']['name']}/binding` (target "
        f"`{b['node']}`)",
        f"- **etcd** (the watch event's prev_kv at revision {b['revision']}): \"\" → "
        f"\"{b['node']}\"",
        f"carries `metadata.uid` `{b['pod']['uid']}`",
        f"compared `mod_revision == {b['etcd_txn_attempts'][-1]['compare_mod_revision']}` and "
        f"succeeded, writing revision {b['revision']}",
        f"The Txn was sent by kube-apiserver (pid {b['stages']['etcd_txn_sent']['pid']})",
        f"its informer read the MODIFIED carrying nodeName \"{b['node']}\" (revision "
        f"{b['revision']})",
    ]
    want += [f"{w['frames_check'].replace('|', chr(92) + '|')}" for w in b["watchers"]]
    lacking = [w for w in want if w not in ex]
    if lacking:
        fail(f"the exercise section lacks: {lacking}")
    print(f"report {md_path}: the exercise section holds {len(want)} facts of the bind")


def single(path, name, pods_file, prefix, inspect_path):
    """As generated, traced with single uprobes (BINDTRACE_NO_UPROBE_MULTI=1, as on kernels
    before 6.6): the same complete timeline, and its bind cited as with uprobe_multi."""
    import os
    b = generated(path, name, pods_file, prefix)
    c = b.get("citation")
    if not c or not c.get("file") or not c.get("line"):
        fail(f"{name}: no citation with single uprobes: {c}")
    check_release(c, inspect_path)
    check_citation(c, os.environ.get("SCHEDULER_ASYNC_API_CALLS") == "1")


def again(path, name, pods_file, evidence_dir, http2="1"):
    """A pod deleted and made again under NAME, traced by a tracer started after its first bind:
    one timeline, complete and consistent with the API, and (HTTP2 "1") in the evidence's frames
    a Binding request whose path was inferred (path_inferred) from the Binding it carried: the
    scheduler sent the :path as an HPACK entry made at the first bind. A scheduler on HTTP/1.1
    ("0") sends every path literally: no frame may have it inferred."""
    binds = load(path)
    truth = truth_of(pods_file)
    if len(binds) != 1 or binds[0]["pod"]["name"] != name:
        fail(f"{len(binds)} timelines ({[b['pod']['name'] for b in binds]}), want one of {name}")
    why = problems(binds[0], truth)
    if why:
        fail(f"{name}: " + "; ".join(why))
    inferred = []
    for d in os.listdir(evidence_dir):
        msgs = os.path.join(evidence_dir, d, "messages.jsonl")
        if not os.path.exists(msgs):
            continue
        for line in open(msgs):
            m = json.loads(line)
            m = m.get("message", m)
            if m.get("path_inferred") and m.get("path", "").endswith(f"/pods/{name}/binding"):
                inferred.append(m.get("kind"))
    if http2 == "0":
        if inferred:
            fail(f"{name}: HTTP/1.1, yet a path inferred in {evidence_dir}")
    elif not inferred:
        fail(f"{name}: no frame in {evidence_dir} with its binding path inferred: the scheduler "
             "sent the :path as a literal, so this run did not meet the case")
    print(f"{name} made again: complete, node {binds[0]['node']}, revision "
          f"{binds[0]['revision']}; frames with the path inferred: "
          f"{', '.join(sorted(inferred)) if inferred else 'none (HTTP/1.1: every path literal)'}")


if __name__ == "__main__":
    {"one": one, "burst": burst, "unschedulable": unschedulable,
     "report": report, "generated": generated,
     "untraced": untraced, "single": single, "again": again}[sys.argv[1]](*sys.argv[2:])
