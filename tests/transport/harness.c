#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

uint8_t pattern(uint64_t seed, uint64_t off)
{
	uint64_t x = (off >> 3) * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
	x ^= x >> 29;
	return (uint8_t)(x >> (8 * (off & 7)));
}

void fill(uint8_t *p, uint64_t seed, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(seed, off + i);
}

bool check(const uint8_t *p, uint64_t seed, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(seed, off + i))
			return false;
	return true;
}

rh_tp_opts opts_for(const struct env *e, const char *secret, uint32_t timeout_ms)
{
	return (rh_tp_opts){.provider = e->provider,
	                    .secret = (const uint8_t *)secret,
	                    .secret_len = strlen(secret),
	                    .timeout_ms = timeout_ms,
	                    .max_msg = 64 * 1024,
	                    .msg_credits = 64};
}

/* ---- the passive side ---- */

static void reply(rh_tp_conn *c, uint64_t a)
{
	struct cmd_msg m = {CMD_READY, a, 0, 0};
	rh_error err = {0};
	if (rh_tp_send(c, &m, sizeof m, -1, &err) != RH_OK)
		fprintf(stderr, "passive: reply: %s\n", err.msg);
}

static uint64_t slow_recv(rh_tp_conn *c, uint64_t count, uint8_t *buf, size_t cap)
{
	uint64_t good = 0;
	for (uint64_t i = 0; i < count; i++) {
		size_t len = 0;
		rh_error err = {0};
		if (rh_tp_recv(c, buf, cap, &len, 5000, &err) != RH_OK) {
			fprintf(stderr, "passive: slow recv %llu: %s\n", (unsigned long long)i,
			        err.msg);
			break;
		}
		uint64_t seq;
		memcpy(&seq, buf, 8);
		if (len >= 8 && seq == i && check(buf + 8, i, 0, len - 8))
			good++;
		if (i % 64 == 0)
			usleep(2000); /* far slower than the sender */
	}
	return good;
}

static void session(rh_tp_conn *c, uint8_t *region, int memfd, uint32_t max_msg)
{
	rh_error err = {0};
	if (rh_tp_reg(c, region, REGION_SIZE, memfd, 0, RH_TP_LOCAL | RH_TP_REMOTE, &err)) {
		fprintf(stderr, "passive: reg: %s\n", err.msg);
		return;
	}
	struct cmd_msg ready = {CMD_READY, (uint64_t)(uintptr_t)region, REGION_SIZE, 0};
	if (rh_tp_send(c, &ready, sizeof ready, -1, &err) != RH_OK)
		return;
	uint8_t *buf = malloc(max_msg);
	for (;;) {
		size_t len = 0;
		if (rh_tp_recv(c, buf, max_msg, &len, 300000, &err) != RH_OK)
			break;
		struct cmd_msg m = {0};
		memcpy(&m, buf, len < sizeof m ? len : sizeof m);
		bool in = m.b <= REGION_SIZE && m.c <= REGION_SIZE - m.b;
		if (len != sizeof m && m.cmd != CMD_ECHO)
			break;
		if (m.cmd == CMD_FILL && in) {
			fill(region + m.b, m.a, m.b, m.c);
			reply(c, 1);
		} else if (m.cmd == CMD_CHECK && in) {
			reply(c, check(region + m.b, m.a, m.b, m.c));
		} else if (m.cmd == CMD_GET64 && m.b <= REGION_SIZE - 8) {
			reply(c, __atomic_load_n((uint64_t *)(region + m.b), __ATOMIC_SEQ_CST));
		} else if (m.cmd == CMD_DEREG) {
			reply(c, rh_tp_dereg(c, region, REGION_SIZE, &err) == RH_OK);
		} else if (m.cmd == CMD_SLOWRECV) {
			reply(c, slow_recv(c, m.a, buf, max_msg));
		} else if (m.cmd == CMD_ECHO) {
			if (rh_tp_send(c, buf, len, -1, &err) != RH_OK)
				break;
		} else {
			break; /* CMD_BYE or nonsense */
		}
	}
	free(buf);
}

static void serve(const struct env *e, uint16_t port, int conns, int report)
{
	rh_tp_opts o = opts_for(e, "conformance-secret", 5000);
	o.msg_credits = SLOW_CREDITS;
	rh_tp_listener *l;
	rh_error err = {0};
	uint16_t p = 0;
	if (rh_tp_listen(&o, e->host, port, &l, &err) != RH_OK) {
		fprintf(stderr, "passive: listen: %s\n", err.msg);
		(void)!write(report, &p, 2);
		_exit(2);
	}
	p = rh_tp_listener_port(l);
	(void)!write(report, &p, 2);
	int memfd = memfd_create("rh-tp-conformance", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, REGION_SIZE) < 0)
		_exit(2);
	uint8_t *region = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (region == MAP_FAILED)
		_exit(2);
	for (int i = 0; i < conns; i++) {
		rh_tp_conn *c;
		/* Generous: a suite under TCG emulation reaches its last victims late;
		 * PDEATHSIG ends the victims if the suite dies. */
		int rc = rh_tp_accept(l, 300000, &c, &err);
		if (rc != RH_OK) {
			uint8_t code = (uint8_t)rc;
			(void)!write(report, &code, 1);
			if (rc == RH_ETIMEDOUT)
				break;
			continue; /* the listener keeps serving */
		}
		session(c, region, memfd, o.max_msg);
		rh_tp_close(c);
	}
	rh_tp_listener_close(l);
	_exit(0);
}

int child_start(const struct env *e, uint16_t port, int conns, struct child *out)
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
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the suite */
		serve(e, port, conns, p[1]);
	}
	close(p[1]);
	out->pid = pid;
	out->report = p[0];
	out->port = 0;
	struct pollfd pf = {p[0], POLLIN, 0};
	if (poll(&pf, 1, 10000) != 1 || read(p[0], &out->port, 2) != 2 || out->port == 0)
		return -1;
	return 0;
}

int child_report(struct child *c, int timeout_ms)
{
	struct pollfd pf = {c->report, POLLIN, 0};
	uint8_t code;
	if (poll(&pf, 1, timeout_ms) != 1 || read(c->report, &code, 1) != 1)
		return -1;
	return code;
}

void child_stop(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL); /* also ends a stopped child */
		waitpid(c->pid, NULL, 0);
		c->pid = 0;
	}
	if (c->report >= 0)
		close(c->report);
	c->report = -1;
}
