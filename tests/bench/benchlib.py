"""What the scale and soak benchmarks measure beyond tests/bench/overhead's bursts: BPF program
run counts and the ring buffer's byte count of a given tracer process (read from outside, so any
bindtrace can be measured), the CPU of the machine's other processes, kube-apiserver's request
latency histogram, and the spread of with/without ratios. A module (not executable: tests/bench/run
runs every executable file here).
"""
import ctypes
import glob
import json
import mmap
import os
import re
import shutil
import statistics
import struct
import subprocess
import time
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def load_overhead():
    """tests/bench/overhead as a module: its bed, API client, watcher, tracer and bursts."""
    path = os.path.join(TOP, "tests/bench/overhead")
    loader = SourceFileLoader("overhead", path)
    mod = module_from_spec(spec_from_loader("overhead", loader))
    loader.exec_module(mod)
    return mod


def bindtrace_path():
    """The tracer measured: $BINDTRACE, else build/bindtrace."""
    return os.environ.get("BINDTRACE") or os.path.join(TOP, "build/bindtrace")


# ---------------------------------------------------------------------------------------------
# BPF: run counts and ring-buffer bytes of one tracer process

SYS_BPF = 321  # x86-64
BPF_MAP_GET_FD_BY_ID = 14
BPF_ENABLE_STATS = 32
BPF_STATS_RUN_TIME = 0
BPF_MAP_TYPE_RINGBUF = 27
BPF_PROG_TYPE_KPROBE = 2  # uprobes are programs of this type

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    fd = _libc.syscall(ctypes.c_long(SYS_BPF), ctypes.c_int(cmd), buf, ctypes.c_uint(128))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


def enable_bpf_stats():
    """Turns BPF run-time statistics on for as long as the returned fd is open (the kernel's
    BPF_ENABLE_STATS: when this process exits they go back to what kernel.bpf_stats_enabled
    says, so a crashed bench leaves nothing on). They cost each program run two clock reads."""
    return _bpf(BPF_ENABLE_STATS, struct.pack("<I", BPF_STATS_RUN_TIME))


def _fdinfo(pid):
    """fdinfo of every BPF object pid holds: (kind, dict), kind 'prog', 'map' or 'link'."""
    out = []
    for fd in glob.glob(f"/proc/{pid}/fd/*"):
        try:
            target = os.readlink(fd)
            if "bpf" not in target:
                continue
            with open(fd.replace("/fd/", "/fdinfo/")) as f:
                info = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        except OSError:
            continue
        kind = ("prog" if "bpf-prog" in target else "map" if "bpf-map" in target else
                "link" if "link" in target else None)
        if kind:
            out.append((kind, info))
    return out


class BpfCounts:
    """Run counts of a tracer's BPF programs, split into uprobes (programs of the kprobe type:
    this kernel has no kprobes) and tracepoints, and its ring buffers' producer positions (bytes
    reserved since it started, 8-byte record headers included)."""

    def __init__(self, pid):
        self.pid = pid
        self.rings = []
        for kind, info in _fdinfo(pid):
            if kind == "map" and int(info.get("map_type", -1)) == BPF_MAP_TYPE_RINGBUF:
                self.rings.append(self._map_producer(int(info["map_id"])))

    @staticmethod
    def _map_producer(map_id):
        fd = _bpf(BPF_MAP_GET_FD_BY_ID, struct.pack("<III", map_id, 0, 0))
        try:
            # Page 0 is the consumer position (writable), page 1 the producer's (read-only).
            return mmap.mmap(fd, mmap.PAGESIZE, mmap.MAP_SHARED, mmap.PROT_READ,
                             offset=mmap.PAGESIZE)
        finally:
            os.close(fd)

    def ring_bytes(self):
        return sum(struct.unpack_from("<Q", m, 0)[0] for m in self.rings)

    def sample(self):
        """{'uprobe': (runs, run ns), 'tracepoint': (...), 'other': (...), 'rb_bytes': n}."""
        progs = {}
        for kind, info in _fdinfo(self.pid):
            if kind == "prog" and "prog_id" in info:
                progs[int(info["prog_id"])] = (int(info.get("prog_type", -1)),
                                               int(info.get("run_cnt", 0)),
                                               int(info.get("run_time_ns", 0)))
        out = {"uprobe": [0, 0], "tracepoint": [0, 0], "other": [0, 0]}
        for ptype, cnt, ns in progs.values():
            k = "uprobe" if ptype == BPF_PROG_TYPE_KPROBE else \
                "tracepoint" if ptype in (5, 17) else "other"
            out[k][0] += cnt
            out[k][1] += ns
        out["progs"] = len(progs)
        out["rb_bytes"] = self.ring_bytes()
        return out

    @staticmethod
    def diff(a, b):
        return {k: (b[k] - a[k] if isinstance(a[k], int) else
                    [y - x for x, y in zip(a[k], b[k])]) for k in a if k != "progs"}


