#include <stdio.h>
#include <sys/resource.h>

#include "gcb_report.h"

static void key(gcb_json *j, const char *k)
{
	fprintf(j->out, "%s\"%s\":", j->first ? "" : ",", k);
	j->first = false;
}

void gcb_json_begin(gcb_json *j, FILE *out)
{
	j->out = out;
	j->first = true;
	fputc('{', out);
}

void gcb_json_u64(gcb_json *j, const char *k, uint64_t v)
{
	key(j, k);
	fprintf(j->out, "%llu", (unsigned long long)v);
}

void gcb_json_f64(gcb_json *j, const char *k, double v)
{
	key(j, k);
	fprintf(j->out, "%.6g", v); /* settings, not measurements: six digits */
}

void gcb_json_bool(gcb_json *j, const char *k, bool v)
{
	key(j, k);
	fputs(v ? "true" : "false", j->out);
}

void gcb_json_str(gcb_json *j, const char *k, const char *v)
{
	key(j, k);
	fputc('"', j->out);
	for (const unsigned char *s = (const unsigned char *)v; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(j->out, "\\%c", *s);
		else if (*s < 0x20)
			fprintf(j->out, "\\u%04x", *s);
		else
			fputc(*s, j->out);
	}
	fputc('"', j->out);
}

void gcb_json_raw(gcb_json *j, const char *k, const char *v)
{
	key(j, k);
	fputs(v, j->out);
}

void gcb_json_obj_begin(gcb_json *j, const char *k)
{
	key(j, k);
	fputc('{', j->out);
	j->first = true;
}

void gcb_json_obj_end(gcb_json *j)
{
	fputc('}', j->out);
	j->first = false;
}

void gcb_json_end(gcb_json *j)
{
	fputs("}\n", j->out);
	fflush(j->out);
}

static uint64_t tv_ns(struct timeval tv)
{
	return (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull;
}

void gcb_proc_usage(gcb_usage *u)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	u->user_ns = tv_ns(ru.ru_utime);
	u->sys_ns = tv_ns(ru.ru_stime);
	u->peak_rss_kib = (uint64_t)ru.ru_maxrss; /* Linux reports KiB */
	u->minor_faults = (uint64_t)ru.ru_minflt;
}

static bool result_ok_quiet(const gcb_result *r)
{
	return r->checksum == r->expected && r->extra_ok;
}

bool gcb_result_ok(const gcb_result *r)
{
	bool ok = result_ok_quiet(r);
	if (r->checksum != r->expected)
		fprintf(stderr, "%s/%s: CHECKSUM MISMATCH: counted %llu nodes, expected %llu\n",
		        r->bench, r->impl, (unsigned long long)r->checksum,
		        (unsigned long long)r->expected);
	if (!r->extra_ok)
		fprintf(stderr, "%s/%s: DATA CHECK FAILED (see above)\n", r->bench, r->impl);
	return ok;
}

void gcb_report_begin(gcb_json *j, const gcb_result *r, const gcb_pause_summary *s)
{
	gcb_usage u;
	gcb_proc_usage(&u);
	gcb_json_begin(j, stdout);
	gcb_json_str(j, "bench", r->bench);
	gcb_json_str(j, "impl", r->impl);
	gcb_json_bool(j, "ok", result_ok_quiet(r));
	gcb_json_u64(j, "checksum", r->checksum);
	gcb_json_u64(j, "expected", r->expected);
	gcb_json_u64(j, "wall_ns", r->wall_ns);
	gcb_json_u64(j, "cpu_ns", u.user_ns + u.sys_ns);
	gcb_json_u64(j, "user_ns", u.user_ns);
	gcb_json_u64(j, "sys_ns", u.sys_ns);
	gcb_json_u64(j, "minor_faults", u.minor_faults);
	gcb_json_u64(j, "setup_ns", r->setup_ns);
	gcb_json_u64(j, "gc_ns", s->total_ns);
	gcb_json_u64(j, "collections", s->count);
	gcb_json_u64(j, "max_pause_ns", s->max_ns);
	gcb_json_u64(j, "p50_pause_ns", s->p50_ns);
	gcb_json_u64(j, "p99_pause_ns", s->p99_ns);
	gcb_json_u64(j, "pauses_dropped", s->dropped);
	gcb_json_str(j, "pause_source", s->source);
	gcb_json_u64(j, "peak_rss_kib", u.peak_rss_kib);
}
