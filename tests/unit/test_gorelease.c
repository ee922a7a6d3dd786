/* gorelease and x86flow: the validators and the release rules' version tests, the value-origin
 * pass on hand-assembled instruction sequences (one rule each: a variable's header stored to a
 * result, a spill and reload, calls, joins, jumps, writes it does not model, call arguments,
 * writes it cannot place), then go_release__read on the real upstream kubectl builds when they
 * are installed: the stamped commit read from the data must equal the vcs.revision that
 * buildinfo states, both version packages must be read and agree, and for the builds whose
 * `kubectl version --client` output is known, every value must be that output. */
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "goelf.h"
#include "gorelease.h"
#include "x86flow.h"

static void test_validators(void)
{
	static const struct {
		const char *s;
		bool version, release;
	} versions[] = {
		{ "v1.33.1", true, true },
		{ "v1.37.2", true, true },
		{ "v1.33.0-rc.1", true, true },
		{ "v1.34.0-alpha.0.123+0123456789abcd", true, true },
		{ "v1.33.1-dirty", true, true },
		{ "v1.33.1+dirty", true, true },
		{ "v0.0.0-master+$Format:%H$", false, false }, /* the unstamped default */
		{ "v0.0.0", false, false },
		{ "(devel)", false, false },
		{ "", false, false },
		{ "1.33.1", false, false },
		{ "v1.33", false, false },
		{ "v01.33.1", false, false },
		{ "v1.33.1-", false, false },
		{ "v1.33.1 ", false, false },
		{ "v0.0.0-20250515081907-8adc0f041b8e", false, false },
		{ "v1.33.2-0.20250515081907-8adc0f041b8e", true, false },
		{ "v1.33.1-rc.0.0.20250515081907-8adc0f041b8e", true, false },
		{ "v1.33.2-0.20250515081907-8adc0f041b8e+dirty", true, false },
		{ "v2.0.0-20250515081907-8adc0f041b8e+incompatible", true, false },
	};
	static const struct {
		const char *s;
		bool valid;
	} dates[] = {
		{ "2025-05-15T08:27:33Z", true },
		{ "2025-05-15T08:27:33.123Z", true },
		{ "2025-05-15T08:27:33+02:00", true },
		{ "1970-01-01T00:00:00Z", false },
		{ "2025-13-15T08:27:33Z", false },
		{ "2025-05-15 08:27:33Z", false },
		{ "2025-05-15T08:27:33", false },
		{ "2025-05-15T08:27:33Zx", false },
		{ "", false },
	};

	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		CHECK(go_release__valid_git_version(versions[i].s) == versions[i].version,
		      "gitVersion \"%s\"", versions[i].s);
		CHECK(go_release__is_release_version(versions[i].s) == versions[i].release,
		      "release \"%s\"", versions[i].s);
	}
	for (size_t i = 0; i < sizeof(dates) / sizeof(dates[0]); i++)
		CHECK(go_release__valid_build_date(dates[i].s) == dates[i].valid, "date \"%s\"",
		      dates[i].s);
	CHECK(go_release__valid_commit("8adc0f041b8e7ad1d30e29cc59c6ae7a15e19828", 40, 40), "sha1");
	CHECK(!go_release__valid_commit("8ADC0F041B8E7AD1D30E29CC59C6AE7A15E19828", 40, 40),
	      "upper case");
	CHECK(!go_release__valid_commit("8adc0f041b8e7ad1d30e29cc59c6ae7a15e1982", 40, 40), "39");
	CHECK(!go_release__valid_commit("$Format:%H$", 7, 40), "unstamped default");
	CHECK(!go_release__valid_commit("Not provided (use ./build instead of go build)", 7, 40),
	      "etcd's default");
	CHECK(go_release__valid_commit("a1b2c3d", 7, 40), "short");
	CHECK(go_release__valid_tree_state("clean") && go_release__valid_tree_state("dirty") &&
		  go_release__valid_tree_state("archive") && !go_release__valid_tree_state("") &&
		  !go_release__valid_tree_state("Clean"),
	      "tree states");
}

