/* Control-path messages between librheap and rheap-tracerd (docs/protocol.md).
 *
 * Every message is a 12-byte header followed by a payload, little-endian:
 *   u16 magic 0x5248 ("RH"), u8 version, u8 type, u32 payload length,
 *   u32 sequence number.
 * Decoders check the header, the exact payload length each type requires,
 * and every count and string bound; a malformed message is an RH_EPEER
 * error naming what was wrong, never a crash.
 */
#ifndef RH_WIRE_PROTO_H
#define RH_WIRE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "rheap/rheap.h"

#define RH_PROTO_MAGIC 0x5248u
#define RH_PROTO_VERSION 4u
#define RH_PROTO_HDR 12u
#define RH_PROTO_MAX 65536u /* a whole message, header included */
#define RH_PROTO_CHUNK (RH_PROTO_MAX - RH_PROTO_HDR - 16u)
#define RH_PROTO_MAX_FREE ((RH_PROTO_MAX - RH_PROTO_HDR - 4u) / 4u)
/* A CPU server starts no new open attempt after this many
 * transport.timeout_ms (operations.R2), so an open lasts at most one more;
 * a tracer allows it that long between its HELLO_OK and the first message
 * after it (operations.R3). */
#define RH_PROTO_OPEN_TIMEOUTS 4u

enum rh_msg_type {
	RH_MSG_HELLO = 1,    /* CPU → tracer: who I think you are */
	RH_MSG_TYPES = 2,    /* CPU → tracer: a chunk of the type table JSON */
	RH_MSG_HELLO_OK = 3, /* tracer → CPU: ready; where the metadata is */
	RH_MSG_ERROR = 4,    /* either way: fatal, with a reason */
	RH_MSG_FREE = 5,     /* CPU → tracer: regions freed by the collector */
	RH_MSG_PING = 6,     /* either way: heartbeat */
	RH_MSG_PONG = 7,
	RH_MSG_BYE = 8,     /* CPU → tracer: orderly close */
	RH_MSG_FREE_OK = 9, /* tracer → CPU: the FREE with this seq is done */
	/* Distributed collection (docs/distributed-gc.md). */
	RH_MSG_REGIONS = 10,   /* CPU → tracer: its partition's region table, each pause */
	RH_MSG_ROOTS = 11,     /* CPU → tracer: root objects inside one region */
	RH_MSG_MARKED = 12,    /* tracer → CPU: regions marked concurrently, live bytes */
	RH_MSG_EVACUATE = 13,  /* CPU → tracer: remark and evacuate these regions */
	RH_MSG_EVAC_REFS = 14, /* tracer → CPU: cross-region references of moved objects */
	RH_MSG_EVACUATED = 15, /* tracer → CPU: the EVACUATE with this id is done */
	/* Full-heap marking by the tracers (docs/distributed-gc.md). */
	RH_MSG_MARK_REFS = 16, /* either way: objects to mark, relayed by the CPU server */
	RH_MSG_MARK_ACK = 17,  /* tracer → CPU: this many MARK_REFS batches are done */
	RH_MSG_FULL = 18,      /* CPU → tracer: begin / end a full-heap marking */
	RH_MSG_FULL_DONE = 19, /* tracer → CPU: live bytes per region after the end */
	/* Fixing evicted cards on their host (docs/distributed-gc.md). */
	RH_MSG_FIX_CARDS = 20,   /* CPU → tracer: fix these cards (and write these slots) */
	RH_MSG_CARDS_FIXED = 21, /* tracer → CPU: what it fixed, what it left to the CPU */
	RH_MSG_TYPE_MAX = 21,
};

typedef struct rh_msg_hello {
	uint32_t partition; /* index of the tracer in the config */
	uint32_t replica;   /* 1 + the partition whose copy the tracer keeps; 0: none (red.P1) */
	uint64_t heap_base, heap_size, region_size;
	uint64_t part_base, part_size;
} rh_msg_hello;

typedef struct rh_msg_types {
	uint32_t offset, total;
	uint32_t len;
	const uint8_t *bytes; /* points into the decoded buffer */
} rh_msg_types;

typedef struct rh_msg_hello_ok {
	uint64_t meta_base, meta_size;
	uint32_t pid;
} rh_msg_hello_ok;

typedef struct rh_msg_error {
	uint32_t code;
	char text[200];
} rh_msg_error;

typedef struct rh_msg_free {
	uint32_t n;
	const uint8_t *regions; /* n little-endian u32 global region indices */
} rh_msg_free;

typedef struct rh_msg_ping {
	uint64_t seq, time_ns;
} rh_msg_ping;

/* REGIONS: a table in one or more messages; FIRST resets the receiver's
 * table (every region free), LAST ends it. Entries list non-free regions. */
/* The region kinds a REGIONS entry may carry: EDEN..HUMONGOUS_CONT of
 * gc/region.h, which this layer does not include (tests/unit/test_proto.c
 * checks that they agree). */
