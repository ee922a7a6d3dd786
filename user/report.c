/* The report of one pod's bind: Markdown for people who were not there, and an SVG waterfall of
 * its legs drawn to scale. Both are written when the pod's bind finishes, each through a
 * temporary file renamed into place, so a reader never sees half a report. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "citation.h"
#include "identity.h"
#include "output_file.h"
#include "report.h"
#include "util.h"

/* ---- Shared bits ---- */

static double ms_between(uint64_t from, uint64_t to)
{
	return ((double)(int64_t)(to - from)) / 1e6;
}

/* Text for a Markdown table cell or inline code: no pipes, backticks or line breaks. */
static void fprint_md(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '|')
			fputs("\\|", out);
		else if (c == '`')
			fputc('\'', out);
		else if (c == '<')
			fputs("&lt;", out);
		else if (c < 0x20)
			fputc(' ', out);
		else
			fputc(c, out);
	}
}

/* ---- Markdown ---- */

static void md_stage_detail(FILE *out, const struct bind_timeline *t, int s)
{
	const struct stage *st = &t->stages[s];

	switch (s) {
	case STAGE_BIND_REQUEST:
	case STAGE_APISERVER_RECEIVED:
		fputs(bind_result__gave_up(t->result) ? "PATCH pods/" : "POST pods/", out);
		fprint_md(out, t->name);
		fputs(bind_result__gave_up(t->result) ? "/status PodScheduled=False" : "/binding",
		      out);
		break;
	case STAGE_ETCD_TXN_SENT:
	case STAGE_ETCD_TXN_RECEIVED:
		fputs("Txn on /registry/pods/", out);
		fprint_md(out, t->namespace_);
		fputc('/', out);
		fprint_md(out, t->name);
		break;
	case STAGE_ETCD_WAL_FSYNC:
		fprintf(out, "fdatasync of the WAL, %.3f ms",
			ms_between(st->first_ns, st->last_ns));
		break;
	case STAGE_ETCD_TXN_RESPONSE:
	case STAGE_ETCD_WATCH_EVENT:
		if (t->revision)
			fprintf(out, "revision %" PRId64, t->revision);
		break;
	case STAGE_BIND_RESPONSE:
	case STAGE_BIND_RESPONSE_RECEIVED:
		if (t->status_code)
			fprintf(out, "%d", t->status_code);
		break;
	}
	if (st->seen && st->who.conn && s != STAGE_ETCD_WAL_FSYNC) {
		fprintf(out, " (%s",
			s == STAGE_BIND_REQUEST || s == STAGE_ETCD_TXN_SENT ||
				s == STAGE_ETCD_TXN_RESPONSE || s == STAGE_BIND_RESPONSE
			    ? "to "
			    : "from ");
		fprint_md(out, endpoint__str(&st->who.remote).s);
		if (st->stream_id)
			fprintf(out, ", stream %u", st->stream_id);
		fputc(')', out);
	}
}

static void md_who(FILE *out, const struct actor *a)
{
	fprint_md(out, actor__name(a));
	fprintf(out, " (pid %d)", a->pid);
}

/* A GitHub link to the cited line when the file is in the kubernetes repository. */
static void md_link(FILE *out, const char *tag, const char *dir, const char *rest, int line)
{
	fputs(" — [source at ", out);
	fprint_md(out, tag);
	fputs("](https://github.com/kubernetes/kubernetes/blob/", out);
	fprint_md(out, tag);
	fputc('/', out);
	fputs(dir, out);
	fprint_md(out, rest);
	fprintf(out, "#L%d)", line);
}

/* A GitHub link to the cited line when the file is in the kubernetes repository: pclntab paths
 * are "k8s.io/kubernetes@v1.33.13/pkg/..." in a -trimpath module build, "k8s.io/kubernetes/..."
 * in others; staging modules (client-go...) live in the same repository at the same ref. The
 * ref is the binary's commit when known, else its release tag (both validated by gorelease). */
static void md_source_link(FILE *out, const char *file, int line, const char *version)
{
	static const char *const staging[] = { "client-go",	   "api",
					       "apimachinery",	   "apiserver",
					       "component-base",   "kube-scheduler",
					       "component-helpers" };
	static const char k8s[] = "k8s.io/kubernetes";
	char tag[64], dir[64];
	const char *rest;
	size_t i, n;

	if (strncmp(file, "k8s.io/", 7) || !version[0])
		return;
	if (!strncmp(file, k8s, sizeof(k8s) - 1) &&
	    (file[sizeof(k8s) - 1] == '/' || file[sizeof(k8s) - 1] == '@')) {
		rest = file + sizeof(k8s) - 1;
		util__copy(tag, sizeof(tag), version);
		if (*rest == '@') {
			/* The version the path itself records. */
			n = strcspn(rest + 1, "/");
			if (n + 1 > sizeof(tag) || !rest[1 + n])
				return;
			memcpy(tag, rest + 1, n);
			tag[n] = '\0';
			rest += 1 + n;
		}
		md_link(out, tag, "", rest + 1, line);
		return;
	}
	for (i = 0; i < sizeof(staging) / sizeof(staging[0]); i++) {
		n = strlen(staging[i]);
		if (strncmp(file + 7, staging[i], n) || (file[7 + n] != '/' && file[7 + n] != '@'))
			continue;
		rest = strchr(file + 7 + n, '/');
		if (!rest)
			return;
		snprintf(dir, sizeof(dir), "staging/src/k8s.io/%s/", staging[i]);
		md_link(out, version, dir, rest + 1, line);
		return;
	}
}

