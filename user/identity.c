/* Process identities: what each traced process runs, read once per process into the run's one
 * registry. */
#include <errno.h>
#include <inttypes.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf_note.h"
#include "goelf.h"
#include "identity.h"
#include "sha256.h"
#include "util.h"

static json_t *module_json(const struct go_module *m)
{
	json_t *j = json_pack("{s:s, s:s}", "path", m->path, "version", m->version);

	if (m->sum && m->sum[0])
		json_object_set_new(j, "sum", json_string(m->sum));
	if (m->replace)
		json_object_set_new(j, "replaced_by", module_json(m->replace));
	return j;
}

static json_t *go_json(struct go_binary *gb)
{
	const struct go_buildinfo *bi = go_binary__buildinfo(gb);
	const struct go_text_info *ti = go_binary__text_info(gb);
	json_t *j = json_object(), *deps = json_array(), *settings = json_object();
	char buf[32];
	size_t i;

	json_object_set_new(j, "go_version", json_string(bi->go_version));
	json_object_set_new(j, "main_package", json_string(bi->path));
	if (bi->main)
		json_object_set_new(j, "main_module", module_json(bi->main));
	for (i = 0; i < bi->n_deps; i++)
		json_array_append_new(deps, module_json(&bi->deps[i]));
	json_object_set_new(j, "modules", deps);
	for (i = 0; i < bi->n_settings; i++) {
		/* -ldflags may carry -X values someone considers private: left to `go version -m`. */
		if (!strcmp(bi->settings[i].key, "-ldflags"))
			continue;
		json_object_set_new(settings, bi->settings[i].key,
				    json_string(bi->settings[i].value));
	}
	json_object_set_new(j, "build_settings", settings);
	snprintf(buf, sizeof(buf), "0x%" PRIx64, ti->text_base);
	json_object_set_new(j, "text_base", json_string(buf));
	json_object_set_new(j, "text_base_source",
			    json_string(ti->source == GO_TEXT_BASE_PCHEADER
					    ? "pcHeader.textStart"
					    : "runtime.moduledata.text"));
	json_object_set_new(j, "text_base_how", json_string(ti->how ? ti->how : ""));
	json_object_set_new(j, "text_base_validation",
			    json_string(ti->validation ? ti->validation : ""));
	snprintf(buf, sizeof(buf), "0x%" PRIx64, ti->pclntab_vaddr);
	json_object_set_new(j, "pclntab_vaddr", json_string(buf));
	json_object_set_new(j, "pclntab_where",
			    json_string(ti->pclntab_where ? ti->pclntab_where : ""));
	json_object_set_new(j, "functions", json_integer((json_int_t)ti->n_funcs));
	json_object_set_new(j, "pie", json_boolean(ti->pie));
	return j;
}

void process_identity__init(struct process_identity *id, const char *role, pid_t pid,
			    const char *exe, const char *go_version, const char *module_version,
			    struct go_binary *gb)
{
	memset(id, 0, sizeof(*id));
	util__copy(id->role, sizeof(id->role), role ? role : "");
	id->pid = pid;
	util__copy(id->exe, sizeof(id->exe), exe ? exe : "");
	util__copy(id->go_version, sizeof(id->go_version), go_version ? go_version : "");
	util__copy(id->module_version, sizeof(id->module_version),
		   module_version ? module_version : "");
	id->go = gb ? go_json(gb) : NULL;
	/* libelf's one global, set here on the caller's thread before any _read_file thread. */
	elf_version(EV_CURRENT);
}

void process_identity__read_file(struct process_identity *id, const char *path)
{
	struct elf_build_ids build_ids;
	int err;

	util__copy(id->read_from, sizeof(id->read_from), path);
	id->why[0] = id->sha256[0] = id->gnu_build_id[0] = id->go_build_id[0] = '\0';
	id->size = 0;
	err = sha256__file(path, id->sha256, &id->size);
	if (err) {
		snprintf(id->why, sizeof(id->why), "read %s: %s", path, strerror(-err));
		return;
	}
	elf_build_ids__read(&build_ids, path);
	util__copy(id->gnu_build_id, sizeof(id->gnu_build_id), build_ids.gnu);
	util__copy(id->go_build_id, sizeof(id->go_build_id), build_ids.go);
}

