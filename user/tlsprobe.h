/* Attaching the capture programs to a process: crypto/tls uprobes at addresses goelf found and
 * validated, the process added to the BPF target set for the syscall path. Shared by `capture`
 * and the bind tracer. */
#ifndef BINDTRACE_TLSPROBE_H
#define BINDTRACE_TLSPROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct capture_bpf;
struct bpf_link;
struct go_binary;

#define TLSPROBE_MAX_RETS 64

/* Where the probes of one binary go, as file offsets (what uprobes take). */
struct tls_sites {
	char go_version[32];
	uint64_t write_offset;
	uint64_t read_offset;
	uint64_t read_ret_offsets[TLSPROBE_MAX_RETS];
	size_t n_read_rets;
	/* Where (*Conn).Read's prologue spills its receiver and b.ptr/b.len, as offsets from the
	 * stack pointer at entry (and so at every RET); 0 when not established. With them a RET
	 * whose entry was missed (a Read already blocked when the tracer attached) still yields
	 * its bytes. */
	int spill_conn, spill_buf, spill_len;
};

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
	uint64_t attach_ns; /* how long finding the sites and attaching took */
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
void tls_attachment__detach(struct tls_attachment *att);

#endif
