/* SHA-256 of a file through OpenSSL's libcrypto (EVP): a well-kept, FIPS-validated
 * implementation with the CPU's SHA extensions, rather than one of our own. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "sha256.h"

int sha256__file(const char *path, char hex[65], uint64_t *size)
{
	const size_t cap = 1 << 16;
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int digest_len = 0, i;
	EVP_MD_CTX *ctx = NULL;
	uint8_t *buf = NULL;
	uint64_t total = 0;
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Called from several threads at once: no static buffer. */
	buf = malloc(cap);
	ctx = EVP_MD_CTX_new();
	if (!buf || !ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		err = -ENOMEM;
		goto cleanup;
	}
	while ((n = read(fd, buf, cap)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto cleanup;
		}
		if (!EVP_DigestUpdate(ctx, buf, (size_t)n)) {
			err = -EIO;
			goto cleanup;
		}
		total += (uint64_t)n;
	}
	if (!EVP_DigestFinal_ex(ctx, digest, &digest_len) || digest_len != 32) {
		err = -EIO;
		goto cleanup;
	}
	for (i = 0; i < digest_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	if (size)
		*size = total;
cleanup:
	EVP_MD_CTX_free(ctx);
	free(buf);
	close(fd);
	return err;
}
