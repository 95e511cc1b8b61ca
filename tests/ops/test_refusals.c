/* Honest refusal counters and logs on rheap-tracerd (docs/security.md,
 * security.L1, security.L2):
 * - stall: a tracer stopped (SIGSTOP) for 3 s while it waits, with no
 *   client at all, counts and logs no refusal once it runs again;
 * - flood (tcp): 40 silent connections refused at once exceed the 20
 *   refusals logged per second; a wrong secret in the same second is
 *   logged anyway, the suppressed count appears on its own within about a
 *   second, and logged plus suppressed equals the status file's count.
 *
 * usage: test-refusals TRACERD PROVIDER
 */
#include <jansson.h>
#include <signal.h>

#include "tests/ops/client.h"

static const char *tracerd, *provider;

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* The sum of N over "refused N more connections" lines. */
static int suppressed(const char *log)
{
	int n = 0;
	for (const char *p = log; (p = strstr(p, "tracerd: refused ")); p++) {
		int k;
		if (sscanf(p, "tracerd: refused %d more", &k) == 1)
			n += k;
	}
	return n;
}

static long long refused_status(const cluster *c)
{
	char path[400];
	snprintf(path, sizeof path, "%s/status-0", c->dir);
	json_t *j = json_load_file(path, 0, NULL);
	long long n = j ? json_integer_value(json_object_get(j, "connections_refused")) : -1;
	json_decref(j);
	return n;
}

static void test_stall(void)
{
	cluster c;
	char log[65536];
	if (client_start_tracer(&c, tracerd, provider) < 0)
		return;
	kill(c.pid[0], SIGSTOP);
	sleep(3);
	kill(c.pid[0], SIGCONT);
	usleep(1500000); /* a status file written after it ran again */
	cluster_log(&c, 0, log, sizeof log);
	CHECK(!strstr(log, "refused"), "stall: no refusal logged without a client: %s", log);
	long long n = refused_status(&c);
	CHECK(n == 0, "stall: the status counts none (%lld)", n);
	cluster_stop(&c);
}

static void test_flood(void)
{
	enum { IDLE = 40 };
	const char *args[] = {"--max-handshakes", "64", NULL};
	const char *const *ex[] = {args};
	cluster c;
	char log[65536];
	if (cluster_start_with(&c, tracerd, provider, 1, 64, 0.25, 500, NULL, OPS_TRACERS(ex)) <
	    0) {
		CHECK(0, "start a tracer");
		return;
	}
	int fds[IDLE], opened = 0;
	for (int i = 0; i < IDLE; i++)
		opened += (fds[i] = cluster_tcp_connect(c.port[0])) >= 0;
	CHECK(opened == IDLE, "flood: %d silent connections opened (%d)", IDLE, opened);
	/* They time out together: wait for the first 20 lines, then try a
	 * wrong secret inside the same second. */
	const char *line = "warn tracerd: refused a connection: ";
	for (int t = 0; t < 200 && count(cluster_log(&c, 0, log, sizeof log), line) < 20; t++)
		usleep(10000);
	client k = {0};
	rh_error err;
	int rc = client_connect(&k, &c, provider, c.port[0], "not-the-secret-at-all", &err);
	CHECK(rc == RH_EAUTH, "flood: a wrong secret is refused (%d: %s)", rc, err.msg);
	if (rc == RH_OK)
		rh_tp_close(k.conn);
	const char *auth = "refused a connection: transport: authentication failed";
	CHECK(client_wait_log(&c, auth, log, sizeof log),
	      "flood: the wrong secret is logged although 20 refusals were this second: %s", log);
	/* No further connection: the count comes on the timer. */
	CHECK(client_wait_log(&c, "more connections (not logged one by one)", log, sizeof log),
	      "flood: the suppressed count is logged without a later refusal");
	for (int i = 0; i < IDLE; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	long long n = -1;
	for (int t = 0; t < 30 && (n = refused_status(&c)) < IDLE + 1; t++)
		usleep(100000);
	cluster_log(&c, 0, log, sizeof log);
	int logged = count(log, line), hidden = suppressed(log);
	CHECK(n == IDLE + 1 && logged + hidden == n,
	      "flood: %d logged + %d counted = %lld refused (%d connections)", logged, hidden, n,
	      IDLE + 1);
	CHECK(logged <= 21 + 1, "flood: at most 20 a second, plus the wrong secret (%d)", logged);
	char bad[256];
	CHECK(ops_log_well_formed(log, bad, sizeof bad), "one event per line: %s", bad);
	cluster_stop(&c);
}

int main(int argc, char **argv)
{
	if (cluster_args(argc, argv, 0, "", &tracerd, &provider))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	test_stall();
	if (!strcmp(provider, "tcp"))
		test_flood();
	return check_done();
}