/* Assembled with GNU as (intel syntax) at 0x1000; the listings give each instruction's place. */
/* result
 * mov    rdx,QWORD PTR [rip+0x1000]        # 0x2007  @ 1000
 * mov    r8,QWORD PTR [rip+0x1001]        # 0x200f  @ 1007
 * mov    QWORD PTR [rsp+0x68],rdx  @ 100e
 * mov    QWORD PTR [rsp+0x70],r8  @ 1013
 * ret  @ 1018
 */
static const uint8_t code_result[] = { 0x48, 0x8b, 0x15, 0x00, 0x10, 0x00, 0x00, 0x4c, 0x8b,
				       0x05, 0x01, 0x10, 0x00, 0x00, 0x48, 0x89, 0x54, 0x24,
				       0x68, 0x4c, 0x89, 0x44, 0x24, 0x70, 0xc3 };
/* spill
 * mov    rdx,QWORD PTR [rip+0x1000]        # 0x2007  @ 1000
 * mov    QWORD PTR [rsp+0x30],rdx  @ 1007
 * mov    rax,QWORD PTR [rsp+0x30]  @ 100c
 * mov    rcx,rax  @ 1011
 * mov    QWORD PTR [rsp+0x68],rcx  @ 1014
 */
static const uint8_t code_spill[] = { 0x48, 0x8b, 0x15, 0x00, 0x10, 0x00, 0x00, 0x48, 0x89,
				      0x54, 0x24, 0x30, 0x48, 0x8b, 0x44, 0x24, 0x30, 0x48,
				      0x89, 0xc1, 0x48, 0x89, 0x4c, 0x24, 0x68 };
/* call
 * mov    rdx,QWORD PTR [rip+0x1000]        # 0x2007  @ 1000
 * mov    QWORD PTR [rsp+0x30],rdx  @ 1007
 * call   0x110c  @ 100c
 * mov    QWORD PTR [rsp+0x68],rdx  @ 1011
 * mov    rax,QWORD PTR [rsp+0x30]  @ 1016
 * mov    QWORD PTR [rsp+0x70],rax  @ 101b
 */
static const uint8_t code_call[] = { 0x48, 0x8b, 0x15, 0x00, 0x10, 0x00, 0x00, 0x48,
				     0x89, 0x54, 0x24, 0x30, 0xe8, 0xfb, 0x00, 0x00,
				     0x00, 0x48, 0x89, 0x54, 0x24, 0x68, 0x48, 0x8b,
				     0x44, 0x24, 0x30, 0x48, 0x89, 0x44, 0x24, 0x70 };
/* join
 * mov    rdx,QWORD PTR [rip+0x1000]        # 0x2007  @ 1000
 * je     0x1010  @ 1007
 * mov    rdx,QWORD PTR [rip+0x2000]        # 0x3010  @ 1009
 * mov    QWORD PTR [rsp+0x68],rdx  @ 1010
 */
static const uint8_t code_join[] = { 0x48, 0x8b, 0x15, 0x00, 0x10, 0x00, 0x00,
				     0x74, 0x07, 0x48, 0x8b, 0x15, 0x00, 0x20,
				     0x00, 0x00, 0x48, 0x89, 0x54, 0x24, 0x68 };
/* afterjmp
 * mov    rdx,QWORD PTR [rip+0x1000]        # 0x2007  @ 1000
 * jmp    0x1047  @ 1007
 * mov    QWORD PTR [rsp+0x68],rdx  @ 1009
 */
static const uint8_t code_afterjmp[] = { 0x48, 0x8b, 0x15, 0x00, 0x10, 0x00, 0x00,
					 0xeb, 0x3e, 0x48, 0x89, 0x54, 0x24, 0x68 };
/* arith
 * mov    rdx,QWORD PTR [rip+0x1000]        # 0x2007  @ 1000
 * add    rdx,0x8  @ 1007
 * mov    QWORD PTR [rsp+0x68],rdx  @ 100b
 * mov    edx,0x5  @ 1010
 * mov    QWORD PTR [rsp+0x70],rdx  @ 1015
 * mov    DWORD PTR [rsp+0x78],0x7  @ 101a
 * movups XMMWORD PTR [rsp+0x80],xmm15  @ 1022
 */
