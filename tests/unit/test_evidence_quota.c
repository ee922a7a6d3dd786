/* --evidence-max-size: in a real directory, bind directories written one after another (of the
 * sizes real ones have) stay under the bound as `du` would measure it after every bind, the
 * oldest go first (an earlier run's before this run's), and nothing bindtrace did not write is
 * removed: a file and a directory of someone else's at the top, a directory named like a bind's
 * that holds a file of theirs, and a file of theirs put into a bind directory (its directory
 * stays, with their file, and is said). A bind larger than the bound is kept alone. Sizes parse
 * as the option takes them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "evidence_quota.h"
#include "util.h"

static uint64_t on_disk(const struct stat *st)
{
	uint64_t blocks = (uint64_t)st->st_blocks * 512;

	return blocks > (uint64_t)st->st_size ? blocks : (uint64_t)st->st_size;
}

/* du of everything under path (its own entry excluded), measured here independently. */
static uint64_t du(const char *path)
{
	char sub[4096];
	struct dirent *de;
	struct stat st;
	uint64_t total = 0;
	DIR *d = opendir(path);

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (lstat(sub, &st))
			continue;
		total += on_disk(&st);
		if (S_ISDIR(st.st_mode))
			total += du(sub);
	}
	closedir(d);
	return total;
}

