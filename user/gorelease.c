/* gorelease: a binary's release and commit from its buildinfo and its link-time stamps (see
 * gorelease.h). The stamps are located by following code (x86flow), never by guessing at strings
 * in rodata, and every value must pass its field's validator before it is reported. */
#include "gorelease.h"
#include "util.h"
#include "x86flow.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FUNC_BYTES (256u << 10) /* a Get() is ~0x200 bytes, etcd's parse ~0x600 */
#define MAX_STAMP_LEN 128

/* ---- validators ---- */

static bool all_digits(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* "1.2.3" at s: returns the length consumed, 0 if not three dot-separated numbers. */
static size_t semver_core(const char *s)
{
	size_t n = 0;

	for (int part = 0; part < 3; part++) {
		size_t d = strspn(s + n, "0123456789");

		if (!d || (d > 1 && s[n] == '0'))
			return 0;
		n += d;
		if (part < 2) {
			if (s[n] != '.')
				return 0;
			n++;
		}
	}
	return n;
}

/* [-pre][+meta] with identifiers of [0-9A-Za-z-] separated by dots. */
static bool semver_suffix(const char *s)
{
	static const char ident[] =
	    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-.";

	if (*s == '-') {
		size_t n = strspn(s + 1, ident);

		if (!n)
			return false;
		s += 1 + n;
	}
	if (*s == '+') {
		size_t n = strspn(s + 1, ident);

		if (!n)
			return false;
		s += 1 + n;
	}
	return *s == '\0';
}

bool go_release__valid_git_version(const char *s)
{
	size_t n;

	if (!s || s[0] != 'v' || strlen(s) > 63)
		return false;
	n = semver_core(s + 1);
	if (!n || strncmp(s + 1, "0.0.0", 5) == 0) /* the unstamped v0.0.0-master+$Format:%H$ */
		return false;
	return semver_suffix(s + 1 + n);
}

bool go_release__valid_commit(const char *s, size_t min_len, size_t max_len)
{
	size_t n = s ? strspn(s, "0123456789abcdef") : 0;

	return s && n == strlen(s) && n >= min_len && n <= max_len;
}

bool go_release__valid_tree_state(const char *s)
{
	return s && (!strcmp(s, "clean") || !strcmp(s, "dirty") || !strcmp(s, "archive"));
}

static bool two_digits_in(const char *s, int lo, int hi)
{
	int v;

	if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
		return false;
	v = (s[0] - '0') * 10 + (s[1] - '0');
	return v >= lo && v <= hi;
}

/* YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm|-hh:mm), as `date -u +%Y-%m-%dT%H:%M:%SZ` writes it; the
 * source default 1970-01-01T00:00:00Z means "not stamped". */
bool go_release__valid_build_date(const char *s)
{
	const char *p;

	if (!s || strlen(s) < 20 || !strcmp(s, "1970-01-01T00:00:00Z"))
		return false;
	if (!all_digits(s, 4) || s[4] != '-' || !two_digits_in(s + 5, 1, 12) || s[7] != '-' ||
	    !two_digits_in(s + 8, 1, 31) || (s[10] != 'T' && s[10] != 't') ||
	    !two_digits_in(s + 11, 0, 23) || s[13] != ':' || !two_digits_in(s + 14, 0, 59) ||
	    s[16] != ':' || !two_digits_in(s + 17, 0, 60))
		return false;
	p = s + 19;
	if (*p == '.') {
		size_t n = strspn(p + 1, "0123456789");

		if (!n)
			return false;
		p += 1 + n;
	}
	if ((p[0] == 'Z' || p[0] == 'z') && !p[1])
		return true;
	return (p[0] == '+' || p[0] == '-') && two_digits_in(p + 1, 0, 23) && p[3] == ':' &&
	       two_digits_in(p + 4, 0, 59) && !p[6];
}

/* Go's pseudo-versions end in a 14-digit UTC time and a 12-hex-digit commit. */
static bool is_pseudo_version(const char *v)
{
	char base[128];
	size_t n;
	char *plus;

	util__copy(base, sizeof(base), v);
	plus = strchr(base, '+'); /* +incompatible, +dirty */
	if (plus)
		*plus = '\0';
	n = strlen(base);
	if (n < 28 || base[n - 13] != '-' || !go_release__valid_commit(base + n - 12, 12, 12))
		return false;
	return all_digits(base + n - 27, 14) && (base[n - 28] == '-' || base[n - 28] == '.');
}

bool go_release__is_release_version(const char *version)
{
	if (!version || version[0] != 'v' || is_pseudo_version(version))
		return false;
	return go_release__valid_git_version(version);
}

const char *go_release_source__name(enum go_release_source source)
{
	switch (source) {
	case GO_RELEASE_BUILDINFO:
		return "buildinfo";
	case GO_RELEASE_STAMPED:
		return "stamped";
	default:
		return "unknown";
	}
}

const char *go_release_product__name(enum go_release_product product)
{
	switch (product) {
	case GO_PRODUCT_KUBERNETES:
		return "kubernetes";
	case GO_PRODUCT_ETCD:
		return "etcd";
	default:
		return "other";
	}
}

/* ---- notes ---- */

static void note(struct go_release *rel, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note(struct go_release *rel, const char *fmt, ...)
{
	size_t n = strlen(rel->notes);
	va_list ap;

	if (n && n + 2 < sizeof(rel->notes)) {
		memcpy(rel->notes + n, "; ", 3);
		n += 2;
	}
	if (n + 1 >= sizeof(rel->notes))
		return;
	va_start(ap, fmt);
	vsnprintf(rel->notes + n, sizeof(rel->notes) - n, fmt, ap);
	va_end(ap);
}

static void fact__set(struct go_release_fact *f, const char *value, enum go_release_source source,
		      const char *from)
{
	util__copy(f->value, sizeof(f->value), value);
	f->source = source;
	util__copy(f->from, sizeof(f->from), from);
}

/* ---- a function's code ---- */

struct func_code {
	const char *name;
	uint64_t entry, end;
	uint8_t *bytes;
};

static int func_code__load(struct go_binary *gb, const char *name, struct func_code *fc)
{
	ssize_t n;

	memset(fc, 0, sizeof(*fc));
	fc->name = name;
	if (go_binary__func(gb, name, &fc->entry, &fc->end))
		return -ENOENT;
	if (fc->end <= fc->entry || fc->end - fc->entry > MAX_FUNC_BYTES)
		return -ERANGE;
	fc->bytes = malloc(fc->end - fc->entry);
	if (!fc->bytes)
		return -ENOMEM;
	n = go_binary__read_text(gb, fc->entry, fc->bytes, fc->end - fc->entry);
	if (n != (ssize_t)(fc->end - fc->entry)) {
		free(fc->bytes);
		fc->bytes = NULL;
		return -ERANGE;
	}
	return 0;
}

/* ---- Kubernetes: version.Get() of client-go and component-base ---- */

/* apimachinery's version.Info: Major, Minor, [EmulationMajor, EmulationMinor,
 * MinCompatibilityMajor, MinCompatibilityMinor (0.33+)], GitVersion, GitCommit, GitTreeState,
 * BuildDate, GoVersion, Compiler, Platform: the stamped fields sit at fixed places from each end. */
enum info_field { F_MAJOR, F_MINOR, F_VERSION, F_COMMIT, F_TREE, F_DATE, N_FIELDS };

static const char *const field_var[N_FIELDS] = { "gitMajor",  "gitMinor",     "gitVersion",
						 "gitCommit", "gitTreeState", "buildDate" };

static int info_field_index(enum info_field f, int n_strings)
{
	switch (f) {
	case F_MAJOR:
		return 0;
	case F_MINOR:
		return 1;
	default:
		return n_strings - 7 + (f - F_VERSION);
	}
}

#define MAX_INFO_WORDS 26 /* 13 strings */

struct get_scan {
	struct go_binary *gb;
	int32_t result_bytes;
	struct x86flow_value words[MAX_INFO_WORDS];    /* the result area as the code runs */
	struct x86flow_value returned[MAX_INFO_WORDS]; /* as every RET leaves it */
	int n_returns;
	int err;
};

/* A store into Get's result area (entry SP + 8 onwards) sets that word; a call or a write it
 * cannot place may overwrite any of it, so what was known is dropped. At a RET the result is
 * final; a word two RETs leave differently is unknown. */
static int get_scan__event(const struct x86flow_event *e, void *ctx)
{
	struct get_scan *g = ctx;
	int32_t delta;
	int64_t off;

	if (e->type == X86FLOW_RETURN) {
		for (int i = 0; i < MAX_INFO_WORDS; i++)
			if (!g->n_returns)
				g->returned[i] = g->words[i];
			else if (g->returned[i].kind != g->words[i].kind ||
				 g->returned[i].value != g->words[i].value)
				g->returned[i] = (struct x86flow_value){ X86FLOW_UNKNOWN, 0 };
		g->n_returns++;
		return 0;
	}
	if (e->type != X86FLOW_STORE) {
		memset(g->words, 0, sizeof(g->words));
		return 0;
	}
	if (go_binary__sp_delta(g->gb, e->pc, &delta)) {
		g->err = -ENOENT;
		return 1;
	}
	off = e->rsp_disp - delta - 8;
	if (off >= 0 && off < g->result_bytes && off % 8 == 0)
		g->words[off / 8] = e->stored;
	return 0;
}

static bool field_valid(enum info_field f, const char *s)
{
	switch (f) {
	case F_MAJOR:
		return all_digits(s, strlen(s)) && strlen(s) < 4;
	case F_MINOR: {
		size_t n = strspn(s, "0123456789");

		return n && n < 4 && (!s[n] || (s[n] == '+' && !s[n + 1]));
	}
	case F_VERSION:
		return go_release__valid_git_version(s);
	case F_COMMIT:
		return go_release__valid_commit(s, 40, 40);
	case F_TREE:
		return go_release__valid_tree_state(s);
	case F_DATE:
		return go_release__valid_build_date(s);
	default:
		return false;
	}
}

#define K8S_CLIENT_GO_VERSION "k8s.io/client-go/pkg/version"
#define K8S_COMPONENT_BASE_VERSION "k8s.io/component-base/version"
static const char *const k8s_version_pkgs[] = { K8S_CLIENT_GO_VERSION, K8S_COMPONENT_BASE_VERSION };

static char *stamp_field(struct go_release_stamps *st, enum info_field f, size_t *len)
{
	switch (f) {
	case F_MAJOR:
		*len = sizeof(st->major);
		return st->major;
	case F_MINOR:
		*len = sizeof(st->minor);
		return st->minor;
	case F_VERSION:
		*len = sizeof(st->git_version);
		return st->git_version;
	case F_COMMIT:
		*len = sizeof(st->git_commit);
		return st->git_commit;
	case F_TREE:
		*len = sizeof(st->tree_state);
		return st->tree_state;
	default:
		*len = sizeof(st->build_date);
		return st->build_date;
	}
}

/* Read the stamped fields through one package's Get() into st. 0 with st->function set when
 * the function was decoded, 0 with it "" when it is not linked in or could not be read (a
 * note says why), -ENOMEM. */
static int k8s_get__read(struct go_binary *gb, const char *pkg, struct go_release_stamps *st,
			 struct go_release *rel)
{
	struct get_scan g = { .gb = gb };
	struct func_code fc;
	char name[96], s[MAX_STAMP_LEN];
	int n_strings, err;

	memset(st, 0, sizeof(*st));
	snprintf(name, sizeof(name), "%s.Get", pkg);
	err = func_code__load(gb, name, &fc);
	if (err == -ENOMEM)
		return err;
	if (err)
		return 0; /* not linked in: nothing to say */
	if (go_binary__func_args(gb, name, &g.result_bytes) || g.result_bytes % 16 ||
	    ((n_strings = g.result_bytes / 16) != 9 && n_strings != 13)) {
		note(rel, "%s returns %d bytes: not a version.Info layout bindtrace knows", name,
		     g.result_bytes);
		goto cleanup;
	}
	err = x86flow__scan(fc.bytes, fc.end - fc.entry, fc.entry, get_scan__event, &g, NULL);
	if (err < 0 || g.err || !g.n_returns) {
		note(rel, "%s: %s", name,
		     err == -EILSEQ ? "undecodable instruction"
		     : g.err	    ? "no SP table for its code"
				    : "no RET");
		err = err == -ENOMEM ? err : 0;
		goto cleanup;
	}
	err = 0;
	util__copy(st->function, sizeof(st->function), name);
	for (int f = 0; f < N_FIELDS; f++) {
		int i = info_field_index(f, n_strings), n;
		const struct x86flow_value *ptr = &g.returned[2 * i], *len = &g.returned[2 * i + 1];
		size_t cap;
		char *out = stamp_field(st, f, &cap);

		/* A variable's string header: pointer and length loaded from consecutive words. */
		if (ptr->kind != X86FLOW_LOAD || len->kind != X86FLOW_LOAD ||
		    len->value != ptr->value + 8)
			continue; /* e.g. GitVersion from an atomic.Value (component-base 0.30+) */
		n = go_binary__read_string_var(gb, ptr->value, s, sizeof(s));
		if (n >= 0 && field_valid(f, s) && (size_t)n < cap)
			memcpy(out, s, (size_t)n + 1);
		else if (n > 0)
			note(rel, "%s.%s = \"%.64s\" is not a stamped value", pkg, field_var[f], s);
	}
cleanup:
	free(fc.bytes);
	return err;
}

/* The package ("k8s.io/client-go/pkg/version") of the first function read that gave field f
 * the merged value. */
static void stamp_from(const struct go_release *rel, enum info_field f, char *from, size_t len)
{
	struct go_release_stamps copy;
	size_t cap;

	for (int i = 0; i < rel->n_read; i++) {
		copy = rel->read[i];
		copy.function[strlen(copy.function) - 4] = '\0'; /* ".Get" */
		if (!strcmp(stamp_field(&copy, f, &cap),
			    stamp_field((struct go_release_stamps *)&rel->stamps, f, &cap))) {
			snprintf(from, len, "%s.%s", copy.function, field_var[f]);
			return;
		}
	}
	util__copy(from, len, field_var[f]);
}

static int k8s_stamps__read(struct go_binary *gb, struct go_release *rel)
{
	struct go_release_stamps *out = &rel->stamps;
	int err;

	for (size_t i = 0; i < sizeof(k8s_version_pkgs) / sizeof(k8s_version_pkgs[0]); i++) {
		err = k8s_get__read(gb, k8s_version_pkgs[i], &rel->read[rel->n_read], rel);
		if (err)
			return err;
		if (rel->read[rel->n_read].function[0])
			rel->n_read++;
	}
	/* Merge: a value two functions disagree on is no value. */
	for (int f = 0; f < N_FIELDS; f++) {
		size_t cap;
		char *merged = stamp_field(out, f, &cap);

		for (int i = 0; i < rel->n_read; i++) {
			const char *v = stamp_field(&rel->read[i], f, &cap);

			if (!v[0])
				continue;
			if (!merged[0]) {
				util__copy(merged, cap, v);
			} else if (strcmp(merged, v)) {
				note(rel, "%s.%s \"%s\" and %s's \"%s\" disagree: neither is used",
				     k8s_version_pkgs[0], field_var[f],
				     stamp_field(&rel->read[0], f, &cap), k8s_version_pkgs[1], v);
				merged[0] = '\0';
				break;
			}
		}
	}
	/* gitMajor and gitMinor are the first two numbers of gitVersion when both are stamped. */
	if (out->git_version[0] && out->major[0] && out->minor[0]) {
		char want[32];

		snprintf(want, sizeof(want), "v%s.%.*s.", out->major,
			 (int)strspn(out->minor, "0123456789"), out->minor);
		if (strncmp(out->git_version, want, strlen(want))) {
			note(rel, "stamped gitVersion %s disagrees with gitMajor %s, gitMinor %s",
			     out->git_version, out->major, out->minor);
			out->git_version[0] = '\0';
		}
	}
	return 0;
}

/* ---- etcd: the variables (*config).parse prints with --version ---- */

#define ETCD_PARSE_35 "go.etcd.io/etcd/server/v3/etcdmain.(*config).parse"
#define ETCD_PARSE_34 "go.etcd.io/etcd/etcdmain.(*config).parse"
static const char *const etcd_parse_funcs[] = { ETCD_PARSE_35, ETCD_PARSE_34 };

enum { E_VERSION, E_GITSHA, N_ETCD };
static const char *const etcd_formats[N_ETCD] = { "etcd Version: %s\n", "Git SHA: %s\n" };

struct etcd_scan {
	struct go_binary *gb;
	uint64_t last_string_var; /* header address of the string the previous call was given */
	uint64_t var[N_ETCD];
	int n_found[N_ETCD];
};

/* Does some pair of consecutive argument registers hold (address, length) of format? */
static bool call_takes_format(struct go_binary *gb, const struct x86flow_event *e,
			      const char *format)
{
	size_t n = strlen(format);
	char buf[64];

	for (int i = 0; i + 1 < X86FLOW_ARG_REGS; i++) {
		if (e->args[i].kind != X86FLOW_ADDRESS ||
		    e->args[i + 1].kind != X86FLOW_IMMEDIATE || e->args[i + 1].value != n)
			continue;
		if (!go_binary__read_data(gb, e->args[i].value, buf, n) && !memcmp(buf, format, n))
			return true;
	}
	return false;
}

/* fmt.Printf("Git SHA: %s\n", version.GitSHA) compiles to runtime.convTstring(ptr, len) with the
 * variable's two words in RAX, RBX, then the print call with the format's address and length. */
static int etcd_scan__event(const struct x86flow_event *e, void *ctx)
{
	struct etcd_scan *es = ctx;

	if (e->type != X86FLOW_CALL)
		return 0;
	for (int v = 0; v < N_ETCD; v++) {
		if (!call_takes_format(es->gb, e, etcd_formats[v]))
			continue;
		if (es->last_string_var && es->n_found[v]++ == 0)
			es->var[v] = es->last_string_var;
		else if (es->last_string_var != es->var[v])
			es->var[v] = 0; /* two different answers: none */
	}
	es->last_string_var = 0;
	if (e->args[X86FLOW_RAX].kind == X86FLOW_LOAD &&
	    e->args[X86FLOW_RBX].kind == X86FLOW_LOAD &&
	    e->args[X86FLOW_RBX].value == e->args[X86FLOW_RAX].value + 8)
		es->last_string_var = e->args[X86FLOW_RAX].value;
	return 0;
}

static int etcd_stamps__read(struct go_binary *gb, struct go_release *rel)
{
	struct etcd_scan es = { .gb = gb };
	struct func_code fc;
	char s[MAX_STAMP_LEN];
	size_t i;
	int err = -ENOENT;

	for (i = 0; i < sizeof(etcd_parse_funcs) / sizeof(etcd_parse_funcs[0]); i++) {
		err = func_code__load(gb, etcd_parse_funcs[i], &fc);
		if (err != -ENOENT)
			break;
	}
	if (err == -ENOMEM)
		return err;
	if (err)
		return 0;
	err = x86flow__scan(fc.bytes, fc.end - fc.entry, fc.entry, etcd_scan__event, &es, NULL);
	free(fc.bytes);
	if (err == -ENOMEM)
		return err;
	if (err) {
		note(rel, "%s: undecodable instruction", etcd_parse_funcs[i]);
		return 0;
	}
	util__copy(rel->read[0].function, sizeof(rel->read[0].function), etcd_parse_funcs[i]);
	rel->n_read = 1;
	if (es.var[E_GITSHA] &&
	    go_binary__read_string_var(gb, es.var[E_GITSHA], s, sizeof(s)) >= 0) {
		if (go_release__valid_commit(s, 7, 40))
			util__copy(rel->read[0].git_commit, sizeof(rel->read[0].git_commit), s);
		else
			note(rel, "etcd's GitSHA \"%.64s\" is not a commit", s);
	}
	if (es.var[E_VERSION] &&
	    go_binary__read_string_var(gb, es.var[E_VERSION], s, sizeof(s)) >= 0) {
		char v[MAX_STAMP_LEN + 1];

		snprintf(v, sizeof(v), "v%s", s);
		if (go_release__valid_git_version(v))
			util__copy(rel->read[0].git_version, sizeof(rel->read[0].git_version), v);
		else
			note(rel, "etcd's Version \"%.64s\" is not a release", s);
	}
	rel->stamps = rel->read[0];
	rel->stamps.function[0] = '\0';
	return 0;
}

/* ---- the rules ---- */

/* Where etcd keeps Version and GitSHA: go.etcd.io/etcd/version up to 3.4. */
static const char *etcd_version_pkg(const struct go_release *rel)
{
	return strstr(rel->read[0].function, "/server/v3/") ? "go.etcd.io/etcd/api/v3/version"
							    : "go.etcd.io/etcd/version";
}

static const struct go_module *module__find(const struct go_buildinfo *bi, const char *path,
					    bool *is_main)
{
	*is_main = bi->main && !strcmp(bi->main->path, path);
	if (*is_main)
		return bi->main;
	for (size_t i = 0; i < bi->n_deps; i++)
		if (!strcmp(bi->deps[i].path, path))
			return &bi->deps[i];
	return NULL;
}

static const char *setting(const struct go_buildinfo *bi, const char *key)
{
	for (size_t i = 0; i < bi->n_settings; i++)
		if (!strcmp(bi->settings[i].key, key))
			return bi->settings[i].value;
	return NULL;
}

/* The release from the first of these modules that records one: the main module, or a
 * dependency that is not replaced by a local directory (whose version is only nominal). */
static bool release__from_modules(const struct go_buildinfo *bi, const char *const *paths, size_t n,
				  struct go_release_fact *out)
{
	for (size_t i = 0; i < n; i++) {
		bool is_main;
		const struct go_module *m = module__find(bi, paths[i], &is_main);
		char from[112];

		if (!m || (!is_main && m->replace) || !go_release__is_release_version(m->version))
			continue;
		snprintf(from, sizeof(from), "%s %s", is_main ? "main module" : "module", m->path);
		fact__set(out, m->version, GO_RELEASE_BUILDINFO, from);
		return true;
	}
	return false;
}

static enum go_release_product product_of(struct go_binary *gb, const struct go_buildinfo *bi)
{
	static const char *const etcd_mains[] = { "go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/v3",
						  "go.etcd.io/etcd" };
	uint64_t entry, end;
	bool is_main;

	if (module__find(bi, "k8s.io/kubernetes", &is_main))
		return GO_PRODUCT_KUBERNETES;
	for (size_t i = 0; i < sizeof(etcd_mains) / sizeof(etcd_mains[0]); i++)
		if ((bi->main && !strcmp(bi->main->path, etcd_mains[i])) ||
		    !strcmp(bi->path, etcd_mains[i]))
			return GO_PRODUCT_ETCD;
	for (size_t i = 0; i < sizeof(etcd_parse_funcs) / sizeof(etcd_parse_funcs[0]); i++)
		if (!go_binary__func(gb, etcd_parse_funcs[i], &entry, &end))
			return GO_PRODUCT_ETCD;
	return GO_PRODUCT_OTHER;
}

const char *const go_release__funcs[] = {
	K8S_CLIENT_GO_VERSION ".Get",
	K8S_COMPONENT_BASE_VERSION ".Get",
	ETCD_PARSE_35,
	ETCD_PARSE_34,
};
const size_t go_release__n_funcs = sizeof(go_release__funcs) / sizeof(go_release__funcs[0]);

int go_release__read(struct go_binary *gb, struct go_release *rel)
{
	static const char *const k8s_modules[] = { "k8s.io/kubernetes" };
	static const char *const etcd_modules[] = { "go.etcd.io/etcd/server/v3",
						    "go.etcd.io/etcd/v3", "go.etcd.io/etcd",
						    "go.etcd.io/etcd/api/v3" };
	const struct go_buildinfo *bi = go_binary__buildinfo(gb);
	const char *revision = setting(bi, "vcs.revision"), *modified = setting(bi, "vcs.modified");
	const struct go_release_stamps *st = &rel->stamps;
	bool k8s, etcd;
	char from[112];
	int err;

	memset(rel, 0, sizeof(*rel));
	go_binary__find_funcs(gb, go_release__funcs, go_release__n_funcs);
	rel->product = product_of(gb, bi);
	k8s = rel->product == GO_PRODUCT_KUBERNETES;
	etcd = rel->product == GO_PRODUCT_ETCD;
	err = etcd ? etcd_stamps__read(gb, rel) : k8s_stamps__read(gb, rel);
	if (err)
		return err;
	if (!k8s && !etcd)
		return 0; /* stamps shown for what they are; no release rules for other programs */

	/* Release: the module version when it is one, else what was stamped. */
	if (k8s && !release__from_modules(bi, k8s_modules, 1, &rel->release) &&
	    st->git_version[0]) {
		stamp_from(rel, F_VERSION, from, sizeof(from));
		fact__set(&rel->release, st->git_version, GO_RELEASE_STAMPED, from);
	}
	if (etcd &&
	    !release__from_modules(bi, etcd_modules, sizeof(etcd_modules) / sizeof(etcd_modules[0]),
				   &rel->release) &&
	    st->git_version[0]) {
		snprintf(from, sizeof(from), "%s.Version", etcd_version_pkg(rel));
		fact__set(&rel->release, st->git_version, GO_RELEASE_STAMPED, from);
	}
	if (rel->release.source == GO_RELEASE_BUILDINFO && st->git_version[0] &&
	    strcmp(rel->release.value, st->git_version))
		note(rel, "stamped version %s differs from the module's %s", st->git_version,
		     rel->release.value);

	/* Commit: vcs.revision, else the stamped commit; the tree state goes with it. */
	if (revision && go_release__valid_commit(revision, 7, 64)) {
		fact__set(&rel->commit, revision, GO_RELEASE_BUILDINFO, "vcs.revision");
		if (st->git_commit[0] && strncmp(revision, st->git_commit, strlen(st->git_commit)))
			note(rel, "stamped commit %s differs from vcs.revision", st->git_commit);
	} else if (st->git_commit[0]) {
		if (etcd)
			snprintf(from, sizeof(from), "%s.GitSHA", etcd_version_pkg(rel));
		else
			stamp_from(rel, F_COMMIT, from, sizeof(from));
		fact__set(&rel->commit, st->git_commit, GO_RELEASE_STAMPED, from);
	}
	if (modified && (!strcmp(modified, "true") || !strcmp(modified, "false"))) {
		fact__set(&rel->tree_state, !strcmp(modified, "true") ? "dirty" : "clean",
			  GO_RELEASE_BUILDINFO, "vcs.modified");
	} else if (k8s && st->tree_state[0]) {
		stamp_from(rel, F_TREE, from, sizeof(from));
		fact__set(&rel->tree_state, st->tree_state, GO_RELEASE_STAMPED, from);
	}
	if (k8s && st->build_date[0]) {
		stamp_from(rel, F_DATE, from, sizeof(from));
		fact__set(&rel->build_date, st->build_date, GO_RELEASE_STAMPED, from);
	}
	return 0;
}
