# The control plane's builds, sourced by tests/controlplane/cluster (which defines log, die,
# now_ms, secs_since, script_dir, repo_root and build_root).
#
# Two kinds (CP_BUILD):
#   release  the default: each release as upstream builds it. A git work tree is made from the
#            module proxy's copy of the release (staging or sibling modules filled in, vendor/
#            regenerated), committed and tagged before anything is built, then built with the
#            release's own Go (.go-version) and upstream's flags and version stamps:
#            k8s with its own hack/make-rules/build.sh, etcd with scripts/build.sh's flags.
#            Outputs: build/controlplane/release/{k8s,etcd}-VERSION/{src,bin}; a bed's binaries
#            are hard links in build/controlplane/release-k8s-VER_etcd-VER/.
#   modzip   the commands built as dependencies of a small module (tests/controlplane/{k8s,etcd}
#            /go.mod) with the local Go: quicker to set up, but the binaries carry no commit and
#            `@version` in every source path. Output: build/controlplane/k8s-VER_etcd-VER/.
#
# Go's caches are the shared defaults (go env GOCACHE, GOMODCACHE); -trimpath keeps the build
# cache independent of where a tree lies. A build takes a lock per release (release) or one
# lock for all (modzip, as before), so beds started at once share one build.

k8s_cmds=(kube-apiserver kube-controller-manager kube-scheduler kubectl)

# ---------------------------------------------------------------------------------------------
# Versions

default_version()
{
	local mod
	case $1 in
	k8s) mod=k8s.io/kubernetes ;;
	etcd) mod=go.etcd.io/etcd/server/v3 ;;
	esac
	awk -v m="$mod" '$1 == "require" && $2 == m { print $3; exit }
		$1 == m && $2 != "=>" { print $2; exit }' "$script_dir/$1/go.mod"
}

check_version()
{
	[[ $2 =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
		die "$1 '$2' is not a release version like v1.2.3"
}

resolve_versions()
{
	k8s_version=${K8S_VERSION:-$(default_version k8s)}
	etcd_version=${ETCD_VERSION:-$(default_version etcd)}
	build_kind=${CP_BUILD:-release}
	check_version K8S_VERSION "$k8s_version"
	check_version ETCD_VERSION "$etcd_version"
	[[ $k8s_version == v1.* ]] || die "K8S_VERSION '$k8s_version' is not a v1.x release"
	[[ $etcd_version == v3.* ]] || die "ETCD_VERSION '$etcd_version' is not a v3.x release"
	case $build_kind in
	release) bin_dir=$build_root/release-k8s-${k8s_version}_etcd-${etcd_version} ;;
	modzip) bin_dir=$build_root/k8s-${k8s_version}_etcd-${etcd_version} ;;
	*) die "CP_BUILD '$build_kind' is not 'release' or 'modzip'" ;;
	esac
}

# go_download MODULE@VERSION...: downloads through the module proxy (into the shared module
# cache) and prints one line per module, fields split by \x1f (unit separator, as fields may be
# empty): PATH, DIR (empty on error), INFO (the .info file), ERROR.
go_download()
{
	(cd "${TMPDIR:-/tmp}" && GOWORK=off GOFLAGS= go mod download -json "$@" 2>/dev/null) |
		awk -F'"' '
		function flush() { if (path != "") print path "\037" dir "\037" info "\037" err }
		/^{/ { path = dir = info = err = "" }
		$2 == "Path" { path = $4 }
		$2 == "Dir" { dir = $4 }
		$2 == "Info" { info = $4 }
		$2 == "Error" { err = $0; sub(/^[^:]*: "/, "", err); sub(/",?$/, "", err) }
		/^}/ { flush() }'
}

# The commit time of a module version as the proxy serves it (its .info file).
info_time()
{
	sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$1"
}

# ---------------------------------------------------------------------------------------------
# Module-zip builds (CP_BUILD=modzip)

