/* The report's SVG: a waterfall of the bind's legs drawn to scale, a row per leg (the total
 * first), coloured by the process where each leg ends (a gradient for one between two), with a
 * legend of what is shown. Written from the bind view, section by section. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

#define SVG_W 1040
#define SVG_LABEL_X 16
#define SVG_PLOT_X0 300
#define SVG_PLOT_X1 920
#define SVG_TOP 84
#define SVG_ROW_H 30

/* One drawing: the scale in ms from the bind's origin, and what the legend will list. */
struct svg {
	FILE *out;
	const struct bind_view *view;
	double lo, hi, step, scale; /* ms */
	int rows, height;
	bool used_roles[ROLE_WATCHER + 1];
	bool transit; /* a bar between two processes was drawn */
};

static double ms_between(uint64_t from, uint64_t to)
{
	return ns__ms((int64_t)(to - from));
}

static const char *role_color(enum process_role role)
{
	switch (role) {
	case ROLE_SCHEDULER:
		return "#4e79a7";
	case ROLE_APISERVER:
		return "#59a14f";
	case ROLE_ETCD:
		return "#f28e2b";
	case ROLE_WATCHER:
		return "#b07aa1";
	default:
		return "#9c755f";
	}
}

static void use_role(struct svg *s, enum process_role role)
{
	s->used_roles[role <= ROLE_WATCHER ? role : 0] = true;
}

static void fprint_xml(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&apos;", out);
			break;
		default:
			/* XML 1.0 allows no control characters but tab, LF, CR. */
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, out);
			else
				fputc('?', out);
		}
	}
}

static double nice_step(double span)
{
	double raw = span / 8, mag = pow(10, floor(log10(raw))), f = raw / mag;

	if (f <= 1)
		return mag;
	if (f <= 2)
		return 2 * mag;
	if (f <= 5)
		return 5 * mag;
	return 10 * mag;
}

/* The axis: from the earliest to the latest end of a leg seen, in round steps. */
static void svg_scale(struct svg *s)
{
	const struct bind_view *v = s->view;
	uint64_t t0 = v->origin_ns;
	double x;
	int i;

	for (i = 0; i < v->n_legs; i++) {
		if (!v->legs[i].seen)
			continue;
		x = ms_between(t0, v->legs[i].start_ns);
		s->lo = x < s->lo ? x : s->lo;
		x = ms_between(t0, v->legs[i].end_ns);
		s->hi = x > s->hi ? x : s->hi;
	}
	s->rows = v->n_legs ? v->n_legs : 1;
	if (!v->n_legs && v->t->stages[STAGE_BIND_REQUEST].seen)
		s->hi = ms_between(t0, v->t->stages[STAGE_BIND_REQUEST].last_ns);
	/* At least a millisecond across: a scale of microseconds reads as noise. */
	if (s->hi - s->lo < 1)
		s->hi = s->lo + 1;
	s->step = nice_step(s->hi - s->lo);
	s->lo = floor(s->lo / s->step) * s->step;
	s->hi = ceil(s->hi / s->step) * s->step;
	s->scale = (SVG_PLOT_X1 - SVG_PLOT_X0) / (s->hi - s->lo);
	s->height = SVG_TOP + s->rows * SVG_ROW_H + 84;
}

/* The document, a gradient for each pair of processes a leg is between, the background. */
static void svg_head(struct svg *s)
{
	const struct bind_view *v = s->view;
	int i;

	fprintf(
	    s->out,
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	    "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
	    SVG_W, s->height, SVG_W, s->height);
	fputs("<defs>\n", s->out);
	for (i = 0; i < v->n_legs; i++) {
		const struct bind_leg *l = &v->legs[i];

		if (l->seen && l->leg != LEG_TOTAL && l->from->who.role != l->to->who.role)
			fprintf(
			    s->out,
			    "<linearGradient id=\"g%d-%d\"><stop offset=\"0\" stop-color=\"%s\"/>"
			    "<stop offset=\"1\" stop-color=\"%s\"/></linearGradient>\n",
			    l->from->who.role, l->to->who.role, role_color(l->from->who.role),
			    role_color(l->to->who.role));
	}
	fputs("</defs>\n", s->out);
	fprintf(s->out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
		SVG_W, s->height);
}

