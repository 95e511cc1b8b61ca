/* The evaluator: walks the S-expression directly. Tail positions loop
 * inside one rhs_eval() activation (proper tail calls in constant C stack);
 * everything live across a call that may allocate sits in R[]. */
#include "rhs.h"

static V nthcdr(V x, int n)
{
	for (int i = 0; i < n; i++) {
		if (!IS_PAIR(x))
			rhs_error("bad syntax", g_cur_expr);
		x = CDR(x);
	}
	return x;
}

static V nth(V x, int n)
{
	x = nthcdr(x, n);
	if (!IS_PAIR(x))
		rhs_error("bad syntax", g_cur_expr);
	return CAR(x);
}

static V lookup(V sym, V env)
{
	for (; env != NIL; env = ((env_t *)env)->parent) {
		V vars = ((env_t *)env)->vars, vals = ((env_t *)env)->vals;
		for (; IS_PAIR(vars); vars = CDR(vars), vals = CDR(vals))
			if (CAR(vars) == sym)
				return CAR(vals);
		if (vars == sym)
			return vals; /* rest parameter */
	}
	V v = ((sym_t *)sym)->value;
	if (v == UNBOUND)
		rhs_error("unbound variable", sym);
	return v;
}

/* The heap field holding sym's binding (for set!). */
static V *binding_slot(V sym, V env)
{
	for (; env != NIL; env = ((env_t *)env)->parent) {
		V vars = ((env_t *)env)->vars;
		V *vals = &((env_t *)env)->vals;
		for (; IS_PAIR(vars); vars = CDR(vars), vals = &CDR(*vals))
			if (CAR(vars) == sym)
				return &CAR(*vals);
		if (vars == sym)
			return vals;
	}
	if (((sym_t *)sym)->value == UNBOUND)
		rhs_error("set!: unbound variable", sym);
	return &((sym_t *)sym)->value;
}

static void define_var(V sym, V val, V env)
{
	if (!IS_SYM(sym))
		rhs_error("define: not a variable name", sym);
	if (env == NIL) {
		SET(&((sym_t *)sym)->value, val);
		return;
	}
	V vars = ((env_t *)env)->vars, vals = ((env_t *)env)->vals;
	for (; IS_PAIR(vars); vars = CDR(vars), vals = CDR(vals))
		if (CAR(vars) == sym) {
			SET(&CAR(vals), val);
			return;
		}
	ROOTS(3);
	R[0] = sym, R[1] = val, R[2] = env;
	V c = rhs_cons(R[0], ((env_t *)R[2])->vars);
	SET(&((env_t *)R[2])->vars, c);
	c = rhs_cons(R[1], ((env_t *)R[2])->vals);
	SET(&((env_t *)R[2])->vals, c);
	UNROOT();
}

/* A frame binding a closure's parameters to args, after an arity check. */
static V bind(V clo, V args)
{
	V p = ((clo_t *)clo)->params, a = args;
	for (; IS_PAIR(p); p = CDR(p), a = CDR(a))
		if (!IS_PAIR(a))
			rhs_error("too few arguments to", clo);
	if (p == NIL && a != NIL)
		rhs_error("too many arguments to", clo);
	return rhs_env(((clo_t *)clo)->params, args, ((clo_t *)clo)->env);
}

/* The names of a let's bindings, as a fresh list. */
static V binding_names(V bindings)
{
	ROOTS(3); /* bindings, head, tail */
	R[0] = bindings, R[1] = NIL;
	for (; IS_PAIR(R[0]); R[0] = CDR(R[0])) {
		V b = CAR(R[0]);
		if (!IS_PAIR(b) || !IS_SYM(CAR(b)))
			rhs_error("bad binding", b);
		V c = rhs_cons(CAR(b), NIL);
		if (R[1] == NIL)
			R[1] = c;
		else
			SET(&CDR(R[2]), c);
		R[2] = c;
	}
	V names = R[1];
	UNROOT();
	return names;
}

/* Evaluate element `index` of every binding (the init or the step); a
 * binding without one keeps its value from `keep` (for do). */
static V binding_values(V bindings, int index, V env, V keep)
{
	ROOTS(5); /* bindings, env, head, tail, keep */
	R[0] = bindings, R[1] = env, R[2] = NIL, R[4] = keep;
	for (; IS_PAIR(R[0]); R[0] = CDR(R[0])) {
		V rest = nthcdr(CAR(R[0]), index);
		V v;
		if (IS_PAIR(rest))
			v = rhs_eval(CAR(rest), R[1]);
		else if (R[4] != NIL)
			v = CAR(R[4]);
		else
			rhs_error("bad binding", CAR(R[0]));
		if (R[4] != NIL)
			R[4] = CDR(R[4]);
		V c = rhs_cons(v, NIL);
		if (R[2] == NIL)
			R[2] = c;
		else
			SET(&CDR(R[3]), c);
		R[3] = c;
	}
	V vals = R[2];
	UNROOT();
	return vals;
}

