/* Writes the seed corpora under DIR (tests/fuzz/corpus) from the encoders
 * themselves, so the seeds are valid by construction:
 *   DIR/typetab/  type tables from rh_typetab_to_json
 *   DIR/proto/    at least one message of each type from rh_msg_encode
 *                 (in the current version: seeds of an older one would all
 *                 stop at the version check)
 *   DIR/auth/     one script per fuzz_auth scenario
 *   DIR/dgc/      heap images and collector messages (seeds_dgc.c)
 * The config seeds are hand-written JSON and live in the tree as they are.
 *
 * Usage: rh-fuzz-seeds DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "wire/proto.h"
#include "gc/types.h"
#include "transport/auth.h"

static const char *root;

void dgc_seeds(const char *dir);

static void write_seed(const char *sub, const char *name, const void *buf, size_t len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s/%s", root, sub, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0)
		rh_panic("cannot write %s (does the directory exist?)", path);
}

static void add(rh_type_table *t, rh_type_desc d)
{
	rh_error err = {0};
	if (!rh_typetab_add(t, &d, &err))
		rh_panic("seed type %s: %s", d.name, err.msg);
}

static void typetab_seeds(void)
{
	static const uint32_t pair[] = {8, 16}, rec[] = {0, 16}, fixed[] = {24};
	rh_type_table t;
	if (rh_typetab_init(&t))
		rh_panic("out of memory");
	char *s = rh_typetab_to_json(&t); /* the empty table */
	write_seed("typetab", "empty.json", s, strlen(s));
	free(s);
	add(&t, (rh_type_desc){.name = "pair", .size = 24, .ptr_offsets = pair, .n_ptrs = 2});
	s = rh_typetab_to_json(&t);
	write_seed("typetab", "fixed.json", s, strlen(s));
	free(s);
	add(&t, (rh_type_desc){.name = "vector", .layout = RH_LAYOUT_REF_ARRAY, .size = 16});
	add(&t, (rh_type_desc){.name = "string", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16});
	add(&t, (rh_type_desc){.name = "entries",
	                       .layout = RH_LAYOUT_RECORD_ARRAY,
	                       .size = 32,
	                       .elem_size = 24,
	                       .ptr_offsets = fixed,
	                       .n_ptrs = 1,
	                       .elem_ptr_offsets = rec,
	                       .n_elem_ptrs = 2});
	s = rh_typetab_to_json(&t);
	write_seed("typetab", "all-layouts.json", s, strlen(s));
	free(s);
	rh_typetab_free(&t);
}

static void proto_seed(const char *name, const rh_msg *m)
{
	uint8_t buf[RH_PROTO_MAX];
	size_t n = rh_msg_encode(m, buf, sizeof buf);
	if (!n)
		rh_panic("seed message %s does not encode", name);
	write_seed("proto", name, buf, n);
}

/* Version 2: the distributed-collection messages, each with more than one
 * entry so that the fuzzer finds the per-entry checks, and every flag. */
