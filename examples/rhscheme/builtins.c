/* The primitive procedures. Each receives its argument list (rooted by the
 * caller) and must root anything it still needs after an allocation. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rhs.h"

typedef V (*prim_fn)(V args);
typedef struct prim_def {
	const char *name;
	prim_fn fn;
	int min, max; /* max -1: variadic */
} prim_def;

static V arg(V args, int i)
{
	while (i-- > 0)
		args = CDR(args);
	return CAR(args);
}
#define A0 arg(args, 0)
#define A1 arg(args, 1)
#define A2 arg(args, 2)

static V check(V v, unsigned t, const char *what)
{
	if (!is_type(v, t)) {
		char msg[80];
		snprintf(msg, sizeof msg, "expected %s, got", what);
		rhs_error(msg, v);
	}
	return v;
}

/* ------------------------------------------------------------ numbers */

typedef struct num {
	bool flo;
	int64_t i;
	double d;
} num;

static num to_num(V v)
{
	if (IS_FIX(v))
		return (num){false, FIXVAL(v), 0};
	if (IS_FLO(v))
		return (num){true, 0, ((flo_t *)v)->d};
	rhs_error("expected a number, got", v);
}

static double as_double(num n)
{
	return n.flo ? n.d : (double)n.i;
}

double rhs_num(V v, const char *who)
{
	return as_double(to_num(v));
}

static V from_num(num n)
{
	if (n.flo)
		return rhs_flonum(n.d);
	if (n.i >= -(INT64_C(1) << 62) && n.i < (INT64_C(1) << 62))
		return FIX(n.i);
	return rhs_flonum((double)n.i);
}

static num arith(num a, num b, char op)
{
	if (!a.flo && !b.flo) {
		int64_t r;
		bool ovf = op == '+'   ? __builtin_add_overflow(a.i, b.i, &r)
		           : op == '-' ? __builtin_sub_overflow(a.i, b.i, &r)
		                       : __builtin_mul_overflow(a.i, b.i, &r);
		if (!ovf)
			return (num){false, r, 0};
	}
	double x = as_double(a), y = as_double(b);
	return (num){true, 0, op == '+' ? x + y : op == '-' ? x - y : x * y};
}

static V fold(V args, char op, int64_t unit)
{
	num acc = {false, unit, 0};
	if (op == '-' && CDR(args) != NIL) {
		acc = to_num(CAR(args));
		args = CDR(args);
	}
	for (; args != NIL; args = CDR(args))
		acc = arith(acc, to_num(CAR(args)), op);
	return from_num(acc);
}

static V p_add(V args)
{
	return fold(args, '+', 0);
}
static V p_sub(V args)
{
	return fold(args, '-', 0);
}
static V p_mul(V args)
{
	return fold(args, '*', 1);
}

static V p_div(V args)
{
	num acc = to_num(CAR(args));
	if (CDR(args) == NIL)
		acc = (num){false, 1, 0}; /* (/ x) = 1/x */
	else
		args = CDR(args);
	for (; args != NIL; args = CDR(args)) {
		num d = to_num(CAR(args));
		if (!d.flo && d.i == 0)
			rhs_error("division by zero", UNSPEC);
		if (!acc.flo && !d.flo && acc.i % d.i == 0)
			acc.i /= d.i;
		else
			acc = (num){true, 0, as_double(acc) / as_double(d)};
	}
	return from_num(acc);
}

static int64_t int_arg(V v)
{
	if (IS_FIX(v))
		return FIXVAL(v);
	if (IS_FLO(v) && ((flo_t *)v)->d == floor(((flo_t *)v)->d))
		return (int64_t)((flo_t *)v)->d;
	rhs_error("expected an integer, got", v);
}

static V intdiv(V args, char op)
{
	int64_t a = int_arg(A0), b = int_arg(A1);
	if (b == 0)
		rhs_error("division by zero", UNSPEC);
	int64_t r = a % b;
	if (op == 'q')
		return FIX(a / b);
	if (op == 'm' && r != 0 && ((r < 0) != (b < 0)))
		r += b;
	return FIX(r);
}
static V p_quotient(V args)
{
	return intdiv(args, 'q');
}
static V p_remainder(V args)
{
	return intdiv(args, 'r');
}
static V p_modulo(V args)
{
	return intdiv(args, 'm');
}

