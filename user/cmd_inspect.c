/* `bindtrace inspect BINARY`: shows what goelf establishes in a Go executable — Go version,
 * modules, the release and commit it states (gorelease: buildinfo, else its link-time stamps,
 * each with where it was read), build settings, the text base and how it was found and
 * validated, and the probe sites
 * of crypto/tls.(*Conn).Write and Read (entry, file offset, every RET) — without attaching
 * anything. The same checks decide whether `capture` may attach, so this is the way to see why
 * a binary would be refused.
 *
 * --json prints one object (addresses as "0x..." strings):
 *   {"binary", "go_version", "path", "main": MODULE,
 *    "release": {"product": "kubernetes"|"etcd"|"other", "release": FACT, "commit": FACT,
 *                "tree_state": FACT, "build_date": FACT, "stamps": STAMPS,
 *                "read": [STAMPS + "function"...], "notes"},
 *    "deps": [MODULE...],
 *    "settings": [{"key","value"}...],
 *    "elf": {"pie", "exec_vaddr", "exec_offset", "exec_filesz"},
 *    "pclntab": {"vaddr", "where", "magic", "layout", "functions", "files"},
 *    "text_base": {"vaddr", "source": "pcheader"|"moduledata", "how", "validation",
 *                  "moduledata", "text_section"},
 *    "functions": [{"name", "entry", "end", "file_offset", "ret_sites": [{"vaddr",
 *                   "file_offset", "file", "line"}...]} or {"name", "error"}],
 *    "pcs": [{"pc", "func", "file", "line"} or {"pc", "error"}],
 *    "timing_us": {"open", "resolve"}}
 *   MODULE = {"path", "version", "sum", "replace": MODULE|null}
 *   FACT = {"value", "source": "buildinfo"|"stamped", "from"} or null when not validated
 *   STAMPS = {"git_version", "git_commit", "tree_state", "build_date", "major", "minor"}, each
 *            a string or null (etcd: git_version is "v" + version.Version, git_commit GitSHA)
 */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "goelf.h"
#include "gorelease.h"

#define INSPECT_MAX_FUNCS 16
#define INSPECT_MAX_PCS 64
#define INSPECT_MAX_RETS 256

static const char *const default_funcs[] = { "crypto/tls.(*Conn).Write",
					     "crypto/tls.(*Conn).Read" };

/* Shown without --modules: what tells which release a control-plane binary is. */
static const char *const key_modules[] = { "k8s.io/kubernetes", "k8s.io/apiserver",
					   "k8s.io/client-go",	"go.etcd.io/etcd/",
					   "golang.org/x/net",	"google.golang.org/grpc" };

struct inspect_opts {
	const char *binary;
	bool json;
	bool all_modules;
	const char *funcs[INSPECT_MAX_FUNCS];
	size_t n_funcs;
	uint64_t pcs[INSPECT_MAX_PCS];
	size_t n_pcs;
};

static const char inspect_doc[] =
    "Show what bindtrace finds in a Go executable, attaching nothing: Go version, modules, "
    "the release and commit it was built from (from its buildinfo, else the version its build "
    "stamped into it) and where each was read, build settings, the text base (runtime.text) and how it was established and validated, "
    "and the probe sites (entry, file offset, every RET) of crypto/tls.(*Conn).Write and "
    "crypto/tls.(*Conn).Read.\n"
    "\v"
    "EXAMPLES:\n"
    "  bindtrace inspect /usr/local/bin/kube-apiserver\n"
    "  bindtrace inspect --modules /usr/bin/etcd   # all dependencies\n"
    "  bindtrace inspect --json ./server | jq .text_base\n"
    "  bindtrace inspect -f 'net/http.(*conn).serve' ./server\n"
    "  bindtrace inspect --pc 0x5ad386 ./server    # function, file:line\n"
    "\n"
    "Addresses are link-time virtual addresses; FILE_OFF is what a uprobe takes. Exit status "
    "is 1 when the binary is refused or a function cannot be resolved.";