# The module dir for a component: the committed one for the pinned default version, else one
# generated under build/ (git-ignored).
module_dir()
{
	local comp=$1 version=$2
	if [ "$version" = "$(default_version "$comp")" ]; then
		echo "$script_dir/$comp"
	else
		echo "$build_root/mod/$comp-$version"
	fi
}

# Path of a module's go.mod as served by the proxy, downloading it if needed.
upstream_gomod()
{
	local out
	out=$(cd "${TMPDIR:-/tmp}" && go mod download -json "$1@$2") ||
		die "cannot download $1@$2 from the Go module proxy"
	sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"$out"
}

tools_go()
{
	local pkg
	printf '//go:build tools\n\n'
	printf '// Package tools keeps the control plane commands in go.mod for go mod tidy;\n'
	printf '// tests/controlplane/cluster builds them, nothing imports this file.\n'
	printf 'package tools\n\nimport (\n'
	for pkg in "$@"; do
		printf '\t_ "%s"\n' "$pkg"
	done
	printf ')\n'
}

# k8s.io/kubernetes points its staging modules at ./staging, which a dependent module ignores:
# replace each with the release published alongside (v1.Y.Z -> v0.Y.Z), as
# kubernetes-sigs/scheduler-plugins does. The go and godebug lines are kept so the binaries get
# upstream's GODEBUG defaults.
gen_k8s_module()
{
	local dir=$1 version=$2 upstream staging cmd pkgs=()
	upstream=$(upstream_gomod k8s.io/kubernetes "$version")
	staging=v0.${version#v1.}
	mkdir -p "$dir"
	{
		echo "// Generated by tests/controlplane/cluster gomod: builds the k8s.io/kubernetes"
		echo "// $version commands from the Go module proxy (CP_BUILD=modzip)."
		echo "module bindtrace/tests/controlplane/k8s"
		echo
		grep -m1 '^go ' "$upstream"
		awk '/^godebug \(/ { blk = 1 } /^godebug/ || blk { print } blk && /^\)/ { blk = 0 }' \
			"$upstream"
		echo
		echo "require k8s.io/kubernetes $version"
		echo
		echo "replace ("
		sed -n 's|^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/.*|\t\1 => \1 '"$staging"'|p' \
			"$upstream"
		echo ")"
	} >"$dir/go.mod"
	for cmd in "${k8s_cmds[@]}"; do
		pkgs+=("k8s.io/kubernetes/cmd/$cmd")
	done
	tools_go "${pkgs[@]}" >"$dir/tools.go"
	(cd "$dir" && go mod tidy) || die "go mod tidy failed for k8s.io/kubernetes $version"
}

gen_etcd_module()
{
	local dir=$1 version=$2 upstream
	upstream=$(upstream_gomod go.etcd.io/etcd/server/v3 "$version")
	mkdir -p "$dir"
	{
		echo "// Generated by tests/controlplane/cluster gomod: builds etcd $version"
		echo "// (go.etcd.io/etcd/server/v3, its package main) from the Go module proxy"
		echo "// (CP_BUILD=modzip)."
		echo "module bindtrace/tests/controlplane/etcd"
		echo
		grep -m1 '^go ' "$upstream"
		echo
		echo "require go.etcd.io/etcd/server/v3 $version"
	} >"$dir/go.mod"
	tools_go go.etcd.io/etcd/server/v3 >"$dir/tools.go"
	(cd "$dir" && go mod tidy) || die "go mod tidy failed for etcd $version"
}

# Generates into a temporary dir and renames, so an interrupted tidy never looks complete. A
# module generated before kube-controller-manager was part of the bed is generated again.
ensure_module()
{
	local comp=$1 version=$2 dir tmp
	dir=$(module_dir "$comp" "$version")
	if [ -f "$dir/go.sum" ]; then
		[ "$comp" = etcd ] || grep -q kube-controller-manager "$dir/tools.go" && return 0
	fi
	[ "$dir" = "$script_dir/$comp" ] && die "$dir/go.sum is missing"
	log "generating $comp module for $version in ${dir#"$repo_root"/}"
	tmp=$dir.tmp.$$
	rm -rf "$tmp"
	"gen_${comp}_module" "$tmp" "$version"
	rm -rf "$dir"
	mv "$tmp" "$dir"
}

cmd_gomod()
{
	local dest=${1:-}
	[ -n "$dest" ] || die "gomod: missing DIR (see --help)"
	resolve_versions
	rm -rf "$dest/k8s" "$dest/etcd"
	gen_k8s_module "$dest/k8s" "$k8s_version"
	gen_etcd_module "$dest/etcd" "$etcd_version"
	echo "wrote $dest/k8s and $dest/etcd for k8s $k8s_version, etcd $etcd_version"
}

modzip_up_to_date()
{
	local mod=$1 bin
	shift
	for bin in "$@"; do
		[ -x "$bin_dir/$bin" ] || return 1
		[ "$bin_dir/$bin" -nt "$mod/go.mod" ] || return 1
		[ "$bin_dir/$bin" -nt "$mod/go.sum" ] || return 1
	done
}

# The module-zip build stamps the version as hack/lib/version.sh would, but the commit is not
# known from the module proxy and stays unset; the build date is the release's module time.
modzip_k8s_ldflags()
{
	local mod=$1 version=$2 date minor pkg flags="-s -w"
	date=$(cd "$mod" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' \
		k8s.io/kubernetes 2>/dev/null) || date=
	minor=${version#v1.}
	minor=${minor%%.*}
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
		flags+=" -X $pkg.gitTreeState=clean"
		[ -n "$date" ] && flags+=" -X $pkg.buildDate=$date"
	done
	echo "$flags"
}

# modzip_go_build MODDIR LDFLAGS OUT PKG...: OUT is a file name for one package, "" for several.
modzip_go_build()
{
	local mod=$1 ldflags=$2 name=$3 out
	shift 3
	out=$bin_dir/.tmp.$$
	rm -rf "$out"
	mkdir -p "$out"
	(cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$name" "$@") || {
		rm -rf "$out"
		return 1
	}
	mv -f "$out"/* "$bin_dir/"
	rmdir "$out"
}

build_modzip()
{
	local k8s_mod etcd_mod t1 lock cmd pkgs=()
	# One lock for all module-zip builds, the same file older scripts lock.
	exec {lock}>"$build_root/.build.lock"
	flock "$lock"
	ensure_module k8s "$k8s_version"
	ensure_module etcd "$etcd_version"
	k8s_mod=$(module_dir k8s "$k8s_version")
	etcd_mod=$(module_dir etcd "$etcd_version")
	mkdir -p "$bin_dir"

	if modzip_up_to_date "$k8s_mod" "${k8s_cmds[@]}"; then
		log "${k8s_cmds[*]} $k8s_version (module zip) up to date"
	else
		t1=$(now_ms)
		log "building ${k8s_cmds[*]} $k8s_version from its module zip ..."
		for cmd in "${k8s_cmds[@]}"; do
			pkgs+=("k8s.io/kubernetes/cmd/$cmd")
		done
		modzip_go_build "$k8s_mod" "$(modzip_k8s_ldflags "$k8s_mod" "$k8s_version")" "" \
			"${pkgs[@]}" || die "building k8s $k8s_version failed"
		log "built k8s $k8s_version (module zip) in $(secs_since "$t1") s"
	fi

	if modzip_up_to_date "$etcd_mod" etcd; then
		log "etcd $etcd_version (module zip) up to date"
	else
		t1=$(now_ms)
		log "building etcd $etcd_version from its module zip ..."
		modzip_go_build "$etcd_mod" "-s -w" etcd go.etcd.io/etcd/server/v3 ||
			die "building etcd $etcd_version failed"
		log "built etcd $etcd_version (module zip) in $(secs_since "$t1") s"
	fi
	exec {lock}>&-
}

# ---------------------------------------------------------------------------------------------
# Release builds (CP_BUILD=release)

# git with no user or system configuration (no excludes, hooks or signing from the machine),
# as the same fixed committer, so a tree made twice gets the same commit.
tree_git()
{
	GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git -c user.name="bindtrace test bed" \
		-c user.email=testbed@bindtrace.invalid -c init.defaultBranch=master \
		-c core.autocrlf=false -c core.safecrlf=false -c advice.detachedHead=false "$@"
}

# commit_tree DIR TIME MESSAGE TAG...: commits everything in DIR at TIME and tags it, before any
# build (Go caches the main module's version by commit: a build before the tag would stamp a
# pseudo-version for good).
commit_tree()
{
	local dir=$1 time=$2 msg=$3 tag
	shift 3
	tree_git -C "$dir" init -q
	tree_git -C "$dir" add -A
	GIT_AUTHOR_DATE=$time GIT_COMMITTER_DATE=$time tree_git -C "$dir" commit -q -m "$msg"
	# A few files come with CRLF where the tree's .gitattributes says eol=lf: check them out as
	# committed, so the tree stays clean once git looks at their contents.
	tree_git -C "$dir" ls-files --eol -z | awk -v RS='\0' -v ORS='\0' \
		'$1 == "i/lf" && $2 == "w/crlf" { sub(/^[^\t]*\t/, ""); print }' |
		xargs -0 -r git -C "$dir" checkout -q --
	for tag in "$@"; do
		tree_git -C "$dir" tag "$tag"
	done
}

# A tree is ready when it was renamed into place (only done once complete) and is still clean
# at its tag.
tree_ready()
{
	local src=$1 tag=$2
	local head
	[ -d "$src/.git" ] || return 1
	head=$(tree_git -C "$src" rev-parse -q --verify HEAD) || return 1
	[ "$(tree_git -C "$src" rev-parse -q --verify "refs/tags/$tag^{commit}")" = "$head" ] ||
		return 1
	[ -z "$(tree_git -C "$src" status --porcelain 2>/dev/null)" ]
}

# release_env GO_VERSION: the environment every release step runs Go in. GOFLAGS must carry
# -buildvcs=true (an empty GOFLAGS would not override this machine's GOENV file, which turns VCS
# stamping off); GOTOOLCHAIN is the release's own Go, fetched through the module proxy into the
# shared module cache; the caches are the shared defaults.
release_env()
{
	local gocache gomodcache
	gocache=$(go env GOCACHE)
	gomodcache=$(go env GOMODCACHE)
	echo "GOTOOLCHAIN=go$1 GOFLAGS=-buildvcs=true GOCACHE=$gocache GOMODCACHE=$gomodcache"
}

release_go()
{
	local gover=$1
	shift
	# shellcheck disable=SC2046
	env -u GOWORK -u GO111MODULE -u GOBIN -u GOPATH $(release_env "$gover") go "$@"
}

# Fetches a release's Go toolchain once, so the build itself can run with GOPROXY=off.
ensure_toolchain()
{
	local gover=$1 got
	got=$(cd "${TMPDIR:-/tmp}" && release_go "$gover" env GOVERSION 2>/dev/null) ||
		die "cannot get Go $gover through the module proxy: $(cd "${TMPDIR:-/tmp}" &&
			release_go "$gover" env GOVERSION 2>&1 | tail -n 1)"
	[ "$got" = "go$gover" ] || die "asked for Go $gover, got '$got'"
}

# Copies a module's files (read-only in the module cache) into DEST.
copy_module()
{
	rm -rf "$2"
	mkdir -p "$(dirname "$2")"
	cp -r "$1" "$2"
	chmod -R u+w "$2"
}

# The staging modules of a k8s release from the module proxy: each k8s.io/M@v0.Y.Z listed in
# go.work goes to staging/src/k8s.io/M (a module zip leaves nested modules out). A module the
# proxy does not serve (sample-cli-plugin, sample-controller) gets a stub go.mod, which is
# enough as long as no command imports it (the build would fail if one did).
fill_k8s_staging()
{
	local tree=$1 version=$2 staging gover mods=() args=() m n path dir info err stubs=()
	staging=v0.${version#v1.}
	gover=$(awk '$1 == "go" { print $2; exit }' "$tree/go.mod")
	mapfile -t mods < <(sed -n 's|^[[:space:]]*\./staging/src/\(k8s\.io/[^[:space:]]*\)$|\1|p' \
		"$tree/go.work")
	[ "${#mods[@]}" -gt 0 ] || die "no staging modules in $tree/go.work"
	for m in "${mods[@]}"; do
		args+=("$m@$staging")
	done
	n=0
	while IFS=$'\x1f' read -r path dir info err; do
		if [ -n "$dir" ]; then
			copy_module "$dir" "$tree/staging/src/$path"
		elif [[ $err == *"not available"* || $err == *"404 Not Found"* ]]; then
			rm -rf "${tree:?}/staging/src/$path"
			mkdir -p "$tree/staging/src/$path"
			printf 'module %s\n\ngo %s\n' "$path" "$gover" >"$tree/staging/src/$path/go.mod"
			stubs+=("$path")
		else
			die "cannot download $path@$staging: ${err:-no answer from the module proxy}"
		fi
		n=$((n + 1))
	done < <(go_download "${args[@]}")
	[ "$n" -eq "${#mods[@]}" ] ||
		die "the module proxy answered for $n of ${#mods[@]} staging modules"
	log "k8s $version: ${#mods[@]} staging modules at $staging${stubs[*]:+, stubs (not served) for ${stubs[*]}}"
}

# prepare_k8s_tree VERSION DEST: the release's source tree, committed and tagged.
prepare_k8s_tree()
{
	local version=$1 dest=$2 tmp path dir info err time gover
	tmp=$dest.tmp.$$
	rm -rf "$tmp"
	IFS=$'\x1f' read -r path dir info err < <(go_download "k8s.io/kubernetes@$version")
	[ -n "$dir" ] || die "cannot download k8s.io/kubernetes@$version: ${err:-no answer}"
	time=$(info_time "$info")
	log "k8s $version: making a git tree from its module ($time) ..."
	copy_module "$dir" "$tmp"
	gover=$(cat "$tmp/.go-version")
	fill_k8s_staging "$tmp" "$version"
	# Upstream builds in workspace-vendor mode with GOPROXY=off: vendor/ as `go work vendor`
	# makes it (the module zip keeps only vendor/OWNERS). -e: tests import stubbed modules
	# (v1.33's e2e tests import k8s.io/sample-apiserver); a command that needed one would fail
	# to build.
	ensure_toolchain "$gover"
	mv "$tmp/vendor/OWNERS" "$tmp/.vendor-OWNERS" 2>/dev/null || true
	rm -rf "$tmp/vendor"
	(cd "$tmp" && release_go "$gover" work vendor -e) >"$dest.vendor.log" 2>&1 || {
		tail -n 20 "$dest.vendor.log" >&2
		die "go work vendor failed for k8s $version (log $dest.vendor.log)"
	}
	[ -f "$tmp/.vendor-OWNERS" ] && mv "$tmp/.vendor-OWNERS" "$tmp/vendor/OWNERS"
	commit_tree "$tmp" "$time" "k8s.io/kubernetes $version from the Go module proxy" "$version"
	rm -rf "$dest"
	mv "$tmp" "$dest"
}

# release_up_to_date DIR CMD...: every binary there, built from the tree's current commit.
release_up_to_date()
{
	local dir=$1 cmd
	shift
	[ -f "$dir/bin/.commit" ] || return 1
	[ "$(cat "$dir/bin/.commit")" = "$(tree_git -C "$dir/src" rev-parse HEAD 2>/dev/null)" ] ||
		return 1
	for cmd in "$@"; do
		[ -x "$dir/bin/$cmd" ] || return 1
	done
}

# Moves freshly built binaries into DIR/bin with the commit they came from.
install_release_bins()
{
	local dir=$1 from=$2 cmd tmp
	shift 2
	tmp=$dir/bin.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp"
	for cmd in "$@"; do
		cp -p "$from/$cmd" "$tmp/$cmd" || return 1
	done
	tree_git -C "$dir/src" rev-parse HEAD >"$tmp/.commit"
	rm -rf "$dir/bin"
	mv "$tmp" "$dir/bin"
}

# k8s: upstream's own hack/make-rules/build.sh, which builds all the static commands in one `go
# install` (-trimpath, -installsuffix=static, the tags, the version -X flags, -s -w) with
# GOPROXY=off. SOURCE_DATE_EPOCH makes the build date the release's commit time (reproducible).
build_release_k8s()
{
	local version=$1 dir=$build_root/release/k8s-$1 lock t1 gover epoch cmd targets=() rc
	mkdir -p "$build_root/release"
	exec {lock}>"$dir.lock"
	flock "$lock"
	if release_up_to_date "$dir" "${k8s_cmds[@]}"; then
		log "${k8s_cmds[*]} $version (release build) up to date"
		exec {lock}>&-
		return 0
	fi
	t1=$(now_ms)
	rm -rf "$dir"/src.tmp.* "$dir"/bin.tmp.*
	tree_ready "$dir/src" "$version" || prepare_k8s_tree "$version" "$dir/src"
	gover=$(cat "$dir/src/.go-version")
	epoch=$(tree_git -C "$dir/src" log -1 --format=%ct)
	ensure_toolchain "$gover"
	for cmd in "${k8s_cmds[@]}"; do
		targets+=("cmd/$cmd")
	done
	log "k8s $version: building ${k8s_cmds[*]} with Go $gover (hack/make-rules/build.sh; log $dir/build.log) ..."
	# shellcheck disable=SC2046
	(cd "$dir/src" && env -u GOWORK -u GOBIN $(release_env "$gover") SOURCE_DATE_EPOCH="$epoch" \
		KUBE_BUILD_PLATFORMS=linux/amd64 KUBE_VERBOSE=2 \
		bash hack/make-rules/build.sh "${targets[@]}") >"$dir/build.log" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		tail -n 30 "$dir/build.log" >&2
		die "building k8s $version failed (exit $rc; log $dir/build.log)"
	fi
	[ -z "$(tree_git -C "$dir/src" status --porcelain)" ] ||
		die "the k8s $version tree is dirty after the build; its binaries say so"
	install_release_bins "$dir" "$dir/src/_output/local/go/bin" "${k8s_cmds[@]}" ||
		die "k8s $version: a built command is missing in $dir/src/_output/local/go/bin"
	log "built ${k8s_cmds[*]} $version (release) in $(secs_since "$t1") s"
	exec {lock}>&-
}

# prepare_etcd_tree VERSION DEST: etcd's repository has no module the proxy serves at its root
# (go.etcd.io/etcd/v3 is "not available"), so the tree is made of the server module and the
# sibling modules its go.mod replaces (../api, ../client/pkg, ../client/v3, ../pkg), each in
# its place. .go-version is the server's toolchain line (the two agree in the releases read).
# From v3.7 upstream builds in workspace mode (a root go.work): one listing these modules is
# written. Tagged v3.X.Y and MODULE/v3.X.Y as upstream's release.sh does.
prepare_etcd_tree()
{
	local version=$1 dest=$2 tmp path dir info err time gover gomod rels=() rel args=() tags=()
	local -A reldir=()
	tmp=$dest.tmp.$$
	rm -rf "$tmp"
	IFS=$'\x1f' read -r path dir info err < <(go_download "go.etcd.io/etcd/server/v3@$version")
	[ -n "$dir" ] || die "cannot download go.etcd.io/etcd/server/v3@$version: ${err:-no answer}"
	time=$(info_time "$info")
	log "etcd $version: making a git tree from its modules ($time) ..."
	copy_module "$dir" "$tmp/server"
	gomod=$tmp/server/go.mod
	gover=$(awk '$1 == "toolchain" { sub(/^go/, "", $2); print $2; exit }' "$gomod")
	[ -n "$gover" ] || gover=$(awk '$1 == "go" { print $2; exit }' "$gomod")
	echo "$gover" >"$tmp/.go-version"
	# Lines like "go.etcd.io/etcd/api/v3 => ../api": module path and directory.
	while read -r path rel; do
		rels+=("$rel")
		args+=("$path@$version")
		reldir[$path]=$rel
	done < <(sed -n 's|^[[:space:]]*\(go\.etcd\.io/etcd/[^[:space:]]*\) => \.\./\([^[:space:]]*\)$|\1 \2|p' "$gomod")
	[ "${#rels[@]}" -gt 0 ] || die "etcd $version: no sibling modules replaced in server/go.mod"
	while IFS=$'\x1f' read -r path dir info err; do
		[ -n "$dir" ] || die "cannot download $path@$version: ${err:-no answer}"
		rel=${reldir[$path]}
		copy_module "$dir" "$tmp/$rel"
		tags+=("$rel/$version")
	done < <(go_download "${args[@]}")
	for rel in "${rels[@]}"; do
		[ -f "$tmp/$rel/go.mod" ] || die "etcd $version: module ../$rel missing from the tree"
	done
	if [[ ! $version =~ ^v3\.[0-6]\. ]]; then
		{
			echo "// Written by tests/controlplane/cluster: upstream's go.work lists more modules,"
			echo "// these are the ones etcd's server needs (the others are not served)."
			echo
			grep -m1 '^go ' "$gomod"
			grep -m1 '^toolchain ' "$gomod" || true
			echo
			echo "use ("
			for rel in "${rels[@]}" server; do
				echo "	./$rel"
			done | sort
			echo ")"
		} >"$tmp/go.work"
	fi
	ensure_toolchain "$gover"
	# Resolve every dependency now (downloads, and go.work.sum if the workspace needs one), so
	# the build leaves the committed tree as it was.
	(cd "$tmp/server" && release_go "$gover" list -deps . >/dev/null) ||
		die "etcd $version: resolving the server's dependencies failed"
	commit_tree "$tmp" "$time" "etcd $version from the Go module proxy" "$version" \
		"server/$version" "${tags[@]}"
	rm -rf "$dest"
	mv "$tmp" "$dest"
}

# etcd: scripts/build.sh's etcd_build with the release's GO_LDFLAGS="-s -w" (build-binary.sh):
# CGO_ENABLED=0 go build -trimpath -installsuffix=cgo, GitSHA = the tree's short commit.
build_release_etcd()
{
	local version=$1 dir=$build_root/release/etcd-$1 lock t1 gover sha out rc
	mkdir -p "$build_root/release"
	exec {lock}>"$dir.lock"
	flock "$lock"
	if release_up_to_date "$dir" etcd; then
		log "etcd $version (release build) up to date"
		exec {lock}>&-
		return 0
	fi
	t1=$(now_ms)
	rm -rf "$dir"/src.tmp.* "$dir"/bin.tmp.*
	tree_ready "$dir/src" "$version" || prepare_etcd_tree "$version" "$dir/src"
	gover=$(cat "$dir/src/.go-version")
	sha=$(tree_git -C "$dir/src" rev-parse --short HEAD)
	out=$dir/out.tmp.$$
	rm -rf "$dir"/out.tmp.*
	mkdir -p "$out"
	log "etcd $version: building etcd with Go $gover (scripts/build.sh's flags; log $dir/build.log) ..."
	# shellcheck disable=SC2046
	(cd "$dir/src/server" && env -u GOWORK -u GOBIN $(release_env "$gover") \
		CGO_ENABLED=0 go build -trimpath -installsuffix=cgo \
		"-ldflags=-s -w -X=go.etcd.io/etcd/api/v3/version.GitSHA=$sha" -o "$out/etcd" .) \
		>"$dir/build.log" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		tail -n 30 "$dir/build.log" >&2
		rm -rf "$out"
		die "building etcd $version failed (exit $rc; log $dir/build.log)"
	fi
	install_release_bins "$dir" "$out" etcd || die "etcd $version: no binary built"
	rm -rf "$out"
	log "built etcd $version (release) in $(secs_since "$t1") s"
	exec {lock}>&-
}
