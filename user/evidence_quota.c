/* The evidence directory under a size: see evidence_quota.h. The bind directories are kept
 * oldest first in an array used as a queue; its memory is bounded by the size itself (each
 * directory takes at least a block on disk). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evidence_quota.h"

const char *const evidence_quota__files[] = {
	"bind.json", "messages.jsonl", "kernel.jsonl", "binaries.json", NULL,
};

struct quota_dir {
	char *name;
	uint64_t bytes;
	struct timespec mtime; /* for sorting the adopted ones */
};

struct evidence_quota {
	int dir_fd;
	struct quota_dir *v; /* v[head..n): kept, oldest first */
	size_t head, n, cap;
	struct evidence_quota_stats stats;
};

static bool is_ours(const char *file)
{
	int i;

	for (i = 0; evidence_quota__files[i]; i++)
		if (!strcmp(file, evidence_quota__files[i]))
			return true;
	return false;
}

static uint64_t on_disk(const struct stat *st)
{
	uint64_t blocks = (uint64_t)st->st_blocks * 512;

	return blocks > (uint64_t)st->st_size ? blocks : (uint64_t)st->st_size;
}

/* What the bind directory name holds of ours, as du counts it (0 when it cannot be opened). */
static uint64_t measure(int dir_fd, const char *name, struct timespec *mtime)
{
	struct stat st;
	uint64_t bytes;
	int fd, i;

	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
		return 0;
	bytes = on_disk(&st);
	if (mtime)
		*mtime = st.st_mtim;
	fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return bytes;
	for (i = 0; evidence_quota__files[i]; i++)
		if (!fstatat(fd, evidence_quota__files[i], &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(st.st_mode))
			bytes += on_disk(&st);
	close(fd);
	return bytes;
}

/* Remove our files in the bind directory, then the directory unless something else is in it.
 * false when the directory stays. */
static bool remove_dir(int dir_fd, const char *name)
{
	struct stat st;
	int fd, i;

	fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT; /* gone already */
	for (i = 0; evidence_quota__files[i]; i++)
		if (!fstatat(fd, evidence_quota__files[i], &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(st.st_mode))
			unlinkat(fd, evidence_quota__files[i], 0);
	close(fd);
	return unlinkat(dir_fd, name, AT_REMOVEDIR) == 0;
}

static int push(struct evidence_quota *q, char *name, uint64_t bytes, struct timespec mtime)
{
	if (q->n == q->cap) {
		size_t live = q->n - q->head, cap;
		struct quota_dir *v;

		/* Slide the kept ones to the front when half the array is spent. */
		if (q->head && q->head >= q->cap / 2) {
			memmove(q->v, q->v + q->head, live * sizeof(*q->v));
			q->head = 0;
			q->n = live;
		} else {
			cap = q->cap ? q->cap * 2 : 64;
			v = realloc(q->v, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			q->v = v;
			q->cap = cap;
		}
	}
	q->v[q->n++] = (struct quota_dir){ name, bytes, mtime };
	q->stats.bytes += bytes;
	q->stats.dirs++;
	return 0;
}

/* NNNN-...: a bind directory's name (evidence.c: "%04" PRIu64 "-ns-name[.N]"). */
static bool bind_dir_name(const char *name)
{
	int i;

	for (i = 0; name[i] >= '0' && name[i] <= '9'; i++)
		;
	return i >= 4 && name[i] == '-';
}

/* A directory of an earlier run: nothing in it but regular files of ours. */
static bool only_ours(int dir_fd, const char *name)
{
	struct dirent *de;
	struct stat st;
	bool ok = true;
	DIR *d;
	int fd;

	fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	while (ok && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			ok = is_ours(de->d_name) &&
			     !fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
			     S_ISREG(st.st_mode);
	closedir(d);
	return ok;
}

static int by_age(const void *a, const void *b)
{
	const struct quota_dir *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int adopt(struct evidence_quota *q)
{
	struct dirent *de;
	struct timespec mtime = { 0 };
	uint64_t bytes;
	char *name;
	DIR *d;
	int fd;

	fd = openat(q->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		if (!bind_dir_name(de->d_name) || !only_ours(q->dir_fd, de->d_name))
			continue;
		bytes = measure(q->dir_fd, de->d_name, &mtime);
		name = strdup(de->d_name);
		if (!name || push(q, name, bytes, mtime)) {
			free(name);
			closedir(d);
			return -ENOMEM;
		}
		q->stats.adopted++;
	}
	closedir(d);
	if (q->n)
		qsort(q->v, q->n, sizeof(*q->v), by_age);
	return 0;
}

static unsigned int trim(struct evidence_quota *q)
{
	unsigned int removed = 0;

	/* The newest (the last) stays, whatever its size. */
	while (q->stats.bytes > q->stats.max_bytes && q->n - q->head > 1) {
		struct quota_dir *o = &q->v[q->head++];

		if (!remove_dir(q->dir_fd, o->name))
			q->stats.left++;
		q->stats.bytes -= o->bytes;
		q->stats.dirs--;
		q->stats.removed++;
		q->stats.removed_bytes += o->bytes;
		free(o->name);
		removed++;
	}
	return removed;
}

struct evidence_quota *evidence_quota__new(int dir_fd, uint64_t max_bytes)
{
	struct evidence_quota *q = calloc(1, sizeof(*q));
	int err;

	if (!q)
		return NULL;
	q->dir_fd = dir_fd;
	q->stats.max_bytes = max_bytes;
	err = adopt(q);
	if (err) {
		evidence_quota__free(q);
		errno = -err;
		return NULL;
	}
	trim(q);
	return q;
}

unsigned int evidence_quota__add(struct evidence_quota *q, const char *name)
{
	struct timespec mtime = { 0 };
	uint64_t bytes = measure(q->dir_fd, name, &mtime);
	char *copy = strdup(name);

	/* Out of memory: the directory is neither counted nor ever removed. */
	if (!copy || push(q, copy, bytes, mtime))
		free(copy);
	return trim(q);
}

void evidence_quota__stats(const struct evidence_quota *q, struct evidence_quota_stats *s)
{
	*s = q->stats;
}

void evidence_quota__free(struct evidence_quota *q)
{
	size_t i;

	if (!q)
		return;
	for (i = q->head; i < q->n; i++)
		free(q->v[i].name);
	free(q->v);
	free(q);
}
