/* Malformed collector messages against rheap-tracerd (docs/security.md,
 * security.M1): each case says HELLO and sends a type table, then a
 * message sequence that breaks the protocol, caught either by the decoder
 * (regions named twice, unaligned addresses) or by the marking thread
 * against its state. The tracer must answer with
 * an ERROR naming what is wrong, log it, and end the session by itself,
 * never with a signal or a sanitizer report, then release it and serve
 * the next CPU server (a second HELLO gets HELLO_OK); the next case starts
 * a fresh tracer the same way.
 *
 * usage: test-collector TRACERD PROVIDER
 */
#include <sys/wait.h>

#include "gc/types.h"
#include "tests/ops/client.h"

static const char *tracerd, *provider;

static int send_types(client *k, rh_error *err)
{
	rh_type_table t;
	rh_typetab_init(&t);
	char *json = rh_typetab_to_json(&t);
	rh_typetab_free(&t);
	if (!json)
		return rh_err_set(err, RH_ENOMEM, "no type table");
	rh_msg m = {.type = RH_MSG_TYPES};
	m.u.types = (rh_msg_types){.offset = 0,
	                           .total = (uint32_t)strlen(json),
	                           .len = (uint32_t)strlen(json),
	                           .bytes = (const uint8_t *)json};
	int rc = client_send(k, &m, err);
	free(json);
	return rc;
}

/* REGIONS with one old region of the partition, `top` bytes in use. */
static int send_old_region(client *k, uint32_t region, uint32_t top, rh_error *err)
{
	rh_region_desc e = {.region = region, .ident = 1, .top = top, .kind = RH_REGION_OLD};
	rh_msg m = {.type = RH_MSG_REGIONS};
	m.u.regions = (rh_msg_regions){
	        .epoch = 1, .flags = RH_REGIONS_FIRST | RH_REGIONS_LAST, .n = 1, .ents = &e};
	return client_send(k, &m, err);
}

static int send_evacuate(client *k, const uint32_t *r, uint32_t n_src, uint32_t n_dst,
                         rh_error *err)
{
	rh_msg m = {.type = RH_MSG_EVACUATE};
	m.u.evacuate = (rh_msg_evacuate){.id = 7, .n_src = n_src, .n_dst = n_dst, .regions = r};
	return client_send(k, &m, err);
}

/* The trigger: the second source fails its check after the
 * first passed; cleanup once read src[] entries never written. */
static int evac_bad_second_source(client *k, rh_error *err)
{
	uint32_t r[] = {0, 5, 100};
	int rc = send_old_region(k, 0, 4096, err);
	return rc ? rc : send_evacuate(k, r, 2, 1, err);
}

static int evac_source_twice(client *k, rh_error *err)
{
	uint32_t r[] = {0, 0, 1};
	int rc = send_old_region(k, 0, 4096, err);
	return rc ? rc : send_evacuate(k, r, 2, 1, err);
}

static int evac_destination_twice(client *k, rh_error *err)
{
	uint32_t r[] = {0, 1, 1};
	int rc = send_old_region(k, 0, 4096, err);
	return rc ? rc : send_evacuate(k, r, 1, 2, err);
}

/* A slot write that straddles two words. */
static int fix_unaligned_slot(client *k, rh_error *err)
{
	rh_slot_write w = {.slot = k->part.base + 4, .old = 0, .value = 1};
	rh_msg m = {.type = RH_MSG_FIX_CARDS};
	m.u.fix_cards = (rh_msg_fix_cards){.id = 3, .n_writes = 1, .writes = &w};
	int rc = send_old_region(k, 0, 4096, err);
	return rc ? rc : client_send(k, &m, err);
}

/* A full marking asked to mark an address inside a word. */
static int mark_unaligned(client *k, rh_error *err)
{
	uint64_t a = k->part.base + 12;
	rh_msg b = {.type = RH_MSG_FULL};
	b.u.full = (rh_msg_full){.id = 9, .phase = RH_FULL_BEGIN};
	rh_msg m = {.type = RH_MSG_MARK_REFS};
	m.u.mark_refs =
	        (rh_msg_mark_refs){.partition = 0, .flags = RH_MARK_ROOTS, .n = 1, .addrs = &a};
	int rc = send_old_region(k, 0, 4096, err);
	if (rc == RH_OK)
		rc = client_send(k, &b, err);
	return rc ? rc : client_send(k, &m, err);
}

