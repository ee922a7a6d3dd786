/* Attaching the crypto/tls uprobes. goelf finds the functions and their RET
 * instructions and validates the text base; this file only turns validated
 * sites into links, all or nothing. */
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture.skel.h"
#include "events.h"
#include "goelf.h"
#include "link_reaper.h"
#include "tlsprobe.h"
#include "util.h"
#include "x86ret.h"

#define TLS_WRITE "crypto/tls.(*Conn).Write"
#define TLS_READ "crypto/tls.(*Conn).Read"
#define TLS_SECRET "crypto/tls.(*halfConn).setTrafficSecret"

const char *const tls_probe_funcs[TLS_PROBE_FUNCS] = { TLS_WRITE, TLS_READ, TLS_SECRET };

int64_t go_entry_probe_offset(struct go_binary *gb, uint64_t entry, bool *at_branch)
{
	const char *off = getenv("BINDTRACE_PROBE_AT_ENTRY");
	uint8_t code[64];
	uint64_t at;
	ssize_t n;

	*at_branch = false;
	if (off && *off && strcmp(off, "0") != 0)
		return go_binary__file_offset(gb, entry);
	n = go_binary__read_text(gb, entry, code, sizeof(code));
	if (n > 0 && x86ret__go_stack_check_branch(code, (size_t)n, &at) == 0) {
		*at_branch = true;
		return go_binary__file_offset(gb, entry + at);
	}
	return go_binary__file_offset(gb, entry);
}

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

/* setTrafficSecret's entry probe, where its arguments are as tls_secret reads them: Go 1.21 and
 * later (the level argument came with QUIC), in a binary whose TLS layout gotls knows. */
static void find_secret_site(struct go_binary *gb, struct tls_sites *sites)
{
	const struct go_buildinfo *bi = go_binary__buildinfo(gb);
	uint64_t entry, end;
	int64_t off;

	if (!bi || bi->go_major != 1 || bi->go_minor < 21 ||
	    go_binary__func(gb, TLS_SECRET, &entry, &end))
		return;
	off = go_entry_probe_offset(gb, entry, &sites->secret_at_branch);
	if (off < 0)
		return;
	sites->secret_probe_offset = (uint64_t)off;
	sites->has_secret = true;
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
	off = go_entry_probe_offset(gb, entry, &sites->write_at_branch);
	if (off < 0) {
		snprintf(why, why_len, "%s: no file offset for its entry probe", TLS_WRITE);
		return -EINVAL;
	}
	sites->write_probe_offset = (uint64_t)off;

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
	off = go_entry_probe_offset(gb, entry, &sites->read_at_branch);
	if (off < 0) {
		snprintf(why, why_len, "%s: no file offset for its entry probe", TLS_READ);
		return -EINVAL;
	}
	sites->read_probe_offset = (uint64_t)off;
	find_read_spills(gb, entry, sites);
	find_secret_site(gb, sites);
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

/* uprobe_multi through the raw bpf(2) call: Debian's libbpf 1.1 has no wrapper and its headers
 * (Linux 6.1) no constant. The attribute is link_create's uprobe_multi member (Linux 6.6+). */
#define ATTACH_TRACE_UPROBE_MULTI 48

struct link_create_uprobe_multi {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u32 pad;
};

static bool uprobe_multi_usable(void)
{
	static int known = -1;
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr;
	const char *off = getenv("BINDTRACE_NO_UPROBE_MULTI");
	int fd;

	if (known >= 0)
		return known;
	known = 0;
	if (off && *off && strcmp(off, "0") != 0)
		return false;
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_KPROBE;
	attr.insns = (__u64)(uintptr_t)insns;
	attr.insn_cnt = 2;
	attr.license = (__u64)(uintptr_t) "GPL";
	attr.expected_attach_type = ATTACH_TRACE_UPROBE_MULTI;
	fd = (int)syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd >= 0) {
		close(fd);
		known = 1;
	}
	return known;
}

