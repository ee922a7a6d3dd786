#!/usr/bin/env python3
"""Checks the release and commit `bindtrace inspect --json` reads against what each binary says
of itself when run, and what `go version -m` reads from its buildinfo.

The oracles, none of them bindtrace:
  - kubectl:            `kubectl version --client -o json` (client-go's version.Get())
  - kube-apiserver,
    kube-scheduler...:  `BINARY --version=raw` (component-base's version.Get(), Go syntax)
  - etcd:               `etcd --version` ("etcd Version: ...", "Git SHA: ...")
  - verfix fixtures:    the program prints both packages' version.Get() as JSON
  - all:                `go version -m` (main module, dependencies, vcs.revision, vcs.modified)
What must hold (issue 12): the commit is vcs.revision, else the stamped commit; the release is
the product's module version when it is a release, else the stamped version; never "(devel)";
a stamped value that is not valid for its field (the unstamped source defaults
"v0.0.0-master+$Format:%H$", "$Format:%H$", "1970-01-01T00:00:00Z", etcd's "Not provided ...")
or that the two Kubernetes packages disagree on is reported as nothing. Every stamped field
each Get() function returns is compared with what bindtrace read through that function's code.

Binaries: /usr/lib/google-cloud-sdk/bin/kubectl.1.* (real upstream builds), the verfix fixtures
(FIXTURES/verfix/*/verfix), build/controlplane/*/{kube-*,kubectl,etcd} and /usr/bin/etcd when
present. Prints one line per binary and per failed check, and "N passed, N failed".

usage: check_release.py BINDTRACE FIXTURES_DIR REPO_ROOT
"""
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_inspect as counts  # noqa: E402  (its check() and pass/fail counters)

check = counts.check


def failures():
    return counts.failed


def run(cmd, timeout=60):
    """Run a binary being checked: a hang or a missing file is a failed run, not a crash."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return subprocess.CompletedProcess(cmd, 1, "", str(e))


# ---- the field forms, written here again from the issue (not from bindtrace's code) ----

SEMVER = re.compile(r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                    r"(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
PSEUDO = re.compile(r"[-.]\d{14}-[0-9a-f]{12}(\+[0-9A-Za-z.-]+)?$")
DATE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:"
                  r"([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$")


def valid(field, v):
    if not v:
        return False
    if field == "git_version":
        return bool(SEMVER.match(v)) and not v.startswith("v0.0.0")
    if field == "git_commit":
        return bool(re.fullmatch(r"[0-9a-f]{40}", v))
    if field == "tree_state":
        return v in ("clean", "dirty", "archive")
    if field == "build_date":
        return bool(DATE.match(v)) and v != "1970-01-01T00:00:00Z"
    if field == "major":
        return bool(re.fullmatch(r"\d{1,3}", v))
    if field == "minor":
        return bool(re.fullmatch(r"\d{1,3}\+?", v))
    raise ValueError(field)


def is_release(version):
    return bool(version and SEMVER.match(version) and not version.startswith("v0.0.0")
                and not PSEUDO.search(version))


FIELDS = {"major": "major", "minor": "minor", "gitVersion": "git_version",
          "gitCommit": "git_commit", "gitTreeState": "tree_state", "buildDate": "build_date"}


def version_m(binary):
    """go version -m: main module, deps {path: (version, replaced)}, build settings."""
    r = run(["go", "version", "-m", binary])
    out = {"main": None, "deps": {}, "settings": {}}
    last = None
    for line in r.stdout.splitlines():
        f = line.split("\t")
        if len(f) < 3 or f[0] != "":
            continue
        if f[1] == "mod":
            out["main"] = (f[2], f[3] if len(f) > 3 else "")
        elif f[1] == "dep":
            last = f[2]
            out["deps"][last] = [f[3] if len(f) > 3 else "", False]
        elif f[1] == "=>" and last:
            out["deps"][last][1] = True
        elif f[1] == "build" and "=" in f[2]:
            k, _, v = f[2].partition("=")
            out["settings"][k] = v
    return out


def inspect(bindtrace, binary):
    r = run([bindtrace, "inspect", "--json", "-f", "runtime.main", binary])
    try:
        return json.loads(r.stdout)["release"]
    except (ValueError, KeyError):
        check(False, f"{binary}: inspect failed: {r.stderr.strip()}")
        return None


def fact(rel, name):
    f = rel.get(name)
    return (f["value"], f["source"]) if f else (None, None)


def expect_rules(label, rel, vm, modules, stamped_version, stamped_commit):
    """The release and commit rules, from go version -m and the binary's own statements."""
    release, source = None, None
    main = vm["main"]
    for path in modules:
        if main and main[0] == path and is_release(main[1]):
            release, source = main[1], "buildinfo"
            break
        dep = vm["deps"].get(path)
        if dep and not dep[1] and is_release(dep[0]):
            release, source = dep[0], "buildinfo"
            break
    if release is None and stamped_version:
        release, source = stamped_version, "stamped"
    got = fact(rel, "release")
    check(got == (release, source), f"{label}: release {got}, want {(release, source)}")
    check(got[0] != "(devel)", f"{label}: release (devel)")

    revision = vm["settings"].get("vcs.revision")
    if revision:
        want = (revision, "buildinfo")
    elif stamped_commit:
        want = (stamped_commit, "stamped")
    else:
        want = (None, None)
    got = fact(rel, "commit")
    check(got == want, f"{label}: commit {got}, want {want}")
    modified = vm["settings"].get("vcs.modified")
    if modified in ("true", "false"):
        check(fact(rel, "tree_state") == ("dirty" if modified == "true" else "clean",
                                          "buildinfo"), f"{label}: tree state {rel['tree_state']}")
    return fact(rel, "release")[0], fact(rel, "commit")[0]