static void write_file(const char *path, size_t bytes)
{
	FILE *f = fopen(path, "w");
	size_t i;

	CHECK(f != NULL, "create %s: %s", path, strerror(errno));
	if (!f)
		return;
	for (i = 0; i < bytes; i++)
		fputc('a' + (int)(i % 26), f);
	fclose(f);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* A bind directory as evidence.c writes it: its four files, of about these sizes. */
static void write_bind(const char *top, const char *name, size_t scale)
{
	static const size_t sizes[] = { 3000, 9000, 7000, 2500 }; /* as on the bed */
	char path[4096];
	int i;

	snprintf(path, sizeof(path), "%s/%s", top, name);
	CHECK(mkdir(path, 0700) == 0, "mkdir %s", path);
	for (i = 0; evidence_quota__files[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", top, name, evidence_quota__files[i]);
		write_file(path, sizes[i] * scale);
	}
}

static void test_parse_size(void)
{
	static const struct {
		const char *s;
		int ok;
		uint64_t v;
	} cases[] = {
		{ "1G", 1, 1ull << 30 },
		{ "512M", 1, 512ull << 20 },
		{ "64K", 1, 65536 },
		{ "64KiB", 1, 65536 },
		{ "2MB", 1, 2ull << 20 },
		{ "1t", 1, 1ull << 40 },
		{ "1048576", 1, 1048576 },
		{ "65535", 0, 0 },
		{ "1.5G", 0, 0 },
		{ "-1G", 0, 0 },
		{ "", 0, 0 },
		{ "G", 0, 0 },
		{ "1X", 0, 0 },
		{ "1GG", 0, 0 },
		{ "99999999999T", 0, 0 },
		{ "18446744073709551615", 0, 0 },
		{ " 1G", 0, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 0;
		int err = util__parse_size(cases[i].s, 65536, 1ull << 50, &v);

		CHECK((err == 0) == cases[i].ok, "\"%s\": %d", cases[i].s, err);
		if (cases[i].ok)
			CHECK(v == cases[i].v, "\"%s\": %llu", cases[i].s, (unsigned long long)v);
	}
}

static void test_bound(void)
{
	char top[] = "/tmp/bt-evidence-quota.XXXXXX", path[4096], name[64];
	const uint64_t max = 256 * 1024;
	const int binds = 40;
	struct evidence_quota_stats st;
	struct evidence_quota *q;
	uint64_t foreign, worst = 0, used;
	int dir_fd, i, first_kept = -1;

	CHECK(mkdtemp(top) != NULL, "mkdtemp");
	/* Someone else's: a file, a directory, a directory named like a bind's. */
	snprintf(path, sizeof(path), "%s/notes.txt", top);
	write_file(path, 5000);
	snprintf(path, sizeof(path), "%s/theirs", top);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/theirs/bind.json", top);
	write_file(path, 5000);
	snprintf(path, sizeof(path), "%s/0001-default-theirs", top);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/0001-default-theirs/bind.json", top);
	write_file(path, 5000);
	snprintf(path, sizeof(path), "%s/0001-default-theirs/photo.jpg", top);
	write_file(path, 5000);
	foreign = du(top);
	/* An earlier run's bind, older than this run's. */
	write_bind(top, "0007-default-earlier", 1);
	sleep(1); /* its time of change before the others' */

	dir_fd = open(top, O_RDONLY | O_DIRECTORY);
	q = evidence_quota__new(dir_fd, max);
	CHECK(q != NULL, "evidence_quota__new");
	if (!q)
		return;
	evidence_quota__stats(q, &st);
	CHECK_INT(st.adopted, 1);
	CHECK_INT(st.dirs, 1);
	for (i = 1; i <= binds; i++) {
		snprintf(name, sizeof(name), "%04d-default-web-%d", i, i);
		write_bind(top, name, 1);
		if (i == 3) { /* someone puts a file of theirs into a bind directory */
			struct stat note;

			snprintf(path, sizeof(path), "%s/%s/their-note.txt", top, name);
			write_file(path, 100);
			if (!lstat(path, &note))
				foreign += on_disk(&note);
		}
		evidence_quota__add(q, name);
		evidence_quota__stats(q, &st);
		used = du(top) - foreign;
		if (st.left) { /* bind 3's directory stays for their note: theirs now */
			struct stat d;

			snprintf(path, sizeof(path), "%s/0003-default-web-3", top);
			if (!lstat(path, &d))
				used -= on_disk(&d);
		}
		if (used > worst)
			worst = used;
	}
	printf(
	    "bound %llu: %llu bytes kept in %llu binds (du: %llu), %llu removed, worst du %llu\n",
	    (unsigned long long)max, (unsigned long long)st.bytes, (unsigned long long)st.dirs,
	    (unsigned long long)used, (unsigned long long)st.removed, (unsigned long long)worst);
	CHECK(st.bytes <= max, "kept %llu > bound %llu", (unsigned long long)st.bytes,
	      (unsigned long long)max);
	CHECK(worst <= max, "du %llu > bound %llu after some bind", (unsigned long long)worst,
	      (unsigned long long)max);
	CHECK(st.removed > 0, "some removed (%llu)", (unsigned long long)st.removed);
	CHECK_INT(st.dirs + st.removed, binds + 1);
	CHECK_INT(st.left, 1);
	/* The earlier run's went first; then this run's oldest; the newest are all there. */
	snprintf(path, sizeof(path), "%s/0007-default-earlier", top);
	CHECK(!exists(path), "the earlier run's bind removed first");
	for (i = 1; i <= binds; i++) {
		snprintf(path, sizeof(path), "%s/%04d-default-web-%d/bind.json", top, i, i);
		if (exists(path) && first_kept < 0)
			first_kept = i;
		if (first_kept > 0)
			CHECK(exists(path), "bind %d kept (newer than %d)", i, first_kept);
	}
	CHECK_INT(binds - first_kept + 1, st.dirs);
	/* Nothing of theirs touched. */
	snprintf(path, sizeof(path), "%s/notes.txt", top);
	CHECK(exists(path), "%s kept", path);
	snprintf(path, sizeof(path), "%s/theirs/bind.json", top);
	CHECK(exists(path), "%s kept", path);
	snprintf(path, sizeof(path), "%s/0001-default-theirs/bind.json", top);
	CHECK(exists(path), "%s kept", path);
	snprintf(path, sizeof(path), "%s/0001-default-theirs/photo.jpg", top);
	CHECK(exists(path), "%s kept", path);
	snprintf(path, sizeof(path), "%s/0003-default-web-3/their-note.txt", top);
	CHECK(exists(path), "%s kept", path);
	snprintf(path, sizeof(path), "%s/0003-default-web-3/bind.json", top);
	CHECK(!exists(path), "%s (ours) removed", path);

	/* A bind bigger than the bound: kept, alone. */
	write_bind(top, "0099-default-huge", 20);
	evidence_quota__add(q, "0099-default-huge");
	evidence_quota__stats(q, &st);
	CHECK_INT(st.dirs, 1);
	snprintf(path, sizeof(path), "%s/0099-default-huge/messages.jsonl", top);
	CHECK(exists(path), "the newest bind kept");
	evidence_quota__free(q);

	/* A new run adopts what is there (the huge one) and trims to its own bound at once. */
	q = evidence_quota__new(dir_fd, 64 * 1024);
	evidence_quota__stats(q, &st);
	CHECK_INT(st.adopted, 1);
	evidence_quota__free(q);
	close(dir_fd);
	snprintf(path, sizeof(path), "rm -rf '%s'", top);
	CHECK(system(path) == 0, "cleanup");
}

int main(void)
{
	test_parse_size();
	test_bound();
	return check_summary("test_evidence_quota");
}
