/* API misuse in debug builds (-Ddebug_checks=true): each misuse runs in a
 * forked child that must die of SIGABRT with a message on stderr naming
 * rheap and the misuse. A control child that only does legal things must
 * exit normally, so the test can tell "aborts on misuse" from "always
 * aborts".
 *
 * Built and registered only when debug checks are compiled in; run by hand
 * in a build without them it reports a skip (exit 77), never a pass. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "th.h"

#ifndef RH_DEBUG_CHECKS
#define RH_DEBUG_CHECKS 0
#endif

static rh_heap *heap;
static rh_mutator *mut;
static rh_type_id t_node;
static void *global_slot;

static void *alloc_in_thread(void *arg)
{
	(void)arg;
	(void)rh_alloc(mut, t_node);
	return NULL;
}

static void *barrier_in_thread(void *arg)
{
	rh_write_ref(mut, (void **)arg + 1, NULL);
	return NULL;
}

static void run_in_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	if (pthread_create(&t, NULL, fn, arg) == 0)
		pthread_join(t, NULL);
}

static void m_alloc_other_thread(void)
{
	run_in_thread(alloc_in_thread, NULL);
}

static void m_barrier_other_thread(void)
{
	void *n = rh_alloc(mut, t_node);
	global_slot = n;
	run_in_thread(barrier_in_thread, n);
}

static void m_detach_with_frame(void)
{
	static void *slots[2];
	static rh_frame f;
	rh_push_frame(mut, &f, slots, 2);
	rh_mutator_detach(mut);
}

static void m_pop_out_of_order(void)
{
	static void *s1[1], *s2[1];
	static rh_frame f1, f2;
	rh_push_frame(mut, &f1, s1, 1);
	rh_push_frame(mut, &f2, s2, 1);
	rh_pop_frame(mut, &f1);
}

static void m_pop_unpushed(void)
{
	static rh_frame f;
	rh_pop_frame(mut, &f);
}

static void m_alloc_bad_type(void)
{
	(void)rh_alloc(mut, 999);
}

static void m_alloc_filler_type(void)
{
	(void)rh_alloc(mut, 0);
}

static void m_unpark_unparked(void)
{
	rh_mutator_unpark(mut);
}

static void m_park_twice(void)
{
	rh_mutator_park(mut);
	rh_mutator_park(mut);
}

static void m_alloc_parked(void)
{
	rh_mutator_park(mut);
	(void)rh_alloc(mut, t_node);
}

static void m_collect_parked(void)
{
	rh_mutator_park(mut);
	rh_collect(mut, 0);
}

static void m_detach_parked(void)
{
	rh_mutator_park(mut);
	rh_mutator_detach(mut);
}

static void m_double_detach(void)
{
	rh_mutator_detach(mut);
	rh_mutator_detach(mut);
}

static void m_close_attached(void)
{
	rh_heap_close(heap);
}

/* rh_write_ref is for heap fields only; roots are stored into directly. */
static void m_barrier_frame_slot(void)
{
	static void *slots[2];
	static rh_frame f;
	rh_push_frame(mut, &f, slots, 2);
	rh_write_ref(mut, &slots[1], rh_alloc(mut, t_node));
}

static void m_barrier_global(void)
{
	rh_global_add(heap, &global_slot);
	rh_write_ref(mut, &global_slot, rh_alloc(mut, t_node));
}

static void m_global_in_heap(void)
{
	void **n = rh_alloc(mut, t_node);
	rh_global_add(heap, n + 1);
}

/* Legal use of everything the misuses above get wrong. */
static void m_control(void)
{
	static void *slots[2];
	static rh_frame f, f2;
	rh_push_frame(mut, &f, slots, 2);
	rh_push_frame(mut, &f2, slots + 1, 1);
	void *n = rh_alloc(mut, t_node);
	slots[0] = n; /* a frame slot */
	rh_global_add(heap, &global_slot);
	global_slot = n;                      /* a global */
	rh_write_ref(mut, (void **)n + 1, n); /* a heap object's field */
	rh_write_ref(mut, (void **)n + 1, NULL);
	rh_pop_frame(mut, &f2);
	rh_mutator_park(mut);
	rh_mutator_unpark(mut);
	rh_collect(mut, 0);
	rh_pop_frame(mut, &f);
	rh_mutator_detach(mut);
	rh_global_remove(heap, &global_slot);
	rh_heap_close(heap);
}