static bool multi_prepared;

bool tls_programs__prepare(struct capture_bpf *skel)
{
	multi_prepared = uprobe_multi_usable();
	if (multi_prepared) {
		bpf_program__set_expected_attach_type(skel->progs.tls_write,
						      ATTACH_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.tls_read_entry,
						      ATTACH_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.tls_read_ret,
						      ATTACH_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.go_call,
						      ATTACH_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.tls_secret,
						      ATTACH_TRACE_UPROBE_MULTI);
	}
	return multi_prepared;
}

bool tls_programs__multi(void)
{
	return multi_prepared;
}

int uprobe_multi__link(struct bpf_program *prog, pid_t pid, const char *binary,
		       const uint64_t *offsets, const uint64_t *cookies, size_t n, char *why,
		       size_t why_len)
{
	struct link_create_uprobe_multi a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (__u32)bpf_program__fd(prog);
	a.attach_type = ATTACH_TRACE_UPROBE_MULTI;
	a.path = (__u64)(uintptr_t)binary;
	a.offsets = (__u64)(uintptr_t)offsets;
	a.cookies = (__u64)(uintptr_t)cookies;
	a.cnt = (__u32)n;
	a.pid = pid > 0 ? (__u32)pid : 0;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	if (fd < 0) {
		int err = -errno;

		snprintf(why, why_len, "uprobe_multi link of %s (%zu probes): %s",
			 bpf_program__name(prog), n, strerror(errno));
		return err;
	}
	return fd;
}

static int add_multi(struct tls_attachment *att, struct bpf_program *prog, const uint64_t *offsets,
		     const uint64_t *cookies, size_t n, char *why, size_t why_len)
{
	int fd = uprobe_multi__link(prog, att->pid, att->binary, offsets, cookies, n, why, why_len);

	if (fd < 0)
		return fd;
	att->multi_fds[att->n_multi++] = fd;
	att->n_probes += n;
	return 0;
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
	att->n_probes++;
	return 0;
}

int tls_attachment__attach_opened(struct tls_attachment *att, struct capture_bpf *skel, pid_t pid,
				  const char *binary, struct go_binary *gb, char *why,
				  size_t why_len)
{
	return tls_attachment__attach_flags(att, skel, pid, binary, gb, 0, why, why_len);
}

int tls_attachment__attach_flags(struct tls_attachment *att, struct capture_bpf *skel, pid_t pid,
				 const char *binary, struct go_binary *gb, unsigned flags,
				 char *why, size_t why_len)
{
	uint64_t start = util__monotonic_ns();
	struct tls_sites sites;
	int err;

	err = gb ? tls_sites__find_in(gb, &sites, why, why_len)
		 : tls_sites__find(binary, &sites, why, why_len);
	if (err) {
		memset(att, 0, sizeof(*att));
		return err;
	}
	err = tls_attachment__attach_sites(att, skel, pid, binary, &sites, flags, why, why_len);
	if (!err)
		att->attach_ns = util__monotonic_ns() - start;
	return err;
}