/* Leg descriptions use "->": print them with arrows. */
static void md_arrows(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (s[0] == '-' && s[1] == '>') {
			fputs("→", out);
			s++;
		} else {
			fputc(*s, out);
		}
	}
}

/* "**kube-scheduler → kube-apiserver**, ": who the leg is between. */
static void md_leg_heading(FILE *out, const struct bind_timeline *t, const struct bind_leg *l)
{
	char buf[96];

	fputs("**", out);
	if (l->watcher >= 0) {
		watcher__name(buf, sizeof(buf), &t->watchers[l->watcher]);
		fputs(l->leg == LEG_WATCH_FANOUT ? "kube-apiserver**, for watcher **"
						 : "kube-apiserver → ",
		      out);
		fprint_md(out, buf);
	} else {
		leg__between(buf, sizeof(buf), l->leg);
		fputs(buf, out);
	}
	fputs("**, ", out);
}

/* The heading and the table of the bind's facts, with the waterfall. */
static void md_summary(FILE *out, const struct bind_view *view, const char *svg_href)
{
	const struct bind_timeline *t = view->t;
	const struct bind_leg *legs = view->legs;
	uint64_t t0 = view->origin_ns;
	int n = view->n_legs;
	char when[64];

	fputs("# Pod bind: ", out);
	fprint_md(out, t->namespace_);
	fputc('/', out);
	fprint_md(out, t->name);
	if (t->node[0]) {
		fputs(" → ", out);
		fprint_md(out, t->node);
	}
	fputs("\n\n| | |\n|---|---|\n", out);
	fprintf(out, "| Result | **%s**", bind_result__name(t->result));
	if (t->status_code)
		fprintf(out, " (%d)", t->status_code);
	if (t->status_reason[0]) {
		fputs(" — ", out);
		fprint_md(out, t->status_reason);
	}
	fputs(" |\n", out);
	if (t->node[0]) {
		fputs("| Node | `", out);
		fprint_md(out, t->node);
		fputs("`", out);
		if (t->node_before_known) {
			fputs(" (spec.nodeName \"", out);
			fprint_md(out, t->node_before);
			fputs("\" → \"", out);
			fprint_md(out, t->node);
			fputs("\" in etcd)", out);
		}
		fputs(" |\n", out);
	}
	if (t->uid[0]) {
		fputs("| Pod UID | `", out);
		fprint_md(out, t->uid);
		fputs("` |\n", out);
	}
	if (t->revision)
		fprintf(out,
			"| etcd revision | %" PRId64
			" (the pod's resourceVersion after the bind) |\n",
			t->revision);
	if (n && legs[0].seen)
		fprintf(out, "| Total | **%.3f ms** (bind_request → bind_response_received) |\n",
			ms_between(legs[0].start_ns, legs[0].end_ns));
	bind_view__wall_time(view, t0, true, when, sizeof(when));
	fprintf(out, "| Began | %s", when);
	if (view->origin_stage == &t->stages[STAGE_BIND_REQUEST])
		fputs(" (bind_request) |\n", out);
	else if (view->origin_stage)
		fprintf(out, " (`%s`, the earliest stage seen: bind_request was not) |\n",
			view->origin_name);
	else
		fputs(" (no stage was seen: when bindtrace noticed the bind) |\n", out);
	fprintf(out, "| Bind | #%" PRIu64 " of this bindtrace run |\n\n", t->seq);
	if (svg_href) {
		fputs("![Waterfall of the bind's legs](<", out);
		fprint_md(out, svg_href);
		fputs(">)\n\n", out);
	}
}

/* A give-up's path (unschedulable, scheduler error): the scheduler's status PATCH instead of a
 * Binding. */
static void md_unschedulable(FILE *out, const struct bind_timeline *t)
{
	const struct stage *st = &t->stages[STAGE_BIND_REQUEST];

	if (t->result == BIND_RESULT_UNSCHEDULABLE)
		fputs("The pod fits no node: the scheduler posted no Binding. It ", out);
	else if (t->failed_bind_seq)
		fprintf(out,
			"The scheduler's bind failed (%d, timeline %" PRIu64 "): it gave up this "
			"attempt and will retry the pod. It ",
			t->failed_bind_code, t->failed_bind_seq);
	else
		fputs("The scheduling attempt failed with an error: the scheduler posted no "
		      "Binding this time and will retry the pod. It ",
		      out);
	if (st->seen) {
		fputs("recorded the failure itself — ", out);
		md_who(out, &st->who);
		fputs(" sent `PATCH pods/", out);
		fprint_md(out, t->name);
		fputs("/status` with condition PodScheduled=False", out);
	} else {
		fputs("recorded PodScheduled=False", out);
	}
	if (t->status_reason[0]) {
		fputs(" (", out);
		fprint_md(out, t->status_reason);
		fputc(')', out);
	}
	if (t->status_message[0]) {
		fputs(": ", out);
		fprint_md(out, t->status_message);
	}
	fputs(".\n\n", out);
}