#define RH_WIRE_KIND_FIRST 1u
#define RH_WIRE_KIND_LAST 4u
#define RH_REGIONS_FIRST 1u
#define RH_REGIONS_LAST 2u
#define RH_REGIONS_MAX ((RH_PROTO_MAX - RH_PROTO_HDR - 16u) / 16u)
typedef struct rh_region_desc {
	uint32_t region;     /* global index */
	uint32_t ident;      /* changes whenever the region's object layout may have */
	uint32_t top;        /* bytes in use from the region's start */
	uint8_t kind;        /* rh_region_kind, RH_WIRE_KIND_FIRST..LAST */
	uint8_t evicted_pct; /* share of [start, top) not resident on the CPU server */
	uint16_t survivals;
} rh_region_desc;
typedef struct rh_msg_regions {
	uint64_t epoch; /* collections so far */
	uint32_t flags; /* RH_REGIONS_* */
	uint32_t n;
	const void *ents; /* encode: rh_region_desc[n]; decoded: wire, use rh_msg_regions_get */
} rh_msg_regions;

/* ROOTS: object starts as word offsets from the region's start. FIRST
 * replaces the roots held for that region, otherwise they are appended.
 * REMARK: for the EVACUATE that follows; else roots for concurrent marking
 * in the coming epoch. */
#define RH_ROOTS_FIRST 1u
#define RH_ROOTS_REMARK 2u
#define RH_ROOTS_MAX ((RH_PROTO_MAX - RH_PROTO_HDR - 12u) / 4u)
typedef struct rh_msg_roots {
	uint32_t region, flags, n;
	const void *offs; /* encode: uint32_t[n]; decoded: wire, use rh_msg_roots_get */
} rh_msg_roots;

#define RH_MARKED_MAX ((RH_PROTO_MAX - RH_PROTO_HDR - 4u) / 24u)
typedef struct rh_marked_desc {
	uint32_t region, ident, top; /* as in the REGIONS entry the marking used */
	uint32_t objects;
	uint64_t live_bytes;
} rh_marked_desc;
typedef struct rh_msg_marked {
	uint32_t n;
	const void *ents; /* encode: rh_marked_desc[n]; decoded: wire */
} rh_msg_marked;

/* EVACUATE: regions[0, n_src) are evacuated, in that order, into
 * regions[n_src, n_src + n_dst), which the CPU server took for it (all in
 * the tracer's partition). */
#define RH_EVAC_NO_REMARK 1u /* debug only: skip rescans and deferred scans */
#define RH_EVACUATE_MAX ((RH_PROTO_MAX - RH_PROTO_HDR - 20u) / 4u)
typedef struct rh_msg_evacuate {
	uint64_t id;
	uint32_t flags, n_src, n_dst;
	const void *regions; /* encode: uint32_t[n_src + n_dst]; decoded: wire */
} rh_msg_evacuate;

#define RH_EVAC_REFS_MAX ((RH_PROTO_MAX - RH_PROTO_HDR - 12u) / 16u)
typedef struct rh_ref_pair {
	uint64_t slot, value;
} rh_ref_pair;
typedef struct rh_msg_evac_refs {
	uint64_t id;
	uint32_t n;
	const void *pairs; /* encode: rh_ref_pair[n]; decoded: wire */
} rh_msg_evac_refs;

#define RH_EVAC_KEPT 0u  /* not moved (no room): the region stays as it was */
#define RH_EVAC_MOVED 1u /* every live object moved: the region may be freed */
typedef struct rh_evac_src {
	uint32_t region, status;
	uint64_t live_bytes;
} rh_evac_src;
typedef struct rh_evac_dst {
	uint32_t region, top;
} rh_evac_dst;
typedef struct rh_msg_evacuated {
	uint64_t id;
	uint32_t n_src, n_dst;
	uint64_t remark_ns, evac_ns, bytes_copied, objects_copied, pages_rescanned;
	const void *src; /* encode: rh_evac_src[n_src]; decoded: wire */
	const void *dst; /* encode: rh_evac_dst[n_dst]; decoded: wire */
} rh_msg_evacuated;

/* MARK_REFS: addresses of objects in `partition` to mark. ROOTS: from the
 * CPU server's roots (else relayed from another tracer's marking). */
#define RH_MARK_ROOTS 1u
#define RH_MARK_REFS_MAX ((RH_PROTO_MAX - RH_PROTO_HDR - 12u) / 8u)
typedef struct rh_msg_mark_refs {
	uint32_t partition, flags, n;
	const void *addrs; /* encode: uint64_t[n]; decoded: wire, use rh_msg_mark_refs_get */
} rh_msg_mark_refs;

typedef struct rh_msg_mark_ack {
	uint32_t batches; /* >= 1 */
} rh_msg_mark_ack;

#define RH_FULL_BEGIN 0u
#define RH_FULL_END 1u
#define RH_FULL_BEGIN_CONC 2u /* begin, with the mutators running */
typedef struct rh_msg_full {
	uint64_t id;
	uint32_t phase; /* RH_FULL_BEGIN, RH_FULL_END or RH_FULL_BEGIN_CONC */
} rh_msg_full;

