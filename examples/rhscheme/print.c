/* The printer (display and write). It never allocates in the heap, so it
 * may hold plain C pointers to objects while it walks them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rhs.h"

static void print_flonum(FILE *f, double d)
{
	char buf[40];
	if (isnan(d)) {
		fputs("+nan.0", f);
		return;
	}
	if (isinf(d)) {
		fputs(d > 0 ? "+inf.0" : "-inf.0", f);
		return;
	}
	for (int prec = 15; prec <= 17; prec++) { /* the shortest that reads back */
		snprintf(buf, sizeof buf, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	fputs(buf, f);
	if (!strpbrk(buf, ".e"))
		fputs(".0", f);
}

static void print_string(FILE *f, str_t *s, bool write)
{
	if (!write) {
		/* Through a C buffer: stdio hands a long string to write(2) as
		 * it is, and the kernel cannot fault a page in for a heap that
		 * serves faults by signal (cache.faults "signal"). */
		char buf[1024];
		for (size_t i = 0; i < s->len; i += sizeof buf) {
			size_t n = s->len - i < sizeof buf ? s->len - i : sizeof buf;
			memcpy(buf, s->b + i, n);
			fwrite(buf, 1, n, f);
		}
		return;
	}
	fputc('"', f);
	for (size_t i = 0; i < s->len; i++) {
		char c = s->b[i];
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void print_char(FILE *f, int c, bool write)
{
	if (!write)
		fputc(c, f);
	else if (c == ' ')
		fputs("#\\space", f);
	else if (c == '\n')
		fputs("#\\newline", f);
	else if (c == '\t')
		fputs("#\\tab", f);
	else
		fprintf(f, "#\\%c", c);
}

void rhs_print(FILE *f, V v, bool write)
{
	if (IS_FIX(v)) {
		fprintf(f, "%lld", (long long)FIXVAL(v));
		return;
	}
	if (IS_CHR(v)) {
		print_char(f, CHRVAL(v), write);
		return;
	}
	if (!IS_PTR(v)) {
		const char *s = v == TRUE_V    ? "#t"
		                : v == FALSE_V ? "#f"
		                : v == NIL     ? "()"
		                : v == EOF_V   ? "#<eof>"
		                : v == UNSPEC  ? ""
		                               : "#<unbound>";
		fputs(s, f);
		return;
	}
	switch (type_of(v)) {
	case T_PAIR:
		fputc('(', f);
		for (;;) {
			rhs_print(f, CAR(v), write);
			v = CDR(v);
			if (!IS_PAIR(v))
				break;
			fputc(' ', f);
		}
		if (v != NIL) {
			fputs(" . ", f);
			rhs_print(f, v, write);
		}
		fputc(')', f);
		return;
	case T_FLO:
		print_flonum(f, ((flo_t *)v)->d);
		return;
	case T_STR:
		print_string(f, v, write);
		return;
	case T_SYM: {
		str_t *n = ((sym_t *)v)->name;
		fwrite(n->b, 1, n->len, f);
		return;
	}
	case T_VEC: {
		vec_t *vec = v;
		fputs("#(", f);
		for (size_t i = 0; i < vec->len; i++) {
			if (i)
				fputc(' ', f);
			rhs_print(f, vec->e[i], write);
		}
		fputc(')', f);
		return;
	}
	case T_CLO: {
		V name = ((clo_t *)v)->name;
		fputs("#<procedure", f);
		if (IS_SYM(name)) {
			fputc(' ', f);
			rhs_print(f, name, false);
		}
		fputc('>', f);
		return;
	}
	case T_PRIM:
		fputs("#<primitive ", f);
		rhs_print(f, ((prim_t *)v)->name, false);
		fputc('>', f);
		return;
	case T_ENV:
		fputs("#<environment>", f);
		return;
	default:
		fputs("#<unknown>", f);
	}
}

char *rhs_to_cstring(V v, bool write, size_t max)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return strdup("?");
	rhs_print(f, v, write);
	fclose(f);
	if (len > max)
		strcpy(buf + max - 3, "...");
	return buf;
}