/* Title: the pod, the result, the total. */
static void svg_title(struct svg *s)
{
	const struct bind_view *v = s->view;
	const struct bind_timeline *t = v->t;
	char title[768];

	snprintf(title, sizeof(title), "%s/%s%s%s \xc2\xb7 %s", t->namespace_, t->name,
		 t->node[0] ? " \xe2\x86\x92 " : "", t->node, bind_result__name(t->result));
	fprintf(s->out,
		"<text x=\"%d\" y=\"30\" font-size=\"18\" font-weight=\"bold\" fill=\"#222\">",
		SVG_LABEL_X);
	fprint_xml(s->out, title);
	if (t->status_code)
		fprintf(s->out, " (%d)", t->status_code);
	fputs("</text>\n", s->out);
	fprintf(s->out, "<text x=\"%d\" y=\"52\" font-size=\"12\" fill=\"#555\">", SVG_LABEL_X);
	if (v->n_legs && v->legs[0].seen)
		fprintf(s->out, "total %.3f ms (bind_request \xe2\x86\x92 bind_response_received)",
			ms_between(v->legs[0].start_ns, v->legs[0].end_ns));
	else if (t->result == BIND_RESULT_UNSCHEDULABLE)
		fputs("no Binding: PodScheduled=False (Unschedulable)", s->out);
	else if (t->result == BIND_RESULT_SCHEDULER_ERROR)
		fputs("no Binding: PodScheduled=False (SchedulerError), the scheduler retries",
		      s->out);
	else
		fputs("total not known: a stage at one end is missing", s->out);
	if (t->revision)
		fprintf(s->out, " \xc2\xb7 etcd revision %" PRId64, t->revision);
	if (t->missing)
		fprintf(s->out, " \xc2\xb7 %d stage%s missing", t->missing,
			t->missing > 1 ? "s" : "");
	fputs("</text>\n", s->out);
}

/* Row stripes, then the axis over them: grid lines and ms labels above the rows. */
static void svg_axis(struct svg *s)
{
	char num[32];
	double x;
	int r, decimals;

	for (r = 1; r < s->view->n_legs; r += 2)
		fprintf(s->out,
			"<rect x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f7f7f7\"/>\n",
			SVG_TOP + r * SVG_ROW_H, SVG_W, SVG_ROW_H);
	decimals = s->step >= 1 ? 0 : (int)ceil(-log10(s->step) - 1e-9);
	for (double v = s->lo; v <= s->hi + s->step / 2; v += s->step) {
		x = SVG_PLOT_X0 + (v - s->lo) * s->scale;
		snprintf(num, sizeof(num), "%.*f", decimals, fabs(v) < s->step / 1e6 ? 0.0 : v);
		fprintf(s->out,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#dcdcdc\"/>\n"
			"<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#666\" "
			"text-anchor=\"middle\">%s</text>\n",
			x, SVG_TOP - 6, x, SVG_TOP + s->rows * SVG_ROW_H, x, SVG_TOP - 12, num);
	}
	fprintf(s->out, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#666\">ms</text>\n",
		SVG_PLOT_X1 + 24, SVG_TOP - 12);
}

