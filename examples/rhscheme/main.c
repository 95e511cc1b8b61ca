/* rhscheme: command line, script runner and REPL.
 *
 *   rhscheme [--heap-mib N] [--verify] [--stats] [--stats-file F]
 *            [--max-depth N] [FILE.scm]
 *
 * The heap config starts from rh_config_default() plus these flags;
 * librheap replaces it with $RHEAP_CONFIG when set (rheapctl run), so the
 * same binary runs on a local or a disaggregated heap.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rhs.h"

typedef struct opts {
	rh_config cfg;
	const char *script;
	bool stats;
	const char *stats_file;
	int max_depth;
	int status;
} opts;

/* Exit status 0 when asked for (--help, on stdout), 2 after bad usage. */
static void usage(int status)
{
	fprintf(status ? stderr : stdout,
	        "usage: rhscheme [--heap-mib N] [--verify] [--stats] [--stats-file FILE] "
	        "[--max-depth N] [FILE.scm]\n"
	        "Without FILE, a REPL. RHEAP_CONFIG (set by 'rheapctl run') puts the heap on "
	        "a cluster.\n");
	exit(status);
}

static long number_arg(const char *flag, const char *v)
{
	char *end;
	long n = v ? strtol(v, &end, 10) : 0;
	if (!v || *end || n <= 0) {
		fprintf(stderr, "rhscheme: %s needs a positive number\n", flag);
		exit(2);
	}
	return n;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0, got;
	char *buf = malloc(cap);
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	*len = n;
	return buf;
}

/* Run every datum of the file; the first error ends the script. */
static int run_script(const char *path)
{
	static size_t len; /* static: unchanged by the longjmp */
	static char *buf;
	buf = read_file(path, &len);
	if (!buf) {
		fprintf(stderr, "rhscheme: cannot read %s\n", path);
		return 2;
	}
	jmp_buf jb;
	vm.on_error = &jb;
	vm.error_top = vm.top;
	vm.error_depth = vm.depth;
	static size_t pos;
	pos = 0;
	int status = 0;
	rhs_source_begin(path);
	rhs_source_buffer(buf);
	if (setjmp(jb) == 0) {
		for (;;) {
			g_cur_expr = NULL; /* a reader error is about no expression yet */
			rhs_source_next(pos, len);
			V d = rhs_read(buf, len, &pos);
			if (d == EOF_V)
				break;
			g_cur_expr = d;
			rhs_eval(d, NIL);
		}
	} else {
		status = 1;
	}
	fflush(stdout);
	free(buf);
	return status;
}

/* Whether buf holds only complete data (balanced, no open string). */
static bool complete(const char *buf, size_t n)
{
	int depth = 0;
	bool str = false, comment = false;
	for (size_t i = 0; i < n; i++) {
		char c = buf[i];
		if (comment) {
			comment = c != '\n';
		} else if (str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				str = false;
		} else if (c == ';') {
			comment = true;
		} else if (c == '"') {
			str = true;
		} else if (c == '#' && i + 1 < n && buf[i + 1] == '\\') {
			i += 2;
		} else if (c == '(') {
			depth++;
		} else if (c == ')') {
			depth--;
		}
	}
	return !str && depth <= 0;
}

