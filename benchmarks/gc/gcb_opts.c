#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcb_opts.h"

static void usage(FILE *out, const char *prog, const gcb_opt *opts, int n_opts, const char *what)
{
	fprintf(out, "usage: %s [options]\n%s\n\noptions:\n", prog, what);
	for (int i = 0; i < n_opts; i++) {
		const gcb_opt *o = &opts[i];
		char left[64];
		snprintf(left, sizeof left, "--%s%s", o->name,
		         o->kind == GCB_OPT_U64   ? " N"
		         : o->kind == GCB_OPT_F64 ? " X"
		                                  : "");
		if (o->kind == GCB_OPT_FLAG)
			fprintf(out, "  %-22s %s\n", left, o->help);
		else if (o->kind == GCB_OPT_U64)
			fprintf(out, "  %-22s %s (default %llu)\n", left, o->help,
			        (unsigned long long)*o->u64);
		else
			fprintf(out, "  %-22s %s (default %g)\n", left, o->help, *o->f64);
	}
	fprintf(out, "  --help                 this text\n"
	             "Prints one JSON line with the measurements on stdout.\n");
}

static _Noreturn void bad(const char *prog, const char *name, const char *val, const char *why)
{
	fprintf(stderr, "%s: --%s %s: %s (see --help)\n", prog, name, val ? val : "", why);
	exit(2);
}

static void set_value(const char *prog, const gcb_opt *o, const char *val)
{
	char *end = NULL;
	errno = 0;
	if (o->kind == GCB_OPT_U64) {
		if (val[0] == '-' || val[0] == '\0')
			bad(prog, o->name, val, "expected an unsigned integer");
		unsigned long long v = strtoull(val, &end, 10);
		if (errno || *end != '\0')
			bad(prog, o->name, val, "expected an unsigned integer");
		if ((double)v < o->min || (double)v > o->max) {
			char why[96];
			snprintf(why, sizeof why, "out of range [%.0f, %.0f]", o->min, o->max);
			bad(prog, o->name, val, why);
		}
		*o->u64 = v;
	} else {
		double v = strtod(val, &end);
		if (errno || *end != '\0' || val[0] == '\0' || !isfinite(v))
			bad(prog, o->name, val, "expected a number");
		if (v < o->min || v > o->max) {
			char why[96];
			snprintf(why, sizeof why, "out of range [%g, %g]", o->min, o->max);
			bad(prog, o->name, val, why);
		}
		*o->f64 = v;
	}
}

void gcb_opts_parse(int argc, char **argv, const gcb_opt *opts, int n_opts, const char *what)
{
	const char *prog = argc > 0 ? argv[0] : "gc-bench";
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			usage(stdout, prog, opts, n_opts, what);
			exit(0);
		}
		if (strncmp(arg, "--", 2) != 0) {
			fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog, arg);
			exit(2);
		}
		const gcb_opt *o = NULL;
		for (int k = 0; k < n_opts; k++)
			if (strcmp(arg + 2, opts[k].name) == 0)
				o = &opts[k];
		if (!o) {
			fprintf(stderr, "%s: unknown option '%s' (see --help)\n", prog, arg);
			exit(2);
		}
		if (o->kind == GCB_OPT_FLAG) {
			*o->u64 = 1;
			continue;
		}
		if (i + 1 >= argc)
			bad(prog, o->name, NULL, "missing value");
		set_value(prog, o, argv[++i]);
	}
}