static void distributed_seeds(void)
{
	static const rh_region_desc ents[] = {
	        {.region = 512, .ident = 1, .top = 1 << 20, .kind = 2, .evicted_pct = 100},
	        {.region = 513, .ident = 7, .top = 4096, .kind = 1, .evicted_pct = 0},
	        {.region = 514, .ident = 9, .top = 1 << 20, .kind = 3, .survivals = 3},
	        {.region = 515, .ident = 9, .top = 0, .kind = 4, .evicted_pct = 50}};
	static const uint32_t offs[] = {0, 3, 130000};
	static const rh_marked_desc marked[] = {
	        {.region = 512, .ident = 1, .top = 1 << 20, .objects = 900, .live_bytes = 4096},
	        {.region = 514, .ident = 9, .top = 1 << 20, .objects = 1, .live_bytes = 1 << 20}};
	static const uint32_t evac[] = {512, 514, 600};
	static const rh_ref_pair pairs[] = {{0x400000001008ull, 0x400025000010ull},
	                                    {0x400030000ff8ull, 0}};
	static const rh_evac_src src[] = {{512, RH_EVAC_MOVED, 4096}, {514, RH_EVAC_KEPT, 1 << 20}};
	static const rh_evac_dst dst[] = {{600, 4096}};

	rh_msg m = {.type = RH_MSG_REGIONS, .seq = 20};
	m.u.regions = (rh_msg_regions){
	        .epoch = 3, .flags = RH_REGIONS_FIRST | RH_REGIONS_LAST, .n = 4, .ents = ents};
	proto_seed("regions", &m);
	m.u.regions = (rh_msg_regions){.epoch = 4, .flags = RH_REGIONS_FIRST, .n = 0, .ents = ents};
	proto_seed("regions-empty", &m);
	m = (rh_msg){.type = RH_MSG_ROOTS, .seq = 21};
	m.u.roots = (rh_msg_roots){
	        .region = 512, .flags = RH_ROOTS_FIRST | RH_ROOTS_REMARK, .n = 3, .offs = offs};
	proto_seed("roots", &m);
	m = (rh_msg){.type = RH_MSG_MARKED, .seq = 22};
	m.u.marked = (rh_msg_marked){.n = 2, .ents = marked};
	proto_seed("marked", &m);
	m = (rh_msg){.type = RH_MSG_EVACUATE, .seq = 23};
	m.u.evacuate = (rh_msg_evacuate){
	        .id = 1, .flags = RH_EVAC_NO_REMARK, .n_src = 2, .n_dst = 1, .regions = evac};
	proto_seed("evacuate", &m);
	/* Past the decoder's on-stack scratch for the duplicate check. */
	uint32_t many[100];
	for (uint32_t i = 0; i < 100; i++)
		many[i] = 1000 + 37 * i;
	m.u.evacuate = (rh_msg_evacuate){.id = 2, .n_src = 80, .n_dst = 20, .regions = many};
	proto_seed("evacuate-100", &m);
	m = (rh_msg){.type = RH_MSG_EVAC_REFS, .seq = 24};
	m.u.evac_refs = (rh_msg_evac_refs){.id = 1, .n = 2, .pairs = pairs};
	proto_seed("evac_refs", &m);
	m = (rh_msg){.type = RH_MSG_EVACUATED, .seq = 25};
	m.u.evacuated = (rh_msg_evacuated){.id = 1,
	                                   .n_src = 2,
	                                   .n_dst = 1,
	                                   .remark_ns = 150000,
	                                   .evac_ns = 2000000,
	                                   .bytes_copied = 4096,
	                                   .objects_copied = 900,
	                                   .pages_rescanned = 2,
	                                   .src = src,
	                                   .dst = dst};
	proto_seed("evacuated", &m);
}

/* Full-heap marking: every flag and both phases, batches with more than one
 * entry (per-entry checks), and addresses that use the top bits. */
static void full_marking_seeds(void)
{
	static const uint64_t roots[] = {0x400000001000ull, 0x400020000018ull, 0x4000200ffff8ull};
	static const uint64_t relayed[] = {0x400040000010ull, 0xfffffffffffffff8ull};
	static const rh_region_live live[] = {
	        {512, 4096}, {513, 0}, {514, 1 << 20}, {0xffffffffu, ~0ull}};

	rh_msg m = {.type = RH_MSG_FULL, .seq = 30};
	m.u.full = (rh_msg_full){.id = 1, .phase = RH_FULL_BEGIN};
	proto_seed("full-begin", &m);
	m.u.full = (rh_msg_full){.id = 1, .phase = RH_FULL_END};
	proto_seed("full-end", &m);
	m = (rh_msg){.type = RH_MSG_MARK_REFS, .seq = 31};
	m.u.mark_refs =
	        (rh_msg_mark_refs){.partition = 1, .flags = RH_MARK_ROOTS, .n = 3, .addrs = roots};
	proto_seed("mark_refs-roots", &m);
	m.u.mark_refs = (rh_msg_mark_refs){.partition = 2, .flags = 0, .n = 2, .addrs = relayed};
	proto_seed("mark_refs", &m);
	m = (rh_msg){.type = RH_MSG_MARK_ACK, .seq = 32};
	m.u.mark_ack.batches = 3;
	proto_seed("mark_ack", &m);
	m = (rh_msg){.type = RH_MSG_FULL_DONE, .seq = 33};
	m.u.full_done = (rh_msg_full_done){.id = 1,
	                                   .bytes_marked = 5 << 20,
	                                   .mark_ns = 3000000,
	                                   .flags = RH_FULL_DONE_FIRST | RH_FULL_DONE_LAST,
	                                   .n = 4,
	                                   .ents = live};
	proto_seed("full_done", &m);
	m.u.full_done = (rh_msg_full_done){
	        .id = 2, .bytes_marked = 0, .mark_ns = 1, .flags = RH_FULL_DONE_FIRST, .n = 0};
	proto_seed("full_done-empty", &m);
}