static const struct argp_option inspect_options[] = {
	{ "json", 'j', NULL, 0, "One JSON object on stdout (schema in user/cmd_inspect.c)", 0 },
	{ "modules", 'm', NULL, 0, "List every dependency (default: key ones and a count)", 0 },
	{ "func", 'f', "NAME", 0,
	  "Resolve this function instead of the crypto/tls pair "
	  "(repeatable)",
	  0 },
	{ "pc", 'p', "ADDR", 0,
	  "Also symbolise this address to function and file:line "
	  "(repeatable)",
	  0 },
	{ 0 },
};

static error_t inspect_parse(int key, char *arg, struct argp_state *state)
{
	struct inspect_opts *o = state->input;
	char *end;

	switch (key) {
	case 'j':
		o->json = true;
		break;
	case 'm':
		o->all_modules = true;
		break;
	case 'f':
		if (o->n_funcs == INSPECT_MAX_FUNCS)
			argp_error(state, "at most %d --func", INSPECT_MAX_FUNCS);
		o->funcs[o->n_funcs++] = arg;
		break;
	case 'p':
		if (o->n_pcs == INSPECT_MAX_PCS)
			argp_error(state, "at most %d --pc", INSPECT_MAX_PCS);
		errno = 0;
		o->pcs[o->n_pcs] = strtoull(arg, &end, 0);
		if (errno || end == arg || *end)
			argp_error(state, "bad address '%s'", arg);
		o->n_pcs++;
		break;
	case ARGP_KEY_ARG:
		if (o->binary)
			argp_error(state, "one BINARY at a time");
		o->binary = arg;
		break;
	case ARGP_KEY_END:
		if (!o->binary)
			argp_error(state, "missing BINARY");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static json_t *json_hex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_string(buf);
}

static const char *layout_name(uint32_t magic)
{
	return magic == 0xfffffff0u ? "Go 1.18-1.19" : magic == 0xfffffff1u ? "Go 1.20+" : "?";
}

static bool is_key_module(const char *path)
{
	for (size_t i = 0; i < sizeof(key_modules) / sizeof(key_modules[0]); i++) {
		size_t n = strlen(key_modules[i]);

		if (strncmp(path, key_modules[i], n) == 0 &&
		    (key_modules[i][n - 1] == '/' || path[n] == '\0'))
			return true;
	}
	return false;
}

/* ---- resolution, shared by both outputs ---- */

struct ret_site {
	uint64_t vaddr;
	int64_t file_offset;
	const char *file;
	int line;
};

struct func_result {
	const char *name;
	int err;
	char error[512];
	uint64_t entry, end;
	int64_t file_offset;
	struct ret_site rets[INSPECT_MAX_RETS];
	int n_rets;
};

struct pc_result {
	uint64_t pc;
	int err;
	const char *func, *file;
	int line;
};

static void resolve_func(struct go_binary *gb, const char *name, struct func_result *r)
{
	uint64_t rets[INSPECT_MAX_RETS];

	memset(r, 0, sizeof(*r));
	r->name = name;
	r->err = go_binary__func(gb, name, &r->entry, &r->end);
	if (r->err == -ENOENT && strncmp(name, "crypto/tls.", 11) == 0) {
		snprintf(r->error, sizeof(r->error),
			 "no %s in the pclntab: the program does not use crypto/tls", name);
		return;
	}
	if (r->err == 0) {
		r->file_offset = go_binary__file_offset(gb, r->entry);
		if (r->file_offset < 0)
			r->err = (int)r->file_offset;
	}
	if (r->err == 0) {
		r->n_rets = go_binary__ret_sites(gb, name, rets, INSPECT_MAX_RETS);
		if (r->n_rets < 0)
			r->err = r->n_rets;
	}
	if (r->err) {
		snprintf(r->error, sizeof(r->error), "%s", go_binary__last_error(gb));
		return;
	}
	for (int i = 0; i < r->n_rets; i++) {
		struct ret_site *s = &r->rets[i];

		s->vaddr = rets[i];
		s->file_offset = go_binary__file_offset(gb, rets[i]);
		if (go_binary__pc_to_line(gb, rets[i], 0, NULL, &s->file, &s->line))
			s->file = "?";
	}
	if (r->n_rets == 0) {
		r->err = -ENOENT;
		snprintf(r->error, sizeof(r->error), "%s has no RET instruction", name);
	}
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* ---- human output ---- */

static void print_module(const char *label, const struct go_module *m)
{
	printf("%-12s%s %s", label, m->path, m->version);
	if (m->replace)
		printf(" => %s %s", m->replace->path, m->replace->version);
	printf("\n");
}

static void print_fact(const char *label, const struct go_release_fact *f)
{
	if (f->source == GO_RELEASE_UNKNOWN)
		printf("%-12s(not stated in a form that could be validated)\n", label);
	else
		printf("%-12s%s (%s: %s)\n", label, f->value, go_release_source__name(f->source),
		       f->from);
}

/* "k8s.io/client-go/pkg/version.Get: gitVersion v1.33.1, gitCommit 8adc..., ..." */
static void print_stamps(const char *label, const struct go_release_stamps *st, bool etcd)
{
	const char *names[] = { etcd ? "Version" : "gitVersion",
				etcd ? "GitSHA" : "gitCommit",
				"gitTreeState",
				"buildDate",
				"gitMajor",
				"gitMinor" };
	const char *values[] = { st->git_version + (etcd && st->git_version[0]),
				 st->git_commit,
				 st->tree_state,
				 st->build_date,
				 st->major,
				 st->minor };
	int shown = 0;

	printf("%-12s%s:", label, st->function);
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		if (values[i][0])
			printf("%s %s %s", shown++ ? "," : "", names[i], values[i]);
	printf("%s\n", shown ? "" : " nothing valid");
}

/* What the release rules chose, then what each function showed was stamped. */
static void print_release(const struct go_release *rel)
{
	if (rel->product != GO_PRODUCT_OTHER) {
		print_fact("release", &rel->release);
		print_fact("commit", &rel->commit);
		if (rel->tree_state.source != GO_RELEASE_UNKNOWN)
			print_fact("tree state", &rel->tree_state);
		if (rel->build_date.source != GO_RELEASE_UNKNOWN)
			print_fact("build date", &rel->build_date);
	}
	for (int i = 0; i < rel->n_read; i++)
		print_stamps(i ? "" : "stamped", &rel->read[i], rel->product == GO_PRODUCT_ETCD);
	if (rel->notes[0])
		printf("%-12s%s\n", "  refused", rel->notes);
}

static void print_human(const struct inspect_opts *o, struct go_binary *gb,
			const struct go_release *rel, const struct func_result *funcs,
			size_t n_funcs, const struct pc_result *pcs, uint64_t open_ns,
			uint64_t resolve_ns)
{
	const struct go_buildinfo *bi = go_binary__buildinfo(gb);
	const struct go_text_info *ti = go_binary__text_info(gb);

	printf("%-12s%s\n", "binary", o->binary);
	printf("%-12s%s\n", "go", bi->go_version);
	if (bi->path[0])
		printf("%-12s%s\n", "path", bi->path);
	/* Go <= 1.23 writes "(devel)" for a main module built from a source tree; the release
	 * comes from the stamps or the tag below, so say that instead of echoing the placeholder */
	if (bi->main && !bi->main->replace && strcmp(bi->main->version, "(devel)") == 0)
		printf(
		    "%-12s%s (no version in buildinfo: built from a source tree; release below)\n",
		    "main module", bi->main->path);
	else if (bi->main)
		print_module("main module", bi->main);
	print_release(rel);
	printf("%-12s%zu dependencies%s\n", "modules", bi->n_deps,
	       o->all_modules || !bi->n_deps ? "" : " (--modules lists them all)");
	for (size_t i = 0; i < bi->n_deps; i++) {
		if (!o->all_modules && !is_key_module(bi->deps[i].path))
			continue;
		print_module("", &bi->deps[i]);
	}
	for (size_t i = 0; i < bi->n_settings; i++)
		printf("%-12s%s=%s\n", i ? "" : "build", bi->settings[i].key,
		       bi->settings[i].value);
	printf("%-12s%s, executable segment 0x%" PRIx64 "-0x%" PRIx64 " at file offset 0x%" PRIx64
	       "\n",
	       "elf", ti->pie ? "ET_DYN (PIE: runtime address = vaddr + load bias)" : "ET_EXEC",
	       ti->exec_vaddr, ti->exec_vaddr + ti->exec_filesz, ti->exec_offset);
	printf("%-12s0x%" PRIx64 " (%s), magic 0x%08x (%s layout), %" PRIu64 " functions, %" PRIu64
	       " files\n",
	       "pclntab", ti->pclntab_vaddr, ti->pclntab_where, ti->pclntab_magic,
	       layout_name(ti->pclntab_magic), ti->n_funcs, ti->n_files);
	printf("%-12s0x%" PRIx64 "\n", "text base", ti->text_base);
	printf("%-12s%s\n", "  how", ti->how);
	printf("%-12s%s\n", "  validated", ti->validation);

	if (n_funcs) {
		printf("\n%-36s %-12s %-12s %-10s %s\n", "FUNCTION", "ENTRY", "END", "FILE_OFF",
		       "RETS");
		for (size_t i = 0; i < n_funcs; i++) {
			const struct func_result *f = &funcs[i];

			if (f->err && !f->entry) {
				printf("%-36s %s\n", f->name, "(not resolved)");
				continue;
			}
			printf("%-36s 0x%-10" PRIx64 " 0x%-10" PRIx64 " 0x%-8" PRIx64 " %d\n",
			       f->name, f->entry, f->end, (uint64_t)f->file_offset, f->n_rets);
			for (int j = 0; j < f->n_rets; j++)
				printf("  ret 0x%" PRIx64 " (+0x%" PRIx64 ") file offset 0x%" PRIx64
				       "  %s:%d\n",
				       f->rets[j].vaddr, f->rets[j].vaddr - f->entry,
				       (uint64_t)f->rets[j].file_offset, base_name(f->rets[j].file),
				       f->rets[j].line);
		}
	}
	if (o->n_pcs) {
		printf("\n%-20s %-40s %s\n", "PC", "FUNCTION", "FILE:LINE");
		for (size_t i = 0; i < o->n_pcs; i++) {
			if (pcs[i].err)
				printf("0x%-18" PRIx64 " %s\n", pcs[i].pc, "(in no Go function)");
			else
				printf("0x%-18" PRIx64 " %-40s %s:%d\n", pcs[i].pc, pcs[i].func,
				       pcs[i].file, pcs[i].line);
		}
	}
	printf("\n%-12s%.1f ms to open and validate, %.2f ms to resolve %zu function%s\n", "time",
	       open_ns / 1e6, resolve_ns / 1e6, n_funcs, n_funcs == 1 ? "" : "s");
}

/* ---- JSON output ---- */

static json_t *json_module(const struct go_module *m)
{
	if (!m)
		return json_null();
	return json_pack("{s:s, s:s, s:s, s:o}", "path", m->path, "version", m->version, "sum",
			 m->sum, "replace", json_module(m->replace));
}

static json_t *json_fact(const struct go_release_fact *f)
{
	if (f->source == GO_RELEASE_UNKNOWN)
		return json_null();
	return json_pack("{s:s, s:s, s:s}", "value", f->value, "source",
			 go_release_source__name(f->source), "from", f->from);
}

static json_t *json_stamp(const char *value)
{
	return value[0] ? json_string(value) : json_null();
}

static json_t *json_stamps(const struct go_release_stamps *st)
{
	json_t *o =
	    json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "git_version", json_stamp(st->git_version),
		      "git_commit", json_stamp(st->git_commit), "tree_state",
		      json_stamp(st->tree_state), "build_date", json_stamp(st->build_date), "major",
		      json_stamp(st->major), "minor", json_stamp(st->minor));

	if (o && st->function[0])
		json_object_set_new(o, "function", json_string(st->function));
	return o;
}

static json_t *json_release(const struct go_release *rel)
{
	json_t *read = json_array();

	for (int i = 0; i < rel->n_read; i++)
		json_array_append_new(read, json_stamps(&rel->read[i]));
	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:s}", "product",
			 go_release_product__name(rel->product), "release",
			 json_fact(&rel->release), "commit", json_fact(&rel->commit), "tree_state",
			 json_fact(&rel->tree_state), "build_date", json_fact(&rel->build_date),
			 "stamps", json_stamps(&rel->stamps), "read", read, "notes", rel->notes);
}

