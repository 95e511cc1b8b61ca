/* Faults served by the faulting thread (cache.faults "signal",
 * docs/swap.md, "Waiting").
 *
 * - A read of an evicted page brings it back CLEAN, a write DIRTY (in one
 *   signal where the architecture says it was a write), a first write to
 *   a CLEAN page makes it DIRTY; the bytes are the ones written before.
 * - A system call given a page that is not resident fails with EFAULT
 *   (the documented cost of this mode) and loses nothing: the page stays
 *   evicted and reads back intact.
 * - A SIGBUS outside the heap reaches the handler installed before the
 *   heap was opened.
 * - The heap's slot in the handler's registry is released at close: a
 *   second heap opened after it serves its faults too.
 *
 * usage: test-swap-signal TRACERD PROVIDER
 */
#include <setjmp.h>
#include <sys/mman.h>

#include "runtime/internal.h"
#include "swap/internal.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"

#define PAGES 8

static sigjmp_buf jump;
static volatile sig_atomic_t outside_hits;
static void *volatile outside_addr;

static void on_alarm(int sig)
{
	static const char msg[] = "not ok: stuck (a fault served forever?)\n";
	ssize_t w = write(1, msg, sizeof msg - 1);
	(void)w;
	(void)sig;
	_exit(1);
}

/* The embedder's own SIGBUS handler, installed before the heap. */
static void on_outside(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)ctx;
	outside_hits++;
	outside_addr = si->si_addr;
	siglongjmp(jump, 1);
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 151 + (i >> 12) * 13 + 5);
}

static bool intact(const uint8_t *p, size_t first, size_t n)
{
	for (size_t i = first; i < first + n; i++)
		if (p[i] != pattern(i))
			return false;
	return true;
}

static uint8_t state(rh_swap *s, const uint8_t *p)
{
	return rh_swap_page_state(s, (uintptr_t)p);
}

static rh_heap *open_heap(cluster *c, const char *tracerd, const char *provider)
{
	if (cluster_start(c, tracerd, provider, 2, 64, 0.25, 3000, NULL) < 0) {
		perror("cluster");
		return NULL;
	}
	rh_error err;
	rh_heap *h = cluster_open(c, &err);
	CHECK(h != NULL, "open a disaggregated heap serving faults by signal (%s): %s", provider,
	      h ? "" : err.msg);
	if (!h)
		cluster_stop(c);
	return h;
}

/* Pages wholly inside a fresh byte array, filled with the pattern, then
 * flushed: every page EVICTED. */
static uint8_t *evicted_pages(rh_heap *h, rh_mutator *m, rh_type_id t, void **root)
{
	*root = rh_alloc_array(m, t, (PAGES + 1) * RH_PAGE_SIZE);
	if (!*root)
		return NULL;
	uintptr_t p0 = ((uintptr_t)*root + 16 + RH_PAGE_SIZE - 1) & ~(uintptr_t)(RH_PAGE_SIZE - 1);
	uint8_t *p = (uint8_t *)p0;
	for (size_t i = 0; i < PAGES * RH_PAGE_SIZE; i++)
		p[i] = pattern(i);
	rh_error err;
	int rc = rh_swap_flush_region(h->swap, rh_region_index(h, p0), &err);
	CHECK(rc == RH_OK, "flush the array's region: %s", rc == RH_OK ? "" : err.msg);
	return p;
}