static V compare(V args, int op)
{
	for (; CDR(args) != NIL; args = CDR(args)) {
		num a = to_num(CAR(args)), b = to_num(CAR(CDR(args)));
		bool ok;
		if (!a.flo && !b.flo)
			ok = op == 0   ? a.i == b.i
			     : op == 1 ? a.i < b.i
			     : op == 2 ? a.i > b.i
			     : op == 3 ? a.i <= b.i
			               : a.i >= b.i;
		else {
			double x = as_double(a), y = as_double(b);
			ok = op == 0   ? x == y
			     : op == 1 ? x < y
			     : op == 2 ? x > y
			     : op == 3 ? x <= y
			               : x >= y;
		}
		if (!ok)
			return FALSE_V;
	}
	to_num(CAR(args));
	return TRUE_V;
}
static V p_eq_num(V args)
{
	return compare(args, 0);
}
static V p_lt(V args)
{
	return compare(args, 1);
}
static V p_gt(V args)
{
	return compare(args, 2);
}
static V p_le(V args)
{
	return compare(args, 3);
}
static V p_ge(V args)
{
	return compare(args, 4);
}

static V p_numberp(V args)
{
	return BOOL(IS_FIX(A0) || IS_FLO(A0));
}
static V p_integerp(V args)
{
	V v = A0;
	return BOOL(IS_FIX(v) || (IS_FLO(v) && ((flo_t *)v)->d == floor(((flo_t *)v)->d)));
}
static V p_zerop(V args)
{
	return BOOL(as_double(to_num(A0)) == 0);
}
static V p_positivep(V args)
{
	return BOOL(as_double(to_num(A0)) > 0);
}
static V p_negativep(V args)
{
	return BOOL(as_double(to_num(A0)) < 0);
}
static V p_evenp(V args)
{
	return BOOL(int_arg(A0) % 2 == 0);
}
static V p_oddp(V args)
{
	return BOOL(int_arg(A0) % 2 != 0);
}
static V p_abs(V args)
{
	num n = to_num(A0);
	if (n.flo)
		n.d = fabs(n.d);
	else
		n.i = n.i < 0 ? -n.i : n.i;
	return from_num(n);
}
static V minmax(V args, bool max)
{
	num best = to_num(A0);
	bool flo = best.flo;
	for (args = CDR(args); args != NIL; args = CDR(args)) {
		num n = to_num(CAR(args));
		flo |= n.flo;
		if (max ? as_double(n) > as_double(best) : as_double(n) < as_double(best))
			best = n;
	}
	if (flo && !best.flo)
		best = (num){true, 0, (double)best.i};
	return from_num(best);
}
static V p_min(V args)
{
	return minmax(args, false);
}
static V p_max(V args)
{
	return minmax(args, true);
}
static V p_sqrt(V args)
{
	num n = to_num(A0);
	double r = sqrt(as_double(n));
	if (!n.flo && r == floor(r) && (int64_t)r * (int64_t)r == n.i)
		return FIX((int64_t)r);
	return rhs_flonum(r);
}
static V p_inexact(V args)
{
	return rhs_flonum(as_double(to_num(A0)));
}
static V p_exact(V args)
{
	return FIX(int_arg(A0));
}

static V p_number_to_string(V args)
{
	char *s = rhs_to_cstring(A0, false, 64);
	to_num(A0);
	V r = rhs_string(s, strlen(s));
	free(s);
	return r;
}

static V p_string_to_number(V args)
{
	str_t *s = check(A0, T_STR, "a string");
	char buf[64];
	if (s->len == 0 || s->len >= sizeof buf)
		return FALSE_V;
	memcpy(buf, s->b, s->len);
	buf[s->len] = 0;
	char *end;
	errno = 0;
	long long v = strtoll(buf, &end, 10);
	if (*end == 0 && errno == 0 && v >= -(1ll << 62) && v < (1ll << 62))
		return FIX(v);
	double d = strtod(buf, &end);
	return *end == 0 ? rhs_flonum(d) : FALSE_V;
}

