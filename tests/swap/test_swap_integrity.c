/* A page changed on its memory server behind the CPU server's back is a
 * fatal error naming the server and the page, never installed
 * (docs/swap.md, "Integrity"; swap.I2).
 *
 * A VM (a forked child, so that its death can be watched) writes 16 pages,
 * evicts them, reads them back (no false mismatch after a write-back,
 * after a clean eviction, or for pages never written), evicts them again,
 * and then the test writes 8 bytes into one page's copy on its memory
 * server through the transport, as a faulty or malicious tracer would.
 * Touching that page must end the VM with RH_EXIT_LOST and a message that
 * names "memory server 0 (HOST:PORT)", the page's address, its region and
 * its page index. The same VM with cache.checksum off reads the changed
 * bytes without a word: that run shows the corruption is real, so the
 * first one is what catches it.
 *
 * usage: test-swap-integrity TRACERD PROVIDER
 */
#include <poll.h>
#include <sys/mman.h>

#include "runtime/internal.h"
#include "swap/internal.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"
#include "tests/swap/pages.h"

#define PAGES 16
#define VICTIM 5
#define EXIT_SILENT 3 /* the VM read the corrupted bytes */
#define EXIT_SETUP 4  /* the VM could not get as far as the corruption */

static const uint64_t junk = 0x5a5a5a5a5a5a5a5aull;

/* 8 bytes at page VICTIM + 64 of the memory server's copy, by a one-sided
 * WRITE on the VM's own connection to its host: the memory server's
 * bytes change and the swap system is not told. */
static int corrupt(rh_swap *s, uintptr_t a)
{
	const rh_swap_host *h = rh_swap_host_of(s, a);
	uint8_t *buf = mmap(NULL, RH_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	                    -1, 0);
	rh_error err;
	if (!h || buf == MAP_FAILED ||
	    rh_tp_reg(h->conn, buf, RH_PAGE_SIZE, -1, 0, RH_TP_LOCAL, &err) != RH_OK)
		return -1;
	memcpy(buf, &junk, sizeof junk);
	rh_tp_sge sg = {buf, a + 64, sizeof junk};
	uint64_t id = rh_swap_wr_id(s);
	int rc = rh_tp_write(h->conn, &sg, 1, id, &err);
	if (rc == RH_OK)
		rc = rh_tp_wait(h->conn, id, 5000, &err);
	if (rc != RH_OK)
		printf("# corrupting: %s\n", err.msg);
	return rc == RH_OK ? 0 : -1;
}

static size_t mismatches(const uint8_t *p)
{
	size_t bad = 0;
	for (size_t i = 0; i < PAGES * RH_PAGE_SIZE; i++)
		bad += p[i] != pattern(i);
	return bad;
}

static void vm(cluster *c, int checksum)
{
	alarm(60);
	rh_config cfg;
	rh_error err;
	if (rh_config_load(c->config, &cfg, &err) != RH_OK) {
		printf("# config: %s\n", err.msg);
		_exit(EXIT_SETUP);
	}
	cfg.checksum = checksum;
	rh_heap *h = NULL;
	/* The tracer may still be releasing the previous VM's session. */
	for (int i = 0; i < 100 && !(h = rh_heap_open(&cfg, &err)); i++)
		usleep(50000);
	if (!h) {
		printf("# open: %s\n", err.msg);
		_exit(EXIT_SETUP);
	}
	rh_type_id t_bytes = swap_bytes_type(h, &err);
	static void *arr;
	rh_global_add(h, &arr);
	rh_mutator *m = rh_mutator_attach(h, &err);
	/* No allocation from here on: nothing collects, nothing moves. */
	uintptr_t p0 = swap_pattern_pages(m, t_bytes, &arr, PAGES);
	if (!p0)
		_exit(EXIT_SETUP);
	uint8_t *pages = (uint8_t *)p0;
	rh_swap *s = h->swap;
	uint32_t region = rh_region_index(h, p0);
	/* A page of the region the VM never wrote: INIT, then read (a zero
	 * page, CLEAN), evicted clean and fetched back from the server. */
	uint8_t *fresh =
	        (uint8_t *)(h->base + ((uintptr_t)(region + 1) << s->region_shift) - RH_PAGE_SIZE);
	volatile uint8_t z = fresh[100];
	int ok = z == 0 && rh_swap_flush_region(s, region, &err) == RH_OK;
	ok = ok && mismatches(pages) == 0 && fresh[100] == 0; /* written back, fetched */
	settle(s);
	ok = ok && rh_swap_flush_region(s, region, &err) == RH_OK;
	ok = ok && mismatches(pages) == 0; /* evicted clean, fetched */
	settle(s);
	ok = ok && rh_swap_flush_region(s, region, &err) == RH_OK;
	if (!ok) {
		printf("# the VM's own pages did not come back intact: %s\n", err.msg);
		_exit(EXIT_SETUP);
	}
	printf("# reads after eviction matched\n");
	uintptr_t victim = p0 + VICTIM * RH_PAGE_SIZE;
	if (corrupt(s, victim) != 0)
		_exit(EXIT_SETUP);
	/* With shm the "memory server's" bytes are a mapping in this process:
	 * order the write before the fault thread's read (it takes fault_lock
	 * for each fault), as the process boundary does for a real tracer. */
	settle(s);
	printf("victim %#lx region %u page %u\n", (unsigned long)victim, region,
	       (unsigned)((victim & (s->region_size - 1)) >> RH_PAGE_SHIFT));
	fflush(stdout);
	uint64_t v;
	memcpy(&v, (void *)(victim + 64), sizeof v); /* faults: the fetch */
	printf("# read %#llx at the corrupted place\n", (unsigned long long)v);
	fflush(stdout);
	_exit(v == junk ? EXIT_SILENT : EXIT_SETUP);
}