def bpf_stats_on():
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# CPU: ours and everybody else's


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(rest[11]) + int(rest[12])) / CLK_TCK


def schedstat_of(pid):
    """A process's CPU and its time runnable but waiting for a CPU, in ns resolution, and how many
    times its threads were put on a CPU: each thread's run and run-queue times and timeslice
    count (/proc/PID/task/*/schedstat). /proc/PID/stat counts in clock ticks (10 ms), too coarse
    for a process that uses a few hundred ms in a window; a thread that exits takes its counts
    with it (Go's threads live as long as the process). The count is one per wakeup and one per
    return after a preemption: work that arrives in fewer, larger pieces (watch events batched
    into one frame) takes fewer of them for the same CPU."""
    run = wait = slices = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0, 0.0, 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                fields = f.read().split()
            run, wait = run + int(fields[0]), wait + int(fields[1])
            slices += int(fields[2])
        except (OSError, ValueError, IndexError):
            pass
    return run / 1e9, wait / 1e9, slices


def io_syscalls(pid):
    """The read-like and write-like system calls a process has made (/proc/PID/io syscr and
    syscw: read, recvfrom, write, sendto... of every thread, those that exited too)."""
    out = {}
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                k, _, v = line.partition(":")
                out[k] = int(v)
    except (OSError, ValueError):
        return 0
    return out.get("syscr", 0) + out.get("syscw", 0)


def machine_busy_seconds():
    """CPU seconds the whole machine spent busy (every core; not idle, not iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest is inside user)
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / CLK_TCK


class Snapshot:
    """CPU of the roles that matter at one moment, and of the whole machine; `fine`: the roles
    also read in ns (schedstat_of), their CPU in self.fine, their time waiting for a CPU in
    self.wait, the times their threads were put on a CPU in self.slices and their read and write
    system calls in self.syscalls."""

    def __init__(self, roles, fine=()):
        self.t = time.monotonic()
        self.cpu = {name: sum(cpu_seconds(p) for p in pids) for name, pids in roles.items()}
        stats = {name: [schedstat_of(p) for p in roles[name]] for name in fine}
        self.fine = {name: sum(run for run, _, _ in v) for name, v in stats.items()}
        self.wait = {name: sum(wait for _, wait, _ in v) for name, v in stats.items()}
        self.slices = {name: sum(n for _, _, n in v) for name, v in stats.items()}
        self.syscalls = {name: sum(io_syscalls(p) for p in roles[name]) for name in fine}
        self.busy = machine_busy_seconds()


def others_cores(a, b):
    """Cores used between two snapshots by processes outside the roles (other engineers' work,
    builds): the machine's busy time less ours, per second."""
    dt = b.t - a.t
    if dt <= 0:
        return 0.0
    ours = sum(b.cpu[k] - a.cpu[k] for k in a.cpu)
    return max(0.0, (b.busy - a.busy - ours) / dt)


def loadavg():
    return os.getloadavg()[0]


# ---------------------------------------------------------------------------------------------
# kube-apiserver's request latency histogram

HIST_RE = re.compile(r'^(\w+)_bucket\{(.*)\} (\S+)$')
LABEL_RE = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
LONG_RUNNING = ("WATCH", "CONNECT")


def bucket_lines(text, families):
    """(family, labels, le, count) of each bucket line of the histograms named."""
    for line in text.splitlines():
        m = HIST_RE.match(line)
        if not m or m.group(1) not in families:
            continue
        labels = dict(LABEL_RE.findall(m.group(2)))
        yield m.group(1), labels, float(labels["le"]), float(m.group(3))


def is_slo_request(labels):
    """A resource request but a long-running one (WATCH, CONNECT), as the apiserver's latency SLO
    counts them (not /metrics, /healthz and other non-resource paths: the bench's own scrapes)."""
    return labels.get("verb") not in LONG_RUNNING and bool(labels.get("resource"))


def request_buckets(text):
    """Cumulative counts by upper bound of apiserver_request_duration_seconds over every
    is_slo_request, by kind of request: {(verb, resource, subresource): {le: count}}."""
    out = {}
    for _, labels, le, c in bucket_lines(text, ("apiserver_request_duration_seconds",)):
        if not is_slo_request(labels):
            continue
        kind = out.setdefault((labels["verb"], labels["resource"], labels.get("subresource", "")),
                              {})
        kind[le] = kind.get(le, 0) + c
    return out