/* Unschedulable: one row, the status PATCH, drawn over its first to last chunk. */
static void svg_unschedulable_row(struct svg *s)
{
	const struct stage *st = &s->view->t->stages[STAGE_BIND_REQUEST];
	double x, w, span;
	int y = SVG_TOP;

	fprintf(s->out,
		"<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#222\">bind_request</text>\n",
		SVG_LABEL_X, y + 13);
	fprintf(s->out,
		"<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#777\">PATCH pods/status "
		"PodScheduled=False</text>\n",
		SVG_LABEL_X, y + 25);
	if (!st->seen)
		return;
	span = ms_between(st->first_ns, st->last_ns);
	x = SVG_PLOT_X0 + (ms_between(s->view->origin_ns, st->first_ns) - s->lo) * s->scale;
	w = span * s->scale;
	fprintf(s->out,
		"<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" rx=\"2\" "
		"fill=\"%s\"><title>bind_request: the PATCH, %.3f ms from first to "
		"last chunk</title></rect>\n",
		x, y + 6, w < 4 ? 4 : w, SVG_ROW_H - 12, role_color(st->who.role), span);
	fprintf(s->out,
		"<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#333\">%.3f ms"
		"</text>\n",
		x + (w < 4 ? 4 : w) + 6, y + 19, span);
	use_role(s, st->who.role);
}

/* The second line of a row's label: which processes the leg is between. */
static void svg_label(const struct bind_timeline *t, const struct bind_leg *l, char *sub,
		      size_t cap)
{
	char who[96];

	if (l->watcher >= 0) {
		const struct watcher *w = &t->watchers[l->watcher];

		watcher__name(who, sizeof(who), w);
		snprintf(sub, cap, "%s %s",
			 l->leg == LEG_WATCH_FANOUT ? "apiserver \xe2\x86\x92" : "\xe2\x86\x92",
			 who);
		if (w->sent.who.remote.family) {
			size_t n = strlen(sub);

			snprintf(sub + n, cap - n, " (%s)", endpoint__str(&w->sent.who.remote).s);
		}
	} else if (leg__from_role(l->leg) == leg__to_role(l->leg)) {
		snprintf(sub, cap, "in %s", process_role__name(leg__from_role(l->leg)));
	} else {
		leg__between(sub, cap, l->leg);
	}
}

/* The duration right of the bar, else left of it, else inside it (11 px text is about 6.5 px
 * a character); a negative leg, drawn from its later end, says which came first. */
static void svg_duration(struct svg *s, const struct bind_leg *l, double x0, double w, int y)
{
	double text_w;
	char note[96];

	if (l->end_ns < l->start_ns)
		snprintf(note, sizeof(note), "%.3f ms (%s first)",
			 ms_between(l->start_ns, l->end_ns), l->to_name);
	else
		snprintf(note, sizeof(note), "%.3f ms", ms_between(l->start_ns, l->end_ns));
	text_w = 6.5 * (double)strlen(note);
	if (x0 + w + 6 + text_w <= SVG_W - 4)
		fprintf(s->out,
			"<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#333\">%s</text>\n",
			x0 + w + 6, y + 19, note);
	else if (x0 - 6 - text_w >= SVG_PLOT_X0)
		fprintf(s->out,
			"<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#333\" "
			"text-anchor=\"end\">%s</text>\n",
			x0 - 6, y + 19, note);
	else
		fprintf(s->out,
			"<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#fff\" "
			"text-anchor=\"end\">%s</text>\n",
			x0 + w - 4, y + 19, note);
}