/* One leg of the path: its time and ends, or which end is missing and why. */
static void md_leg(FILE *out, const struct bind_view *view, const struct bind_leg *l, int step)
{
	uint64_t t0 = view->origin_ns;

	fprintf(out, "%d. ", step);
	md_leg_heading(out, view->t, l);
	fprintf(out, "`%s`", leg__name(l->leg));
	if (l->seen) {
		fprintf(out, ": **%.3f ms** — ", ms_between(l->start_ns, l->end_ns));
		md_arrows(out, leg__description(l->leg));
		if (l->end_ns < l->start_ns)
			fprintf(out, "; negative: `%s` came first", l->to_name);
		if (l->leg == LEG_WAL_FSYNC)
			fprintf(out, " (from %+.3f to %+.3f ms)", ms_between(t0, l->start_ns),
				ms_between(t0, l->end_ns));
		else
			fprintf(out, " (`%s` at %+.3f ms → `%s` at %+.3f ms)", l->from_name,
				ms_between(t0, l->start_ns), l->to_name, ms_between(t0, l->end_ns));
	} else {
		fprintf(out, ": not measured — `%s` is missing (", bind_leg__missing_end_name(l));
		fprint_md(out, stage__missing_reason(bind_leg__missing_end(l)));
		fputs("); ", out);
		md_arrows(out, leg__description(l->leg));
	}
	fputs(".\n", out);
}

/* The path, leg by leg (the total, the view's first leg, closes it). */
static void md_path(FILE *out, const struct bind_view *view)
{
	const struct bind_leg *total = view->n_legs ? &view->legs[0] : NULL;
	int i;

	fputs("## Path: scheduler → apiserver → etcd → watchers\n\n", out);
	if (bind_result__gave_up(view->t->result))
		md_unschedulable(out, view->t);
	for (i = 1; i < view->n_legs; i++)
		md_leg(out, view, &view->legs[i], i);
	if (total && total->seen)
		fprintf(out,
			"\nIn all, **%.3f ms** from the scheduler's first byte of the POST to "
			"its reading the last byte of the answer.\n",
			ms_between(total->start_ns, total->end_ns));
	fputs("\n", out);
}

/* Every stage, the watchers' included. */
static void md_stages(FILE *out, const struct bind_view *view)
{
	const struct bind_timeline *t = view->t;
	uint64_t t0 = view->origin_ns;
	int s, w;

	fputs("## Stages\n\n| Stage | +ms | Process | Detail |\n|---|---:|---|---|\n", out);
	for (s = 0; s < STAGE_MAX; s++) {
		const struct stage *st = &t->stages[s];

		if (bind_result__gave_up(t->result) && s != STAGE_BIND_REQUEST)
			continue;
		fprintf(out, "| `%s` | ", stage__name((enum stage_id)s));
		if (!st->seen) {
			fputs("— | — | missing: ", out);
			fprint_md(out, stage__missing_reason(st));
			fputs(" |\n", out);
			continue;
		}
		fprintf(out, "%+.3f | ", ms_between(t0, st->mono_ns));
		md_who(out, &st->who);
		fputs(" | ", out);
		md_stage_detail(out, t, s);
		fputs(" |\n", out);
	}
	for (w = 0; w < t->n_watchers; w++) {
		const struct watcher *wa = &t->watchers[w];
		char wn[96];

		watcher__name(wn, sizeof(wn), wa);
		if (wa->sent.seen) {
			fprintf(out, "| `watch_event_sent` | %+.3f | ",
				ms_between(t0, wa->sent.mono_ns));
			md_who(out, &wa->sent.who);
			fputs(" | to ", out);
		} else {
			fputs("| `watch_event_sent` | — | — | missing for ", out);
		}
		fprint_md(out, wn);
		fputs(" |\n", out);
		if (wa->received.seen) {
			fprintf(out, "| `watch_event_received` | %+.3f | ",
				ms_between(t0, wa->received.mono_ns));
			md_who(out, &wa->received.who);
			fputs(" | ", out);
			fprint_md(out, wn);
			fputs(" |\n", out);
		}
	}
	fputs("\n", out);
}

/* One line of the chain: "- `file:line` `func`" linked at the commit. */
static void md_chain_frame(FILE *out, const struct citation *ci, const char *label, int i)
{
	const struct frame_line *f = &ci->frames[i];

	fprintf(out, "- %s`", label);
	fprint_md(out, f->file);
	fprintf(out, ":%d` `", f->line);
	fprint_md(out, citation__short_func(f->func));
	fputc('`', out);
	md_source_link(out, f->file, f->line, ci->commit[0] ? ci->commit : ci->kubernetes_version);
	fputc('\n', out);
}