static int repl(void)
{
	bool tty = isatty(0);
	static char *buf;
	static size_t len, cap;
	static size_t pos;
	jmp_buf jb;
	vm.on_error = &jb;
	vm.error_top = vm.top;
	vm.error_depth = vm.depth;
	vm.repl = true;
	cap = 4096, len = 0;
	buf = malloc(cap);
	rhs_source_begin("stdin");
	setjmp(jb); /* errors come back here, with the input discarded */
	if (len)
		rhs_source_done(len);
	len = 0;
	for (;;) {
		if (tty) {
			fputs(len ? "  " : "> ", stdout);
			fflush(stdout);
		}
		char line[4096];
		/* Reading may block for ever: park so collections need not wait. */
		rh_mutator_park(vm.m);
		char *got = fgets(line, sizeof line, stdin);
		rh_mutator_unpark(vm.m);
		if (rhs_interrupted) { /* Ctrl-C while typing: drop the line */
			rhs_interrupted = 0;
			clearerr(stdin);
			fputc('\n', stdout);
			rhs_source_buffer(buf);
			rhs_source_done(len);
			len = 0;
			continue;
		}
		if (!got)
			break;
		size_t n = strlen(line);
		if (len + n + 1 > cap)
			buf = realloc(buf, cap = 2 * (len + n + 1));
		memcpy(buf + len, line, n);
		len += n;
		if (!complete(buf, len))
			continue;
		pos = 0;
		rhs_source_buffer(buf);
		for (;;) {
			g_cur_expr = NULL; /* a reader error is about no expression yet */
			rhs_source_next(pos, len);
			V d = rhs_read(buf, len, &pos);
			if (d == EOF_V)
				break;
			g_cur_expr = d;
			V v = rhs_eval(d, NIL);
			if (v != UNSPEC) {
				rhs_print(stdout, v, true);
				fputc('\n', stdout);
			}
		}
		fflush(stdout);
		rhs_source_done(len);
		len = 0;
	}
	if (tty)
		fputc('\n', stdout);
	free(buf);
	return 0;
}

static void print_stats(const opts *o)
{
	char *json = rh_stats_json(vm.h);
	if (!json)
		return;
	if (o->stats)
		fprintf(stderr, "%s\n", json);
	if (o->stats_file) {
		FILE *f = fopen(o->stats_file, "w");
		if (f) {
			fprintf(f, "%s\n", json);
			fclose(f);
		} else {
			fprintf(stderr, "rhscheme: cannot write %s\n", o->stats_file);
		}
	}
	free(json);
}

static void *vm_thread(void *arg)
{
	opts *o = arg;
	rh_error err = {0};
	vm.max_depth = o->max_depth;
	/* SIGINT is blocked here (main did it), so the heap's threads inherit
	 * the block; this thread takes it once they run. */
	if (rhs_heap_init(&o->cfg, !RHS_CONSERVATIVE, &err) < 0) {
		fprintf(stderr, "rhscheme: cannot open the heap: %s\n", err.msg);
		o->status = 2;
		return NULL;
	}
	rhs_sigint_take(!o->script);
	jmp_buf jb; /* errors while installing the builtins (out of memory) */
	vm.on_error = &jb;
	if (setjmp(jb) == 0) {
		rhs_builtins_init();
		o->status = o->script ? run_script(o->script) : repl();
	} else {
		o->status = 2;
	}
	if (o->stats || o->stats_file)
		print_stats(o);
	rhs_heap_fini();
	return NULL;
}

int main(int argc, char **argv)
{
	static opts o;
	rh_config_default(&o.cfg);
	o.cfg.heap_size = 64ull << 20;
	o.max_depth = 100000;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--heap-mib"))
			o.cfg.heap_size = (uint64_t)number_arg(a, i + 1 < argc ? argv[++i] : NULL)
			                  << 20;
		else if (!strcmp(a, "--verify"))
			o.cfg.verify = 1;
		else if (!strcmp(a, "--stats"))
			o.stats = true;
		else if (!strcmp(a, "--stats-file") && i + 1 < argc)
			o.stats_file = argv[++i];
		else if (!strcmp(a, "--max-depth"))
			o.max_depth = (int)number_arg(a, i + 1 < argc ? argv[++i] : NULL);
		else if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			usage(0);
		else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("rhscheme (rheap %s)\n", RH_VERSION_STRING);
			return 0;
		} else if (a[0] == '-' && a[1])
			usage(2);
		else if (!o.script)
			o.script = a;
		else
			usage(2);
	}
	/* Deep non-tail recursion runs on the C stack: give the VM thread a
	 * large one (only the touched part is committed or scanned). */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1ull << 30);
	pthread_t t;
	rhs_sigint_block(); /* for this thread and, inherited, the VM's */
	if (pthread_create(&t, &attr, vm_thread, &o) != 0) {
		fprintf(stderr, "rhscheme: cannot start the VM thread\n");
		return 2;
	}
	pthread_join(t, NULL);
	return o.status;
}
