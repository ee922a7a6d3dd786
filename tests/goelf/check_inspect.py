#!/usr/bin/env python3
"""Checks `bindtrace inspect` against ground truth that bindtrace does not compute itself.

For every Go fixture build (build/gofixtures/go1.NN/{default,static,pie}/tlsfix):
  - entry, RET sites, end and PC -> func/file:line against `go tool objdump` and
    `go tool addr2line` of the unstripped twin, by the same toolchain (the stripped build's twin
    is static-syms: same flags without -s -w; that the code did not move is checked byte for byte);
  - RET sites against GNU objdump, an independent x86 decoder, from entry to end;
  - file offsets: the bytes at each reported offset are the instruction objdump shows there;
  - Go version, main module, dependencies, replacements and build settings against
    `go version -m`.
For /usr/bin/etcd and build/controlplane/*/{kube-apiserver,kube-scheduler,etcd} (no symbols, no
twin): GNU objdump and `go version -m` only. Then the refusals: non-Go, missing, directory,
Go 1.16, Go without crypto/tls, truncated copies: one line `bindtrace: inspect PATH: ...` on
stderr, exit 1, no crash.

Prints one line per failed check and a final "N passed, N failed" line.
"""
import ast
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

passed = 0
failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what}", flush=True)
    return cond


def run(cmd, env=None, input=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, input=input)


def inspect_json(bindtrace, binary, extra=()):
    r = run([bindtrace, "inspect", "--json", *extra, binary])
    # The sanitizer build is what runs: a report is a failure, whatever the exit.
    check("Sanitizer" not in r.stderr and "runtime error" not in r.stderr,
          f"inspect {binary}: sanitizer report: {r.stderr.strip()[:2000]}")
    try:
        return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr
    except json.JSONDecodeError:
        return r.returncode, None, r.stderr


def h(s):
    return int(s, 16)


def go_env(toolchain):
    env = dict(os.environ)
    env["GOTOOLCHAIN"] = toolchain
    env["GOFLAGS"] = "-buildvcs=false"
    return env


INSN = re.compile(r"^\s+(\S+):(\d+)\s+0x([0-9a-f]+)\s+([0-9a-f]+)\s+(.*?)\s*$")


def go_objdump(toolchain, binary, func):
    """[(addr, bytes, file_base, line, text)] and the TEXT line's function name."""
    regex = "^" + re.escape(func) + "$"
    r = run(["go", "tool", "objdump", "-s", regex, binary], env=go_env(toolchain))
    insns, name = [], None
    for line in r.stdout.splitlines():
        if line.startswith("TEXT "):
            name = line.split()[1].removesuffix("(SB)")
            continue
        m = INSN.match(line)
        if m:
            insns.append((int(m.group(3), 16), bytes.fromhex(m.group(4)), m.group(1),
                          int(m.group(2)), m.group(5)))
    return name, insns


def go_addr2line(toolchain, binary, pcs):
    r = run(["go", "tool", "addr2line", binary], env=go_env(toolchain),
            input="".join(f"0x{pc:x}\n" for pc in pcs))
    lines = r.stdout.splitlines()
    out = []
    for i in range(0, len(lines) - 1, 2):
        file, _, line = lines[i + 1].rpartition(":")
        out.append((lines[i], file, int(line) if line.isdigit() else -1))
    return out


GNU_INSN = re.compile(r"^\s*([0-9a-f]+):\s+((?:[0-9a-f]{2} )+)\s*(\S*)")


def gnu_objdump(binary, start, end):
    """Instruction addresses and RET addresses, decoded linearly by binutils."""
    r = run(["objdump", "-d", "--no-show-raw-insn", "-M", "intel",
             f"--start-address=0x{start:x}", f"--stop-address=0x{end:x}", binary])
    addrs, rets = [], []
    for line in r.stdout.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\s+(\S+)", line)
        if not m:
            continue
        a = int(m.group(1), 16)
        if a < start or a >= end:
            continue
        addrs.append(a)
        if m.group(2) in ("ret", "retq", "ret\t"):
            rets.append(a)
        elif m.group(2).startswith("ret"):
            rets.append(a)
    return addrs, rets


def file_bytes(path, offset, n):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(n)


def unquote_go(s):
    if s.startswith('"'):
        try:
            return ast.literal_eval(s)
        except (ValueError, SyntaxError):
            return s
    return s


