/* Attaching the crypto/tls uprobes. goelf finds the functions and their RET
 * instructions and validates the text base; this file only turns validated
 * sites into links, all or nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "capture.skel.h"
#include "events.h"
#include "goelf.h"
#include "tlsprobe.h"
#include "util.h"
#include "x86ret.h"

#define TLS_WRITE "crypto/tls.(*Conn).Write"
#define TLS_READ "crypto/tls.(*Conn).Read"

static void find_read_spills(struct go_binary *gb, uint64_t entry, struct tls_sites *sites)
{
	uint8_t code[128];
	int conn, buf, len;
	ssize_t n;

	n = go_binary__read_text(gb, entry, code, sizeof(code));
	if (n <= 0 || x86ret__go_spill_slots(code, (size_t)n, &conn, &buf, &len))
		return;
	/* The register ABI's order: receiver, then the slice's pointer and length, in consecutive
	 * slots. Anything else is not the layout this relies on. */
	if (buf != conn + 8 || len != conn + 16)
		return;
	sites->spill_conn = conn;
	sites->spill_buf = buf;
	sites->spill_len = len;
}

int tls_sites__find_in(struct go_binary *gb, struct tls_sites *sites, char *why, size_t why_len)
{
	uint64_t entry, end, rets[TLSPROBE_MAX_RETS];
	int64_t off;
	int n, i;

	memset(sites, 0, sizeof(*sites));
	snprintf(sites->go_version, sizeof(sites->go_version), "%s",
		 go_binary__buildinfo(gb)->go_version);

	if (go_binary__func(gb, TLS_WRITE, &entry, &end)) {
		snprintf(why, why_len, "no %s in this binary (not a Go TLS program?)", TLS_WRITE);
		return -ENOENT;
	}
	off = go_binary__file_offset(gb, entry);
	if (off < 0) {
		snprintf(why, why_len, "%s at 0x%llx is outside the executable segment", TLS_WRITE,
			 (unsigned long long)entry);
		return -EINVAL;
	}
	sites->write_offset = (uint64_t)off;

	if (go_binary__func(gb, TLS_READ, &entry, &end)) {
		snprintf(why, why_len, "no %s in this binary", TLS_READ);
		return -ENOENT;
	}
	off = go_binary__file_offset(gb, entry);
	if (off < 0) {
		snprintf(why, why_len, "%s at 0x%llx is outside the executable segment", TLS_READ,
			 (unsigned long long)entry);
		return -EINVAL;
	}
	sites->read_offset = (uint64_t)off;
	find_read_spills(gb, entry, sites);
	n = go_binary__ret_sites(gb, TLS_READ, rets, TLSPROBE_MAX_RETS);
	if (n <= 0) {
		snprintf(why, why_len, "no RET instruction could be validated in %s: %s", TLS_READ,
			 n < 0 ? go_binary__last_error(gb) : "none found");
		return n < 0 ? n : -ENOENT;
	}
	for (i = 0; i < n; i++) {
		off = go_binary__file_offset(gb, rets[i]);
		if (off < 0) {
			snprintf(why, why_len, "RET of %s at 0x%llx has no file offset", TLS_READ,
				 (unsigned long long)rets[i]);
			return -EINVAL;
		}
		sites->read_ret_offsets[i] = (uint64_t)off;
	}
	sites->n_read_rets = (size_t)n;
	return 0;
}

int tls_sites__find(const char *binary, struct tls_sites *sites, char *why, size_t why_len)
{
	struct go_binary *gb;
	int err;

	memset(sites, 0, sizeof(*sites));
	gb = go_binary__open(binary, why, why_len);
	if (!gb)
		return errno ? -errno : -EINVAL;
	err = tls_sites__find_in(gb, sites, why, why_len);
	go_binary__close(gb);
	return err;
}

static int add_link(struct tls_attachment *att, struct bpf_program *prog, uint64_t offset,
		    uint64_t cookie, char *why, size_t why_len)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie);
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog, att->pid, att->binary, (size_t)offset, &opts);
	if (!link) {
		int err = -errno;

		snprintf(why, why_len, "uprobe %s at offset 0x%llx: %s", bpf_program__name(prog),
			 (unsigned long long)offset, strerror(errno));
		return err;
	}
	att->links[att->n_links++] = link;
	return 0;
}

int tls_attachment__attach_opened(struct tls_attachment *att, struct capture_bpf *skel, pid_t pid,
				  const char *binary, struct go_binary *gb, char *why,
				  size_t why_len)
{
	uint64_t start = util__monotonic_ns(), ret_cookie = 0;
	size_t i;
	int err = 0;

	memset(att, 0, sizeof(*att));
	att->pid = pid;
	snprintf(att->binary, sizeof(att->binary), "%s", binary);
	err = gb ? tls_sites__find_in(gb, &att->sites, why, why_len)
		 : tls_sites__find(binary, &att->sites, why, why_len);
	if (err)
		return err;
	att->links = calloc(2 + att->sites.n_read_rets, sizeof(*att->links));
	if (!att->links) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	if (att->sites.spill_conn)
		ret_cookie = TLS_RET_COOKIE(att->sites.spill_conn, att->sites.spill_buf,
					    att->sites.spill_len);
	/*
	 * Reads before the Write: a request this process writes once its Write is probed has its
	 * answer's Read probed too. The other way round, a bind sent in the moment between the two
	 * showed its request and lost its response without a word (test-faults e, under load).
	 * A return probed before its entry sees no entry state and records nothing.
	 */
	for (i = 0; !err && i < att->sites.n_read_rets; i++)
		err = add_link(att, skel->progs.tls_read_ret, att->sites.read_ret_offsets[i],
			       ret_cookie, why, why_len);
	if (!err)
		err = add_link(att, skel->progs.tls_read_entry, att->sites.read_offset, 0, why,
			       why_len);
	if (!err)
		err =
		    add_link(att, skel->progs.tls_write, att->sites.write_offset, 0, why, why_len);
	if (err) {
		tls_attachment__detach(att);
		return err;
	}
	att->attach_ns = util__monotonic_ns() - start;
	return 0;
}

int tls_attachment__attach(struct tls_attachment *att, struct capture_bpf *skel, pid_t pid,
			   const char *binary, char *why, size_t why_len)
{
	return tls_attachment__attach_opened(att, skel, pid, binary, NULL, why, why_len);
}

void tls_attachment__detach(struct tls_attachment *att)
{
	size_t i;

	for (i = 0; i < att->n_links; i++)
		bpf_link__destroy(att->links[i]);
	free(att->links);
	att->links = NULL;
	att->n_links = 0;
}