/* Appended ROOTS batches beyond one per word of the region. */
static int roots_without_end(client *k, rh_error *err)
{
	static uint32_t offs[RH_ROOTS_MAX];
	rh_msg m = {.type = RH_MSG_ROOTS};
	uint64_t words = k->cfg.region_size / 8;
	int rc = send_old_region(k, 0, 4096, err);
	for (uint64_t sent = 0; rc == RH_OK && sent <= words; sent += RH_ROOTS_MAX) {
		m.u.roots = (rh_msg_roots){.region = 0, .n = RH_ROOTS_MAX, .offs = offs};
		rc = client_send(k, &m, err);
	}
	return rc;
}

/* The first ERROR the tracer sends (MARKED and the like are skipped). */
static int recv_error(client *k, rh_msg *m, rh_error *err)
{
	for (int i = 0; i < 100; i++) {
		int rc = client_recv(k, m, err);
		if (rc != RH_OK || m->type == RH_MSG_ERROR)
			return rc;
	}
	return rh_err_set(err, RH_EPEER, "no ERROR in 100 messages");
}

static void run_case(const char *name, int (*send)(client *, rh_error *), const char *expect)
{
	cluster c;
	client k = {0};
	rh_error err;
	char log[65536];
	if (client_start(&c, &k, tracerd, provider, &err) < 0)
		return;
	int rc = send_types(&k, &err);
	if (rc == RH_OK)
		rc = send(&k, &err);
	rh_msg ans;
	if (rc == RH_OK)
		rc = recv_error(&k, &ans, &err);
	CHECK(rc == RH_OK && strstr(ans.u.error.text, expect),
	      "%s: answered with an ERROR naming \"%s\" (%s)", name, expect,
	      rc == RH_OK ? ans.u.error.text : err.msg);
	CHECK(client_wait_log(&c, "error tracerd: CPU server lost", log, sizeof log) &&
	              strstr(log, expect),
	      "%s: logged, and the session dropped: %s", name, log);
	rh_tp_close(k.conn);
	/* The session is over, not the tracer: it releases the partition and
	 * serves the next CPU server (operations.R1). */
	client k2 = {0};
	int rc2 = client_open(&k2, &c, provider, &err);
	CHECK(rc2 == RH_OK && waitpid(c.pid[0], NULL, WNOHANG) == 0,
	      "%s: the tracer released that session and serves the next CPU server (%s)", name,
	      rc2 == RH_OK ? "HELLO_OK" : err.msg);
	CHECK(client_wait_log(&c, "released; waiting for a CPU server", log, sizeof log),
	      "%s: it logged the release: %s", name, log);
	if (k2.conn)
		rh_tp_close(k2.conn);
	cluster_log(&c, 0, log, sizeof log);
	CHECK(!strstr(log, "Sanitizer") && !strstr(log, "runtime error"),
	      "%s: no sanitizer report: %s", name, log);
	char bad[256];
	CHECK(ops_log_well_formed(log, bad, sizeof bad), "%s: one event per line: %s", name, bad);
	cluster_stop(&c);
}

int main(int argc, char **argv)
{
	if (cluster_args(argc, argv, 0, "", &tracerd, &provider))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	run_case("EVACUATE src=[0,5] dst=[100]", evac_bad_second_source,
	         "EVACUATE: region 5 is free here, expected an old region");
	run_case("EVACUATE src=[0,0]", evac_source_twice, "EVACUATE: region 0 listed twice");
	run_case("EVACUATE dst=[1,1]", evac_destination_twice, "EVACUATE: region 1 listed twice");
	run_case("FIX_CARDS unaligned slot", fix_unaligned_slot, "FIX_CARDS: write 0: slot");
	run_case("MARK_REFS unaligned", mark_unaligned, "not a nonzero 8-byte aligned address");
	run_case("ROOTS without end", roots_without_end, "ROOTS: more than");
	return check_done();
}