static const uint8_t code_arith[] = { 0x48, 0x8b, 0x15, 0x00, 0x10, 0x00, 0x00, 0x48, 0x83,
				      0xc2, 0x08, 0x48, 0x89, 0x54, 0x24, 0x68, 0xba, 0x05,
				      0x00, 0x00, 0x00, 0x48, 0x89, 0x54, 0x24, 0x70, 0xc7,
				      0x44, 0x24, 0x78, 0x07, 0x00, 0x00, 0x00, 0x44, 0x0f,
				      0x11, 0xbc, 0x24, 0x80, 0x00, 0x00, 0x00 };
/* args
 * lea    rcx,[rip+0x3000]        # 0x4007  @ 1000
 * mov    edi,0xc  @ 1007
 * mov    rax,QWORD PTR [rip+0x1000]        # 0x2013  @ 100c
 * mov    rbx,QWORD PTR [rip+0x1001]        # 0x201b  @ 1013
 * call   0x111a  @ 101a
 */
static const uint8_t code_args[] = { 0x48, 0x8d, 0x0d, 0x00, 0x30, 0x00, 0x00, 0xbf,
				     0x0c, 0x00, 0x00, 0x00, 0x48, 0x8b, 0x05, 0x00,
				     0x10, 0x00, 0x00, 0x48, 0x8b, 0x1d, 0x01, 0x10,
				     0x00, 0x00, 0xe8, 0xfb, 0x00, 0x00, 0x00 };
/* clobber
 * mov    QWORD PTR [rsp+0x68],0x0  @ 1000
 * mov    QWORD PTR [rdi+0x8],rax  @ 1009
 * rep movs QWORD PTR es:[rdi],QWORD PTR ds:[rsi]  @ 100d
 * mov    QWORD PTR [rip+0x10],rax        # 0x1027  @ 1010
 * push   rbp  @ 1017
 */
static const uint8_t code_clobber[] = { 0x48, 0xc7, 0x44, 0x24, 0x68, 0x00, 0x00, 0x00,
					0x00, 0x48, 0x89, 0x47, 0x08, 0xf3, 0x48, 0xa5,
					0x48, 0x89, 0x05, 0x10, 0x00, 0x00, 0x00, 0x55 };

/* xmm
 * movups xmm0,XMMWORD PTR [rip+0x1000]        # 0x2007  @ 1000
 * movaps xmm1,xmm0  @ 1007
 * movups XMMWORD PTR [rsp+0x68],xmm1  @ 100a
 * pxor   xmm1,xmm1  @ 100f
 * movups XMMWORD PTR [rsp+0x78],xmm1  @ 1013
 * movups XMMWORD PTR [rsp+0x88],xmm15  @ 1018
 */
static const uint8_t code_xmm[] = { 0x0f, 0x10, 0x05, 0x00, 0x10, 0x00, 0x00, 0x0f, 0x28,
				    0xc8, 0x0f, 0x11, 0x4c, 0x24, 0x68, 0x66, 0x0f, 0xef,
				    0xc9, 0x0f, 0x11, 0x4c, 0x24, 0x78, 0x44, 0x0f, 0x11,
				    0xbc, 0x24, 0x88, 0x00, 0x00, 0x00 };

struct flow_log {
	char text[512];
};

static void log_value(char *buf, size_t len, const struct x86flow_value *v)
{
	switch (v->kind) {
	case X86FLOW_LOAD:
		snprintf(buf, len, "L%" PRIx64, v->value);
		break;
	case X86FLOW_ADDRESS:
		snprintf(buf, len, "A%" PRIx64, v->value);
		break;
	case X86FLOW_IMMEDIATE:
		snprintf(buf, len, "I%" PRIx64, v->value);
		break;
	default:
		snprintf(buf, len, "?");
	}
}