int tls_attachment__attach_sites(struct tls_attachment *att, struct capture_bpf *skel, pid_t pid,
				 const char *binary, const struct tls_sites *sites, unsigned flags,
				 char *why, size_t why_len)
{
	uint64_t start = util__monotonic_ns(), ret_cookie = 0;
	size_t i;
	int err = 0;

	memset(att, 0, sizeof(*att));
	att->pid = pid;
	att->skel = skel;
	att->secret_index = -1;
	snprintf(att->binary, sizeof(att->binary), "%s", binary);
	att->sites = *sites;
	att->links = calloc(3 + att->sites.n_read_rets, sizeof(*att->links));
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
	if (multi_prepared) {
		uint64_t cookie = att->sites.read_at_branch ? PROBE_COOKIE_AT_BRANCH : 0;
		uint64_t cookies[TLSPROBE_MAX_RETS];

		for (i = 0; i < att->sites.n_read_rets; i++)
			cookies[i] = ret_cookie;
		if (!(flags & TLS_ATTACH_NO_READS))
			err = add_multi(att, skel->progs.tls_read_ret, att->sites.read_ret_offsets,
					cookies, att->sites.n_read_rets, why, why_len);
		if (!err && !(flags & TLS_ATTACH_NO_READS) &&
		    !(skel->rodata->read_ret_only && ret_cookie))
			err = add_multi(att, skel->progs.tls_read_entry,
					&att->sites.read_probe_offset, &cookie, 1, why, why_len);
		cookie = att->sites.write_at_branch ? PROBE_COOKIE_AT_BRANCH : 0;
		att->write_index = (int)att->n_multi;
		att->write_is_multi = true;
		if (!err)
			err = add_multi(att, skel->progs.tls_write, &att->sites.write_probe_offset,
					&cookie, 1, why, why_len);
		cookie = att->sites.secret_at_branch ? PROBE_COOKIE_AT_BRANCH : 0;
		if (!err && (flags & TLS_ATTACH_SECRET) && att->sites.has_secret) {
			att->secret_index = (int)att->n_multi;
			err = add_multi(att, skel->progs.tls_secret,
					&att->sites.secret_probe_offset, &cookie, 1, why, why_len);
		}
	} else {
		for (i = 0; !err && !(flags & TLS_ATTACH_NO_READS) && i < att->sites.n_read_rets;
		     i++)
			err = add_link(att, skel->progs.tls_read_ret,
				       att->sites.read_ret_offsets[i], ret_cookie, why, why_len);
		if (!err && !(flags & TLS_ATTACH_NO_READS) &&
		    !(skel->rodata->read_ret_only && ret_cookie))
			err = add_link(
			    att, skel->progs.tls_read_entry, att->sites.read_probe_offset,
			    att->sites.read_at_branch ? PROBE_COOKIE_AT_BRANCH : 0, why, why_len);
		att->write_index = (int)att->n_links;
		if (!err)
			err = add_link(att, skel->progs.tls_write, att->sites.write_probe_offset,
				       att->sites.write_at_branch ? PROBE_COOKIE_AT_BRANCH : 0, why,
				       why_len);
		if (!err && (flags & TLS_ATTACH_SECRET) && att->sites.has_secret) {
			att->secret_index = (int)att->n_links;
			err = add_link(att, skel->progs.tls_secret, att->sites.secret_probe_offset,
				       att->sites.secret_at_branch ? PROBE_COOKIE_AT_BRANCH : 0,
				       why, why_len);
		}
	}
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

int tls_attachment__write_off(struct tls_attachment *att)
{
	int i = att->write_index, fd;

	if (!att->write_is_multi || att->write_off || i < 0 || (size_t)i >= att->n_multi)
		return -ENOTSUP;
	fd = att->multi_fds[i];
	att->multi_fds[i] = -1;
	att->write_off = true;
	att->n_probes--;
	return fd;
}

int tls_attachment__write_on(struct tls_attachment *att, char *why, size_t why_len)
{
	uint64_t cookie = att->sites.write_at_branch ? PROBE_COOKIE_AT_BRANCH : 0;
	int i = att->write_index, fd;

	if (!att->write_off)
		return 0;
	fd = uprobe_multi__link(att->skel->progs.tls_write, att->pid, att->binary,
				&att->sites.write_probe_offset, &cookie, 1, why, why_len);
	if (fd < 0)
		return fd;
	att->multi_fds[i] = fd;
	att->write_off = false;
	att->n_probes++;
	return 0;
}

void tls_attachment__detach(struct tls_attachment *att)
{
	links__close_all(att->links, att->n_links, att->multi_fds, att->n_multi);
	free(att->links);
	att->links = NULL;
	att->n_links = 0;
	att->n_multi = 0;
	att->n_probes = 0;
}
