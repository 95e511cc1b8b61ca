/* Command-line options of the GC benchmarks: "--name value" pairs matched
 * against a table the benchmark declares, so every binary rejects unknown
 * or malformed options the same way (message, exit status 2). */
#ifndef GCB_OPTS_H
#define GCB_OPTS_H

#include <stdint.h>

typedef enum gcb_opt_kind {
	GCB_OPT_U64 = 0,  /* unsigned integer in [min, max] */
	GCB_OPT_F64 = 1,  /* real number in [min, max] */
	GCB_OPT_FLAG = 2, /* no value; sets *u64 to 1 */
} gcb_opt_kind;

typedef struct gcb_opt {
	const char *name; /* without the leading "--" */
	gcb_opt_kind kind;
	uint64_t *u64; /* GCB_OPT_U64, GCB_OPT_FLAG */
	double *f64;   /* GCB_OPT_F64 */
	double min, max;
	const char *help;
} gcb_opt;

/* Parse argv[1..]; on --help prints usage and exits 0, on any error prints
 * a message naming the option and exits 2. */
void gcb_opts_parse(int argc, char **argv, const gcb_opt *opts, int n_opts, const char *what);

#endif