#define RH_FULL_DONE_FIRST 1u
#define RH_FULL_DONE_LAST 2u
#define RH_FULL_DONE_MAX ((RH_PROTO_MAX - RH_PROTO_HDR - 32u) / 16u)
typedef struct rh_region_live {
	uint32_t region;
	uint64_t live_bytes;
} rh_region_live;
typedef struct rh_msg_full_done {
	uint64_t id, bytes_marked, mark_ns;
	uint32_t flags, n;
	const void *ents; /* encode: rh_region_live[n]; decoded: wire */
} rh_msg_full_done;

/* FIX_CARDS: cards (their start addresses, in the tracer's partition) whose
 * fields may refer to objects moved out of `moved` regions; and slots to
 * overwrite, each only if it still holds `old`. Every FIX_CARDS gets
 * CARDS_FIXED replies with its id, the last flagged LAST. */
#define RH_FIX_CARDS_HDR 24u
typedef struct rh_slot_write {
	uint64_t slot, old, value;
} rh_slot_write;
typedef struct rh_msg_fix_cards {
	uint64_t id;
	uint32_t n_moved, n_cards, n_writes;
	const void *moved;  /* encode: uint32_t[n_moved]; decoded: wire */
	const void *cards;  /* encode: uint64_t[n_cards]; decoded: wire */
	const void *writes; /* encode: rh_slot_write[n_writes]; decoded: wire */
} rh_msg_fix_cards;

#define RH_FIX_REF 1u        /* slot `addr` now holds `value`, in `region`: remember it */
#define RH_FIX_UNRESOLVED 2u /* slot `addr` holds `value`, moved by another tracer */
#define RH_FIX_FAILED 3u     /* card or slot `addr` not fixed here: the CPU server must */
#define RH_CARDS_FIXED_LAST 1u
#define RH_CARDS_FIXED_MAX ((RH_PROTO_MAX - RH_PROTO_HDR - 16u) / 24u)
typedef struct rh_fix_ent {
	uint32_t kind, region;
	uint64_t addr, value;
} rh_fix_ent;
typedef struct rh_msg_cards_fixed {
	uint64_t id;
	uint32_t flags, n;
	const void *ents; /* encode: rh_fix_ent[n]; decoded: wire */
} rh_msg_cards_fixed;

typedef struct rh_msg {
	uint8_t type;
	uint32_t seq;
	union {
		rh_msg_hello hello;
		rh_msg_types types;
		rh_msg_hello_ok hello_ok;
		rh_msg_error error;
		rh_msg_free free;
		rh_msg_ping ping;
		rh_msg_regions regions;
		rh_msg_roots roots;
		rh_msg_marked marked;
		rh_msg_evacuate evacuate;
		rh_msg_evac_refs evac_refs;
		rh_msg_evacuated evacuated;
		rh_msg_mark_refs mark_refs;
		rh_msg_mark_ack mark_ack;
		rh_msg_full full;
		rh_msg_full_done full_done;
		rh_msg_fix_cards fix_cards;
		rh_msg_cards_fixed cards_fixed;
	} u;
} rh_msg;

/* Encode into buf (capacity cap, at least RH_PROTO_MAX is always enough).
 * Returns the message length, or 0 if it does not fit. For FREE, `regions`
 * points to host-order u32s here (the encoder converts). */
size_t rh_msg_encode(const rh_msg *m, uint8_t *buf, size_t cap);
/* Decode and validate; pointers in *m refer into buf. */
int rh_msg_decode(const uint8_t *buf, size_t len, rh_msg *m, rh_error *err);
uint32_t rh_msg_free_region(const rh_msg_free *f, uint32_t i);
const char *rh_msg_type_name(unsigned type);
/* Accessors for decoded arrays (wire order, bounds checked by the decoder). */
void rh_msg_regions_get(const rh_msg_regions *m, uint32_t i, rh_region_desc *out);
uint32_t rh_msg_roots_get(const rh_msg_roots *m, uint32_t i);
void rh_msg_marked_get(const rh_msg_marked *m, uint32_t i, rh_marked_desc *out);
uint32_t rh_msg_evacuate_region(const rh_msg_evacuate *m, uint32_t i);
void rh_msg_evac_refs_get(const rh_msg_evac_refs *m, uint32_t i, rh_ref_pair *out);
void rh_msg_evacuated_src(const rh_msg_evacuated *m, uint32_t i, rh_evac_src *out);
void rh_msg_evacuated_dst(const rh_msg_evacuated *m, uint32_t i, rh_evac_dst *out);
uint64_t rh_msg_mark_refs_get(const rh_msg_mark_refs *m, uint32_t i);
void rh_msg_full_done_get(const rh_msg_full_done *m, uint32_t i, rh_region_live *out);
uint32_t rh_msg_fix_cards_moved(const rh_msg_fix_cards *m, uint32_t i);
uint64_t rh_msg_fix_cards_card(const rh_msg_fix_cards *m, uint32_t i);
void rh_msg_fix_cards_write(const rh_msg_fix_cards *m, uint32_t i, rh_slot_write *out);
void rh_msg_cards_fixed_get(const rh_msg_cards_fixed *m, uint32_t i, rh_fix_ent *out);

#endif
