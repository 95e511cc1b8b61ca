/* rhscheme's side of the heap: type registration, constructors, the symbol
 * table and error unwinding. Every constructor roots its arguments before
 * allocating, because the allocation may move them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rhs.h"

struct rhs_vm vm;
V g_symtab = NULL;
V g_cur_expr = NULL;
V g_sym[S_COUNT];
static size_t symtab_count;

static const char *const keyword_names[S_COUNT] = {
        [S_QUOTE] = "quote",   [S_IF] = "if",
        [S_DEFINE] = "define", [S_SET] = "set!",
        [S_LAMBDA] = "lambda", [S_BEGIN] = "begin",
        [S_LET] = "let",       [S_LETSTAR] = "let*",
        [S_LETREC] = "letrec", [S_LETRECSTAR] = "letrec*",
        [S_COND] = "cond",     [S_ELSE] = "else",
        [S_ARROW] = "=>",      [S_AND] = "and",
        [S_OR] = "or",         [S_WHEN] = "when",
        [S_UNLESS] = "unless", [S_DO] = "do",
};

static int register_types(rh_error *err)
{
	static const uint32_t pair_ptrs[] = {offsetof(pair_t, car), offsetof(pair_t, cdr)};
	static const uint32_t sym_ptrs[] = {offsetof(sym_t, name), offsetof(sym_t, value)};
	static const uint32_t clo_ptrs[] = {offsetof(clo_t, params), offsetof(clo_t, body),
	                                    offsetof(clo_t, env), offsetof(clo_t, name)};
	static const uint32_t prim_ptrs[] = {offsetof(prim_t, index), offsetof(prim_t, name)};
	static const uint32_t env_ptrs[] = {offsetof(env_t, vars), offsetof(env_t, vals),
	                                    offsetof(env_t, parent)};
	const rh_type_desc descs[T_COUNT] = {
	        [T_PAIR] = {.name = "scheme-pair",
	                    .layout = RH_LAYOUT_FIXED,
	                    .size = sizeof(pair_t),
	                    .ptr_offsets = pair_ptrs,
	                    .n_ptrs = 2},
	        [T_FLO] = {.name = "scheme-flonum",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(flo_t)},
	        [T_STR] = {.name = "scheme-string",
	                   .layout = RH_LAYOUT_BYTE_ARRAY,
	                   .size = offsetof(str_t, b),
	                   .elem_size = 1},
	        [T_SYM] = {.name = "scheme-symbol",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(sym_t),
	                   .ptr_offsets = sym_ptrs,
	                   .n_ptrs = 2},
	        [T_VEC] = {.name = "scheme-vector",
	                   .layout = RH_LAYOUT_REF_ARRAY,
	                   .size = offsetof(vec_t, e),
	                   .elem_size = 8},
	        [T_CLO] = {.name = "scheme-closure",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(clo_t),
	                   .ptr_offsets = clo_ptrs,
	                   .n_ptrs = 4},
	        [T_PRIM] = {.name = "scheme-primitive",
	                    .layout = RH_LAYOUT_FIXED,
	                    .size = sizeof(prim_t),
	                    .ptr_offsets = prim_ptrs,
	                    .n_ptrs = 2},
	        [T_ENV] = {.name = "scheme-env",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(env_t),
	                   .ptr_offsets = env_ptrs,
	                   .n_ptrs = 3},
	};
	for (int i = 0; i < T_COUNT; i++) {
		vm.type[i] = rh_type_register(vm.h, &descs[i], err);
		if (!vm.type[i])
			return -1;
		if (vm.type[i] != vm.type[0] + (rh_type_id)i) { /* type_of() relies on this */
			snprintf(err->msg, sizeof err->msg, "type ids are not consecutive");
			return -1;
		}
	}
	return 0;
}

int rhs_heap_init(const rh_config *cfg, bool precise, rh_error *err)
{
	vm.h = rh_heap_open(cfg, err);
	if (!vm.h)
		return -1;
	if (register_types(err) < 0)
		return -1;
	rh_set_conservative(vm.h, !precise);
	rh_global_add(vm.h, &g_symtab);
	rh_global_add(vm.h, &g_cur_expr);
	for (int i = 0; i < S_COUNT; i++)
		rh_global_add(vm.h, &g_sym[i]);
	vm.m = rh_mutator_attach(vm.h, err);
	if (!vm.m)
		return -1;
	g_symtab = rhs_vector(256, NIL);
	for (int i = 0; i < S_COUNT; i++)
		g_sym[i] = rhs_sym(keyword_names[i]);
	return 0;
}

void rhs_heap_fini(void)
{
	rh_mutator_detach(vm.m);
	rh_heap_close(vm.h);
}

static void *alloc(unsigned t, size_t length, bool array)
{
	void *p = array ? rh_alloc_array(vm.m, vm.type[t], length) : rh_alloc(vm.m, vm.type[t]);
	if (!p)
		rhs_errorf("out of memory: %s", rh_last_error()->msg);
	return p;
}

