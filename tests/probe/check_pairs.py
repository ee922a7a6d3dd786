#!/usr/bin/env python3
"""Both ends of every traced connection carry the same bytes.

Reads a `bindtrace capture --json` file. When both ends of a TCP connection were traced (one
event's laddr/raddr are the other's raddr/laddr), every chunk one end wrote (of at least MIN
bytes, seen while the other end was traced) must be among the bytes the other end read; and a
connection to a traced server's address (one that is some traced end's laddr) must show its
server end too. Bytes attributed to the wrong socket fail this. Prints what it checked; exit 1 on a mismatch or when
nothing could be checked.
Usage: check_pairs.py CAPTURE.jsonl [MIN_PAIRS]
"""
import base64
import json
import sys

MIN = 32


def main():
    path = sys.argv[1]
    min_pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    streams = {}  # (pid, conn, dir) -> list of (offset, bytes, ts)
    ends = {}  # (laddr, raddr) -> (pid, conn)
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            if e.get("source") not in ("tls", "tcp") or "data" not in e:
                continue
            key = (e["pid"], e["conn"], e["dir"])
            streams.setdefault(key, []).append((e["offset"], base64.b64decode(e["data"]), e["ts_ns"]))
            ends[(e["laddr"], e["raddr"])] = (e["pid"], e["conn"])
    pairs = checked = bad = 0
    servers = {laddr for laddr, _ in ends}
    for (laddr, raddr), (pid, conn) in sorted(ends.items()):
        peer = ends.get((raddr, laddr))
        if not peer:
            wrote = sum(len(d) for _, d, _ in streams.get((pid, conn, "out"), []))
            if raddr in servers and wrote >= MIN:
                bad += 1
                print(f"MISSING pid {pid} conn {conn} {laddr} -> {raddr} wrote {wrote} bytes to a "
                      f"traced server, whose end of the connection shows nothing")
            continue
        pairs += 1
        for_peer = streams.get((peer[0], peer[1], "in"), [])
        if not for_peer:
            continue
        read = b"".join(d for _, d in sorted((o, d) for o, d, _ in for_peer))
        t0, t1 = min(t for _, _, t in for_peer), max(t for _, _, t in for_peer)
        for offset, data, ts in streams.get((pid, conn, "out"), []):
            if len(data) < MIN or not t0 <= ts <= t1:
                continue
            checked += 1
            if data not in read:
                bad += 1
                if bad <= 5:
                    print(f"MISMATCH pid {pid} conn {conn} {laddr} -> {raddr}: {len(data)} bytes "
                          f"written at offset {offset} are not among the {len(read)} bytes "
                          f"pid {peer[0]} conn {peer[1]} read")
    print(f"{pairs} connection ends with their peer traced, {checked} written chunks checked, "
          f"{bad} not found at the other end")
    return 0 if bad == 0 and checked > 0 and pairs >= min_pairs else 1


sys.exit(main())
