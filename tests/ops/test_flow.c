/* flow.F1 (docs/protocol.md, "Flow control"): a tracer's receiving thread
 * never waits to send, so it takes the CPU server's messages even while
 * the CPU server reads none of the tracer's. The test is that CPU server:
 * after HELLO it sends PING and FREE, 4 x the tracer's receive credits in
 * all, reading nothing, so the tracer's answers fill the credits this side
 * granted within the first quarter. Every send must go through (a receive
 * loop that answered itself would stop taking messages there, and the
 * sends would time out); then every answer arrives, in order.
 *
 * usage: test-flow TRACERD PROVIDER
 */
#include "tests/ops/client.h"

#define MESSAGES 256 /* the transport grants 64 credits a side */

static int send_one(client *k, int i, uint32_t *seq, rh_error *err)
{
	rh_msg m = {.type = i % 2 ? RH_MSG_FREE : RH_MSG_PING};
	uint32_t region = 0;
	if (m.type == RH_MSG_FREE) {
		m.u.free.n = 1;
		m.u.free.regions = (const uint8_t *)&region;
	} else {
		m.u.ping.seq = (uint64_t)i;
	}
	m.seq = seq[i] = (uint32_t)(1000 + i);
	return client_send(k, &m, err);
}

int main(int argc, char **argv)
{
	const char *tracerd, *provider;
	if (cluster_args(argc, argv, 0, "", &tracerd, &provider))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	cluster c;
	client k = {0};
	rh_error err;
	if (client_start(&c, &k, tracerd, provider, &err) < 0)
		return check_done();
	static uint32_t seq[MESSAGES];
	int sent = 0, rc = RH_OK;
	while (sent < MESSAGES && (rc = send_one(&k, sent, seq, &err)) == RH_OK)
		sent++;
	CHECK(sent == MESSAGES, "%d messages sent without reading an answer (stopped at %d: %s)",
	      MESSAGES, sent, rc == RH_OK ? "" : err.msg);
	int in_order = 0;
	for (int i = 0; i < sent; i++) {
		rh_msg m;
		if (client_recv(&k, &m, &err) != RH_OK)
			break;
		int want = i % 2 ? RH_MSG_FREE_OK : RH_MSG_PONG;
		bool ok = m.type == want &&
		          (want == RH_MSG_FREE_OK ? m.seq == seq[i] : m.u.ping.seq == (uint64_t)i);
		if (!ok)
			break;
		in_order++;
	}
	CHECK(in_order == sent, "every answer arrived, in order (%d of %d)", in_order, sent);
	rh_tp_close(k.conn);
	cluster_stop(&c);
	return check_done();
}