def check_k8s(label, binary, rel, vm, said):
    """said: {package: {oracle field: value}} as the binary printed its version.Get()."""
    if not check(rel and rel["product"] == "kubernetes", f"{label}: product {rel and rel['product']}"):
        return None, None
    read = {r["function"]: r for r in rel["read"]}
    values = {field: set() for field in FIELDS.values()}
    for pkg, info in said.items():
        fn = f"{pkg}.Get"
        if not check(fn in read, f"{label}: {fn} not read ({list(read)})"):
            continue
        for key, field in FIELDS.items():
            want = info.get(key) if valid(field, info.get(key)) else None
            got = read[fn][field]
            if pkg == "k8s.io/component-base/version" and field == "git_version":
                # component-base 0.29+ returns gitVersion through an atomic.Value set at init:
                # Get's code never loads the variable, so nothing is read there; the value
                # comes from client-go's Get, unless the binary printed client-go's too.
                check(got in (None, want), f"{label}: {fn} {field} {got!r}, want {want!r}")
                if "k8s.io/client-go/pkg/version" in said:
                    continue
            else:
                check(got == want, f"{label}: {fn} {field} {got!r}, want {want!r}")
            if want:
                values[field].add(want)
    # What both packages say, or nothing when they disagree.
    merged = {f: (v.pop() if len(v) == 1 else None) for f, v in values.items()}
    for field, want in merged.items():
        check(rel["stamps"][field] == want,
              f"{label}: merged {field} {rel['stamps'][field]!r}, want {want!r}")
    return expect_rules(label, rel, vm, ["k8s.io/kubernetes"], merged["git_version"],
                        merged["git_commit"])


def report(label, rel, release, commit, extra=""):
    r = fact(rel, "release") if rel else (None, None)
    c = fact(rel, "commit") if rel else (None, None)
    print(f"  {label:34} release {r[0] or '-'} ({r[1] or 'none'}), commit "
          f"{(c[0] or '-')[:40]} ({c[1] or 'none'}){extra}", flush=True)


def kubectl_builds(bindtrace):
    shapes = set()
    for binary in sorted(glob.glob("/usr/lib/google-cloud-sdk/bin/kubectl.1.*")):
        label = os.path.basename(binary)
        vm = version_m(binary)
        r = run([binary, "version", "--client", "-o", "json"])
        try:
            info = json.loads(r.stdout)["clientVersion"]
        except (ValueError, KeyError):
            check(False, f"{label}: kubectl version: {r.stderr.strip()}")
            continue
        rel = inspect(bindtrace, binary)
        if rel is None:
            continue
        before = failures()
        # kubectl prints client-go's; upstream stamps component-base with the same values.
        release, commit = check_k8s(label, binary, rel, vm,
                                    {"k8s.io/client-go/pkg/version": info,
                                     "k8s.io/component-base/version": info})
        # The release is what kubectl itself says, and the commit too.
        check(release == info["gitVersion"], f"{label}: release {release} != kubectl's "
              f"{info['gitVersion']}")
        check(commit == info["gitCommit"], f"{label}: commit {commit} != kubectl's "
              f"{info['gitCommit']}")
        shapes.add("tag" if vm["main"] and vm["main"][1] != "(devel)" else "devel")
        report(label, rel, release, commit,
               f"  [main module {vm['main'][1] if vm['main'] else '?'}]"
               + ("" if failures() == before else "  FAILED"))
    return shapes