/* Run vm() in a child with its stdout and stderr in out; its wait status. */
static int run_vm(cluster *c, int checksum, char *out, size_t cap)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[1]);
		vm(c, checksum);
		_exit(EXIT_SETUP);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t r;
	/* The child's alarm bounds this: its death closes the pipe. */
	while (n < cap - 1 && (r = read(p[0], out + n, cap - 1 - n)) != 0)
		if (r > 0)
			n += (size_t)r;
		else if (errno != EINTR)
			break;
	out[n] = 0;
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	return st;
}

static void print_out(const char *what, const char *out)
{
	printf("# ---- %s said:\n", what);
	for (const char *p = out; *p;) {
		const char *e = strchr(p, '\n');
		int len = e ? (int)(e - p) : (int)strlen(p);
		printf("#   %.*s\n", len, p);
		p += len + (e != NULL);
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *tracerd, *provider;
	if (cluster_args(argc, argv, 0, "", &tracerd, &provider))
		return 2;
	cluster c;
	if (cluster_start(&c, tracerd, provider, 1, 64, 0.25, 3000, NULL) < 0) {
		perror("cluster");
		return 2;
	}
	static char out[16384];

	int st = run_vm(&c, 1, out, sizeof out);
	unsigned long va = 0;
	unsigned region = 0, page = 0;
	const char *line = strstr(out, "victim ");
	int got_victim =
	        line && sscanf(line, "victim %lx region %u page %u", &va, &region, &page) == 3;
	CHECK(got_victim, "with checksums, the VM's own evicted pages came back and it "
	                  "corrupted one on its memory server");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == RH_EXIT_LOST,
	      "touching the corrupted page ended the VM with status %d (got %s %d)", RH_EXIT_LOST,
	      WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	char addr[32], where[64], server[64];
	snprintf(addr, sizeof addr, "%#lx", va);
	snprintf(where, sizeof where, "(region %u, page %u)", region, page);
	snprintf(server, sizeof server, "memory server 0 (%s:%d)", cluster_host(), c.port[0]);
	const char *fatal = strstr(out, "rheap: fatal:");
	CHECK(fatal && strstr(fatal, server) && strstr(fatal, "corrupt"),
	      "the fatal error names %s and says the page is corrupt", server);
	CHECK(got_victim && fatal && strstr(fatal, addr) && strstr(fatal, where),
	      "and names the page: %s %s", addr, where);
	CHECK(!strstr(out, "# read "), "the VM never read the corrupted bytes");
	print_out("the VM with checksums", out);

	st = run_vm(&c, 0, out, sizeof out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == EXIT_SILENT && !strstr(out, "fatal"),
	      "without checksums the same VM reads the corrupted bytes silently (exit %d, "
	      "wanted %d): the check above is what catches them",
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1, EXIT_SILENT);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != EXIT_SILENT)
		print_out("the VM without checksums", out);
	cluster_stop(&c);
	return check_done();
}
