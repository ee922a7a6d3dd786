/* Output files and directories, 0600 and 0700, never through a symlink. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output_file.h"

int output_file__create_at(int dir_fd, const char *name, bool exclusive)
{
	int fd = openat(
	    dir_fd, name,
	    O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (exclusive ? O_EXCL : O_TRUNC), 0600);

	if (fd < 0)
		return -errno;
	/* An existing file keeps its mode through O_TRUNC; a new one has the umask's. */
	if (fchmod(fd, 0600)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int output_file__create(const char *path, bool exclusive)
{
	return output_file__create_at(AT_FDCWD, path, exclusive);
}

static FILE *stream_of(int fd)
{
	FILE *f;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		int err = errno;

		close(fd);
		errno = err;
	}
	return f;
}

FILE *output_file__open(const char *path, bool exclusive)
{
	return stream_of(output_file__create(path, exclusive));
}

FILE *output_file__open_at(int dir_fd, const char *name, bool exclusive)
{
	return stream_of(output_file__create_at(dir_fd, name, exclusive));
}

FILE *output_file__open_append(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0) {
		fd = -errno;
	} else if (fchmod(fd, 0600)) {
		/* An existing file keeps its mode; one made by another hand is made 0600 too. */
		int err = -errno;

		close(fd);
		fd = err;
	}
	return stream_of(fd); /* O_APPEND: "w" writes at the end, truncating nothing */
}

int output_file__close(FILE *f)
{
	int bad = ferror(f);

	if (fclose(f) || bad)
		return -EIO;
	return 0;
}

int output_file__check_writable(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd >= 0) {
		close(fd);
		unlink(path);
		return 0;
	}
	if (errno != EEXIST)
		return -errno;
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int output_file__replace(const char *path, output_writer_fn write, void *ctx)
{
	char *tmp = NULL;
	FILE *f;
	int err;

	if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0)
		return -ENOMEM;
	f = output_file__open(tmp, true);
	if (!f) {
		err = -errno;
		goto free_tmp;
	}
	err = write(f, ctx);
	if (output_file__close(f))
		err = err ? err : -EIO;
	if (err)
		goto unlink_tmp;
	if (rename(tmp, path)) {
		err = -errno;
		goto unlink_tmp;
	}
	free(tmp);
	return 0;
unlink_tmp:
	unlink(tmp);
free_tmp:
	free(tmp);
	return err;
}

int output_dir__create(const char *path)
{
	int fd;

	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int output_dir__create_at(int dir_fd, const char *name)
{
	int fd;

	if (mkdirat(dir_fd, name, 0700))
		return -errno;
	fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}