def parse_version_m(text):
    """go version -m output -> dict like inspect's JSON."""
    out = {"deps": [], "settings": [], "main": None, "path": ""}
    last = None
    lines = text.splitlines()
    out["go_version"] = lines[0].split(": ", 1)[1].strip() if lines else ""
    for line in lines[1:]:
        f = line.strip("\n").split("\t")
        if len(f) < 2 or f[0] != "":
            continue
        tag, rest = f[1], f[2:]
        mod = lambda r: {"path": r[0], "version": r[1] if len(r) > 1 else "",
                         "sum": r[2] if len(r) > 2 else "", "replace": None}
        if tag == "path":
            out["path"] = rest[0]
        elif tag == "mod":
            out["main"] = last = mod(rest)
        elif tag == "dep":
            last = mod(rest)
            out["deps"].append(last)
        elif tag == "=>" and last is not None:
            last["replace"] = mod(rest)
        elif tag == "build":
            kv = "\t".join(rest)
            if kv.startswith('"'):
                m = re.match(r'^("(?:[^"\\]|\\.)*")=(.*)$', kv)
                key, value = unquote_go(m.group(1)), m.group(2)
            else:
                key, _, value = kv.partition("=")
            out["settings"].append({"key": key, "value": unquote_go(value)})
    return out


def check_buildinfo(label, j, version_m):
    want = parse_version_m(version_m)
    check(j["go_version"] == want["go_version"],
          f"{label}: go version {j['go_version']!r} != {want['go_version']!r}")
    check(j["path"] == want["path"], f"{label}: path {j['path']!r} != {want['path']!r}")
    check(j["main"] == want["main"], f"{label}: main module {j['main']} != {want['main']}")
    check(len(j["deps"]) == len(want["deps"]),
          f"{label}: {len(j['deps'])} deps != {len(want['deps'])}")
    for got, exp in zip(j["deps"], want["deps"]):
        if not check(got == exp, f"{label}: dep {got} != {exp}"):
            break
    check(j["settings"] == want["settings"],
          f"{label}: settings {j['settings']} != {want['settings']}")


def check_gnu(label, binary, j):
    """RETs and boundaries from binutils' decoder, and file offsets, for any binary."""
    for f in j["functions"]:
        if "error" in f:
            check(False, f"{label}: {f['name']}: {f['error']}")
            continue
        entry, end = h(f["entry"]), h(f["end"])
        addrs, rets = gnu_objdump(binary, entry, end)
        ours = [h(r["vaddr"]) for r in f["ret_sites"]]
        check(len(ours) > 0, f"{label}: {f['name']}: no RET")
        check(sorted(ours) == sorted(rets),
              f"{label}: {f['name']}: RETs {list(map(hex, ours))} != binutils "
              f"{list(map(hex, rets))}")
        check(set(ours) <= set(addrs), f"{label}: {f['name']}: RET not at a boundary")
        check(h(f["file_offset"]) == entry - h(j["elf"]["exec_vaddr"]) +
              h(j["elf"]["exec_offset"]), f"{label}: {f['name']}: file offset")
        for r in f["ret_sites"]:
            check(file_bytes(binary, h(r["file_offset"]), 1) == b"\xc3",
                  f"{label}: {f['name']}: no C3 at file offset {r['file_offset']}")