/* ------------------------------------------------------------ equivalence */

bool rhs_eqv(V a, V b)
{
	if (a == b)
		return true;
	return IS_FLO(a) && IS_FLO(b) && ((flo_t *)a)->d == ((flo_t *)b)->d;
}

static bool equal(V a, V b)
{
	for (;;) {
		if (rhs_eqv(a, b))
			return true;
		if (IS_PAIR(a) && IS_PAIR(b)) {
			if (!equal(CAR(a), CAR(b)))
				return false;
			a = CDR(a), b = CDR(b);
			continue;
		}
		if (IS_STR(a) && IS_STR(b)) {
			str_t *x = a, *y = b;
			return x->len == y->len && memcmp(x->b, y->b, x->len) == 0;
		}
		if (IS_VEC(a) && IS_VEC(b)) {
			vec_t *x = a, *y = b;
			if (x->len != y->len)
				return false;
			for (size_t i = 0; i < x->len; i++)
				if (!equal(x->e[i], y->e[i]))
					return false;
			return true;
		}
		return false;
	}
}

static V p_eq(V args)
{
	return BOOL(A0 == A1);
}
static V p_eqv(V args)
{
	return BOOL(rhs_eqv(A0, A1));
}
static V p_equal(V args)
{
	return BOOL(equal(A0, A1));
}
static V p_not(V args)
{
	return BOOL(A0 == FALSE_V);
}

/* ------------------------------------------------------------ pairs and lists */

static V p_cons(V args)
{
	return rhs_cons(A0, A1);
}
static V p_car(V args)
{
	return CAR(check(A0, T_PAIR, "a pair"));
}
static V p_cdr(V args)
{
	return CDR(check(A0, T_PAIR, "a pair"));
}
static V p_cadr(V args)
{
	return CAR(check(CDR(check(A0, T_PAIR, "a pair")), T_PAIR, "a list of 2"));
}
static V p_cddr(V args)
{
	return CDR(check(CDR(check(A0, T_PAIR, "a pair")), T_PAIR, "a list of 2"));
}
static V p_caar(V args)
{
	return CAR(check(CAR(check(A0, T_PAIR, "a pair")), T_PAIR, "a pair"));
}
static V p_caddr(V args)
{
	V p = check(CDR(check(A0, T_PAIR, "a pair")), T_PAIR, "a list of 3");
	return CAR(check(CDR(p), T_PAIR, "a list of 3"));
}
static V p_set_car(V args)
{
	SET(&CAR(check(A0, T_PAIR, "a pair")), A1);
	return UNSPEC;
}
static V p_set_cdr(V args)
{
	SET(&CDR(check(A0, T_PAIR, "a pair")), A1);
	return UNSPEC;
}
static V p_list(V args)
{
	return args; /* the evaluator built a fresh list */
}

static long list_length(V l)
{
	long n = 0;
	for (; IS_PAIR(l); l = CDR(l))
		n++;
	return l == NIL ? n : -1;
}
static V p_length(V args)
{
	long n = list_length(A0);
	if (n < 0)
		rhs_error("length: not a proper list", A0);
	return FIX(n);
}
static V p_listp(V args)
{
	return BOOL(list_length(A0) >= 0);
}

/* Append a copy of list R[2] to the list being built in R[0] (head), R[1]
 * (tail). */
static void copy_onto(V *R)
{
	for (; IS_PAIR(R[2]); R[2] = CDR(R[2])) {
		V c = rhs_cons(CAR(R[2]), NIL);
		if (R[0] == NIL)
			R[0] = c;
		else
			SET(&CDR(R[1]), c);
		R[1] = c;
	}
	if (R[2] != NIL)
		rhs_error("not a proper list", R[2]);
}