struct misuse {
	const char *name;
	void (*fn)(void);
	const char *words[4]; /* the message must contain one of these */
};

static const struct misuse cases[] = {
        {"allocation from another thread", m_alloc_other_thread, {"thread"}},
        {"write barrier from another thread", m_barrier_other_thread, {"thread"}},
        {"rh_write_ref on a frame slot", m_barrier_frame_slot, {"heap", "slot"}},
        {"rh_write_ref on a global slot", m_barrier_global, {"heap", "slot"}},
        {"rh_global_add on a heap field", m_global_in_heap, {"heap"}},
        {"detach with a frame pushed", m_detach_with_frame, {"frame"}},
        {"pop_frame out of order", m_pop_out_of_order, {"frame", "order", "lifo"}},
        {"pop_frame of a frame never pushed", m_pop_unpushed, {"frame"}},
        {"rh_alloc with an unregistered type id", m_alloc_bad_type, {"type"}},
        {"rh_alloc with the filler type id", m_alloc_filler_type, {"type"}},
        {"unpark when not parked", m_unpark_unparked, {"park"}},
        {"park twice", m_park_twice, {"park"}},
        {"allocation while parked", m_alloc_parked, {"park"}},
        {"collect while parked", m_collect_parked, {"park"}},
        {"detach while parked", m_detach_parked, {"park"}},
        {"double detach", m_double_detach, {"detach", "attach", "mutator"}},
        {"heap close with a mutator attached", m_close_attached, {"attach", "mutator"}},
};

static _Noreturn void child(void (*fn)(void), int err_fd)
{
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core);
	dup2(err_fd, 2);
	alarm(20); /* a hang is a failure, not a stuck test */
	rh_config cfg;
	th_config(&cfg, 64, 256);
	rh_error err = {0};
	heap = rh_heap_open(&cfg, &err);
	if (!heap) {
		fprintf(stderr, "child: open failed: %s\n", err.msg);
		_exit(3);
	}
	static const uint32_t ptrs[] = {8};
	rh_type_desc d = {.name = "node", .layout = RH_LAYOUT_FIXED, .size = 24};
	d.ptr_offsets = ptrs;
	d.n_ptrs = 1;
	t_node = rh_type_register(heap, &d, &err);
	mut = rh_mutator_attach(heap, &err);
	if (!t_node || !mut) {
		fprintf(stderr, "child: setup failed: %s\n", err.msg);
		_exit(3);
	}
	fn();
	fprintf(stderr, "child: the call returned\n");
	fflush(stderr);
	_exit(0);
}

/* Run fn in a child; return its wait status and its stderr in buf. */
static int run_child(void (*fn)(void), char *buf, size_t cap)
{
	int p[2];
	REQUIRE(pipe(p) == 0);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		child(fn, p[1]);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t r;
	while ((r = read(p[0], buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(p[0]);
	int st = 0;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	return st;
}

int main(void)
{
	if (!RH_DEBUG_CHECKS) {
		printf("built without debug checks (RH_DEBUG_CHECKS=0): nothing to test, "
		       "skipped\n");
		return 77;
	}
	static char out[16384];
	/* The children die by design: their live-stats files would stay in
	 * the state directory (/tmp/rheap-UID), and they test nothing here. */
	setenv("RHEAP_LIVE_STATS", "off", 1);

	int st = run_child(m_control, out, sizeof out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "legal use did not exit normally (status %#x); stderr:\n%s", st, out);

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct misuse *c = &cases[i];
		st = run_child(c->fn, out, sizeof out);
		int aborted = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
		int named = strcasestr(out, "rheap") != NULL;
		int says = 0;
		for (int w = 0; w < 4 && c->words[w]; w++)
			says |= strcasestr(out, c->words[w]) != NULL;
		CHECK(aborted, "%s: not aborted (%s %d); stderr:\n%s", c->name,
		      WIFSIGNALED(st) ? "signal" : "exit",
		      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), out);
		CHECK(named && says, "%s: message does not name rheap and '%s':\n%s", c->name,
		      c->words[0], out);
	}
	return check_done();
}