static int flow_log__event(const struct x86flow_event *e, void *ctx)
{
	static const char *const regs[X86FLOW_ARG_REGS] = { "rax", "rbx", "rcx", "rdi", "rsi",
							    "r8",  "r9",  "r10", "r11" };
	struct flow_log *log = ctx;
	size_t n = strlen(log->text);
	char v[32];

	if (n)
		log->text[n++] = ' ';
	switch (e->type) {
	case X86FLOW_STORE:
		log_value(v, sizeof(v), &e->stored);
		snprintf(log->text + n, sizeof(log->text) - n, "S%" PRIx64 ":%s",
			 (uint64_t)e->rsp_disp, v);
		break;
	case X86FLOW_CALL:
		snprintf(log->text + n, sizeof(log->text) - n, "C");
		for (int i = 0, first = 1; i < X86FLOW_ARG_REGS; i++) {
			if (e->args[i].kind == X86FLOW_UNKNOWN)
				continue;
			log_value(v, sizeof(v), &e->args[i]);
			n = strlen(log->text);
			snprintf(log->text + n, sizeof(log->text) - n, "%s%s=%s", first ? ":" : ",",
				 regs[i], v);
			first = 0;
		}
		break;
	case X86FLOW_CLOBBER:
		snprintf(log->text + n, sizeof(log->text) - n, "X");
		break;
	case X86FLOW_RETURN:
		snprintf(log->text + n, sizeof(log->text) - n, "R");
		break;
	}
	return 0;
}

static void test_flow(void)
{
	static const struct {
		const char *name;
		const uint8_t *code;
		size_t len;
		const char *want;
	} cases[] = {
		{ "result", code_result, sizeof(code_result), "S68:L2007 S70:L200f R" },
		{ "spill", code_spill, sizeof(code_spill), "S30:L2007 S68:L2007" },
		/* a call forgets registers and slots: a callee may write the frame */
		{ "call", code_call, sizeof(code_call), "S30:L2007 C S68:? S70:?" },
		/* two paths join at 0x1010 with different rdx */
		{ "join", code_join, sizeof(code_join), "S68:?" },
		{ "afterjmp", code_afterjmp, sizeof(code_afterjmp), "S68:?" },
		/* add: unknown; mov edx, 5: immediate; a dword and a 16-byte store: unknown words */
		{ "arith", code_arith, sizeof(code_arith), "S68:? S70:I5 S78:? S80:? S88:?" },
		{ "args", code_args, sizeof(code_args), "C:rax=L2013,rbx=L201b,rcx=A4007,rdi=Ic" },
		/* writes through rdi, rep movs and push may hit the stack; the RIP store may not */
		{ "clobber", code_clobber, sizeof(code_clobber), "S68:I0 X X X" },
		/* a string header copied whole through XMM registers; pxor forgets it */
		{ "xmm", code_xmm, sizeof(code_xmm),
		  "S68:L2007 S70:L200f S78:? S80:? S88:? S90:?" },
	};
	static const uint8_t bad[] = { 0x48, 0x8b, 0x15, 0x00, 0x10, 0x00, 0x00, 0x0f, 0x0b, 0x06 };
	struct x86flow_stats stats;
	struct flow_log log;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&log, 0, sizeof(log));
		CHECK_INT(x86flow__scan(cases[i].code, cases[i].len, 0x1000, flow_log__event, &log,
					&stats),
			  0);
		CHECK(!strcmp(log.text, cases[i].want), "%s: got \"%s\", want \"%s\"",
		      cases[i].name, log.text, cases[i].want);
	}
	/* 0x06 (push es) does not exist in 64-bit mode */
	memset(&log, 0, sizeof(log));
	CHECK_INT(x86flow__scan(bad, sizeof(bad), 0x1000, flow_log__event, &log, &stats), -EILSEQ);
	CHECK(stats.bad_insn == 0x1009, "bad instruction at 0x%" PRIx64, stats.bad_insn);
	/* cut mid-instruction */
	CHECK_INT(x86flow__scan(code_result, 5, 0x1000, flow_log__event, &log, &stats), -EILSEQ);
}

/* `kubectl version --client -o json` of the upstream builds Google's SDK ships, keyed by the
 * vcs.revision their buildinfo states (another SDK may ship other builds: then only the
 * consistency checks apply). */