static V p_append(V args)
{
	if (args == NIL)
		return NIL;
	ROOTS(4); /* head, tail, current, remaining */
	R[0] = NIL, R[3] = args;
	for (; CDR(R[3]) != NIL; R[3] = CDR(R[3])) {
		R[2] = CAR(R[3]);
		copy_onto(R);
	}
	if (R[0] == NIL)
		R[0] = CAR(R[3]);
	else
		SET(&CDR(R[1]), CAR(R[3]));
	V res = R[0];
	UNROOT();
	return res;
}

static V p_reverse(V args)
{
	ROOTS(2);
	R[0] = A0, R[1] = NIL;
	for (; IS_PAIR(R[0]); R[0] = CDR(R[0]))
		R[1] = rhs_cons(CAR(R[0]), R[1]);
	if (R[0] != NIL)
		rhs_error("reverse: not a proper list", R[0]);
	V res = R[1];
	UNROOT();
	return res;
}

static V p_list_ref(V args)
{
	V l = A0;
	int64_t k = int_arg(A1);
	for (; k > 0 && IS_PAIR(l); k--)
		l = CDR(l);
	if (k < 0 || !IS_PAIR(l))
		rhs_error("list-ref: index out of range", A1);
	return CAR(l);
}

static V mem(V args, int how)
{
	for (V l = A1; IS_PAIR(l); l = CDR(l))
		if (how == 0 ? CAR(l) == A0 : how == 1 ? rhs_eqv(CAR(l), A0) : equal(CAR(l), A0))
			return l;
	return FALSE_V;
}
static V ass(V args, int how)
{
	for (V l = A1; IS_PAIR(l); l = CDR(l)) {
		V e = CAR(l);
		if (IS_PAIR(e) && (how == 0   ? CAR(e) == A0
		                   : how == 1 ? rhs_eqv(CAR(e), A0)
		                              : equal(CAR(e), A0)))
			return e;
	}
	return FALSE_V;
}
static V p_memq(V args)
{
	return mem(args, 0);
}
static V p_memv(V args)
{
	return mem(args, 1);
}
static V p_member(V args)
{
	return mem(args, 2);
}
static V p_assq(V args)
{
	return ass(args, 0);
}
static V p_assv(V args)
{
	return ass(args, 1);
}
static V p_assoc(V args)
{
	return ass(args, 2);
}

/* (map f l1 l2 ...) and (for-each f l1 l2 ...): stop at the shortest. */
static V map_each(V args, bool collect)
{
	ROOTS(7); /* f, lists, result head, tail, call args head, tail, walker */
	R[0] = A0, R[1] = CDR(args), R[2] = NIL;
	for (;;) {
		rh_safepoint(vm.m);
		R[4] = NIL;
		for (R[6] = R[1]; R[6] != NIL; R[6] = CDR(R[6])) {
			if (!IS_PAIR(CAR(R[6])))
				goto out;
			V c = rhs_cons(CAR(CAR(R[6])), NIL);
			if (R[4] == NIL)
				R[4] = c;
			else
				SET(&CDR(R[5]), c);
			R[5] = c;
			SET(&CAR(R[6]), CDR(CAR(R[6]))); /* R[1] is our own copy */
		}
		V v = rhs_apply(R[0], R[4]);
		if (collect) {
			V c = rhs_cons(v, NIL);
			if (R[2] == NIL)
				R[2] = c;
			else
				SET(&CDR(R[3]), c);
			R[3] = c;
		}
	}
out:;
	V res = collect ? R[2] : UNSPEC;
	UNROOT();
	return res;
}
static V p_map(V args)
{
	return map_each(args, true);
}
static V p_for_each(V args)
{
	return map_each(args, false);
}

/* (apply f a ... lst): a fresh argument list, since frames bind it. */
static V p_apply(V args)
{
	ROOTS(5);
	R[0] = NIL, R[3] = CDR(args), R[4] = A0;
	for (; CDR(R[3]) != NIL; R[3] = CDR(R[3])) {
		V c = rhs_cons(CAR(R[3]), NIL);
		if (R[0] == NIL)
			R[0] = c;
		else
			SET(&CDR(R[1]), c);
		R[1] = c;
	}
	R[2] = CAR(R[3]);
	copy_onto(R);
	V res = rhs_apply(R[4], R[0]);
	UNROOT();
	return res;
}