void process_identity__seal(struct process_identity *id)
{
	json_decref(id->detail);
	id->detail = json_object();
	json_object_set_new(id->detail, "role", json_string(id->role));
	json_object_set_new(id->detail, "pid", json_integer(id->pid));
	json_object_set_new(id->detail, "path", json_string(id->exe));
	json_object_set_new(id->detail, "read_from", json_string(id->read_from));
	json_object_set_new(id->detail, "size", json_integer((json_int_t)id->size));
	json_object_set_new(id->detail, "sha256", json_string(id->sha256));
	json_object_set_new(id->detail, "gnu_build_id", json_string(id->gnu_build_id));
	json_object_set_new(id->detail, "go_build_id", json_string(id->go_build_id));
	json_object_set_new(id->detail, "go_version", json_string(id->go_version));
	json_object_set_new(id->detail, "version", json_string(id->module_version));
	if (id->go)
		json_object_set(id->detail, "go", id->go);
	if (id->why[0])
		json_object_set_new(id->detail, "unreadable", json_string(id->why));
}

void process_identity__read(struct process_identity *id, const char *role, pid_t pid,
			    const char *exe, const char *path, const char *go_version,
			    const char *module_version, struct go_binary *gb)
{
	process_identity__init(id, role, pid, exe, go_version, module_version, gb);
	process_identity__read_file(id, path);
	process_identity__seal(id);
}

void process_identity__clear(struct process_identity *id)
{
	json_decref(id->detail);
	json_decref(id->go);
	id->detail = id->go = NULL;
}

/* ---- The registry ---- */

struct identity_entry {
	struct process_identity id;
	char exe_path[64]; /* /proc/PID/exe */
	pthread_t thread;
	bool running; /* thread started, not joined */
	bool sealed;
};

struct identities {
	struct identity_entry **v;
	int n;
};

struct identities *identities__new(void)
{
	return calloc(1, sizeof(struct identities));
}

static void *read_thread(void *arg)
{
	struct identity_entry *e = arg;

	/* The file the process runs, even if its path now names another; else that path. */
	process_identity__read_file(&e->id, e->exe_path);
	if (e->id.why[0] && e->id.exe[0])
		process_identity__read_file(&e->id, e->id.exe);
	return NULL;
}

int identities__add(struct identities *ids, const char *role, pid_t pid, const char *exe,
		    const char *go_version, const char *module_version, struct go_binary *gb,
		    bool read_binary)
{
	struct identity_entry **v, *e;

	v = realloc(ids->v, (size_t)(ids->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	ids->v = v;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	ids->v[ids->n++] = e;
	/* The Go facts now: gb may be closed once this returns. */
	process_identity__init(&e->id, role, pid, exe, go_version, module_version,
			       read_binary ? gb : NULL);
	if (!read_binary)
		return 0;
	snprintf(e->exe_path, sizeof(e->exe_path), "/proc/%d/exe", (int)pid);
	if (pthread_create(&e->thread, NULL, read_thread, e) == 0)
		e->running = true;
	else
		read_thread(e);
	return 0;
}

void identities__wait(struct identities *ids)
{
	int i;

	for (i = 0; ids && i < ids->n; i++) {
		struct identity_entry *e = ids->v[i];

		if (e->sealed)
			continue;
		if (e->running) {
			pthread_join(e->thread, NULL);
			e->running = false;
		}
		process_identity__seal(&e->id);
		e->sealed = true;
	}
}

int identities__count(const struct identities *ids)
{
	return ids ? ids->n : 0;
}

const struct process_identity *identities__at(const struct identities *ids, int i)
{
	return ids && i >= 0 && i < ids->n ? &ids->v[i]->id : NULL;
}

void identities__free(struct identities *ids)
{
	int i;

	if (!ids)
		return;
	for (i = 0; i < ids->n; i++) {
		if (ids->v[i]->running)
			pthread_join(ids->v[i]->thread, NULL);
		process_identity__clear(&ids->v[i]->id);
		free(ids->v[i]);
	}
	free(ids->v);
	free(ids);
}