V rhs_cons(V a, V b)
{
	ROOTS(2);
	R[0] = a;
	R[1] = b;
	pair_t *p = alloc(T_PAIR, 0, false);
	SET(&p->car, R[0]);
	SET(&p->cdr, R[1]);
	UNROOT();
	return p;
}

V rhs_flonum(double d)
{
	flo_t *f = alloc(T_FLO, 0, false);
	f->d = d;
	return f;
}

V rhs_make_string(size_t n)
{
	return alloc(T_STR, n, true);
}

V rhs_string(const char *b, size_t n)
{
	str_t *s = rhs_make_string(n);
	memcpy(s->b, b, n);
	return s;
}

V rhs_vector(size_t n, V fill)
{
	ROOTS(1);
	R[0] = fill;
	vec_t *v = alloc(T_VEC, n, true);
	for (size_t i = 0; i < n; i++)
		SET(&v->e[i], R[0]);
	UNROOT();
	return v;
}

V rhs_closure(V params, V body, V env, V name)
{
	ROOTS(4);
	R[0] = params, R[1] = body, R[2] = env, R[3] = name;
	clo_t *c = alloc(T_CLO, 0, false);
	SET(&c->params, R[0]);
	SET(&c->body, R[1]);
	SET(&c->env, R[2]);
	SET(&c->name, R[3]);
	UNROOT();
	return c;
}

V rhs_env(V vars, V vals, V parent)
{
	ROOTS(3);
	R[0] = vars, R[1] = vals, R[2] = parent;
	env_t *e = alloc(T_ENV, 0, false);
	SET(&e->vars, R[0]);
	SET(&e->vals, R[1]);
	SET(&e->parent, R[2]);
	UNROOT();
	return e;
}

V rhs_prim(int index, V name)
{
	ROOTS(1);
	R[0] = name;
	prim_t *p = alloc(T_PRIM, 0, false);
	SET(&p->index, FIX(index));
	SET(&p->name, R[0]);
	UNROOT();
	return p;
}

/* The symbol table hashes names (not addresses), so it survives moves. */
static uint64_t hash_bytes(const char *b, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)b[i]) * 1099511628211ull;
	return h;
}

/* Relink every bucket pair into a table twice the size; the only
 * allocation is the new vector, before any relinking starts. */
static void symtab_grow(void)
{
	size_t old_n = ((vec_t *)g_symtab)->len;
	V fresh = rhs_vector(old_n * 2, NIL);
	vec_t *old = g_symtab, *nv = fresh;
	for (size_t i = 0; i < old_n; i++) {
		V p = old->e[i];
		while (p != NIL) {
			V next = CDR(p);
			str_t *name = ((sym_t *)CAR(p))->name;
			size_t b = hash_bytes(name->b, name->len) & (nv->len - 1);
			SET(&CDR(p), nv->e[b]);
			SET(&nv->e[b], p);
			p = next;
		}
	}
	g_symtab = fresh;
}

V rhs_intern(const char *b, size_t n)
{
	uint64_t hash = hash_bytes(b, n);
	vec_t *t = g_symtab;
	for (V p = t->e[hash & (t->len - 1)]; p != NIL; p = CDR(p)) {
		str_t *name = ((sym_t *)CAR(p))->name;
		if (name->len == n && memcmp(name->b, b, n) == 0)
			return CAR(p);
	}
	if (symtab_count >= 2 * t->len)
		symtab_grow();
	ROOTS(1);
	R[0] = rhs_string(b, n);
	sym_t *s = alloc(T_SYM, 0, false);
	SET(&s->name, R[0]);
	SET(&s->value, UNBOUND);
	R[0] = s;
	V cell = rhs_cons(R[0], NIL);
	t = g_symtab;
	size_t bucket = hash & (t->len - 1);
	SET(&CDR(cell), t->e[bucket]);
	SET(&t->e[bucket], cell);
	symtab_count++;
	V sym = R[0];
	UNROOT();
	return sym;
}

V rhs_sym(const char *name)
{
	return rhs_intern(name, strlen(name));
}

/* Pop the frames of the functions being unwound while their stack is still
 * intact, then jump back to the REPL or script loop. */
_Noreturn static void unwind(void)
{
#if !RHS_CONSERVATIVE
	while (vm.top != vm.error_top) {
		rh_frame *f = vm.top;
		vm.top = f->prev;
		rh_pop_frame(vm.m, f);
	}
#endif
	vm.depth = vm.error_depth;
	longjmp(*vm.on_error, 1);
}

_Noreturn void rhs_error(const char *msg, V irritant)
{
	fflush(stdout); /* keep the program's output before the message */
	fprintf(stderr, "error: %s", msg);
	if (irritant != UNSPEC) {
		fputc(' ', stderr);
		rhs_print(stderr, irritant, true);
	}
	fputc('\n', stderr);
	if (g_cur_expr) {
		char *s = rhs_to_cstring(g_cur_expr, true, 200);
		fprintf(stderr, "  in expression: %s\n", s);
		free(s);
	}
	rhs_source_print(stderr);
	unwind();
}

_Noreturn void rhs_errorf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	rhs_error(buf, UNSPEC);
}