/* ------------------------------------------------------------ vectors */

static size_t index_arg(V v, size_t len)
{
	if (!IS_FIX(v) || FIXVAL(v) < 0 || (size_t)FIXVAL(v) >= len)
		rhs_error("index out of range:", v);
	return (size_t)FIXVAL(v);
}

static V p_vector(V args)
{
	ROOTS(1);
	R[0] = args;
	vec_t *v = rhs_vector((size_t)list_length(args), UNSPEC);
	size_t i = 0;
	for (V l = R[0]; l != NIL; l = CDR(l))
		SET(&v->e[i++], CAR(l));
	UNROOT();
	return v;
}
static V p_make_vector(V args)
{
	int64_t n = int_arg(A0);
	if (n < 0 || n > (INT64_C(1) << 28))
		rhs_error("make-vector: bad length", A0);
	return rhs_vector((size_t)n, CDR(args) == NIL ? FALSE_V : A1);
}
static V p_vector_ref(V args)
{
	vec_t *v = check(A0, T_VEC, "a vector");
	return v->e[index_arg(A1, v->len)];
}
static V p_vector_set(V args)
{
	vec_t *v = check(A0, T_VEC, "a vector");
	SET(&v->e[index_arg(A1, v->len)], A2);
	return UNSPEC;
}
static V p_vector_length(V args)
{
	return FIX(((vec_t *)check(A0, T_VEC, "a vector"))->len);
}
static V p_vector_fill(V args)
{
	vec_t *v = check(A0, T_VEC, "a vector");
	for (size_t i = 0; i < v->len; i++)
		SET(&v->e[i], A1);
	return UNSPEC;
}
static V p_vector_to_list(V args)
{
	ROOTS(2);
	R[0] = check(A0, T_VEC, "a vector"), R[1] = NIL;
	for (size_t i = ((vec_t *)R[0])->len; i-- > 0;)
		R[1] = rhs_cons(((vec_t *)R[0])->e[i], R[1]);
	V res = R[1];
	UNROOT();
	return res;
}
static V p_list_to_vector(V args)
{
	if (list_length(A0) < 0)
		rhs_error("list->vector: not a proper list", A0);
	return p_vector(A0);
}

/* ------------------------------------------------------------ strings, symbols, chars */

static V p_string_length(V args)
{
	return FIX(((str_t *)check(A0, T_STR, "a string"))->len);
}
static V p_string_ref(V args)
{
	str_t *s = check(A0, T_STR, "a string");
	return CHR(s->b[index_arg(A1, s->len)]);
}
static V p_string_append(V args)
{
	size_t n = 0;
	for (V l = args; l != NIL; l = CDR(l))
		n += ((str_t *)check(CAR(l), T_STR, "a string"))->len;
	ROOTS(1);
	R[0] = args;
	str_t *s = rhs_make_string(n);
	n = 0;
	for (V l = R[0]; l != NIL; l = CDR(l)) {
		str_t *p = CAR(l);
		memcpy(s->b + n, p->b, p->len);
		n += p->len;
	}
	UNROOT();
	return s;
}
static V p_substring(V args)
{
	str_t *s = check(A0, T_STR, "a string");
	int64_t a = int_arg(A1), b = CDR(CDR(args)) == NIL ? (int64_t)s->len : int_arg(A2);
	if (a < 0 || b < a || (uint64_t)b > s->len)
		rhs_error("substring: bad range", CDR(args));
	ROOTS(1);
	R[0] = s;
	str_t *r = rhs_make_string((size_t)(b - a));
	memcpy(r->b, ((str_t *)R[0])->b + a, (size_t)(b - a));
	UNROOT();
	return r;
}
static int strcmp_v(V a, V b)
{
	str_t *x = check(a, T_STR, "a string"), *y = check(b, T_STR, "a string");
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->b, y->b, n);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}
static V p_string_eq(V args)
{
	return BOOL(strcmp_v(A0, A1) == 0);
}
static V p_string_lt(V args)
{
	return BOOL(strcmp_v(A0, A1) < 0);
}
static V p_string_to_symbol(V args)
{
	str_t *s = check(A0, T_STR, "a string");
	char *copy = malloc(s->len + 1); /* interning allocates: s may move */
	memcpy(copy, s->b, s->len);
	V sym = rhs_intern(copy, s->len);
	free(copy);
	return sym;
}
static V p_symbol_to_string(V args)
{
	ROOTS(1);
	R[0] = ((sym_t *)check(A0, T_SYM, "a symbol"))->name;
	str_t *r = rhs_make_string(((str_t *)R[0])->len);
	memcpy(r->b, ((str_t *)R[0])->b, r->len);
	UNROOT();
	return r;
}
static V p_char_to_integer(V args)
{
	if (!IS_CHR(A0))
		rhs_error("expected a character, got", A0);
	return FIX(CHRVAL(A0));
}
static V p_integer_to_char(V args)
{
	int64_t c = int_arg(A0);
	if (c < 0 || c > 255)
		rhs_error("integer->char: out of range", A0);
	return CHR(c);
}