/* The cited frame's caller in the binding cycle, then the chain down to the POST. */
static void md_citation_chain(FILE *out, const struct citation *ci)
{
	int i;

	fputs(ci->giveup
		  ? "The failure handler and the path from it to the status PATCH, each line "
		    "calling the next:\n\n"
		  : "The bind step and the path from it to the POST, each line calling the "
		    "next:\n\n",
	      out);
	if (ci->caller > 0)
		md_chain_frame(out, ci, "called from ", ci->caller);
	md_chain_frame(out, ci, ci->giveup ? "**gave up at** " : "**issued at** ", ci->cited);
	for (i = ci->cited - 1; i >= 0; i--) {
		if (ci->queued_at && i == ci->queued_at - 1)
			fprintf(
			    out,
			    "- *queued*: goroutine 0x%" PRIx64 " (thread %d) queued the Binding; "
			    "dispatcher goroutine 0x%" PRIx64 " (thread %d) sent it %.3f ms later, "
			    "from:\n",
			    ci->queue_goroutine, ci->queue_tid, ci->goroutine, ci->tid,
			    (double)(int64_t)(ci->mono_ns - ci->queue_ns) / 1e6);
		if (citation__frame_shown(ci, i))
			md_chain_frame(out, ci,
				       i		      ? ""
				       : ci->patch_dispatched ? "queued at: "
				       : ci->giveup	      ? "PATCH via: "
							      : "POST: ",
				       i);
	}
	if (ci->patch_dispatched)
		fputs("- *PATCH*: sent by a dispatcher goroutine; updatePod queued it with the API "
		      "cache (SchedulerAsyncAPICalls)\n",
		      out);
	fputc('\n', out);
}

/* Where the bind was issued. */
static void md_citation(FILE *out, const struct citation *ci)
{
	int i;

	fputs(ci->giveup ? "## Where the scheduler gave up\n\n"
			 : "## Where the bind was issued\n\n",
	      out);
	if (ci->known && ci->cited >= 0 && ci->cited < ci->n_frames) {
		const struct frame_line *f = &ci->frames[ci->cited];

		fputs("`", out);
		fprint_md(out, f->file);
		fprintf(out, ":%d` in `", f->line);
		fprint_md(out, f->func);
		fputs("`", out);
		if (ci->kubernetes_version[0]) {
			fputs(", **k8s.io/kubernetes ", out);
			fprint_md(out, ci->kubernetes_version);
			fputs("**", out);
		}
		if (ci->go_version[0]) {
			fputs(" (", out);
			fprint_md(out, ci->go_version);
			fputc(')', out);
		}
		md_source_link(out, f->file, f->line,
			       ci->commit[0] ? ci->commit : ci->kubernetes_version);
		fputs(".\n\n", out);
		md_citation_chain(out, ci);
		fprintf(out, "The scheduler's thread %d entered `", ci->tid);
		fprint_md(out, ci->probe);
		fputs(
		    "`; its stack, symbolised through the binary's pclntab (→ the cited frame):\n\n"
		    "```\n",
		    out);
		for (i = 0; i < ci->n_frames; i++) {
			const struct frame_line *fr = &ci->frames[i];

			fprintf(out, "%s #%-2d %s", i == ci->cited ? "→" : " ", i, fr->func);
			if (fr->file[0])
				fprintf(out, "\n        %s:%d", fr->file, fr->line);
			fputc('\n', out);
		}
		fputs("```\n\n", out);
	} else if (ci->known) {
		fputs("The scheduler's bind call was seen, but no frame outside client-go could be "
		      "symbolised.\n\n",
		      out);
	} else {
		fputs(
		    "Not known: the scheduler's bind call was not observed (no call probe in this "
		    "scheduler, or the bind began before bindtrace attached).\n\n",
		    out);
	}
}

/* A watcher's row: who, where, how, nodeName before and after, when sent and read. */
static void md_watcher_row(FILE *out, const struct bind_view *view, const struct watcher *wa)
{
	char wn[96];

	watcher__name(wn, sizeof(wn), wa);
	fputs("| ", out);
	fprint_md(out, wa->user_agent[0] ? wa->user_agent : wn);
	fputs(" | ", out);
	if (wa->sent.who.peer_pid) {
		fprint_md(out, wa->sent.who.peer_comm[0] ? wa->sent.who.peer_comm : "?");
		fprintf(out, " (pid %d)", wa->sent.who.peer_pid);
	} else {
		fputs("—", out);
	}
	fputs(" | ", out);
	fprint_md(out, endpoint__str(&wa->sent.who.remote).s);
	fputs(" | ", out);
	fprint_md(out, wa->encoding);
	fputs(" | ", out);
	fprint_md(out, wa->event_type);
	fputs(" | \"", out);
	fprint_md(out, wa->before_known ? wa->node_before : "?");
	fputs("\" → \"", out);
	fprint_md(out, wa->node_after);
	fputs("\" | ", out);
	if (wa->sent.seen)
		fprintf(out, "%+.3f", ms_between(view->origin_ns, wa->sent.mono_ns));
	else
		fputs("—", out);
	fputs(" | ", out);
	if (wa->received.seen) {
		fprintf(out, "%+.3f", ms_between(view->origin_ns, wa->received.mono_ns));
	} else {
		fputs("— (", out);
		fprint_md(out, wa->received.missing[0] ? wa->received.missing : "not traced");
		fputc(')', out);
	}
	fputs(" |\n", out);
}

