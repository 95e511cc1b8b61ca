/* rhscheme: a small Scheme interpreter embedded on librheap.
 *
 * Values are tagged words. Heap objects are 8-aligned addresses (low three
 * bits zero); every immediate keeps its low three bits non-zero so that the
 * collector never mistakes it for a reference:
 *   fixnum     ...n1    (n << 1) | 1
 *   character  ..c010   (c << 3) | 2
 *   constants  ..k110   #f #t '() unspecified eof unbound
 *
 * Roots: in the default (precise) build, every C function that keeps a
 * value across an allocation holds it in R[], a shadow-stack frame pushed
 * with ROOTS(n). With RHS_CONSERVATIVE=1, ROOTS(n) is a plain local array
 * and the collector finds (and pins) it by scanning the native stack.
 */
#ifndef RHS_H
#define RHS_H

#include <rheap/rheap.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifndef RHS_CONSERVATIVE
#define RHS_CONSERVATIVE 0
#endif

typedef void *V;

#define FIX(n) ((V)(((uintptr_t)(intptr_t)(n) << 1) | 1))
#define FIXVAL(v) ((intptr_t)(uintptr_t)(v) >> 1)
#define IS_FIX(v) (((uintptr_t)(v)&1) != 0)
#define CHR(c) ((V)(((uintptr_t)(unsigned char)(c) << 3) | 2))
#define CHRVAL(v) ((int)((uintptr_t)(v) >> 3))
#define IS_CHR(v) (((uintptr_t)(v)&7) == 2)
#define CONST(k) ((V)(((uintptr_t)(k) << 3) | 6))
#define FALSE_V CONST(0)
#define TRUE_V CONST(1)
#define NIL CONST(2)
#define UNSPEC CONST(3)
#define EOF_V CONST(4)
#define UNBOUND CONST(5)
#define BOOL(b) ((b) ? TRUE_V : FALSE_V)
#define IS_PTR(v) ((((uintptr_t)(v)&7) == 0) && (v) != NULL)

/* Heap object layouts; rheap's header word comes first. */
typedef struct pair_t {
	uint64_t hdr;
	V car, cdr;
} pair_t;
typedef struct flo_t {
	uint64_t hdr;
	double d;
} flo_t;
typedef struct str_t {
	uint64_t hdr;
	uint64_t len; /* rheap's array length word */
	char b[];
} str_t;
typedef struct sym_t {
	uint64_t hdr;
	V name;  /* a string */
	V value; /* global binding, UNBOUND if none */
} sym_t;
typedef struct vec_t {
	uint64_t hdr;
	uint64_t len;
	V e[];
} vec_t;
typedef struct clo_t {
	uint64_t hdr;
	V params, body, env, name;
} clo_t;
typedef struct prim_t {
	uint64_t hdr;
	V index; /* fixnum into the primitive table */
	V name;
} prim_t;
/* A lexical frame: vars is the parameter list (possibly improper, for a
 * rest argument), vals the argument list itself; internal defines prepend
 * to both. The global environment is NIL: globals live in symbols. */
typedef struct env_t {
	uint64_t hdr;
	V vars, vals, parent;
} env_t;

enum { T_PAIR, T_FLO, T_STR, T_SYM, T_VEC, T_CLO, T_PRIM, T_ENV, T_COUNT };

struct rhs_vm {
	rh_heap *h;
	rh_mutator *m;
	rh_type_id type[T_COUNT];
	rh_frame *top; /* innermost shadow-stack frame, for error unwinding */
	int depth, max_depth;
	jmp_buf *on_error;
	rh_frame *error_top; /* frames above this are popped on error */
	int error_depth;
	bool repl;
};
extern struct rhs_vm vm;

/* Roots held outside any frame (rh_global_add'ed). */
extern V g_symtab;   /* vector of buckets (lists of symbols) */
extern V g_cur_expr; /* the expression being evaluated, for error messages */
extern V g_sym[];    /* the syntactic keywords */
enum {
	S_QUOTE,
	S_IF,
	S_DEFINE,
	S_SET,
	S_LAMBDA,
	S_BEGIN,
	S_LET,
	S_LETSTAR,
	S_LETREC,
	S_LETRECSTAR,
	S_COND,
	S_ELSE,
	S_ARROW,
	S_AND,
	S_OR,
	S_WHEN,
	S_UNLESS,
	S_DO,
	S_COUNT
};