/* ------------------------------------------------------------ type predicates */

static V p_nullp(V args)
{
	return BOOL(A0 == NIL);
}
static V p_pairp(V args)
{
	return BOOL(IS_PAIR(A0));
}
static V p_symbolp(V args)
{
	return BOOL(IS_SYM(A0));
}
static V p_stringp(V args)
{
	return BOOL(IS_STR(A0));
}
static V p_procedurep(V args)
{
	return BOOL(IS_CLO(A0) || IS_PRIM(A0));
}
static V p_vectorp(V args)
{
	return BOOL(IS_VEC(A0));
}
static V p_booleanp(V args)
{
	return BOOL(A0 == TRUE_V || A0 == FALSE_V);
}
static V p_charp(V args)
{
	return BOOL(IS_CHR(A0));
}

/* ------------------------------------------------------------ output, errors, system */

static V p_display(V args)
{
	rhs_print(stdout, A0, false);
	return UNSPEC;
}
static V p_write(V args)
{
	rhs_print(stdout, A0, true);
	return UNSPEC;
}
static V p_newline(V args)
{
	fputc('\n', stdout);
	return UNSPEC;
}

static V p_error(V args)
{
	char *msg = rhs_to_cstring(A0, false, 300);
	char buf[320];
	snprintf(buf, sizeof buf, "%s", msg);
	free(msg);
	fflush(stdout);
	fprintf(stderr, "error: %s", buf);
	for (V l = CDR(args); l != NIL; l = CDR(l)) {
		fputc(' ', stderr);
		rhs_print(stderr, CAR(l), true);
	}
	fputc('\n', stderr);
	g_cur_expr = NULL; /* the message is the user's own */
	rhs_errorf("raised by (error ...)");
}

static V p_exit(V args)
{
	fflush(stdout);
	exit(args == NIL ? 0 : A0 == TRUE_V ? 0 : IS_FIX(A0) ? (int)FIXVAL(A0) : 1);
}

static V p_gc(V args)
{
	rh_collect(vm.m, args != NIL && A0 != FALSE_V);
	return UNSPEC;
}