/* What the watchers saw. */
static void md_watchers(FILE *out, const struct bind_view *view)
{
	const struct bind_timeline *t = view->t;
	int w;

	fputs("## What the watchers saw\n\n", out);
	if (!t->n_watchers) {
		fputs("No watch event carrying this bind was seen.\n\n", out);
		return;
	}
	fputs("| Watcher | Process | Address | Encoding | Event | nodeName | Sent (+ms) | "
	      "Received (+ms) |\n|---|---|---|---|---|---|---:|---:|\n",
	      out);
	for (w = 0; w < t->n_watchers; w++)
		md_watcher_row(out, view, &t->watchers[w]);
	if (t->watchers_dropped)
		fprintf(out, "\n%d more watchers were sent the event (not listed).\n",
			t->watchers_dropped);
	fputs("\nEvery frame each watcher was sent about the pod, from its ADDED to the MODIFIED "
	      "that set nodeName:\n\n",
	      out);
	for (w = 0; w < t->n_watchers; w++) {
		char wn[96], check[WATCHER_CHECK_MAX];

		watcher__name(wn, sizeof(wn), &t->watchers[w]);
		watcher__frames_check(check, sizeof(check), &t->watchers[w]);
		fputs("- ", out);
		fprint_md(out, wn);
		fprintf(out, " (%s): ", endpoint__str(&t->watchers[w].sent.who.remote).s);
		fprint_md(out, check);
		fputs("\n", out);
	}
	fputs("\n", out);
}

/* What is missing, and what may have hidden something. */
static void md_missing(FILE *out, const struct bind_view *view)
{
	const struct bind_timeline *t = view->t;
	uint64_t t0 = view->origin_ns;
	int i, s, missing = 0;

	fputs("## Missing stages\n\n", out);
	for (s = 0; s < STAGE_MAX; s++) {
		const struct stage *st = &t->stages[s];

		if (st->seen ||
		    (bind_result__gave_up(t->result) && s != STAGE_BIND_REQUEST &&
		     !stage__before_bind(s)) ||
		    (stage__before_bind(s) && t->created_before_attach))
			continue;
		fprintf(out, "- `%s`: ", stage__name((enum stage_id)s));
		fprint_md(out, stage__missing_reason(st));
		fputc('\n', out);
		missing++;
	}
	if (!missing)
		fputs("None: every required stage was observed.\n", out);
	if (t->created_before_attach) {
		fputs("- The pod's create (`create_request`, `create_txn_response`, "
		      "`scheduler_informed`): ",
		      out);
		fprint_md(out, stage__missing_reason(&t->stages[STAGE_CREATE_REQUEST]));
		fputs(".\n", out);
	}
	if (t->gap)
		fputs("- A capture gap on one of this bind's connections may have hidden "
		      "something.\n",
		      out);
	if (t->drops)
		fputs("- The ring buffer dropped events while this bind was open.\n", out);
	if (t->started_midway)
		fputs("- The bind began before bindtrace attached.\n", out);
	if (t->n_txns > 1) {
		fprintf(out, "\netcd Txn attempts: %d (the compare failed %d times):\n\n",
			t->n_txns, t->n_txns - 1);
		for (i = 0; i < t->n_txns; i++)
			fprintf(out,
				"- at +%.3f ms, If(mod_revision == %" PRId64
				"): %s, revision %" PRId64 "\n",
				ms_between(t0, t->txns[i].sent_ns), t->txns[i].compare_revision,
				!t->txns[i].responded  ? "no answer seen"
				: t->txns[i].succeeded ? "succeeded"
						       : "compare failed",
				t->txns[i].revision);
	}
	fputs("\n", out);
}

/* The processes, from the registry of identities. */
static void md_processes(FILE *out, const struct identities *ids)
{
	int i;

	fputs("## Processes\n\n", out);
	if (!identities__count(ids)) {
		fputs("Not recorded.\n\n", out);
	} else {
		fputs("| Role | PID | Binary | Version | Go | Build ID | SHA-256 |\n"
		      "|---|---:|---|---|---|---|---|\n",
		      out);
		for (i = 0; i < identities__count(ids); i++) {
			const struct process_identity *p = identities__at(ids, i);

			fputs("| ", out);
			fprint_md(out, p->role);
			fprintf(out, " | %d | `", p->pid);
			fprint_md(out, p->exe);
			fputs("` | ", out);
			fprint_md(out, p->module_version[0] ? p->module_version : "—");
			fputs(" | ", out);
			fprint_md(out, p->go_version[0] ? p->go_version : "—");
			fputs(" | `", out);
			fprint_md(out, p->go_build_id[0]    ? p->go_build_id
				       : p->gnu_build_id[0] ? p->gnu_build_id
							    : "none");
			fputs("` | `", out);
			fprint_md(out, p->sha256[0] ? p->sha256 : "not read");
			fputs("` |\n", out);
		}
		fputs("\n", out);
	}
}