def check_fixture(bindtrace, toolchain, series_dir, mode):
    binary = os.path.join(series_dir, mode, "tlsfix")
    label = f"{os.path.basename(series_dir)}/{mode}"
    twin = os.path.join(series_dir, "static-syms" if mode == "static" else mode, "tlsfix")
    if not os.path.exists(binary):
        check(False, f"{label}: not built")
        return None
    rc, j, err = inspect_json(bindtrace, binary)
    if not check(rc == 0 and j is not None, f"{label}: inspect failed: {err.strip()}"):
        return None
    n0 = passed + failed
    fails0 = failed
    vm = os.path.join(series_dir, mode, "version-m.txt")
    if os.path.exists(vm):
        check_buildinfo(label, j, open(vm).read())
    if mode == "static":
        check(not j["elf"]["pie"], f"{label}: not PIE")
    if mode == "pie":
        check(j["elf"]["pie"], f"{label}: PIE")
        check(h(j["text_base"]["text_section"]) != h(j["text_base"]["vaddr"]),
              f"{label}: external linking puts C before runtime.text")
    if series_dir.endswith("go1.26"):
        check(j["text_base"]["source"] == "moduledata", f"{label}: Go 1.26 base from moduledata")
    else:
        check(j["text_base"]["source"] == "pcheader", f"{label}: base from pcHeader.textStart")

    if twin != binary:
        rc, jt, err = inspect_json(bindtrace, twin)
        if check(rc == 0, f"{label}: twin {twin}: {err}"):
            for f, ft in zip(j["functions"], jt["functions"]):
                check(f == ft, f"{label}: {f['name']}: -s -w moved it: {f} != twin {ft}")
                code = file_bytes(binary, h(f["file_offset"]), h(f["end"]) - h(f["entry"]))
                code_t = file_bytes(twin, h(ft["file_offset"]), h(ft["end"]) - h(ft["entry"]))
                check(code == code_t, f"{label}: {f['name']}: code differs from the twin's")

    pcs = []
    for f in j["functions"]:
        name, insns = go_objdump(toolchain, twin, f["name"])
        if not check(name == f["name"] and insns, f"{label}: objdump has no {f['name']}"):
            continue
        entry, end = h(f["entry"]), h(f["end"])
        check(entry == insns[0][0], f"{label}: {f['name']}: entry 0x{entry:x} != objdump "
              f"0x{insns[0][0]:x}")
        rets = [a for a, _, _, _, t in insns if t.split()[0] == "RET"]
        ours = [h(r["vaddr"]) for r in f["ret_sites"]]
        check(ours == rets, f"{label}: {f['name']}: RETs {list(map(hex, ours))} != objdump "
              f"{list(map(hex, rets))}")
        boundaries = {a for a, *_ in insns}
        check(set(ours) <= boundaries, f"{label}: {f['name']}: RET off a boundary")
        last_end = insns[-1][0] + len(insns[-1][1])
        pad = file_bytes(binary, h(f["file_offset"]) + last_end - entry, end - last_end)
        check(last_end <= end < last_end + 64 and pad == b"\xcc" * (end - last_end),
              f"{label}: {f['name']}: end 0x{end:x} vs objdump's last byte 0x{last_end:x}")
        first = insns[0][1]
        check(file_bytes(binary, h(f["file_offset"]), len(first)) == first,
              f"{label}: {f['name']}: bytes at file offset {f['file_offset']} are not "
              f"objdump's first instruction")
        # A few PCs: entry, every RET, and some in the middle.
        picks = [insns[0]] + [i for i in insns if i[0] in set(rets)]
        picks += [insns[len(insns) * k // 5] for k in range(1, 5)]
        for a, _, fb, ln, _ in picks:
            pcs.append((a, f["name"], fb, ln))

    if pcs:
        args = []
        for a, *_ in pcs:
            args += ["--pc", f"0x{a:x}"]
        rc, jp, err = inspect_json(bindtrace, binary, args)
        truth = go_addr2line(toolchain, twin, [a for a, *_ in pcs])
        if check(rc == 0 and jp and len(jp["pcs"]) == len(pcs) and len(truth) == len(pcs),
                 f"{label}: --pc: {err}"):
            for (a, fname, fbase, ln), got, (tf, tfile, tline) in zip(pcs, jp["pcs"], truth):
                check(got.get("func") == fname == tf and
                      os.path.basename(got.get("file", "")) == fbase and
                      got.get("file") == tfile and got.get("line") == ln == tline,
                      f"{label}: pc 0x{a:x}: {got} != objdump {fname} {fbase}:{ln}, "
                      f"addr2line {tf} {tfile}:{tline}")
    check_gnu(label, binary, j)
    status = "ok" if failed == fails0 else "FAILED"
    print(f"  {label:16} {status:6} {passed + failed - n0:4} checks  base {j['text_base']['vaddr']}"
          f" ({j['text_base']['source']})  Write {j['functions'][0].get('entry')} "
          f"{len(j['functions'][0].get('ret_sites', []))} RETs  Read "
          f"{j['functions'][1].get('entry')} {len(j['functions'][1].get('ret_sites', []))} RETs"
          f"  {j['timing_us']['open'] / 1000:.1f} ms", flush=True)
    return j


def check_real(bindtrace, binary, label):
    """A real stripped binary: binutils and go version -m as ground truth."""
    rc, j, err = inspect_json(bindtrace, binary)
    if not check(rc == 0 and j, f"{label}: inspect failed: {err.strip()}"):
        return
    fails0 = failed
    r = run(["go", "version", "-m", binary], env=go_env("local"))
    if check(r.returncode == 0, f"{label}: go version -m: {r.stderr}"):
        check_buildinfo(label, j, r.stdout)
    check_gnu(label, binary, j)
    key = [d["path"] + " " + d["version"] for d in j["deps"]
           if d["path"] in ("k8s.io/kubernetes", "go.etcd.io/etcd/api/v3", "k8s.io/apiserver")]
    print(f"  {label:16} {'ok' if failed == fails0 else 'FAILED':6} {j['go_version']}  "
          f"main {j['main']['path'] if j['main'] else '?'} {j['main']['version'] if j['main'] else ''}"
          f"  {' '.join(key)}  base {j['text_base']['vaddr']} ({j['text_base']['source']})"
          f"  inspect open {j['timing_us']['open'] / 1000:.1f} ms", flush=True)
    t = run(["bash", "-c", f"time {bindtrace} inspect {binary} >/dev/null"])
    real = [l for l in t.stderr.splitlines() if l.startswith("real")]
    print(f"  {label:16} timing: whole `inspect` run {real[0].split()[1] if real else '?'}")


def check_refused(bindtrace, binary, label, want):
    r = run([bindtrace, "inspect", binary])
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 1, f"{label}: exit {r.returncode}, want 1 ({r.stderr.strip()})")
    check(len(lines) == 1 and lines[0].startswith(f"bindtrace: inspect {binary}: "),
          f"{label}: stderr {r.stderr!r}")
    check(want in r.stderr, f"{label}: {r.stderr.strip()!r} lacks {want!r}")
    check("Sanitizer" not in r.stderr and "runtime error" not in r.stderr,
          f"{label}: sanitizer report")


def main():
    bindtrace, fixtures = sys.argv[1], sys.argv[2]
    toolchains = sys.argv[3].split()
    for tc in toolchains:
        series = os.path.join(fixtures, tc.rsplit(".", 1)[0])
        for mode in ("default", "static", "pie"):
            check_fixture(bindtrace, tc, series, mode)

    if os.path.exists("/usr/bin/etcd"):
        check_real(bindtrace, "/usr/bin/etcd", "debian etcd")
    else:
        print("  /usr/bin/etcd not installed: skipped")
    root = os.path.dirname(os.path.dirname(os.path.abspath(fixtures)))
    cp = sorted(glob.glob(os.path.join(root, "build/controlplane/*/kube-apiserver")) +
                glob.glob(os.path.join(root, "build/controlplane/*/kube-scheduler")) +
                glob.glob(os.path.join(root, "build/controlplane/*/etcd")))
    for b in cp:
        check_real(bindtrace, b, os.path.basename(b))
    if not cp:
        print("  build/controlplane/*/: no control-plane binaries built yet: skipped")

    check_refused(bindtrace, "/bin/true", "non-Go", "not a Go binary")
    check_refused(bindtrace, "/nonexistent/kube-apiserver", "missing", "No such file")
    check_refused(bindtrace, "/", "directory", "is a directory")
    check_refused(bindtrace, os.path.join(fixtures, "go1.16/version/tlsfix"), "go1.16",
                  "Go 1.16 binary: bindtrace needs Go 1.18 or newer")
    check_refused(bindtrace, os.path.join(fixtures, "go1.16/magic/tlsfix"), "1.16 pclntab",
                  "magic 0xfffffffa")
    check_refused(bindtrace, os.path.join(fixtures, "notls/notls"), "no crypto/tls",
                  "does not use crypto/tls")
    # Truncated copies: refused with one line, or -- when only what the loader ignores was cut
    # (DWARF, symbols, section headers) -- the same answers as the whole file, found without
    # section headers (buildinfo by scan, pclntab by magic).
    with tempfile.TemporaryDirectory() as tmp:
        for src in (os.path.join(fixtures, "go1.26/pie/tlsfix"),
                    os.path.join(fixtures, "go1.24/static/tlsfix")):
            rc, whole, _ = inspect_json(bindtrace, src)
            size = os.path.getsize(src)
            data = open(src, "rb").read()
            for frac in (0, 1, 2, 4, 6, 7):
                cut = max(1, size * frac // 8)
                p = os.path.join(tmp, f"truncated-{frac}of8")
                open(p, "wb").write(data[:cut])
                label = f"{src.split('/')[-3]}/{src.split('/')[-2]} truncated at {frac}/8"
                rc, j, err = inspect_json(bindtrace, p)
                if rc == 0:
                    check(j["functions"] == whole["functions"] and
                          j["text_base"]["vaddr"] == whole["text_base"]["vaddr"],
                          f"{label}: accepted with different answers")
                    print(f"  {label}: loadable segments intact, accepted: pclntab "
                          f"{j['pclntab']['where']}")
                else:
                    check_refused(bindtrace, p, label, "")
        p = os.path.join(tmp, "empty")
        open(p, "wb").close()
        check_refused(bindtrace, p, "empty", "empty file")
    print(f"goelf: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
