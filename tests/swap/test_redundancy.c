/* Surviving the loss of a memory server with redundancy.mode "replicate"
 * (docs/resilience.md, red.R1, red.R4, red.R5).
 *
 * A child VM on three tracers keeps 24 MiB of checked data live in a 64 MiB
 * heap with a 16 MiB cache, so most of it is evicted at any time, and
 * rewrites and checks it round after round. The parent SIGKILLs tracers
 * while it runs:
 *
 * - replicate, tracer 1 killed: the VM finishes every round with every
 *   byte right, and read pages from the copy tracer 2 keeps (its count of
 *   copy reads is above zero), so the data it checked after the kill came
 *   through the copy;
 * - no redundancy, tracer 1 killed (the control): the VM ends with status
 *   RH_EXIT_LOST, as it always has;
 * - replicate, tracers 1 and 2 killed: partition 1 has no copy left, and
 *   the VM ends with RH_EXIT_LOST and a message naming both;
 * - replicate with a spare (redundancy.spares), tracer 1 killed, then
 *   tracer 2 two seconds later: the spare took server 1's place and was
 *   rebuilt from the copies before the second loss, so partition 1 is still
 *   held (by the spare) and the VM checks every round to the end; against
 *   the case above, where the same two losses end it (red.S1-S3);
 * - the proof: replicate with the writes to the copies skipped
 *   (redundancy.write_copies false, a debug switch), tracer 1 killed: the
 *   first page read from tracer 2's stale copy fails its checksum, and the
 *   VM ends with RH_EXIT_LOST on that message. So the first case's data
 *   came through the copies, and a copy that missed a write is caught.
 *
 * usage: test-redundancy TRACERD PROVIDER
 */
#include <sys/wait.h>

#include "runtime/internal.h"
#include "swap/swap.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"
#include "tests/swap/proc.h"

#define ARRAYS 24
#define ARRAY_BYTES (1u << 20)
#define RUN_S 4.0 /* the VM's rounds last this long; the kills come from 1 s on */

static const char *tracerd, *provider;

static double now_s(void)
{
	return (double)rh_now_ns() / 1e9;
}

/* The byte at i of the array written in round r into slot k. */
static uint8_t pattern(unsigned r, unsigned k, size_t i)
{
	return (uint8_t)((r * 131u + k * 29u + (unsigned)(i >> 12) * 7u) ^ (unsigned)i);
}

/* The VM: fills the slots, then each round rewrites one slot and checks
 * every other, for RUN_S seconds. Exit 0 and "ok N copy reads" on stdout
 * and stderr; 6 with the first wrong byte named. */
static void vm(cluster *c, int ready)
{
	rh_type_id t;
	rh_mutator *m;
	rh_heap *h = cluster_vm_open(c, &t, &m);
	void *slots[ARRAYS] = {0};
	unsigned round_of[ARRAYS] = {0};
	rh_frame f;
	rh_push_frame(m, &f, slots, ARRAYS);
	for (unsigned k = 0; k < ARRAYS; k++) {
		uint8_t *a = rh_alloc_array(m, t, ARRAY_BYTES);
		if (!a)
			_exit(5);
		for (size_t i = 0; i < ARRAY_BYTES; i++)
			a[16 + i] = pattern(0, k, i);
		slots[k] = a;
	}
	if (write(ready, "r", 1) != 1)
		_exit(4);
	double t0 = now_s();
	unsigned r = 1;
	for (; now_s() - t0 < RUN_S; r++) {
		unsigned w = r % ARRAYS;
		uint8_t *a = rh_alloc_array(m, t, ARRAY_BYTES);
		if (!a)
			_exit(5);
		for (size_t i = 0; i < ARRAY_BYTES; i++)
			a[16 + i] = pattern(r, w, i);
		slots[w] = a;
		round_of[w] = r;
		for (unsigned k = 0; k < ARRAYS; k++) {
			const uint8_t *b = slots[k];
			for (size_t i = 0; i < ARRAY_BYTES; i += 509)
				if (b[16 + i] != pattern(round_of[k], k, i)) {
					fprintf(stderr,
					        "round %u: slot %u byte %zu is %u, not %u\n", r, k,
					        i, b[16 + i], pattern(round_of[k], k, i));
					_exit(6);
				}
		}
	}
	rh_swap_stats st;
	rh_swap_stats_get(h->swap, &st);
	fprintf(stderr, "ok %u rounds, %llu copy reads, %zu hosts lost\n", r,
	        (unsigned long long)st.copy_reads, rh_swap_hosts_lost(h->swap));
	rh_pop_frame(m, &f);
	rh_mutator_detach(m);
	rh_heap_close(h);
	_exit(0);
}

/* Start three tracers (and `spares`), run the VM, kill the tracers listed
 * (-1 ends the list) a second in, each `gap_s` after the one before. The
 * VM's exit status (-1: none or a signal), its stderr in out. */