/* Shadow-stack frames. R[] is the function's root array. */
#if RHS_CONSERVATIVE
#define ROOTS(n) V R[n] = {0}
#define UNROOT() ((void)0)
#else
#define ROOTS(n)                                                                                   \
	V R[n] = {0};                                                                              \
	rh_frame rf_;                                                                              \
	rhs_push(&rf_, R, n)
#define UNROOT() rhs_pop(&rf_)
#endif

static inline void rhs_push(rh_frame *f, V *slots, size_t n)
{
	rh_push_frame(vm.m, f, slots, n);
	vm.top = f;
}
static inline void rhs_pop(rh_frame *f)
{
	vm.top = f->prev;
	rh_pop_frame(vm.m, f);
}

static inline unsigned type_of(V v)
{
	/* rhs_heap_init registers the types with consecutive ids */
	uint32_t t = (uint32_t)((*(uint64_t *)v >> RH_HDR_TYPE_SHIFT) & 0xffff) - vm.type[0];
	return t < T_COUNT ? t : T_COUNT;
}
static inline bool is_type(V v, unsigned t)
{
	return IS_PTR(v) && ((*(uint64_t *)v >> RH_HDR_TYPE_SHIFT) & 0xffff) == vm.type[t];
}
#define IS_PAIR(v) is_type(v, T_PAIR)
#define IS_SYM(v) is_type(v, T_SYM)
#define IS_STR(v) is_type(v, T_STR)
#define IS_FLO(v) is_type(v, T_FLO)
#define IS_VEC(v) is_type(v, T_VEC)
#define IS_CLO(v) is_type(v, T_CLO)
#define IS_PRIM(v) is_type(v, T_PRIM)
#define CAR(v) (((pair_t *)(v))->car)
#define CDR(v) (((pair_t *)(v))->cdr)

/* Barriered store into a field of a heap object. */
#define SET(obj_field_addr, val) rh_write_ref(vm.m, (void **)(obj_field_addr), (val))

/* heap.c */
int rhs_heap_init(const rh_config *cfg, bool precise, rh_error *err);
void rhs_heap_fini(void);
V rhs_cons(V a, V b);
V rhs_flonum(double d);
V rhs_string(const char *b, size_t n); /* b must not point into the heap */
V rhs_make_string(size_t n);
V rhs_vector(size_t n, V fill);
V rhs_closure(V params, V body, V env, V name);
V rhs_env(V vars, V vals, V parent);
V rhs_prim(int index, V name);
V rhs_intern(const char *b, size_t n);
V rhs_sym(const char *name);
_Noreturn void rhs_error(const char *msg, V irritant);
_Noreturn void rhs_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* source.c: the file and line of the top-level datum being run. */
void rhs_source_begin(const char *name);
void rhs_source_buffer(const char *buf);
void rhs_source_next(size_t pos, size_t len);
void rhs_source_done(size_t len);
void rhs_source_print(FILE *f);

/* interrupt.c: Ctrl-C returns to the REPL's prompt. */
extern volatile sig_atomic_t rhs_interrupted;
void rhs_sigint_block(void);
void rhs_sigint_take(bool repl);
_Noreturn void rhs_interrupt_raise(void);
static inline void rhs_interrupt_poll(void)
{
	if (__builtin_expect(rhs_interrupted, 0))
		rhs_interrupt_raise();
}

/* read.c: parse one datum from *pos in buf; EOF_V at the end. */
V rhs_read(const char *buf, size_t len, size_t *pos);

/* print.c */
void rhs_print(FILE *f, V v, bool write);
char *rhs_to_cstring(V v, bool write, size_t max); /* malloc'd */

/* eval.c */
V rhs_eval(V x, V env);
V rhs_apply(V f, V args);

/* builtins.c */
void rhs_builtins_init(void);
V rhs_call_prim(V prim, V args);
double rhs_num(V v, const char *who);
bool rhs_eqv(V a, V b);

#endif
