/* gorelease: which release and which commit a Kubernetes or etcd binary states it was built from,
 * and where each fact was read, for `inspect`, the tracer's header lines and the citation.
 *
 * Two places hold them, and neither is the same in every build:
 *   - .go.buildinfo (goelf): the module versions and, when built from a VCS checkout, the
 *     vcs.revision / vcs.modified settings. Upstream Kubernetes releases built with Go <= 1.23
 *     name their main module "k8s.io/kubernetes (devel)"; Go 1.24+ records the tag.
 *   - string variables stamped at link time with -X: k8s.io/client-go/pkg/version and
 *     k8s.io/component-base/version .{gitVersion,gitCommit,gitTreeState,buildDate,gitMajor,
 *     gitMinor} (Kubernetes' hack/lib/version.sh), go.etcd.io/etcd/api/v3/version.GitSHA (etcd's
 *     build.sh). Release binaries have no symbol table, so these are found through code that
 *     reads them: each package's Get() returns a version.Info built from them, and x86flow
 *     follows which variable's two words (pointer, length) land in which of Info's string
 *     fields, placed by the function's result size (9 strings up to apimachinery 0.32, 13 from
 *     0.33) and its pcsp table. etcd's (*config).parse prints Version and GitSHA with
 *     "etcd Version: %s\n" and "Git SHA: %s\n": the variable passed to the call just before the
 *     one that takes each format is that value.
 *
 * The rules (issue 12): the commit is vcs.revision, else the stamped commit; the release is the
 * product's module version when it is a release (not "(devel)", not v0.0.0, not a
 * pseudo-version), else the stamped version. Nothing is guessed: every value read from a
 * variable must have its field's form (gitVersion v1.2.3[-pre][+meta], gitCommit 40 hex digits,
 * gitTreeState clean/dirty/archive, buildDate RFC 3339 and not the unstamped 1970 default,
 * gitMajor/gitMinor consistent with gitVersion), the two Kubernetes packages must agree, and
 * what fails is left empty with the reason in `notes`. Module-zip builds (no VCS) and unstamped
 * builds thus give no commit; a "(devel)" main module never becomes a release. */
#ifndef BINDTRACE_GORELEASE_H
#define BINDTRACE_GORELEASE_H

#include "goelf.h"

enum go_release_product {
	GO_PRODUCT_OTHER,
	GO_PRODUCT_KUBERNETES, /* module k8s.io/kubernetes, main or dependency */
	GO_PRODUCT_ETCD,       /* module go.etcd.io/etcd/... main, or etcdmain linked in */
};

enum go_release_source {
	GO_RELEASE_UNKNOWN,   /* not stated in a form that could be validated: value is "" */
	GO_RELEASE_BUILDINFO, /* .go.buildinfo: a module version, vcs.revision, vcs.modified */
	GO_RELEASE_STAMPED,   /* a string variable in the binary's data, found through the code
			       * that reads it: -X stamps; etcd's version.Version and GitSHA */
};

struct go_release_fact {
	char value[72];
	enum go_release_source source;
	char from[112]; /* e.g. "vcs.revision", "main module k8s.io/kubernetes",
			 * "k8s.io/client-go/pkg/version.gitVersion" */
};

/* What one function's code shows the stamped variables hold, each "" unless valid. For etcd,
 * git_version is "v" + version.Version and git_commit is version.GitSHA. */
struct go_release_stamps {
	char function[96]; /* read through, e.g. "k8s.io/client-go/pkg/version.Get"; "" merged */
	char git_version[64], git_commit[48], tree_state[16], build_date[40];
	char major[8], minor[8];
};

#define GO_RELEASE_MAX_READ 2

struct go_release {
	enum go_release_product product;
	struct go_release_fact release, commit, tree_state, build_date;
	/* The stamps: each function read, then their merge (a value they disagree on is dropped,
	 * as is a gitVersion whose numbers disagree with gitMajor/gitMinor). */
	struct go_release_stamps read[GO_RELEASE_MAX_READ];
	int n_read;
	struct go_release_stamps stamps;
	char notes[512]; /* what was refused or disagreed, "; " separated; "" when nothing */
};

/* Fill rel from gb (opened by go_binary__open). Always returns 0 with what could be validated
 * (every fact may be unknown); -ENOMEM only when memory ran out. Reads a few hundred bytes of
 * code per function; the functions it may read are looked up in one pass over the pclntab
 * (none when gb was opened with go_release__funcs among its names: go_binary__open_find). */
int go_release__read(struct go_binary *gb, struct go_release *rel);
/* The functions go_release__read may look up by name, and how many. */
extern const char *const go_release__funcs[];
extern const size_t go_release__n_funcs;

const char *go_release_source__name(enum go_release_source source);    /* "buildinfo", ... */
const char *go_release_product__name(enum go_release_product product); /* "kubernetes", ... */

/* Whether a module version names a release: v1.2.3 or v1.2.3-rc.1, but not "(devel)", v0.0.0
 * or a pseudo-version (v0.0.0-20250101000000-abcdefabcdef, v1.2.4-0.2025...-abc..., with or
 * without +incompatible / +dirty). Exposed for the unit tests. */
bool go_release__is_release_version(const char *version);

/* The field validators, exposed for the unit tests. */
bool go_release__valid_git_version(const char *s);
bool go_release__valid_commit(const char *s, size_t min_len, size_t max_len); /* lowercase hex */
bool go_release__valid_tree_state(const char *s);
bool go_release__valid_build_date(const char *s);

#endif