static const prim_def prims[] = {
        {"+", p_add, 0, -1},
        {"-", p_sub, 1, -1},
        {"*", p_mul, 0, -1},
        {"/", p_div, 1, -1},
        {"quotient", p_quotient, 2, 2},
        {"remainder", p_remainder, 2, 2},
        {"modulo", p_modulo, 2, 2},
        {"=", p_eq_num, 1, -1},
        {"<", p_lt, 1, -1},
        {">", p_gt, 1, -1},
        {"<=", p_le, 1, -1},
        {">=", p_ge, 1, -1},
        {"number?", p_numberp, 1, 1},
        {"integer?", p_integerp, 1, 1},
        {"zero?", p_zerop, 1, 1},
        {"positive?", p_positivep, 1, 1},
        {"negative?", p_negativep, 1, 1},
        {"even?", p_evenp, 1, 1},
        {"odd?", p_oddp, 1, 1},
        {"abs", p_abs, 1, 1},
        {"min", p_min, 1, -1},
        {"max", p_max, 1, -1},
        {"sqrt", p_sqrt, 1, 1},
        {"exact->inexact", p_inexact, 1, 1},
        {"inexact", p_inexact, 1, 1},
        {"inexact->exact", p_exact, 1, 1},
        {"exact", p_exact, 1, 1},
        {"number->string", p_number_to_string, 1, 1},
        {"string->number", p_string_to_number, 1, 1},
        {"not", p_not, 1, 1},
        {"eq?", p_eq, 2, 2},
        {"eqv?", p_eqv, 2, 2},
        {"equal?", p_equal, 2, 2},
        {"cons", p_cons, 2, 2},
        {"car", p_car, 1, 1},
        {"cdr", p_cdr, 1, 1},
        {"cadr", p_cadr, 1, 1},
        {"cddr", p_cddr, 1, 1},
        {"caar", p_caar, 1, 1},
        {"caddr", p_caddr, 1, 1},
        {"set-car!", p_set_car, 2, 2},
        {"set-cdr!", p_set_cdr, 2, 2},
        {"list", p_list, 0, -1},
        {"length", p_length, 1, 1},
        {"list?", p_listp, 1, 1},
        {"append", p_append, 0, -1},
        {"reverse", p_reverse, 1, 1},
        {"list-ref", p_list_ref, 2, 2},
        {"memq", p_memq, 2, 2},
        {"memv", p_memv, 2, 2},
        {"member", p_member, 2, 2},
        {"assq", p_assq, 2, 2},
        {"assv", p_assv, 2, 2},
        {"assoc", p_assoc, 2, 2},
        {"map", p_map, 2, -1},
        {"for-each", p_for_each, 2, -1},
        {"apply", p_apply, 2, -1},
        {"vector", p_vector, 0, -1},
        {"make-vector", p_make_vector, 1, 2},
        {"vector-ref", p_vector_ref, 2, 2},
        {"vector-set!", p_vector_set, 3, 3},
        {"vector-length", p_vector_length, 1, 1},
        {"vector-fill!", p_vector_fill, 2, 2},
        {"vector->list", p_vector_to_list, 1, 1},
        {"list->vector", p_list_to_vector, 1, 1},
        {"string-length", p_string_length, 1, 1},
        {"string-ref", p_string_ref, 2, 2},
        {"string-append", p_string_append, 0, -1},
        {"substring", p_substring, 2, 3},
        {"string=?", p_string_eq, 2, 2},
        {"string<?", p_string_lt, 2, 2},
        {"string->symbol", p_string_to_symbol, 1, 1},
        {"symbol->string", p_symbol_to_string, 1, 1},
        {"char->integer", p_char_to_integer, 1, 1},
        {"integer->char", p_integer_to_char, 1, 1},
        {"null?", p_nullp, 1, 1},
        {"pair?", p_pairp, 1, 1},
        {"symbol?", p_symbolp, 1, 1},
        {"string?", p_stringp, 1, 1},
        {"procedure?", p_procedurep, 1, 1},
        {"vector?", p_vectorp, 1, 1},
        {"boolean?", p_booleanp, 1, 1},
        {"char?", p_charp, 1, 1},
        {"display", p_display, 1, 2},
        {"write", p_write, 1, 2},
        {"newline", p_newline, 0, 1},
        {"error", p_error, 1, -1},
        {"exit", p_exit, 0, 1},
        {"gc", p_gc, 0, 1},
};

void rhs_builtins_init(void)
{
	for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++) {
		ROOTS(1);
		R[0] = rhs_sym(prims[i].name);
		V p = rhs_prim((int)i, R[0]);
		SET(&((sym_t *)R[0])->value, p);
		UNROOT();
	}
}

V rhs_call_prim(V prim, V args)
{
	const prim_def *d = &prims[FIXVAL(((prim_t *)prim)->index)];
	long n = list_length(args);
	if (n < d->min || (d->max >= 0 && n > d->max)) {
		char msg[96];
		snprintf(msg, sizeof msg, "%s: wrong number of arguments (%ld)", d->name, n);
		rhs_error(msg, UNSPEC);
	}
	return d->fn(args);
}