/* Version 3: fixing evicted cards on their host. A FIX_CARDS with all
 * three arrays (moved regions of two partitions, 512-byte aligned cards,
 * writes whose old value is null or not), one with writes only (the second
 * FIX_CARDS of a CSSC, for slots another tracer's forwarding resolved), and
 * CARDS_FIXED replies with every kind, with and without LAST. */
static void card_fixing_seeds(void)
{
	static const uint32_t moved[] = {512, 514, 2048 + 7};
	static const uint64_t cards[] = {0x400000000200ull, 0x400000001e00ull, 0x40000fff0000ull};
	static const rh_slot_write writes[] = {
	        {.slot = 0x400000000208ull, .old = 0x400000010010ull, .value = 0x400080000040ull},
	        {.slot = 0x400000001e38ull, .old = 0, .value = 0xfffffffffffffff8ull}};
	static const rh_slot_write resolved[] = {
	        {.slot = 0x400000000450ull, .old = 0x400000020000ull, .value = 0x400080100008ull}};
	static const rh_fix_ent ents[] = {
	        {.kind = RH_FIX_REF, .region = 600, .addr = 0x400000000200ull},
	        {.kind = RH_FIX_UNRESOLVED,
	         .region = 2048 + 7,
	         .addr = 0x400000001e08ull,
	         .value = 0x400800700010ull},
	        {.kind = RH_FIX_FAILED, .region = 514, .addr = 0x40000fff0000ull},
	        {.kind = RH_FIX_FAILED, .region = 0, .addr = 0x400000001e38ull, .value = 0}};

	rh_msg m = {.type = RH_MSG_FIX_CARDS, .seq = 40};
	m.u.fix_cards = (rh_msg_fix_cards){.id = 3,
	                                   .n_moved = 3,
	                                   .n_cards = 3,
	                                   .n_writes = 2,
	                                   .moved = moved,
	                                   .cards = cards,
	                                   .writes = writes};
	proto_seed("fix_cards", &m);
	m.u.fix_cards = (rh_msg_fix_cards){
	        .id = 4, .n_moved = 0, .n_cards = 0, .n_writes = 1, .writes = resolved};
	proto_seed("fix_cards-writes", &m);
	m = (rh_msg){.type = RH_MSG_CARDS_FIXED, .seq = 41};
	m.u.cards_fixed = (rh_msg_cards_fixed){.id = 3, .flags = 0, .n = 4, .ents = ents};
	proto_seed("cards_fixed", &m);
	m.u.cards_fixed = (rh_msg_cards_fixed){.id = 3, .flags = RH_CARDS_FIXED_LAST, .n = 0};
	proto_seed("cards_fixed-last", &m);
}