/* Row r: the leg's name and processes, then its bar, or why it is missing. */
static void svg_leg_row(struct svg *s, int r)
{
	const struct bind_leg *l = &s->view->legs[r];
	const struct actor *own = bind_leg__owner(l);
	int y = SVG_TOP + r * SVG_ROW_H;
	uint64_t t0 = s->view->origin_ns;
	double x0, x1, w;
	char sub[256];

	svg_label(s->view->t, l, sub, sizeof(sub));
	fprintf(s->out, "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#222\"%s>%s</text>\n",
		SVG_LABEL_X, y + 13, l->leg == LEG_TOTAL ? " font-weight=\"bold\"" : "",
		leg__name(l->leg));
	fprintf(s->out, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#777\">", SVG_LABEL_X,
		y + 25);
	fprint_xml(s->out, sub);
	fputs("</text>\n", s->out);
	if (!l->seen) {
		fprintf(s->out,
			"<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#b03030\" "
			"font-style=\"italic\">missing %s: ",
			SVG_PLOT_X0 + 4, y + 19, bind_leg__missing_end_name(l));
		fprint_xml(s->out, stage__missing_reason(bind_leg__missing_end(l)));
		fputs("</text>\n", s->out);
		return;
	}
	x0 = SVG_PLOT_X0 + (ms_between(t0, l->start_ns) - s->lo) * s->scale;
	x1 = SVG_PLOT_X0 + (ms_between(t0, l->end_ns) - s->lo) * s->scale;
	if (x1 < x0) {
		double swap = x0;

		x0 = x1;
		x1 = swap;
	}
	w = x1 - x0 < 2 ? 2 : x1 - x0;
	fprintf(s->out, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" rx=\"2\" ", x0,
		y + 6, w, SVG_ROW_H - 12);
	if (l->leg == LEG_TOTAL) {
		fputs("fill=\"#8a8a8a\"", s->out);
	} else if (l->from->who.role != l->to->who.role) {
		fprintf(s->out, "fill=\"url(#g%d-%d)\"", l->from->who.role, l->to->who.role);
		s->transit = true;
	} else {
		fprintf(s->out, "fill=\"%s\"", role_color(own->role));
	}
	fprintf(s->out, "><title>%s: %.3f ms (%s \xe2\x86\x92 %s)</title></rect>\n",
		leg__name(l->leg), ms_between(l->start_ns, l->end_ns), l->from_name, l->to_name);
	if (l->leg != LEG_TOTAL) {
		use_role(s, l->from->who.role);
		use_role(s, own->role);
	}
	svg_duration(s, l, x0, w, y);
}

/* Legend: process colours, and what a two-colour bar means. */
static void svg_legend(struct svg *s)
{
	int y = SVG_TOP + s->rows * SVG_ROW_H + 34, x = SVG_LABEL_X, role;

	for (role = ROLE_SCHEDULER; role <= ROLE_WATCHER; role++) {
		const char *name =
		    role == ROLE_WATCHER ? "watcher" : process_role__name((enum process_role)role);

		if (!s->used_roles[role])
			continue;
		fprintf(s->out,
			"<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" rx=\"2\" "
			"fill=\"%s\"/>\n<text x=\"%d\" y=\"%d\" font-size=\"12\" "
			"fill=\"#333\">%s</text>\n",
			x, y - 11, role_color((enum process_role)role), x + 20, y, name);
		x += 40 + 8 * (int)strlen(name);
	}
	if (s->transit) {
		fprintf(s->out,
			"<rect x=\"%d\" y=\"%d\" width=\"28\" height=\"14\" rx=\"2\" "
			"fill=\"url(#legend-transit)\"/>\n",
			x, y - 11);
		fprintf(s->out,
			"<defs><linearGradient id=\"legend-transit\"><stop offset=\"0\" "
			"stop-color=\"#4e79a7\"/><stop offset=\"1\" stop-color=\"#59a14f\"/>"
			"</linearGradient></defs>\n");
		fprintf(s->out,
			"<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#333\">between two "
			"processes (sender \xe2\x86\x92 receiver)</text>\n",
			x + 34, y);
	}
	fprintf(s->out,
		"<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#888\">kernel timestamps "
		"(CLOCK_MONOTONIC) of the first byte written and the last byte read, in ms "
		"from %s; bindtrace</text>\n",
		SVG_LABEL_X, y + 24,
		s->view->origin_stage ? s->view->origin_name : "when bindtrace noticed the bind");
}

int report__write_svg(FILE *out, const struct bind_view *view)
{
	struct svg s = { .out = out, .view = view };
	int r;

	svg_scale(&s);
	svg_head(&s);
	svg_title(&s);
	svg_axis(&s);
	if (!view->n_legs)
		svg_unschedulable_row(&s);
	for (r = 0; r < view->n_legs; r++)
		svg_leg_row(&s, r);
	svg_legend(&s);
	fputs("</svg>\n", out);
	return ferror(out) ? -EIO : 0;
}
