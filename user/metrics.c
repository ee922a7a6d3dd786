/* The metrics registry and the Prometheus text exposition. Families and series are small arrays
 * searched linearly: bindtrace has a few dozen series, updated a few times per bind. */
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct metric_series {
	char values[METRICS_MAX_LABELS][METRICS_VALUE_MAX];
	double value;		 /* counter, gauge */
	uint64_t *bucket_counts; /* histogram: per bucket, not cumulative; [n_buckets] is +Inf */
	uint64_t count;		 /* histogram */
	double sum;		 /* histogram */
};

struct metric_family {
	struct metrics *registry;
	const char *name;
	const char *help;
	enum metric_type type;
	const char *const *labels;
	int n_labels;
	double buckets[METRICS_MAX_BUCKETS];
	int n_buckets;
	struct metric_series *series[METRICS_MAX_SERIES];
	int n_series;
};

struct metrics {
	pthread_mutex_t lock;
	struct metric_family **families;
	int n_families;
	uint64_t refused;
};

struct metrics *metrics__new(void)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	return m;
}

static void series__free(struct metric_series *s)
{
	if (!s)
		return;
	free(s->bucket_counts);
	free(s);
}

void metrics__free(struct metrics *m)
{
	int i, k;

	if (!m)
		return;
	for (i = 0; i < m->n_families; i++) {
		for (k = 0; k < m->families[i]->n_series; k++)
			series__free(m->families[i]->series[k]);
		free(m->families[i]);
	}
	free(m->families);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* for metric names; labels the same without ':'. */
static bool valid_name(const char *s, bool colon)
{
	size_t i;

	if (!s || !*s)
		return false;
	for (i = 0; s[i]; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (colon && c == ':') || (i > 0 && c >= '0' && c <= '9');

		if (!ok)
			return false;
	}
	return true;
}

struct metric_family *metrics__family(struct metrics *m, const char *name, const char *help,
				      enum metric_type type, const char *const *labels,
				      const double *buckets, int n_buckets)
{
	struct metric_family *f, **more;
	int i;

	if (!valid_name(name, true) || !help || n_buckets < 0 || n_buckets > METRICS_MAX_BUCKETS ||
	    (type == METRIC_HISTOGRAM) != (n_buckets > 0)) {
		errno = EINVAL;
		return NULL;
	}
	for (i = 1; i < n_buckets; i++) {
		if (!(buckets[i] > buckets[i - 1])) {
			errno = EINVAL;
			return NULL;
		}
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->registry = m;
	f->name = name;
	f->help = help;
	f->type = type;
	f->labels = labels;
	for (i = 0; labels && labels[i]; i++) {
		/* "le" is the histogram's own label. */
		if (i >= METRICS_MAX_LABELS || !valid_name(labels[i], false) ||
		    !strcmp(labels[i], "le")) {
			free(f);
			errno = EINVAL;
			return NULL;
		}
	}
	f->n_labels = i;
	if (n_buckets)
		memcpy(f->buckets, buckets, sizeof(*buckets) * (size_t)n_buckets);
	f->n_buckets = n_buckets;

	pthread_mutex_lock(&m->lock);
	more = realloc(m->families, (size_t)(m->n_families + 1) * sizeof(*more));
	if (more) {
		m->families = more;
		m->families[m->n_families++] = f;
	}
	pthread_mutex_unlock(&m->lock);
	if (!more) {
		free(f);
		errno = ENOMEM;
		return NULL;
	}
	return f;
}

/* The series of these label values, created when absent. Called with the lock held. */
static struct metric_series *family__series(struct metric_family *f, const char *const *values)
{
	struct metric_series *s;
	char cut[METRICS_MAX_LABELS][METRICS_VALUE_MAX];
	int i, k;

	for (k = 0; k < f->n_labels; k++)
		util__copy(cut[k], sizeof(cut[k]), values && values[k] ? values[k] : "");
	for (i = 0; i < f->n_series; i++) {
		s = f->series[i];
		for (k = 0; k < f->n_labels && !strcmp(s->values[k], cut[k]); k++)
			;
		if (k == f->n_labels)
			return s;
	}
	if (f->n_series == METRICS_MAX_SERIES) {
		f->registry->refused++;
		errno = ENOSPC;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s && f->type == METRIC_HISTOGRAM) {
		s->bucket_counts = calloc((size_t)f->n_buckets + 1, sizeof(*s->bucket_counts));
		if (!s->bucket_counts) {
			free(s);
			s = NULL;
		}
	}
	if (!s) {
		f->registry->refused++;
		errno = ENOMEM;
		return NULL;
	}
	memcpy(s->values, cut, sizeof(cut));
	f->series[f->n_series++] = s;
	return s;
}

static int family__update(struct metric_family *f, const char *const *values, double v, char op)
{
	struct metric_series *s;
	int i, err = 0;

	if (!f || isnan(v))
		return -EINVAL;
	if ((op != 't' && (op == 'o') != (f->type == METRIC_HISTOGRAM)) ||
	    (op == 'a' && f->type == METRIC_COUNTER && v < 0))
		return -EINVAL;
	pthread_mutex_lock(&f->registry->lock);
	s = family__series(f, values);
	if (!s) {
		err = -errno;
	} else if (op == 'a') {
		s->value += v;
	} else if (op == 's') {
		s->value = v;
	} else if (op == 'o') {
		for (i = 0; i < f->n_buckets && v > f->buckets[i]; i++)
			;
		s->bucket_counts[i]++;
		s->count++;
		s->sum += v;
	}
	pthread_mutex_unlock(&f->registry->lock);
	return err;
}

int metric__add(struct metric_family *f, const char *const *values, double v)
{
	return family__update(f, values, v, 'a');
}

int metric__set(struct metric_family *f, const char *const *values, double v)
{
	return family__update(f, values, v, 's');
}

int metric__observe(struct metric_family *f, const char *const *values, double v)
{
	return family__update(f, values, v, 'o');
}

int metric__touch(struct metric_family *f, const char *const *values)
{
	return family__update(f, values, 0, 't');
}

void metric__reset(struct metric_family *f)
{
	int i;

	if (!f)
		return;
	pthread_mutex_lock(&f->registry->lock);
	for (i = 0; i < f->n_series; i++)
		series__free(f->series[i]);
	f->n_series = 0;
	pthread_mutex_unlock(&f->registry->lock);
}

uint64_t metrics__refused(struct metrics *m)
{
	uint64_t n;

	pthread_mutex_lock(&m->lock);
	n = m->refused;
	pthread_mutex_unlock(&m->lock);
	return n;
}

/* A sample value as Prometheus reads it: integers without a fraction, others with enough
 * digits to round-trip. */
static void put_number(FILE *out, double v)
{
	if (isinf(v))
		fputs(v > 0 ? "+Inf" : "-Inf", out);
	else if (v == (double)(int64_t)v && fabs(v) < 9e15)
		fprintf(out, "%lld", (long long)v);
	else
		fprintf(out, "%.17g", v);
}

/* A bucket bound in plain decimal ("0.00005", "2.5", "10"): what people grep for. */
static void put_bound(FILE *out, double v)
{
	char buf[64];
	size_t n;

	snprintf(buf, sizeof(buf), "%.9f", v);
	n = strlen(buf);
	while (n > 1 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 1 && buf[n - 1] == '.')
		buf[--n] = '\0';
	fputs(buf, out);
}

/* HELP text escapes \ and newline; label values also ". */
static void put_escaped(FILE *out, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else if (quote && *s == '"')
			fputs("\\\"", out);
		else
			fputc(*s, out);
	}
}

/* NAME{labels...[,le="BOUND"]} */
static void put_series_name(FILE *out, const struct metric_family *f, const char *suffix,
			    const struct metric_series *s, const double *le, bool le_inf)
{
	int k;
	bool any = f->n_labels > 0 || le || le_inf;

	fprintf(out, "%s%s", f->name, suffix);
	if (!any)
		return;
	fputc('{', out);
	for (k = 0; k < f->n_labels; k++) {
		fprintf(out, "%s%s=\"", k ? "," : "", f->labels[k]);
		put_escaped(out, s->values[k], true);
		fputc('"', out);
	}
	if (le || le_inf) {
		fprintf(out, "%sle=\"", f->n_labels ? "," : "");
		if (le_inf)
			fputs("+Inf", out);
		else
			put_bound(out, *le);
		fputc('"', out);
	}
	fputc('}', out);
}

static void family__render(FILE *out, const struct metric_family *f)
{
	static const char *const type_names[] = { "counter", "gauge", "histogram" };
	int i, b;

	fprintf(out, "# HELP %s ", f->name);
	put_escaped(out, f->help, false);
	fprintf(out, "\n# TYPE %s %s\n", f->name, type_names[f->type]);
	for (i = 0; i < f->n_series; i++) {
		const struct metric_series *s = f->series[i];
		uint64_t cumulative = 0;

		if (f->type != METRIC_HISTOGRAM) {
			put_series_name(out, f, "", s, NULL, false);
			fputc(' ', out);
			put_number(out, s->value);
			fputc('\n', out);
			continue;
		}
		for (b = 0; b <= f->n_buckets; b++) {
			cumulative += s->bucket_counts[b];
			put_series_name(out, f, "_bucket", s,
					b < f->n_buckets ? &f->buckets[b] : NULL,
					b == f->n_buckets);
			fprintf(out, " %llu\n", (unsigned long long)cumulative);
		}
		put_series_name(out, f, "_sum", s, NULL, false);
		fputc(' ', out);
		put_number(out, s->sum);
		fputc('\n', out);
		put_series_name(out, f, "_count", s, NULL, false);
		fprintf(out, " %llu\n", (unsigned long long)s->count);
	}
}

char *metrics__render(struct metrics *m, size_t *len)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out;
	int i;

	out = open_memstream(&text, &size);
	if (!out)
		return NULL;
	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->n_families; i++)
		family__render(out, m->families[i]);
	pthread_mutex_unlock(&m->lock);
	if (fclose(out) || !text) {
		free(text);
		errno = ENOMEM;
		return NULL;
	}
	*len = size;
	return text;
}