# Where a request's time goes, from the apiserver's own histograms (each has a bucket at 0.2 s):
# the request less its wait in API Priority and Fairness' queues (and webhooks: none here), that
# wait, and the apiserver's requests to etcd (a bind's Txn, WAL fsync included).
PARTS = {"less_queue": "apiserver_request_sli_duration_seconds",
         "queue_wait": "apiserver_flowcontrol_request_wait_duration_seconds",
         "etcd": "etcd_request_duration_seconds"}


def part_buckets(text):
    """{part: {le: count}} of PARTS, each summed over its labels (the SLI one over
    is_slo_request only)."""
    family_part = {v: k for k, v in PARTS.items()}
    out = {k: {} for k in PARTS}
    for family, labels, le, c in bucket_lines(text, family_part):
        part = family_part[family]
        if part == "less_queue" and not is_slo_request(labels):
            continue
        out[part][le] = out[part].get(le, 0) + c
    return out


# etcd's own work that can slow every request for a while, whoever runs beside it: a compaction of
# old revisions (the apiserver asks for one every 5 minutes), a raft snapshot (every 10,000
# applied entries), and WAL fsyncs or backend commits over SLOW_DISK_S (their buckets double from
# 1 ms).
ETCD_COUNTERS = {"compactions": "etcd_debugging_mvcc_db_compaction_total_duration_milliseconds_count",
                 "compaction_ms": "etcd_debugging_mvcc_db_compaction_total_duration_milliseconds_sum",
                 "snapshots": "etcd_debugging_snap_save_total_duration_seconds_count"}
ETCD_DISK = {"wal_fsync_slow": "etcd_disk_wal_fsync_duration_seconds",
             "commit_slow": "etcd_disk_backend_commit_duration_seconds"}
SLOW_DISK_S = 0.128
SAMPLE_RE = re.compile(r'^(\w+)(?:\{[^}]*\})? (\S+)$')


def etcd_state(text):
    """The running totals of ETCD_COUNTERS and of ETCD_DISK's samples over SLOW_DISK_S in one
    scrape of an etcd member's /metrics: {name: value}."""
    name_key = {v: k for k, v in ETCD_COUNTERS.items()}
    out = {k: 0.0 for k in list(ETCD_COUNTERS) + list(ETCD_DISK)}
    for line in text.splitlines():
        m = SAMPLE_RE.match(line)
        if m and m.group(1) in name_key:
            out[name_key[m.group(1)]] += float(m.group(2))
    family_key = {v: k for k, v in ETCD_DISK.items()}
    for family, _, le, c in bucket_lines(text, family_key):
        if le == float("inf"):
            out[family_key[family]] += c
        elif le == SLOW_DISK_S:
            out[family_key[family]] -= c
    return out


def etcd_between(before, after):
    """What etcd did between two etcd_state scrapes."""
    return {k: after[k] - before.get(k, 0.0) for k in after}


def buckets_between(before, after):
    """The requests between two scrapes of request_buckets, by kind, as cumulative counts."""
    return {k: {le: c - before.get(k, {}).get(le, 0) for le, c in b.items()}
            for k, b in after.items()}


def buckets_sum(*by_kinds):
    """Every kind of request of one or more buckets_between together: {le: count}."""
    out = {}
    for by_kind in by_kinds:
        for b in by_kind.values():
            for le, c in b.items():
                out[le] = out.get(le, 0) + c
    return out


def quantile(q, before, after):
    """histogram_quantile(q) of the requests between two scrapes, interpolated linearly inside
    the bucket as Prometheus does; None without requests."""
    bounds = sorted(after)
    cum = [after[b] - before.get(b, 0) for b in bounds]
    if not cum or cum[-1] <= 0:
        return None, 0
    total = cum[-1]
    rank = q * total
    prev_b, prev_c = 0.0, 0.0
    for b, c in zip(bounds, cum):
        if c >= rank:
            if b == float("inf"):
                return prev_b, int(total)
            return prev_b + (b - prev_b) * (rank - prev_c) / max(c - prev_c, 1e-12), int(total)
        prev_b, prev_c = b, c
    return bounds[-2] if len(bounds) > 1 else None, int(total)


# ---------------------------------------------------------------------------------------------
# Ratios and their spread


def pair_order(i):
    """Which run of pair i (from 1) goes first: the traced one in odd pairs, the untraced one in
    even pairs, so that whatever the first run of a pair suffers or gains (a warmer cache, a
    settling control plane) falls on both sides equally and shows as an order effect."""
    return (True, False) if i % 2 else (False, True)