/* How to check the numbers, and what the offsets are measured from. */
static void md_how_to_check(FILE *out, const struct bind_view *view)
{
	fputs("## How to check\n\n"
	      "Times are kernel CLOCK_MONOTONIC stamps taken by bindtrace's probes: a sender's "
	      "stage is when the first byte of its message was handed to crypto/tls (or "
	      "write(2)), a receiver's when the last byte came out of crypto/tls (or read(2)); ",
	      out);
	if (view->origin_stage == &view->t->stages[STAGE_BIND_REQUEST])
		fputs("offsets are from `bind_request`. ", out);
	else if (view->origin_stage)
		fprintf(out,
			"offsets are from `%s`, the earliest stage seen (`bind_request` was not). ",
			view->origin_name);
	else
		fputs("no stage was seen; offsets are from when bindtrace noticed the bind. ", out);
	fputs("Run bindtrace with `--evidence DIR` to keep, per bind, the decoded messages, the "
	      "kernel events and the binaries' identities behind each number (DIR/README.md says "
	      "how to check each one), and with `--json` for the raw timeline.\n",
	      out);
}

/* ---- The exercise: the seam, argued from this bind's own evidence ---- */

/* The watcher that is the scheduler's informer (its end read by kube-scheduler, or the peer of its
 * connection is), NULL when none was seen. */
static const struct watcher *scheduler_watcher(const struct bind_timeline *t)
{
	int w;

	for (w = 0; w < t->n_watchers; w++) {
		const struct watcher *wa = &t->watchers[w];

		if ((wa->received.seen && wa->received.who.role == ROLE_SCHEDULER) ||
		    !strcmp(wa->sent.who.peer_comm, "kube-scheduler"))
			return wa;
	}
	return NULL;
}

static void md_offset(FILE *out, const struct bind_view *view, uint64_t mono_ns)
{
	fprintf(out, "%+.3f ms", ms_between(view->origin_ns, mono_ns));
}

static void md_not_observed(FILE *out, const char *what)
{
	fputs("*Not observed*: ", out);
	fputs(what, out);
	fputs("\n", out);
}

/* A frame of the citation as "`file:line` `func`" with its link. */
static void md_cited_frame(FILE *out, const struct citation *ci, int i)
{
	const struct frame_line *f = &ci->frames[i];

	fputc('`', out);
	fprint_md(out, f->file);
	fprintf(out, ":%d` `", f->line);
	fprint_md(out, citation__short_func(f->func));
	fputc('`', out);
	md_source_link(out, f->file, f->line, ci->commit[0] ? ci->commit : ci->kubernetes_version);
}

/* watch cache -> scheduler informer -> schedule_one.go -> Binding, each step as observed. */
static void md_exercise_path(FILE *out, const struct bind_view *view)
{
	const struct bind_timeline *t = view->t;
	const struct citation *ci = &t->citation;
	const struct watcher *sw = scheduler_watcher(t);
	const struct stage *inf = &t->stages[STAGE_SCHEDULER_INFORMED];
	const struct stage *req = &t->stages[STAGE_BIND_REQUEST];
	bool cited = ci->known && ci->cited >= 0 && ci->cited < ci->n_frames && !ci->giveup;

	fputs("### The sub-path: watch cache → scheduler informer → schedule_one.go → Binding\n\n",
	      out);
	fputs("1. **watch cache** (kube-apiserver): ", out);
	if (sw && sw->frames_start == FRAMES_FROM_ADDED && sw->n_frames) {
		fprintf(out,
			"sent the pod's ADDED (resourceVersion %" PRId64
			", nodeName \"%s\") on the scheduler's watch (stream %u) at ",
			sw->frames[0].revision, sw->frames[0].node, sw->sent.stream_id);
		md_offset(out, view, sw->frames[0].sent_ns);
		fputs(
		    ". No stack is taken in the apiserver: this step is observed on the wire, not "
		    "cited.\n",
		    out);
	} else {
		md_not_observed(out, "the ADDED sent on the scheduler's watch (the pod was created "
				     "before bindtrace attached, or the scheduler's watch was not "
				     "seen).");
	}
	fputs("2. **scheduler informer** (kube-scheduler): ", out);
	if (inf->seen) {
		fputs("read the ADDED (`scheduler_informed`) at ", out);
		md_offset(out, view, inf->mono_ns);
		fputs(". Observed on the wire, not cited (no probe in the informer).\n", out);
	} else {
		md_not_observed(out, stage__missing_reason(inf));
	}
	fputs("3. **schedule_one.go**: ", out);
	if (cited) {
		md_cited_frame(out, ci, ci->cited);
		if (ci->caller > 0) {
			fputs(", called from ", out);
			md_cited_frame(out, ci, ci->caller);
		}
		fputs(", at ", out);
		fprint_md(out,
			  ci->kubernetes_version[0] ? ci->kubernetes_version : "(release unknown)");
		if (ci->commit[0]) {
			fputs(" commit `", out);
			fprint_md(out, ci->commit);
			fputc('`', out);
		}
		fprintf(out, ", on the stack kube-scheduler thread %d had when it entered `",
			ci->tid);
		fprint_md(out, ci->probe);
		fputs("`.\n", out);
	} else {
		md_not_observed(out,
				"the scheduler's bind call (no stack: its probe is missing, or "
				"the bind began before bindtrace attached).");
	}
	fputs("4. **Binding**: ", out);
	if (req->seen) {
		fputs("kube-scheduler POSTed `pods/", out);
		fprint_md(out, t->name);
		fputs("/binding`", out);
		if (t->node[0]) {
			fputs(" (target `", out);
			fprint_md(out, t->node);
			fputs("`)", out);
		}
		fputs(" at ", out);
		md_offset(out, view, req->mono_ns);
		if (cited && citation__frame_shown(ci, 0)) {
			fputs(" from ", out);
			md_cited_frame(out, ci, 0);
		}
		if (t->status_code)
			fprintf(out, "; the apiserver answered %d", t->status_code);
		fputs(".\n", out);
	} else {
		md_not_observed(out, stage__missing_reason(req));
	}
	fputc('\n', out);
}