static void test_faults(rh_heap *h, rh_mutator *m, rh_type_id t)
{
	static void *arr;
	rh_global_add(h, &arr);
	rh_swap *s = h->swap;
	uint8_t *p = evicted_pages(h, m, t, &arr);
	if (!p)
		return;
	size_t ev = 0;
	for (int i = 0; i < PAGES; i++)
		ev += state(s, p + i * RH_PAGE_SIZE) == RH_PAGE_EVICTED;
	CHECK(ev == PAGES, "all %d pages evicted after the flush (%zu)", PAGES, ev);
	/* No readahead past the page touched: each fault is one page. */
	rh_swap_set_readahead(s, 0);
	rh_swap_stats a, b;

	rh_swap_stats_get(s, &a);
	volatile uint8_t r = p[10];
	(void)r;
	rh_swap_stats_get(s, &b);
	CHECK(state(s, p) == RH_PAGE_CLEAN && b.faults == a.faults + 1,
	      "a read brings an evicted page back CLEAN in one fault (state %u, %llu faults)",
	      state(s, p), (unsigned long long)(b.faults - a.faults));

	uint8_t *q = p + 2 * RH_PAGE_SIZE;
	rh_swap_stats_get(s, &a);
	q[7] = pattern(2 * RH_PAGE_SIZE + 7);
	rh_swap_stats_get(s, &b);
	CHECK(state(s, q) == RH_PAGE_DIRTY && b.faults == a.faults + 1,
	      "a write brings an evicted page back DIRTY (state %u)", state(s, q));
#if defined(__x86_64__)
	CHECK(b.wp_faults == a.wp_faults,
	      "x86-64: the write is known as one, so no second (protection) fault (%llu)",
	      (unsigned long long)(b.wp_faults - a.wp_faults));
#endif

	rh_swap_stats_get(s, &a);
	p[20] = pattern(20);
	rh_swap_stats_get(s, &b);
	CHECK(state(s, p) == RH_PAGE_DIRTY && b.wp_faults == a.wp_faults + 1,
	      "a first write to a CLEAN page makes it DIRTY (state %u, %llu protection faults)",
	      state(s, p), (unsigned long long)(b.wp_faults - a.wp_faults));
	CHECK(intact(p, 0, 4 * RH_PAGE_SIZE), "pages 0-3 read back as written");

	/* A system call on a page that is not resident. */
	uint8_t *e = p + 5 * RH_PAGE_SIZE;
	int fds[2];
	CHECK(pipe(fds) == 0, "pipe");
	CHECK(state(s, e) == RH_PAGE_EVICTED, "page 5 is still evicted (state %u)", state(s, e));
	errno = 0;
	ssize_t w = write(fds[1], e, 64);
	int saved = errno;
	CHECK(w < 0 && saved == EFAULT,
	      "write(2) from an evicted heap page fails with EFAULT (returned %zd, %s)", w,
	      strerror(saved));
	CHECK(state(s, e) == RH_PAGE_EVICTED, "and leaves the page evicted (state %u)",
	      state(s, e));
	CHECK(intact(p, 5 * RH_PAGE_SIZE, RH_PAGE_SIZE), "its bytes read back intact afterwards");
	CHECK(intact(p, 0, PAGES * RH_PAGE_SIZE), "every byte of the array reads back as written");
	w = write(fds[1], e, 64);
	CHECK(w == 64, "once resident, write(2) from it works (%zd)", w);
	close(fds[0]);
	close(fds[1]);
	rh_global_remove(h, &arr);
	arr = NULL;
}

/* A SIGBUS that is not the heap's: a page of a file mapped past its end. */
static void test_outside(void)
{
	char path[] = "/tmp/rheap-sigbus-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0, "temporary file");
	if (fd < 0)
		return;
	unlink(path);
	volatile uint8_t *map = mmap(NULL, RH_PAGE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(map != MAP_FAILED, "map an empty file");
	if (map == MAP_FAILED) {
		close(fd);
		return;
	}
	int before = outside_hits;
	if (sigsetjmp(jump, 1) == 0) {
		volatile uint8_t x = map[0];
		(void)x;
	}
	CHECK(outside_hits == before + 1 && outside_addr == (void *)map,
	      "a SIGBUS outside the heap reaches the handler installed before it (%d hits)",
	      outside_hits - before);
	munmap((void *)map, RH_PAGE_SIZE);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s TRACERD PROVIDER\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(60);
	setenv("RHEAP_TEST_FAULTS", "signal", 1);
	struct sigaction sa = {.sa_sigaction = on_outside, .sa_flags = SA_SIGINFO};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);

	rh_type_desc bytes = {
	        .name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16, .elem_size = 1};
	for (int round = 0; round < 2; round++) {
		cluster c;
		rh_heap *h = open_heap(&c, argv[1], argv[2]);
		if (!h)
			break;
		rh_error err;
		rh_type_id t = rh_type_register(h, &bytes, &err);
		rh_mutator *m = rh_mutator_attach(h, &err);
		CHECK(m != NULL, "attach");
		/* No allocation after the array's and no parking: nothing
		 * collects, nothing moves. */
		if (m) {
			printf("# heap %d\n", round + 1);
			test_faults(h, m, t);
			test_outside();
			rh_mutator_detach(m);
		}
		rh_heap_close(h);
		cluster_stop(&c);
	}
	return check_done();
}