static int keyword(V sym)
{
	for (int i = 0; i < S_COUNT; i++)
		if (g_sym[i] == sym)
			return i;
	return -1;
}

static inline bool truthy(V v)
{
	return v != FALSE_V;
}

/* Evaluate an operand without recursing for the common trivial cases. */
static inline V operand(V x, V env)
{
	if (IS_SYM(x))
		return lookup(x, env);
	if (!IS_PAIR(x))
		return x;
	return rhs_eval(x, env);
}

V rhs_eval(V x, V env)
{
	ROOTS(6); /* 0 expression, 1 environment, 2..5 working values */
	R[0] = x, R[1] = env;
	if (++vm.depth > vm.max_depth)
		rhs_errorf("recursion too deep (more than %d nested evaluations)", vm.max_depth);
	V res;
	for (;;) {
		rh_safepoint(vm.m);
		rhs_interrupt_poll();
		x = R[0];
		if (IS_SYM(x)) {
			res = lookup(x, R[1]);
			break;
		}
		if (!IS_PAIR(x)) {
			if (x == NIL)
				rhs_error("cannot evaluate the empty combination", x);
			res = x;
			break;
		}
		g_cur_expr = x;
		int k = IS_SYM(CAR(x)) ? keyword(CAR(x)) : -1;
		switch (k) {
		case S_QUOTE:
			res = nth(x, 1);
			goto done;
		case S_IF:
			R[2] = rhs_eval(nth(x, 1), R[1]);
			if (truthy(R[2])) {
				R[0] = nth(R[0], 2);
			} else {
				V alt = nthcdr(R[0], 3);
				if (alt == NIL) {
					res = UNSPEC;
					goto done;
				}
				R[0] = CAR(alt);
			}
			continue;
		case S_DEFINE: {
			V target = nth(x, 1);
			if (IS_PAIR(target)) {
				R[2] = rhs_closure(CDR(target), nthcdr(x, 2), R[1], CAR(target));
				define_var(CAR(nth(R[0], 1)), R[2], R[1]);
			} else {
				R[2] = rhs_eval(nth(x, 2), R[1]);
				if (IS_CLO(R[2]) && ((clo_t *)R[2])->name == FALSE_V &&
				    IS_SYM(nth(R[0], 1)))
					SET(&((clo_t *)R[2])->name, nth(R[0], 1));
				define_var(nth(R[0], 1), R[2], R[1]);
			}
			res = UNSPEC;
			goto done;
		}
		case S_SET: {
			R[2] = rhs_eval(nth(x, 2), R[1]);
			V sym = nth(R[0], 1);
			if (!IS_SYM(sym))
				rhs_error("set!: not a variable", sym);
			SET(binding_slot(sym, R[1]), R[2]);
			res = UNSPEC;
			goto done;
		}
		case S_LAMBDA:
			if (!IS_PAIR(nthcdr(x, 2)))
				rhs_error("lambda: empty body", x);
			res = rhs_closure(nth(x, 1), nthcdr(x, 2), R[1], FALSE_V);
			goto done;
		case S_BEGIN:
			R[2] = CDR(x);
			goto seq;
		case S_LET:
			if (IS_SYM(nth(x, 1))) { /* named let */
				R[2] = binding_names(nth(x, 2));
				R[3] = rhs_cons(nth(R[0], 1), NIL);
				R[4] = rhs_cons(UNSPEC, NIL);
				R[3] = rhs_env(R[3], R[4], R[1]);
				R[4] = rhs_closure(R[2], nthcdr(R[0], 3), R[3], nth(R[0], 1));
				SET(&CAR(((env_t *)R[3])->vals), R[4]);
				R[5] = binding_values(nth(R[0], 2), 1, R[1], NIL);
				R[1] = bind(R[4], R[5]);
				R[2] = nthcdr(R[0], 3);
				goto seq;
			}
			R[2] = binding_names(nth(x, 1));
			R[3] = binding_values(nth(R[0], 1), 1, R[1], NIL);
			R[1] = rhs_env(R[2], R[3], R[1]);
			R[2] = nthcdr(R[0], 2);
			goto seq;
		case S_LETSTAR:
		case S_LETREC:
		case S_LETRECSTAR:
			/* One frame, extended binding by binding: let* scoping, and
			 * closures in the inits see later bindings (letrec). */
			R[1] = rhs_env(NIL, NIL, R[1]);
			for (R[2] = nth(R[0], 1); IS_PAIR(R[2]); R[2] = CDR(R[2])) {
				R[3] = rhs_eval(nth(CAR(R[2]), 1), R[1]);
				define_var(CAR(CAR(R[2])), R[3], R[1]);
			}
			R[2] = nthcdr(R[0], 2);
			goto seq;
		case S_COND:
			for (R[2] = CDR(x); IS_PAIR(R[2]); R[2] = CDR(R[2])) {
				V clause = CAR(R[2]);
				if (!IS_PAIR(clause))
					rhs_error("cond: bad clause", clause);
				if (CAR(clause) == g_sym[S_ELSE]) {
					R[2] = CDR(clause);
					goto seq;
				}
				R[3] = rhs_eval(CAR(clause), R[1]);
				if (!truthy(R[3]))
					continue;
				clause = CAR(R[2]);
				if (CDR(clause) == NIL) {
					res = R[3];
					goto done;
				}
				if (nth(clause, 1) == g_sym[S_ARROW]) {
					R[4] = rhs_eval(nth(clause, 2), R[1]);
					R[5] = rhs_cons(R[3], NIL);
					res = rhs_apply(R[4], R[5]);
					goto done;
				}
				R[2] = CDR(clause);
				goto seq;
			}
			res = UNSPEC;
			goto done;
		case S_AND:
		case S_OR:
			R[2] = CDR(x);
			if (R[2] == NIL) {
				res = BOOL(k == S_AND);
				goto done;
			}
			for (; IS_PAIR(CDR(R[2])); R[2] = CDR(R[2])) {
				V v = rhs_eval(CAR(R[2]), R[1]);
				if (truthy(v) != (k == S_AND)) {
					res = v;
					goto done;
				}
			}
			R[0] = CAR(R[2]);
			continue;
		case S_WHEN:
		case S_UNLESS:
			R[2] = rhs_eval(nth(x, 1), R[1]);
			if (truthy(R[2]) != (k == S_WHEN)) {
				res = UNSPEC;
				goto done;
			}
			R[2] = nthcdr(R[0], 2);
			goto seq;
		case S_DO:
			R[2] = binding_names(nth(x, 1));
			R[3] = binding_values(nth(R[0], 1), 1, R[1], NIL);
			R[4] = rhs_env(R[2], R[3], R[1]);
			for (;;) {
				rh_safepoint(vm.m);
				if (truthy(rhs_eval(nth(nth(R[0], 2), 0), R[4])))
					break;
				for (R[5] = nthcdr(R[0], 3); IS_PAIR(R[5]); R[5] = CDR(R[5]))
					rhs_eval(CAR(R[5]), R[4]);
				/* a fresh frame per iteration, as R7RS specifies */
				R[3] = binding_values(nth(R[0], 1), 2, R[4], ((env_t *)R[4])->vals);
				R[4] = rhs_env(R[2], R[3], R[1]);
			}
			R[1] = R[4];
			R[2] = CDR(nth(R[0], 2));
			goto seq;
		default:
			break;
		}

		/* Application: operator, then operands left to right. */
		R[2] = operand(CAR(x), R[1]);
		R[3] = NIL;
		for (R[5] = CDR(R[0]); IS_PAIR(R[5]); R[5] = CDR(R[5])) {
			V c = rhs_cons(operand(CAR(R[5]), R[1]), NIL);
			if (R[3] == NIL)
				R[3] = c;
			else
				SET(&CDR(R[4]), c);
			R[4] = c;
		}
		if (R[5] != NIL)
			rhs_error("improper argument list", R[0]);
		g_cur_expr = R[0];
		if (IS_PRIM(R[2])) {
			res = rhs_call_prim(R[2], R[3]);
			goto done;
		}
		if (!IS_CLO(R[2]))
			rhs_error("not a procedure:", R[2]);
		R[1] = bind(R[2], R[3]);
		R[2] = ((clo_t *)R[2])->body;
		/* fall into seq: the body, last expression in tail position */
	seq:
		if (R[2] == NIL) {
			res = UNSPEC;
			goto done;
		}
		for (; IS_PAIR(CDR(R[2])); R[2] = CDR(R[2]))
			rhs_eval(CAR(R[2]), R[1]);
		R[0] = CAR(R[2]);
	}
done:
	vm.depth--;
	UNROOT();
	return res;
}

V rhs_apply(V f, V args)
{
	if (IS_PRIM(f))
		return rhs_call_prim(f, args);
	if (!IS_CLO(f))
		rhs_error("not a procedure:", f);
	ROOTS(2);
	R[0] = ((clo_t *)f)->body;
	R[1] = bind(f, args);
	for (; IS_PAIR(CDR(R[0])); R[0] = CDR(R[0]))
		rhs_eval(CAR(R[0]), R[1]);
	V res = rhs_eval(CAR(R[0]), R[1]);
	UNROOT();
	return res;
}