/* nodeName before and after: etcd's prev_kv, and each watcher's frames. */
static void md_exercise_nodename(FILE *out, const struct bind_view *view)
{
	const struct bind_timeline *t = view->t;
	int w;

	fputs("### nodeName before and after\n\n- **etcd** (the watch event's prev_kv at revision ",
	      out);
	fprintf(out, "%" PRId64 "): ", t->revision);
	if (t->node_before_known && t->stages[STAGE_ETCD_WATCH_EVENT].seen) {
		fputs("\"", out);
		fprint_md(out, t->node_before);
		fputs("\" → \"", out);
		fprint_md(out, t->node);
		fputs("\"\n", out);
	} else {
		md_not_observed(out, "etcd's watch event of the write with its previous value.");
	}
	for (w = 0; w < t->n_watchers; w++) {
		char wn[96], check[WATCHER_CHECK_MAX];

		watcher__name(wn, sizeof(wn), &t->watchers[w]);
		watcher__frames_check(check, sizeof(check), &t->watchers[w]);
		fputs("- **", out);
		fprint_md(out, wn);
		fprintf(out, "** (%s): ", endpoint__str(&t->watchers[w].sent.who.remote).s);
		fprint_md(out, check);
		fputc('\n', out);
	}
	if (!t->n_watchers)
		md_not_observed(out, "a watcher sent the bind's MODIFIED.");
	fputc('\n', out);
}

/* Why the bind is a write of its own through the apiserver, each reason from what was seen. */
static void md_exercise_why(FILE *out, const struct bind_view *view)
{
	const struct bind_timeline *t = view->t;
	const struct stage *sent = &t->stages[STAGE_ETCD_TXN_SENT];
	const struct stage *got = &t->stages[STAGE_ETCD_TXN_RECEIVED];
	const struct stage *req = &t->stages[STAGE_BIND_REQUEST];
	const struct stage *resp = &t->stages[STAGE_BIND_RESPONSE_RECEIVED];
	const struct watcher *sw = scheduler_watcher(t);
	const struct txn_attempt *last = t->n_txns ? &t->txns[t->n_txns - 1] : NULL;

	fputs("### Why the bind is a separate write (a Binding), not an update of the scheduler's "
	      "copy\n\n",
	      out);
	fputs("1. **The Binding names the pod's UID.** ", out);
	if (t->uid[0]) {
		fputs("The Binding kube-scheduler sent carries `metadata.uid` `", out);
		fprint_md(out, t->uid);
		fprintf(out,
			"` (read from its body); the apiserver binds only the stored pod of that "
			"UID (a pod deleted and re-created under the same name is refused, "
			"409), and answered %d here.\n",
			t->status_code);
	} else {
		md_not_observed(out, "the Binding's body (its UID).");
	}
	fputs("2. **The apiserver's Txn compares the pod's mod_revision.** ", out);
	if (last && sent->seen) {
		fprintf(out,
			"Its Txn on `/registry/pods/%s/%s` compared `mod_revision == %" PRId64
			"` and %s",
			t->namespace_, t->name, last->compare_revision,
			last->responded ? (last->succeeded ? "succeeded" : "failed")
					: "was not seen answered");
		if (last->succeeded)
			fprintf(out, ", writing revision %" PRId64, last->revision);
		if (t->create_revision && last->compare_revision == t->create_revision)
			fprintf(out,
				" (%" PRId64 " is the pod's create revision: nothing had "
				"written it since)",
				t->create_revision);
		fputs(". etcd applies the put only if the stored pod is still at that revision, so "
		      "a stale cached copy cannot overwrite a newer pod",
		      out);
		if (t->n_txns > 1)
			fprintf(out,
				"; here the compare failed %d times and the apiserver re-read "
				"and retried",
				t->n_txns - 1);
		fputs(".\n", out);
	} else {
		md_not_observed(out, "the apiserver's etcd Txn of the bind.");
	}
	fputs("3. **The apiserver, not the scheduler, writes `/registry`.** ", out);
	if (sent->seen && sent->who.role == ROLE_APISERVER) {
		fputs("The Txn was sent by ", out);
		md_who(out, &sent->who);
		fputs(" to ", out);
		fprint_md(out, endpoint__str(&sent->who.remote).s);
		if (got->seen) {
			fputs(" and read by ", out);
			md_who(out, &got->who);
		}
		fputs("; kube-scheduler sent only the Binding", out);
		if (req->seen) {
			fputs(", to the apiserver at ", out);
			fprint_md(out, endpoint__str(&req->who.remote).s);
		}
		fputs(".\n", out);
	} else {
		md_not_observed(out, "who sent the write to etcd.");
	}
	fputs("4. **The scheduler's copy was only assumed until the watch event.** ", out);
	if (req->seen && sw && sw->received.seen) {
		fputs("kube-scheduler POSTed the Binding at ", out);
		md_offset(out, view, req->mono_ns);
		if (resp->seen) {
			fprintf(out, ", read the apiserver's %d at ", t->status_code);
			md_offset(out, view, resp->mono_ns);
		}
		fputs(", and its informer read the MODIFIED carrying nodeName \"", out);
		fprint_md(out, sw->node_after);
		fprintf(out, "\" (revision %" PRId64 ") at ", t->revision);
		md_offset(out, view, sw->received.mono_ns);
		fputs(". The scheduler never wrote the pod itself: until that event its node was "
		      "only the assumption in the scheduler's cache (made before the binding cycle "
		      "POSTed), and the informer's copy changed by the watch event alone.\n",
		      out);
	} else {
		md_not_observed(out, "the Binding's POST and the scheduler's informer reading the "
				     "MODIFIED.");
	}
	fputc('\n', out);
}