def order_means(ratios_by_pair):
    """Mean of the ratios of the pairs whose traced run went first (odd pairs) and of those whose
    untraced run did (even pairs): (traced first, untraced first), None where there are none. A
    gap between them wider than the ratios' spread says the order weighs on the ratio."""
    odd = [r for i, r in enumerate(ratios_by_pair, 1) if r is not None and i % 2]
    even = [r for i, r in enumerate(ratios_by_pair, 1) if r is not None and not i % 2]
    return (statistics.mean(odd) if odd else None, statistics.mean(even) if even else None)


def fmt_order(means, spec=".3f"):
    return " / ".join("-" if m is None else format(m, spec) for m in means)


def spread(values):
    """(median, min, max, stddev) of a list; None entries ignored."""
    v = [x for x in values if x is not None]
    if not v:
        return None
    return (statistics.median(v), min(v), max(v), statistics.stdev(v) if len(v) > 1 else 0.0)


def fmt_spread(s, spec=".3f"):
    if s is None:
        return "-"
    med, lo, hi, sd = s
    return f"{med:{spec}} [{lo:{spec}}-{hi:{spec}}] sd {sd:{spec}}"


def linear_fit(xs, ys):
    """(slope, intercept) of the least-squares line; (0, mean) for fewer than two points."""
    n = len(xs)
    if n < 2:
        return 0.0, (ys[0] if ys else 0.0)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0, my
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


def percentile(values, q):
    v = sorted(values)
    if not v:
        return None
    k = max(0, min(len(v) - 1, int(round(q * (len(v) - 1)))))
    return v[k]


def summary_missing(err_lines):
    """The tracer's own account of its incomplete binds: the rows of its exit summary's MISSING
    STAGE block (per stage, the binds by reason and the first reason), [] when there is none."""
    rows, inside = [], False
    for line in err_lines:
        if line.startswith("MISSING STAGE"):
            inside = True
        elif inside and (line.startswith("LEG ") or not line.strip()):
            break
        elif inside:
            rows.append(line.rstrip())
    return rows


def pods_complete(path):
    """How many distinct pods the tracer's --json output at path shows bound (201) with no
    stage missing. A bind the apiserver refused (429) and the scheduler sent again is a second
    timeline of the same pod: counted once, by its successful attempt, so the fraction of pods is
    never above 1. Unreadable lines count as nothing."""
    done = set()
    with open(path) as f:
        for line in f:
            try:
                b = json.loads(line)
            except ValueError:
                continue
            pod = b.get("pod") or {}
            if (b.get("result") == "bound" and b.get("status_code") == 201 and
                    b.get("missing_stages") == 0):
                done.add((pod.get("namespace"), pod.get("name")))
    return len(done)


def keep_files(paths, label):
    """Copies paths to build/bench-kept/LABEL-TIME/ (outside the bench's work directory, which
    is removed at its end); returns that directory."""
    d = os.path.join(TOP, "build/bench-kept", time.strftime(f"{label}-%Y%m%d-%H%M%S"))
    os.makedirs(d, exist_ok=True)
    for p in paths:
        if os.path.exists(p):
            shutil.copy(p, d)
    return d


def cluster(bed, *args, check=True, timeout=None):
    """tests/controlplane/cluster ARGS on the bed's environment; its output goes to ours."""
    r = subprocess.run([os.path.join(TOP, "tests/controlplane/cluster"), *args], env=bed,
                       timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"cluster {' '.join(args)} failed:\n{r.stdout}")
    return r.stdout


def bring_up_bed(ovh, cfg):
    """overhead's bring_up_bed, after clearing a load that died or never came up on a running
    bed (`cluster status` fails on it, and `cluster up` would refuse a partly running bed)."""
    bed = dict(os.environ, CP_PORT_BASE=str(cfg["port_base"]), CP_WORKDIR=cfg["workdir"])
    # A running bed's processes may answer their health checks late on a busy machine: 30 s.
    for _ in range(10):
        st = subprocess.run([os.path.join(TOP, "tests/controlplane/cluster"), "status"],
                            env=bed, capture_output=True, text=True)
        lines = [line.split() for line in st.stdout.splitlines() if len(line.split()) > 1]
        bad = [f[0] for f in lines if f[1] in ("stopped", "unhealthy")]
        if not st.returncode or not bad or bad == ["load"] or not any(
                f[1] == "running" for f in lines):
            break
        time.sleep(3.0)
    if st.returncode and bad == ["load"]:
        ovh.log("   a load on this bed has stopped or is unhealthy: cluster load 0 clears it")
        cluster(bed, "load", "0", check=False, timeout=900)
    return ovh.bring_up_bed(cfg)