static int print_json(const struct inspect_opts *o, struct go_binary *gb,
		      const struct go_release *rel, const struct func_result *funcs, size_t n_funcs,
		      const struct pc_result *pcs, uint64_t open_ns, uint64_t resolve_ns)
{
	const struct go_buildinfo *bi = go_binary__buildinfo(gb);
	const struct go_text_info *ti = go_binary__text_info(gb);
	json_t *deps = json_array(), *settings = json_array(), *jfuncs = json_array();
	json_t *jpcs = json_array(), *root;
	int err;

	for (size_t i = 0; i < bi->n_deps; i++)
		json_array_append_new(deps, json_module(&bi->deps[i]));
	for (size_t i = 0; i < bi->n_settings; i++)
		json_array_append_new(settings, json_pack("{s:s, s:s}", "key", bi->settings[i].key,
							  "value", bi->settings[i].value));
	for (size_t i = 0; i < n_funcs; i++) {
		const struct func_result *f = &funcs[i];
		json_t *rets;

		if (f->err) {
			json_array_append_new(
			    jfuncs, json_pack("{s:s, s:s}", "name", f->name, "error", f->error));
			continue;
		}
		rets = json_array();
		for (int j = 0; j < f->n_rets; j++)
			json_array_append_new(
			    rets,
			    json_pack("{s:o, s:o, s:s, s:i}", "vaddr", json_hex(f->rets[j].vaddr),
				      "file_offset", json_hex((uint64_t)f->rets[j].file_offset),
				      "file", f->rets[j].file, "line", f->rets[j].line));
		json_array_append_new(
		    jfuncs, json_pack("{s:s, s:o, s:o, s:o, s:o}", "name", f->name, "entry",
				      json_hex(f->entry), "end", json_hex(f->end), "file_offset",
				      json_hex((uint64_t)f->file_offset), "ret_sites", rets));
	}
	for (size_t i = 0; i < o->n_pcs; i++) {
		if (pcs[i].err)
			json_array_append_new(jpcs,
					      json_pack("{s:o, s:s}", "pc", json_hex(pcs[i].pc),
							"error", "in no Go function"));
		else
			json_array_append_new(jpcs,
					      json_pack("{s:o, s:s, s:s, s:i}", "pc",
							json_hex(pcs[i].pc), "func", pcs[i].func,
							"file", pcs[i].file, "line", pcs[i].line));
	}
	root = json_pack(
	    "{s:s, s:s, s:s, s:o, s:o, s:o, s:o,"
	    " s:{s:b, s:o, s:o, s:o},"
	    " s:{s:o, s:s, s:o, s:s, s:I, s:I},"
	    " s:{s:o, s:s, s:s, s:s, s:o, s:o},"
	    " s:o, s:o, s:{s:I, s:I}}",
	    "binary", o->binary, "go_version", bi->go_version, "path", bi->path, "main",
	    json_module(bi->main), "release", json_release(rel), "deps", deps, "settings", settings,
	    "elf", "pie", ti->pie, "exec_vaddr", json_hex(ti->exec_vaddr), "exec_offset",
	    json_hex(ti->exec_offset), "exec_filesz", json_hex(ti->exec_filesz), "pclntab", "vaddr",
	    json_hex(ti->pclntab_vaddr), "where", ti->pclntab_where, "magic",
	    json_hex(ti->pclntab_magic), "layout", layout_name(ti->pclntab_magic), "functions",
	    (json_int_t)ti->n_funcs, "files", (json_int_t)ti->n_files, "text_base", "vaddr",
	    json_hex(ti->text_base), "source",
	    ti->source == GO_TEXT_BASE_MODULEDATA ? "moduledata" : "pcheader", "how", ti->how,
	    "validation", ti->validation, "moduledata", json_hex(ti->moduledata_vaddr),
	    "text_section", json_hex(ti->text_section_vaddr), "functions", jfuncs, "pcs", jpcs,
	    "timing_us", "open", (json_int_t)(open_ns / 1000), "resolve",
	    (json_int_t)(resolve_ns / 1000));
	if (!root)
		return -ENOMEM;
	err = json_dumpf(root, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(root);
	return err ? -EIO : 0;
}

int cmd_inspect(int argc, char **argv)
{
	static const struct argp argp = {
		inspect_options, inspect_parse, "BINARY", inspect_doc, NULL, NULL, NULL
	};
	struct inspect_opts o = { 0 };
	struct func_result *funcs = NULL;
	struct pc_result pcs[INSPECT_MAX_PCS];
	struct go_release rel;
	struct go_binary *gb;
	uint64_t t0, t1, t2;
	char why[512];
	int status = 0, err;

	err = argp_parse(&argp, argc, argv, 0, NULL, &o);
	if (err)
		return 2;
	if (!o.n_funcs) {
		o.funcs[0] = default_funcs[0];
		o.funcs[1] = default_funcs[1];
		o.n_funcs = 2;
	}
	t0 = now_ns();
	gb = go_binary__open(o.binary, why, sizeof(why));
	t1 = now_ns();
	if (!gb) {
		fprintf(stderr, "bindtrace: inspect %s: %s\n", o.binary, why);
		return 1;
	}
	funcs = calloc(o.n_funcs, sizeof(*funcs));
	if (!funcs) {
		fprintf(stderr, "bindtrace: inspect %s: out of memory\n", o.binary);
		go_binary__close(gb);
		return 1;
	}
	if (go_release__read(gb, &rel)) {
		fprintf(stderr, "bindtrace: inspect %s: out of memory\n", o.binary);
		free(funcs);
		go_binary__close(gb);
		return 1;
	}
	for (size_t i = 0; i < o.n_funcs; i++)
		resolve_func(gb, o.funcs[i], &funcs[i]);
	for (size_t i = 0; i < o.n_pcs; i++) {
		pcs[i].pc = o.pcs[i];
		pcs[i].err = go_binary__pc_to_line(gb, o.pcs[i], 0, &pcs[i].func, &pcs[i].file,
						   &pcs[i].line);
	}
	t2 = now_ns();

	if (o.json) {
		if (print_json(&o, gb, &rel, funcs, o.n_funcs, pcs, t1 - t0, t2 - t1)) {
			fprintf(stderr, "bindtrace: inspect %s: cannot write JSON\n", o.binary);
			status = 1;
		}
	} else {
		print_human(&o, gb, &rel, funcs, o.n_funcs, pcs, t1 - t0, t2 - t1);
	}
	fflush(stdout);
	/* One line per distinct failure: a program without crypto/tls misses both functions. */
	bool tls_missing = false;

	for (size_t i = 0; i < o.n_funcs; i++) {
		bool tls =
		    funcs[i].err == -ENOENT && strncmp(funcs[i].name, "crypto/tls.", 11) == 0;

		if (!funcs[i].err || (tls && tls_missing))
			continue;
		tls_missing |= tls;
		fprintf(stderr, "bindtrace: inspect %s: %s\n", o.binary, funcs[i].error);
		status = 1;
	}
	free(funcs);
	go_binary__close(gb);
	return status;
}
