/* Where the datum being run came from, for error messages: the file (or
 * "stdin") and the line its top-level datum starts on. The script runner
 * and the REPL hand over each buffer they read; lines are counted once,
 * from where the last datum started, so a long script costs one pass. */
#include <ctype.h>

#include "rhs.h"

static const char *name;
static const char *buf;
static size_t counted; /* buf[0..counted) is in `line` */
static long line = 1;  /* the line buf[counted] is on */
static long datum_line;

void rhs_source_begin(const char *source_name)
{
	name = source_name;
	line = 1;
	datum_line = 0;
	buf = NULL;
	counted = 0;
}

void rhs_source_buffer(const char *b)
{
	buf = b;
	counted = 0;
}

static void count_to(size_t to)
{
	for (; counted < to; counted++)
		line += buf[counted] == '\n';
}

/* The next datum is read from pos: note the line it starts on (past
 * blanks and ';' comments, as the reader skips them). */
void rhs_source_next(size_t pos, size_t len)
{
	while (pos < len) {
		if (buf[pos] == ';')
			while (pos < len && buf[pos] != '\n')
				pos++;
		else if (isspace((unsigned char)buf[pos]))
			pos++;
		else
			break;
	}
	count_to(pos);
	datum_line = line;
}

/* The REPL is done with its buffer: its remaining lines are counted. */
void rhs_source_done(size_t len)
{
	count_to(len);
}

void rhs_source_print(FILE *f)
{
	if (name && datum_line)
		fprintf(f, "  at %s:%ld\n", name, datum_line);
}
