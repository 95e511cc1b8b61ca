/* The reader: text to data. It reads from a C buffer (never from the heap),
 * so only the data it builds needs rooting. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rhs.h"

typedef struct rd {
	const char *b;
	size_t n, *pos;
} rd;

static int peek(rd *r)
{
	return *r->pos < r->n ? (unsigned char)r->b[*r->pos] : -1;
}

static void skip_space(rd *r)
{
	for (;;) {
		int c = peek(r);
		if (c == ';') {
			while (peek(r) != -1 && peek(r) != '\n')
				(*r->pos)++;
		} else if (c != -1 && isspace(c)) {
			(*r->pos)++;
		} else {
			return;
		}
	}
}

static bool delimiter(int c)
{
	return c == -1 || isspace(c) || c == '(' || c == ')' || c == '"' || c == ';' || c == '\'';
}

static V read_datum(rd *r);

static V read_list(rd *r)
{
	ROOTS(2); /* head, tail */
	R[0] = NIL;
	for (;;) {
		skip_space(r);
		int c = peek(r);
		if (c == -1)
			rhs_errorf("read: unterminated list");
		if (c == ')') {
			(*r->pos)++;
			break;
		}
		if (c == '.' && *r->pos + 1 < r->n && delimiter((unsigned char)r->b[*r->pos + 1])) {
			(*r->pos)++;
			if (R[0] == NIL)
				rhs_errorf("read: '.' at the start of a list");
			V last = read_datum(r);
			SET(&CDR(R[1]), last);
			skip_space(r);
			if (peek(r) != ')')
				rhs_errorf("read: expected ')' after the datum following '.'");
			(*r->pos)++;
			break;
		}
		V d = read_datum(r);
		V cell = rhs_cons(d, NIL);
		if (R[0] == NIL)
			R[0] = cell;
		else
			SET(&CDR(R[1]), cell);
		R[1] = cell;
	}
	V list = R[0];
	UNROOT();
	return list;
}

static V read_string(rd *r)
{
	size_t cap = 64, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		int c = peek(r);
		if (c == -1) {
			free(buf);
			rhs_errorf("read: unterminated string");
		}
		(*r->pos)++;
		if (c == '"')
			break;
		if (c == '\\') {
			int e = peek(r);
			(*r->pos)++;
			switch (e) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'r':
				c = '\r';
				break;
			case '0':
				c = '\0';
				break;
			case '\\':
				c = '\\';
				break;
			case '"':
				c = '"';
				break;
			default:
				free(buf);
				rhs_errorf("read: unknown string escape \\%c", e == -1 ? '?' : e);
			}
		}
		if (len == cap)
			buf = realloc(buf, cap *= 2);
		buf[len++] = (char)c;
	}
	V s = rhs_string(buf, len);
	free(buf);
	return s;
}

static V read_atom(rd *r)
{
	size_t start = *r->pos;
	while (!delimiter(peek(r)))
		(*r->pos)++;
	size_t n = *r->pos - start;
	char tok[256];
	if (n >= sizeof tok)
		rhs_errorf("read: token too long");
	memcpy(tok, r->b + start, n);
	tok[n] = 0;
	if (tok[0] == '#') {
		if (!strcmp(tok, "#t") || !strcmp(tok, "#true"))
			return TRUE_V;
		if (!strcmp(tok, "#f") || !strcmp(tok, "#false"))
			return FALSE_V;
		rhs_errorf("read: unknown syntax %s", tok);
	}
	char *end;
	errno = 0;
	long long v = strtoll(tok, &end, 10);
	if (*end == 0 && end != tok && errno == 0 && v >= -(1ll << 62) && v < (1ll << 62))
		return FIX(v);
	if (isdigit((unsigned char)tok[0]) ||
	    ((tok[0] == '-' || tok[0] == '+' || tok[0] == '.') && n > 1 &&
	     (isdigit((unsigned char)tok[1]) || tok[1] == '.'))) {
		double d = strtod(tok, &end);
		if (*end == 0)
			return rhs_flonum(d);
	}
	for (size_t i = 0; i < n; i++)
		tok[i] = (char)tolower((unsigned char)tok[i]);
	return rhs_intern(tok, n);
}

static V read_char(rd *r)
{
	size_t start = *r->pos;
	(*r->pos)++; /* the first character is taken even if it is a delimiter */
	while (!delimiter(peek(r)))
		(*r->pos)++;
	size_t n = *r->pos - start;
	const char *t = r->b + start;
	if (n == 1)
		return CHR(t[0]);
	if (n == 5 && !memcmp(t, "space", 5))
		return CHR(' ');
	if (n == 7 && !memcmp(t, "newline", 7))
		return CHR('\n');
	if (n == 3 && !memcmp(t, "tab", 3))
		return CHR('\t');
	rhs_errorf("read: unknown character #\\%.*s", (int)n, t);
}

static V read_datum(rd *r)
{
	skip_space(r);
	int c = peek(r);
	if (c == -1)
		return EOF_V;
	if (c == '(') {
		(*r->pos)++;
		return read_list(r);
	}
	if (c == ')') {
		(*r->pos)++;
		rhs_errorf("read: unexpected ')'");
	}
	if (c == '\'') {
		(*r->pos)++;
		ROOTS(1);
		R[0] = read_datum(r);
		if (R[0] == EOF_V)
			rhs_errorf("read: end of input after quote");
		R[0] = rhs_cons(R[0], NIL);
		V q = rhs_cons(g_sym[S_QUOTE], R[0]);
		UNROOT();
		return q;
	}
	if (c == '"') {
		(*r->pos)++;
		return read_string(r);
	}
	if (c == '#' && *r->pos + 1 < r->n && r->b[*r->pos + 1] == '\\') {
		*r->pos += 2;
		if (*r->pos >= r->n)
			rhs_errorf("read: end of input in a character");
		return read_char(r);
	}
	if (c == '#' && *r->pos + 1 < r->n && r->b[*r->pos + 1] == '(') {
		*r->pos += 2;
		ROOTS(1);
		R[0] = read_list(r);
		size_t n = 0;
		for (V p = R[0]; IS_PAIR(p); p = CDR(p))
			n++;
		vec_t *v = rhs_vector(n, UNSPEC);
		V p = R[0];
		for (size_t i = 0; i < n; i++, p = CDR(p))
			SET(&v->e[i], CAR(p));
		UNROOT();
		return v;
	}
	return read_atom(r);
}

V rhs_read(const char *buf, size_t len, size_t *pos)
{
	rd r = {buf, len, pos};
	return read_datum(&r);
}