/* The course exercise, answered from this bind (a bound pod's). */
static void md_exercise(FILE *out, const struct bind_view *view)
{
	if (bind_result__gave_up(view->t->result))
		return;
	fputs("## The exercise, from this bind's evidence\n\n"
	      "Each claim below is printed from what bindtrace observed of this bind; what it did "
	      "not observe says so.\n\n",
	      out);
	md_exercise_path(out, view);
	md_exercise_nodename(out, view);
	md_exercise_why(out, view);
}

int report__write_markdown(FILE *out, const struct bind_view *view, const char *svg_href,
			   const struct identities *ids)
{
	md_summary(out, view, svg_href);
	md_path(out, view);
	md_stages(out, view);
	md_citation(out, &view->t->citation);
	md_exercise(out, view);
	md_watchers(out, view);
	md_missing(out, view);
	md_processes(out, ids);
	md_how_to_check(out, view);
	return ferror(out) ? -EIO : 0;
}

/* ---- The output ---- */

struct report {
	char *path, *svg_path, *svg_href;
	char ns[BIND_NS_MAX], name[BIND_NAME_MAX];
	bool written;
	enum bind_result written_result;
};

struct report *report__open(const char *path, const char *ns, const char *name)
{
	struct report *r = calloc(1, sizeof(*r));
	const char *base;
	int err = -ENOMEM;

	if (!r)
		return NULL;
	r->path = strdup(path);
	if (!r->path || asprintf(&r->svg_path, "%s.svg", path) < 0) {
		r->svg_path = NULL;
		goto fail;
	}
	base = strrchr(r->svg_path, '/');
	r->svg_href = strdup(base ? base + 1 : r->svg_path);
	if (!r->svg_href)
		goto fail;
	util__copy(r->ns, sizeof(r->ns), ns);
	util__copy(r->name, sizeof(r->name), name);
	err = output_file__check_writable(r->path);
	if (err) {
		fprintf(stderr, "bindtrace: --report %s: %s\n", path, strerror(-err));
		goto fail;
	}
	err = output_file__check_writable(r->svg_path);
	if (err) {
		fprintf(stderr, "bindtrace: --report %s: %s: %s\n", path, r->svg_path,
			strerror(-err));
		goto fail;
	}
	return r;
fail:
	report__close(r);
	errno = -err;
	return NULL;
}

struct report_doc {
	struct report *r;
	const struct bind_view *view;
	const struct identities *ids;
};

static int write_svg(FILE *f, void *ctx)
{
	struct report_doc *d = ctx;

	return report__write_svg(f, d->view);
}

static int write_markdown(FILE *f, void *ctx)
{
	struct report_doc *d = ctx;

	return report__write_markdown(f, d->view, d->r->svg_href, d->ids);
}

int report__bind(struct report *r, const struct bind_view *view, const struct identities *ids)
{
	const struct bind_timeline *t = view->t;
	struct report_doc doc = { r, view, ids };
	int err;

	if (strcmp(t->namespace_, r->ns) || strcmp(t->name, r->name))
		return 0;
	/* A later failed attempt (a 409 after the bind, say) does not replace the bind. */
	if (r->written && r->written_result == BIND_RESULT_BOUND && t->result != BIND_RESULT_BOUND)
		return 0;
	err = output_file__replace(r->svg_path, write_svg, &doc);
	if (err) {
		fprintf(stderr, "bindtrace: --report %s: cannot write %s: %s\n", r->path,
			r->svg_path, strerror(-err));
		return err;
	}
	err = output_file__replace(r->path, write_markdown, &doc);
	if (err) {
		fprintf(stderr, "bindtrace: --report %s: cannot write it: %s\n", r->path,
			strerror(-err));
		return err;
	}
	r->written = true;
	r->written_result = t->result;
	return 0;
}

int report__finish(struct report *r)
{
	if (r->written)
		return 0;
	fprintf(stderr, "bindtrace: --report: no bind of %s/%s was seen\n", r->ns, r->name);
	return -ENOENT;
}

void report__close(struct report *r)
{
	if (!r)
		return;
	free(r->path);
	free(r->svg_path);
	free(r->svg_href);
	free(r);
}