static const struct {
	const char *revision, *git_version, *build_date, *release_from;
} known_kubectl[] = {
	{ "cbb86e0d7f4a049666fac0551e8b02ef3d6c3d9a", "v1.27.16", "2024-07-17T01:53:56Z",
	  "stamped" },
	{ "841856557ef0f6a399096c42635d114d6f2cf7f4", "v1.28.15", "2024-10-22T20:34:56Z",
	  "stamped" },
	{ "4f359b2e16764ab5e175195ee6992dfb53b36acf", "v1.29.14", "2025-02-12T21:34:28Z",
	  "stamped" },
	{ "50af91c466658b6a33d123fae8a487db1630971c", "v1.30.13", "2025-05-15T09:56:59Z",
	  "stamped" },
	{ "8f3800390d488f54f74111f22973059e133f9cba", "v1.31.9", "2025-05-15T09:17:16Z",
	  "stamped" },
	{ "9894294ef13a5b32803e3ca2c0d620a088cc84d1", "v1.32.5", "2025-05-15T09:12:10Z",
	  "stamped" },
	{ "8adc0f041b8e7ad1d30e29cc59c6ae7a15e19828", "v1.33.1", "2025-05-15T08:27:33Z",
	  "buildinfo" },
};

static const char *setting(const struct go_buildinfo *bi, const char *key)
{
	for (size_t i = 0; i < bi->n_settings; i++)
		if (!strcmp(bi->settings[i].key, key))
			return bi->settings[i].value;
	return "";
}

static void test_kubectl(const char *path)
{
	struct go_release rel;
	struct go_binary *gb;
	const struct go_buildinfo *bi;
	const char *revision;
	char why[256];

	gb = go_binary__open(path, why, sizeof(why));
	CHECK(gb, "%s: %s", path, why);
	if (!gb)
		return;
	bi = go_binary__buildinfo(gb);
	revision = setting(bi, "vcs.revision");
	CHECK_INT(go_release__read(gb, &rel), 0);
	CHECK_INT(rel.product, GO_PRODUCT_KUBERNETES);
	CHECK_INT(rel.n_read, 2);
	/* The commit in the data, found through Get's code, is the one buildinfo states. */
	CHECK_STR(rel.stamps.git_commit, revision);
	for (int i = 0; i < rel.n_read; i++)
		CHECK_STR(rel.read[i].git_commit, revision);
	CHECK_STR(rel.commit.value, revision);
	CHECK_INT(rel.commit.source, GO_RELEASE_BUILDINFO);
	CHECK_STR(rel.stamps.tree_state, "clean");
	CHECK(rel.notes[0] == '\0', "%s: notes: %s", path, rel.notes);
	CHECK(strcmp(rel.release.value, "(devel)") != 0, "%s: (devel)", path);
	/* client-go's Get reads gitVersion itself; component-base's through an atomic.Value. */
	CHECK(rel.read[0].git_version[0], "%s: client-go gitVersion", path);
	for (size_t i = 0; i < sizeof(known_kubectl) / sizeof(known_kubectl[0]); i++) {
		if (strcmp(known_kubectl[i].revision, revision))
			continue;
		CHECK_STR(rel.release.value, known_kubectl[i].git_version);
		CHECK_STR(rel.stamps.git_version, known_kubectl[i].git_version);
		CHECK_STR(rel.build_date.value, known_kubectl[i].build_date);
		CHECK_STR(go_release_source__name(rel.release.source),
			  known_kubectl[i].release_from);
	}
	printf("  %s: %s (%s), commit %.12s (%s)\n", path, rel.release.value,
	       go_release_source__name(rel.release.source), rel.commit.value,
	       go_release_source__name(rel.commit.source));
	go_binary__close(gb);
}

int main(void)
{
	glob_t g;

	test_validators();
	test_flow();
	if (glob("/usr/lib/google-cloud-sdk/bin/kubectl.1.*", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			test_kubectl(g.gl_pathv[i]);
		globfree(&g);
	} else {
		printf("  no /usr/lib/google-cloud-sdk/bin/kubectl.1.*: real builds not checked\n");
	}
	return check_summary("test_gorelease");
}
