/* Attaching the capture programs to a process: crypto/tls uprobes at addresses goelf found and
 * validated, the process added to the BPF target set for the syscall path. Shared by `capture`
 * and the bind tracer. */
#ifndef BINDTRACE_TLSPROBE_H
#define BINDTRACE_TLSPROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct capture_bpf;
struct bpf_link;
struct bpf_program;
struct go_binary;

#define TLSPROBE_MAX_RETS 64
#define TLSPROBE_MAX_MULTI 4 /* uprobe_multi links: Read RETs, Read entry, Write, the secret */

/* Where the probes of one binary go, as file offsets (what uprobes take). */
struct tls_sites {
	char go_version[32];
	uint64_t write_offset;
	uint64_t read_offset;
	/* Where the entry probes go: the stack check's branch when the prologue has the usual
	 * shape (the kernel emulates a branch; the first instruction is single-stepped, several
	 * times dearer), else the entry itself. */
	uint64_t write_probe_offset, read_probe_offset;
	bool write_at_branch, read_at_branch;
	/* (*halfConn).setTrafficSecret's entry probe (BINDTRACE_TLS_WIRE: the keys of connections
	 * opened later); has_secret false when the binary has none to probe. */
	uint64_t secret_probe_offset;
	bool secret_at_branch, has_secret;
	uint64_t read_ret_offsets[TLSPROBE_MAX_RETS];
	size_t n_read_rets;
	/* Where (*Conn).Read's prologue spills its receiver and b.ptr/b.len, as offsets from the
	 * stack pointer at entry (and so at every RET); 0 when not established. With them a RET
	 * whose entry was missed (a Read already blocked when the tracer attached) still yields
	 * its bytes. */
	int spill_conn, spill_buf, spill_len;
};

/* For the Go function at entry in gb: the file offset of its entry probe and whether it is the
 * conditional branch of the stack check (x86ret__go_stack_check_branch; the cookie then carries
 * PROBE_COOKIE_AT_BRANCH), else the entry's own offset. BINDTRACE_PROBE_AT_ENTRY=1 in the
 * environment keeps every probe at the entry (for comparison). */
int64_t go_entry_probe_offset(struct go_binary *gb, uint64_t entry, bool *at_branch);

/* Before the skeleton is loaded: when the kernel has uprobe_multi links (Linux 6.6+; probed once
 * with a two-instruction program) and BINDTRACE_NO_UPROBE_MULTI is not set, loads the three TLS
 * programs and go_call for them, so that tls_attachment__attach* makes one link per program and
 * binary (attach and detach cost one link each; single uprobes are removed one at a time, each
 * waiting for an RCU grace period). Returns whether it did. */
bool tls_programs__prepare(struct capture_bpf *skel);
/* Whether tls_programs__prepare did: go_call (the scheduler's bind-call probes) is loaded for
 * uprobe_multi links too, and can be attached only through uprobe_multi__link. */
bool tls_programs__multi(void);
/* One uprobe_multi link of prog at the n file offsets of binary, cookies[i] for offsets[i], in
 * pid (<= 0: every process running it). Returns its descriptor, or a negative errno with a
 * one-line reason in why. */
int uprobe_multi__link(struct bpf_program *prog, pid_t pid, const char *binary,
		       const uint64_t *offsets, const uint64_t *cookies, size_t n, char *why,
		       size_t why_len);

/* The functions tls_sites__find* looks up (for go_binary__open_find). */
#define TLS_PROBE_FUNCS 3
extern const char *const tls_probe_funcs[TLS_PROBE_FUNCS];

/* Finds and validates the probe sites in a Go binary. Returns 0, or a negative errno with a
 * one-line reason in why (nothing must be attached then). */
int tls_sites__find(const char *binary, struct tls_sites *sites, char *why, size_t why_len);
/* The same in a binary the caller already opened (and keeps): no second open of the file. */
int tls_sites__find_in(struct go_binary *gb, struct tls_sites *sites, char *why, size_t why_len);

struct tls_attachment {
	pid_t pid; /* -1: every process running the binary */
	char binary[4096];
	struct tls_sites sites;
	struct bpf_link **links;
	size_t n_links;
	/* With uprobe_multi (see tls_programs__prepare): one link per program instead. */
	int multi_fds[TLSPROBE_MAX_MULTI];
	size_t n_multi;
	size_t n_probes;    /* probes placed, whichever the way */
	uint64_t attach_ns; /* how long finding the sites and attaching took */
	/* The Write probe's link (an index in multi_fds or links), and whether it is off
	 * (tls_attachment__write_off); the setTrafficSecret probe's, -1 when not placed. */
	int write_index, secret_index;
	bool write_is_multi, write_off;
	struct capture_bpf *skel;
};

/* Attach the three TLS programs at `sites` of `binary` for pid (-1 for all its processes).
 * On error nothing stays attached, and why says what failed. */
int tls_attachment__attach(struct tls_attachment *att, struct capture_bpf *skel, pid_t pid,
			   const char *binary, char *why, size_t why_len);
/* The same with the binary already open as gb (NULL: open it here), as the bind tracer has it:
 * the file is not opened and validated a second time. gb is the caller's and stays open. */
int tls_attachment__attach_opened(struct tls_attachment *att, struct capture_bpf *skel, pid_t pid,
				  const char *binary, struct go_binary *gb, char *why,
				  size_t why_len);
/* The same with options: TLS_ATTACH_NO_READS attaches only the Write probe (a process whose
 * peers' Writes give what it reads, timed by its read(2)s: TARGET_READS_VIA_SYSCALL);
 * TLS_ATTACH_SECRET adds the setTrafficSecret probe where the binary has one. */
#define TLS_ATTACH_NO_READS 1
#define TLS_ATTACH_SECRET 2
int tls_attachment__attach_flags(struct tls_attachment *att, struct capture_bpf *skel, pid_t pid,
				 const char *binary, struct go_binary *gb, unsigned flags,
				 char *why, size_t why_len);
/* The same at sites found before (tls_sites__find_in): the binary's reading apart from its
 * uprobes, so that a tracer reads all its binaries first and then registers every uprobe in a
 * row (the first uprobe after a pause waits for an RCU grace period; uprobes registered in a
 * row wait once). */
int tls_attachment__attach_sites(struct tls_attachment *att, struct capture_bpf *skel, pid_t pid,
				 const char *binary, const struct tls_sites *sites, unsigned flags,
				 char *why, size_t why_len);
void tls_attachment__detach(struct tls_attachment *att);
/* The Write probe taken away and put back: with uprobe_multi only (-ENOTSUP otherwise). _off
 * returns its link's descriptor for the caller to close (a grace period's wait: a reaper's job);
 * _on 0 or a negative errno, why saying what failed. */
int tls_attachment__write_off(struct tls_attachment *att);
int tls_attachment__write_on(struct tls_attachment *att, char *why, size_t why_len);

#endif
