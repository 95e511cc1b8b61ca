/* chan.F1: receive credits are never lost. One process, two ends of a
 * connection. End A is a CPU server's shape: one thread keeps sending large
 * messages (its socket stays full, since end B reads them slowly, and that
 * thread holds A's send lock while it waits), and another polls for small
 * messages with a zero timeout, as the runtime's monitor does. End B sends
 * small messages, each allowed 2 s for a credit. A CREDIT frame that A sent
 * inline with its poll's deadline timed out behind the large sends and was
 * dropped, so B's window shrank until B could send nothing; every small
 * message must now go through and arrive. The loss needs A's socket full
 * at the instant a poll returns credits: without the fix this test failed
 * 1 run in 6 (B stuck at 64 messages, its whole window lost); the
 * benchmark that found it, window at 25 % cache, 3 runs in 4.
 *
 * usage: test-credits PROVIDER
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/common/check.h"
#include "transport/transport.h"

#define SMALL 2000
#define BIG (60 * 1024)

static rh_tp_conn *a, *b;
static atomic_bool done, reader_done;
static atomic_int small_sent, small_got, big_failed;

static rh_tp_opts opts(const char *provider)
{
	static const char secret[] = "credits-test-secret";
	return (rh_tp_opts){.provider = provider,
	                    .secret = (const uint8_t *)secret,
	                    .secret_len = sizeof secret - 1,
	                    .timeout_ms = 5000,
	                    .max_msg = 64 * 1024,
	                    .msg_credits = 64};
}

static void *a_big_sender(void *arg)
{
	(void)arg;
	static uint8_t buf[BIG];
	while (!atomic_load(&done)) {
		rh_error e;
		if (rh_tp_send(a, buf, sizeof buf, 10000, &e) != RH_OK) {
			atomic_fetch_add(&big_failed, 1);
			break;
		}
	}
	return NULL;
}

static void *b_slow_reader(void *arg)
{
	(void)arg;
	static uint8_t buf[64 * 1024];
	while (!atomic_load(&reader_done)) {
		size_t len;
		rh_error e;
		int rc = rh_tp_recv(b, buf, sizeof buf, &len, 100, &e);
		if (rc != RH_OK && rc != RH_ETIMEDOUT)
			break;
		usleep(500); /* slower than A writes: A's socket stays full */
	}
	return NULL;
}

static void *b_small_sender(void *arg)
{
	(void)arg;
	for (int i = 0; i < SMALL; i++) {
		uint32_t v = (uint32_t)i;
		rh_error e;
		if (rh_tp_send(b, &v, sizeof v, 2000, &e) != RH_OK) {
			fprintf(stderr, "B's message %d not sent: %s\n", i, e.msg);
			break;
		}
		atomic_fetch_add(&small_sent, 1);
	}
	return NULL;
}

static void *a_poller(void *arg)
{
	(void)arg;
	uint8_t buf[64 * 1024];
	uint64_t idle = 0;
	while (atomic_load(&small_got) < SMALL && idle < 40000) {
		size_t len;
		rh_error e;
		int rc = rh_tp_recv(a, buf, sizeof buf, &len, 0, &e);
		if (rc == RH_OK) {
			uint32_t v;
			memcpy(&v, buf, sizeof v);
			if (len != sizeof v || v != (uint32_t)atomic_load(&small_got))
				break;
			atomic_fetch_add(&small_got, 1);
			idle = 0;
		} else if (rc == RH_ETIMEDOUT) {
			idle++;
			usleep(100);
		} else {
			break;
		}
	}
	return NULL;
}

static void *accept_one(void *arg)
{
	rh_tp_listener *l = arg;
	rh_error e;
	if (rh_tp_accept(l, 5000, &b, &e) != RH_OK)
		fprintf(stderr, "accept: %s\n", e.msg);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s PROVIDER\n", argv[0]);
		return 2;
	}
	rh_tp_opts o = opts(argv[1]);
	rh_tp_listener *l;
	rh_error e;
	if (rh_tp_listen(&o, "127.0.0.1", 0, &l, &e) != RH_OK) {
		fprintf(stderr, "listen: %s\n", e.msg);
		return 1;
	}
	pthread_t acc;
	pthread_create(&acc, NULL, accept_one, l);
	int rc = rh_tp_connect(&o, "127.0.0.1", rh_tp_listener_port(l), &a, &e);
	pthread_join(acc, NULL);
	REQUIRE(rc == RH_OK && b, "connected (%s)", rc == RH_OK ? "" : e.msg);
	pthread_t t[4];
	pthread_create(&t[0], NULL, a_big_sender, NULL);
	pthread_create(&t[1], NULL, b_slow_reader, NULL);
	pthread_create(&t[2], NULL, b_small_sender, NULL);
	pthread_create(&t[3], NULL, a_poller, NULL);
	pthread_join(t[2], NULL);
	pthread_join(t[3], NULL);
	atomic_store(&done, true);
	pthread_join(t[0], NULL); /* its last send needs the reader */
	atomic_store(&reader_done, true);
	pthread_join(t[1], NULL);
	CHECK(atomic_load(&small_sent) == SMALL,
	      "B sent all %d small messages while A's socket was full (%d)", SMALL,
	      atomic_load(&small_sent));
	CHECK(atomic_load(&small_got) == SMALL, "A received them all, in order (%d)",
	      atomic_load(&small_got));
	CHECK(atomic_load(&big_failed) == 0, "A's large sends went through");
	rh_tp_close(a);
	rh_tp_close(b);
	rh_tp_listener_close(l);
	return check_done();
}