static int run_with(const char *red, const int *kill_idx, int spares, double gap_s, char *out,
                    size_t cap)
{
	const char *mode = red ? "replicate" : NULL;
	if (red)
		setenv("RHEAP_TEST_REDUNDANCY", red, 1);
	else
		unsetenv("RHEAP_TEST_REDUNDANCY");
	cluster c;
	cluster_spares = spares;
	int started = cluster_start(&c, tracerd, provider, 3, 64, 0.25, 1000, "\"offload\": false");
	cluster_spares = 0;
	if (started < 0) {
		CHECK(0, "start three tracers (%s)", mode ? mode : "none");
		return -1;
	}
	int ready[2], errp = -1;
	if (pipe(ready) < 0)
		return -1;
	pid_t pid = proc_fork(PROC_STDERR, &errp);
	if (pid < 0) {
		CHECK(0, "fork the VM");
		cluster_stop(&c);
		return -1;
	}
	if (pid == 0) {
		close(ready[0]);
		vm(&c, ready[1]);
	}
	close(ready[1]);
	char b;
	CHECK(read(ready[0], &b, 1) == 1, "the VM started (%s)", mode ? mode : "none");
	close(ready[0]);
	usleep(1000000);
	for (const int *k = kill_idx; *k >= 0; k++) {
		if (k != kill_idx)
			usleep((useconds_t)(gap_s * 1e6));
		kill(c.pid[*k], SIGKILL);
		waitpid(c.pid[*k], NULL, 0);
		c.pid[*k] = 0;
	}
	double t0 = now_s();
	int st = 0;
	pid_t w = 0;
	while (now_s() - t0 < RUN_S + 10 && (w = waitpid(pid, &st, WNOHANG)) == 0)
		usleep(10000);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	proc_drain(errp, out, cap);
	cluster_stop(&c);
	return w == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int run(const char *red, const int *kill_idx, char *out, size_t cap)
{
	return run_with(red, kill_idx, 0, 0, out, cap);
}

/* Whether the VM's stderr holds its "ok" line, and that line's counts. */
static bool vm_ok(const char *out, unsigned long long *copy_reads, size_t *lost)
{
	const char *ok = strstr(out, "\nok ");
	if (!ok && !strncmp(out, "ok ", 3))
		ok = out;
	*copy_reads = 0;
	*lost = 0;
	if (ok)
		sscanf(ok + (*ok == '\n'), "ok %*u rounds, %llu copy reads, %zu hosts lost",
		       copy_reads, lost);
	return ok != NULL;
}

int main(int argc, char **argv)
{
	if (cluster_args(argc, argv, 0, "", &tracerd, &provider))
		return 2;
	char out[8192];
	static const int one[] = {1, -1}, two[] = {1, 2, -1};
	const char *replicate = "\"mode\": \"replicate\"";

	int rc = run(replicate, one, out, sizeof out);
	unsigned long long copy_reads;
	size_t lost;
	bool ok = vm_ok(out, &copy_reads, &lost);
	CHECK(rc == 0 && ok, "replicate, tracer 1 killed: the VM checked every round (exit %d)",
	      rc);
	CHECK(lost == 1, "the VM counted one memory server lost (%zu)", lost);
	CHECK(copy_reads > 0, "pages were read from the copy tracer 2 keeps (%llu)", copy_reads);
	CHECK(strstr(out, "memory server 1") && strstr(out, "copy"),
	      "the loss was logged, naming the server and the copy");
	if (check_failures() || getenv("RHEAP_TEST_VERBOSE"))
		printf("# the VM said: %s\n", out);

	rc = run(NULL, one, out, sizeof out);
	CHECK(rc == RH_EXIT_LOST,
	      "no redundancy, tracer 1 killed: the VM ended with status %d (got %d)", RH_EXIT_LOST,
	      rc);

	rc = run(replicate, two, out, sizeof out);
	CHECK(rc == RH_EXIT_LOST && strstr(out, "memory server 1") &&
	              strstr(out, "memory server 2") && strstr(out, "no copy left"),
	      "replicate, tracers 1 and 2 killed: status %d and both named (got %d: %s)",
	      RH_EXIT_LOST, rc, out);

	/* red.S1-S3: the same two losses, two seconds apart, with a spare. */
	rc = run_with(replicate, two, 1, 2.0, out, sizeof out);
	ok = vm_ok(out, &copy_reads, &lost);
	CHECK(rc == 0 && ok,
	      "replicate with a spare, tracers 1 and 2 killed 2 s apart: the VM checked every "
	      "round (exit %d)",
	      rc);
	CHECK(strstr(out, "partition 1 rebuilt on memory server 1 (spare 0"),
	      "the spare took server 1's place and was rebuilt before the second loss");
	CHECK(lost == 2, "the VM counted two servers lost (%zu)", lost);
	if (check_failures() || getenv("RHEAP_TEST_VERBOSE"))
		printf("# the VM said: %s\n", out);

	rc = run("\"mode\": \"replicate\", \"write_copies\": false", one, out, sizeof out);
	CHECK(rc == RH_EXIT_LOST && strstr(out, "memory server 2") && strstr(out, "corrupt page"),
	      "proof, the copies not written: status %d on a corrupt page from memory server 2 "
	      "(got %d: %s)",
	      RH_EXIT_LOST, rc, out);
	return check_done();
}