static void proto_seeds(void)
{
	static const char types_json[] = "{\"version\":1,\"types\":[]}";
	static const uint32_t regions[] = {0, 7, 4096};
	rh_msg m = {.type = RH_MSG_HELLO, .seq = 1};
	m.u.hello = (rh_msg_hello){.partition = 1,
	                           .heap_base = 0x400000000000ull,
	                           .heap_size = 1ull << 30,
	                           .region_size = 1ull << 20,
	                           .part_base = 0x400020000000ull,
	                           .part_size = 1ull << 29};
	proto_seed("hello", &m);
	m = (rh_msg){.type = RH_MSG_TYPES, .seq = 2};
	m.u.types = (rh_msg_types){.offset = 0,
	                           .total = sizeof types_json - 1,
	                           .len = sizeof types_json - 1,
	                           .bytes = (const uint8_t *)types_json};
	proto_seed("types", &m);
	m = (rh_msg){.type = RH_MSG_HELLO_OK, .seq = 3};
	m.u.hello_ok =
	        (rh_msg_hello_ok){.meta_base = 0x7f0000000000ull, .meta_size = 1 << 20, .pid = 42};
	proto_seed("hello_ok", &m);
	m = (rh_msg){.type = RH_MSG_ERROR, .seq = 4};
	m.u.error.code = RH_ERANGE;
	strcpy(m.u.error.text, "partition 1 is outside the heap");
	proto_seed("error", &m);
	m = (rh_msg){.type = RH_MSG_FREE, .seq = 5};
	m.u.free = (rh_msg_free){.n = 3, .regions = (const uint8_t *)regions};
	proto_seed("free", &m);
	m = (rh_msg){.type = RH_MSG_PING, .seq = 6};
	m.u.ping = (rh_msg_ping){.seq = 9, .time_ns = 123456789};
	proto_seed("ping", &m);
	m.type = RH_MSG_PONG;
	proto_seed("pong", &m);
	m = (rh_msg){.type = RH_MSG_BYE, .seq = 8};
	proto_seed("bye", &m);
	m = (rh_msg){.type = RH_MSG_FREE_OK, .seq = 5};
	proto_seed("free_ok", &m);
	distributed_seeds();
	full_marking_seeds();
	card_fixing_seeds();
}

/* fuzz_auth scripts: the scenario byte, then (impostor) segments of the
 * form "control byte, bytes" or (man in the middle) XOR masks. */
static void auth_seeds(void)
{
	struct rh_auth a;
	rh_error err = {0};
	uint8_t buf[1 + 2 * (1 + RH_AUTH_CHALLENGE_LEN)];
	if (rh_auth_init(&a, RH_AUTH_CONNECTOR, (const uint8_t *)"seed", 4, &err))
		rh_panic("auth: %s", err.msg);

	/* Impostor against a listener: a well-formed HELLO, then a zero proof. */
	uint8_t hello[RH_AUTH_HELLO_LEN];
	rh_auth_hello(&a, hello);
	size_t n = 0;
	buf[n++] = 0;
	buf[n++] = (RH_AUTH_HELLO_LEN - 1) << 1;
	memcpy(buf + n, hello, RH_AUTH_HELLO_LEN);
	n += RH_AUTH_HELLO_LEN;
	buf[n++] = (RH_AUTH_PROOF_LEN - 1) << 1;
	memset(buf + n, 0, RH_AUTH_PROOF_LEN);
	n += RH_AUTH_PROOF_LEN;
	write_seed("auth", "listener-hello", buf, n);

	/* Impostor against a connector: a CHALLENGE whose nonce and proof are
	 * replayed from the connector's own HELLO (a reflection attempt). */
	n = 0;
	buf[n++] = 1;
	buf[n++] = 15 << 1;
	memcpy(buf + n, "RHTPCHAL\1\0\0\0\0\0\0\0", 16);
	n += 16;
	buf[n++] = (63 << 1) | 1;
	buf[n++] = 16;
	buf[n++] = (3 << 1);
	memset(buf + n, 0, 4);
	n += 4;
	write_seed("auth", "connector-reflect", buf, n);

	/* Man in the middle, same secret: no tampering, then one flipped bit in
	 * the listener's nonce. */
	memset(buf, 0, sizeof buf);
	buf[0] = 2;
	write_seed("auth", "mitm-clean", buf, 1);
	buf[1 + RH_AUTH_HELLO_LEN + 16] = 0x01;
	write_seed("auth", "mitm-flip-nonce", buf, 1 + RH_AUTH_HELLO_LEN + 17);
	buf[0] = 3;
	write_seed("auth", "mitm-foreign", buf, 1);
	rh_auth_fini(&a);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	root = argv[1];
	typetab_seeds();
	proto_seeds();
	auth_seeds();
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/dgc", root);
	dgc_seeds(dir);
	return 0;
}