def verfix_builds(bindtrace, fixtures):
    shapes = set()
    for binary in sorted(glob.glob(os.path.join(fixtures, "verfix", "k*", "verfix"))):
        label = "verfix " + os.path.basename(os.path.dirname(binary))
        r = run([binary])
        try:
            said = json.loads(r.stdout)
        except ValueError:
            check(False, f"{label}: does not run: {r.stderr.strip()}")
            continue
        vm = version_m(binary)
        rel = inspect(bindtrace, binary)
        if rel is None:
            continue
        before = failures()
        release, commit = check_k8s(label, binary, rel, vm,
                                    {"k8s.io/client-go/pkg/version": said["client-go"],
                                     "k8s.io/component-base/version": said["component-base"]})
        variant = label.rsplit("-", 1)[1]
        if variant in ("stamped", "pie", "dirty", "vcs"):
            check(release == said["client-go"]["gitVersion"] and
                  commit == said["client-go"]["gitCommit"],
                  f"{label}: {release} {commit} != the program's {said['client-go']}")
        if variant == "unstamped":
            check(release is None and commit is None, f"{label}: guessed {release} {commit}")
        if variant == "conflict":
            check(commit is None, f"{label}: commit {commit} although the packages disagree")
        if variant == "vcs":
            shapes.add("tag" if vm["main"][1] != "(devel)" else "devel")
        report(label, rel, release, commit, "" if failures() == before else "  FAILED")
    return shapes


def raw_info(text):
    """version.Info{Major:"1", ..., GitVersion:"v1.33.13", ...} -> {"major": "1", ...}, the
    names version.Info's JSON tags give (as kubectl version -o json prints them)."""
    return {k[0].lower() + k[1:]: v for k, v in re.findall(r'(\w+):"([^"]*)"', text)}


def controlplane_builds(bindtrace, root):
    base = os.path.join(root, "build", "controlplane")
    for binary in sorted(glob.glob(os.path.join(base, "*", "*"))):
        name = os.path.basename(binary)
        if not os.access(binary, os.X_OK) or os.path.isdir(binary):
            continue
        label = os.path.relpath(binary, base)
        vm = version_m(binary)
        rel = inspect(bindtrace, binary)
        if rel is None:
            continue
        before = failures()
        if name == "etcd":
            check_etcd(label, binary, rel, vm)
            continue
        if name == "kubectl":
            r = run([binary, "version", "--client", "-o", "json"])
            try:
                info = json.loads(r.stdout)["clientVersion"]
                pkg = "k8s.io/client-go/pkg/version"
            except (ValueError, KeyError):
                check(False, f"{label}: kubectl version: {r.stderr.strip()}")
                continue
        elif name.startswith("kube-"):
            info = raw_info(run([binary, "--version=raw"]).stdout)
            pkg = "k8s.io/component-base/version"
            if not check(info, f"{label}: --version=raw printed nothing"):
                continue
        else:
            continue
        release, commit = check_k8s(label, binary, rel, vm, {pkg: info})
        report(label, rel, release, commit, "" if failures() == before else "  FAILED")


def check_etcd(label, binary, rel, vm):
    before = failures()
    out = run([binary, "--version"]).stdout
    said = dict(re.findall(r"^(etcd Version|Git SHA): (.*)$", out, re.M))
    if not check(said, f"{label}: etcd --version printed {out!r}"):
        return
    check(rel["product"] == "etcd", f"{label}: product {rel['product']}")
    version = "v" + said["etcd Version"]
    sha = said["Git SHA"] if re.fullmatch(r"[0-9a-f]{7,40}", said["Git SHA"]) else None
    check(rel["stamps"]["git_version"] == version,
          f"{label}: Version {rel['stamps']['git_version']} != {version}")
    check(rel["stamps"]["git_commit"] == sha, f"{label}: GitSHA {rel['stamps']['git_commit']} "
          f"!= {sha}")
    release, commit = expect_rules(label, rel, vm, ["go.etcd.io/etcd/server/v3",
                                                    "go.etcd.io/etcd/v3", "go.etcd.io/etcd",
                                                    "go.etcd.io/etcd/api/v3"], version, sha)
    report(label, rel, release, commit, "" if failures() == before else "  FAILED")


def main():
    bindtrace, fixtures, root = sys.argv[1:4]
    shapes = kubectl_builds(bindtrace)
    if not shapes:
        print("  /usr/lib/google-cloud-sdk/bin/kubectl.1.*: none installed")
    shapes |= verfix_builds(bindtrace, fixtures)
    # Both shapes of upstream's main module must have been seen: "(devel)" (Go <= 1.23) and
    # the tag (Go 1.24+).
    check(shapes >= {"devel", "tag"}, f"main-module shapes covered: {sorted(shapes)}")
    controlplane_builds(bindtrace, root)
    if os.path.exists("/usr/bin/etcd"):
        rel = inspect(bindtrace, "/usr/bin/etcd")
        if rel:
            check_etcd("/usr/bin/etcd (Debian)", "/usr/bin/etcd", rel, version_m("/usr/bin/etcd"))
    print(f"release: {counts.passed} passed, {counts.failed} failed")
    return 1 if counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
