/* The control-path protocol's one declaration (docs/protocol.md): every
 * message's byte layout, as a table that wire/proto.c's encoder, decoder
 * and accessors walk and that rh-wire-doc prints as docs/protocol.md's
 * field tables. Included by those two only; everything here is static. */
#ifndef RH_WIRE_TABLE_H
#define RH_WIRE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "wire/proto.h"

/* --- The table -------------------------------------------------------------
 *
 * A field is a little-endian integer of 1, 2, 4 or 8 bytes on the wire, read
 * from and written to a member of a host struct; Z32 is a reserved u32,
 * zero on the wire and in no struct. */
enum { U8 = 1, U16 = 2, U32 = 4, U64 = 8, Z32 = 0x14 };
#define WIDTH(k) ((k)&0xf)

typedef struct field {
	uint8_t kind;
	uint8_t host;     /* sizeof the member */
	uint16_t off;     /* offsetof the member */
	const char *name; /* the member's name, for docs/protocol.md */
	const char *doc;  /* what it means there, or NULL */
} field;

#define F(k, T, m) FD(k, T, m, NULL)
/* A field with its meaning, as docs/protocol.md's tables give it. */
#define FD(k, T, m, doc)                                                                           \
	{                                                                                          \
		k, sizeof(((T *)0)->m), offsetof(T, m), #m, doc                                    \
	}
#define RESERVED                                                                                   \
	{                                                                                          \
		Z32, 0, 0, "reserved", "0"                                                         \
	}

/* An element of an array: its fields, and the host struct they fill. */
typedef struct elem {
	const field *f;
	uint8_t n;
	uint16_t stride;   /* sizeof the host struct (or scalar) */
	const char *label; /* what the first field names, for messages */
} elem;

#define ELEM(T, label, ...)                                                                        \
	static const field T##_fields[] = {__VA_ARGS__};                                           \
	static const elem T##_elem = {T##_fields, sizeof T##_fields / sizeof T##_fields[0],        \
	                              sizeof(T), label}

typedef uint8_t byte;
typedef uint32_t word32;
typedef uint64_t word64;
ELEM(byte, "", {U8, 1, 0, "", NULL});
ELEM(word32, "", {U32, 4, 0, "", NULL});
ELEM(word64, "", {U64, 8, 0, "", NULL});
ELEM(rh_region_desc, "region", F(U32, rh_region_desc, region), F(U32, rh_region_desc, ident),
     F(U32, rh_region_desc, top), F(U8, rh_region_desc, kind), F(U8, rh_region_desc, evicted_pct),
     F(U16, rh_region_desc, survivals));
ELEM(rh_marked_desc, "region", F(U32, rh_marked_desc, region), F(U32, rh_marked_desc, ident),
     F(U32, rh_marked_desc, top), F(U32, rh_marked_desc, objects),
     F(U64, rh_marked_desc, live_bytes));
ELEM(rh_ref_pair, "slot", F(U64, rh_ref_pair, slot), F(U64, rh_ref_pair, value));
ELEM(rh_evac_src, "region", F(U32, rh_evac_src, region), F(U32, rh_evac_src, status),
     F(U64, rh_evac_src, live_bytes));
ELEM(rh_evac_dst, "region", F(U32, rh_evac_dst, region), F(U32, rh_evac_dst, top));
ELEM(rh_region_live, "region", F(U32, rh_region_live, region), RESERVED,
     F(U64, rh_region_live, live_bytes));
ELEM(rh_slot_write, "slot", F(U64, rh_slot_write, slot), F(U64, rh_slot_write, old),
     F(U64, rh_slot_write, value));
ELEM(rh_fix_ent, "kind", F(U32, rh_fix_ent, kind), F(U32, rh_fix_ent, region),
     F(U64, rh_fix_ent, addr), F(U64, rh_fix_ent, value));

/* An array after the fixed fields: `count` (plus `count2`, when not
 * NO_COUNT) elements, pointed to by the member at `ptr`: host structs when
 * encoding, the wire bytes once decoded (read them with the accessors). */
#define NO_COUNT 0xffff
typedef struct array {
	const elem *e;
	uint16_t count, count2, ptr;
	const char *noun;
} array;

typedef struct layout {
	const char *name;
	const field *f;
	uint8_t n;
	uint8_t n_arrays;
	array a[3];
	uint8_t text; /* ERROR: a u32 length and that many bytes of text follow the
	               * fields, held inline in the host struct */
} layout;

#define FIELDS(...)                                                                                \
	.f = (const field[]){__VA_ARGS__}, .n = sizeof((const field[]){__VA_ARGS__}) / sizeof(field)
#define NO_FIELDS .f = NULL, .n = 0
#define ARRAYS(k, ...) .n_arrays = k, .a = {__VA_ARGS__}
#define ARR(E, T, cnt, p, noun)                                                                    \
	{                                                                                          \
		&E##_elem, offsetof(T, cnt), NO_COUNT, offsetof(T, p), noun                        \
	}
#define ARR2(E, T, c1, c2, p, noun)                                                                \
	{                                                                                          \
		&E##_elem, offsetof(T, c1), offsetof(T, c2), offsetof(T, p), noun                  \
	}

/* Every message of version 4; docs/protocol.md describes the same layouts. */
static const layout layouts[RH_MSG_TYPE_MAX + 1] = {
        [RH_MSG_HELLO] = {.name = "HELLO",
                          FIELDS(FD(U32, rh_msg_hello, partition,
                                    "index of the tracer in the config"),
                                 FD(U32, rh_msg_hello, replica,
                                    "1 + the partition whose copy the tracer keeps; 0: none"),
                                 F(U64, rh_msg_hello, heap_base), F(U64, rh_msg_hello, heap_size),
                                 F(U64, rh_msg_hello, region_size), F(U64, rh_msg_hello, part_base),
                                 F(U64, rh_msg_hello, part_size))},
        [RH_MSG_TYPES] = {.name = "TYPES",
                          FIELDS(F(U32, rh_msg_types, offset), F(U32, rh_msg_types, total),
                                 FD(U32, rh_msg_types, len, "at most 65 508 (`RH_PROTO_CHUNK`)")),
                          ARRAYS(1, ARR(byte, rh_msg_types, len, bytes, "bytes"))},
        [RH_MSG_HELLO_OK] = {.name = "HELLO_OK",
                             FIELDS(F(U64, rh_msg_hello_ok, meta_base),
                                    F(U64, rh_msg_hello_ok, meta_size),
                                    F(U32, rh_msg_hello_ok, pid))},
        [RH_MSG_ERROR] = {.name = "ERROR",
                          FIELDS(FD(U32, rh_msg_error, code, "an `rh_status`")),
                          .text = 1},
        [RH_MSG_FREE] = {.name = "FREE",
                         FIELDS(F(U32, rh_msg_free, n)),
                         ARRAYS(1, ARR(word32, rh_msg_free, n, regions, "regions"))},
        [RH_MSG_PING] = {.name = "PING",
                         FIELDS(F(U64, rh_msg_ping, seq), F(U64, rh_msg_ping, time_ns))},
        [RH_MSG_PONG] = {.name = "PONG",
                         FIELDS(F(U64, rh_msg_ping, seq), F(U64, rh_msg_ping, time_ns))},
        [RH_MSG_BYE] = {.name = "BYE", NO_FIELDS},
        [RH_MSG_FREE_OK] = {.name = "FREE_OK", NO_FIELDS},
        [RH_MSG_REGIONS] = {.name = "REGIONS",
                            FIELDS(FD(U64, rh_msg_regions, epoch, "collections so far"),
                                   FD(U32, rh_msg_regions, flags, "1 `FIRST`, 2 `LAST`"),
                                   F(U32, rh_msg_regions, n)),
                            ARRAYS(1, ARR(rh_region_desc, rh_msg_regions, n, ents, "entries"))},
        [RH_MSG_ROOTS] = {.name = "ROOTS",
                          FIELDS(FD(U32, rh_msg_roots, region, "global index"),
                                 FD(U32, rh_msg_roots, flags, "1 `FIRST`, 2 `REMARK`"),
                                 F(U32, rh_msg_roots, n)),
                          ARRAYS(1, ARR(word32, rh_msg_roots, n, offs, "roots"))},
        [RH_MSG_MARKED] = {.name = "MARKED",
                           FIELDS(F(U32, rh_msg_marked, n)),
                           ARRAYS(1, ARR(rh_marked_desc, rh_msg_marked, n, ents, "entries"))},
        [RH_MSG_EVACUATE] = {.name = "EVACUATE",
                             FIELDS(FD(U64, rh_msg_evacuate, id,
                                       "echoed by `EVAC_REFS` and `EVACUATED`"),
                                    FD(U32, rh_msg_evacuate, flags, "1 `NO_REMARK`"),
                                    FD(U32, rh_msg_evacuate, n_src, "at least 1"),
                                    F(U32, rh_msg_evacuate, n_dst)),
                             ARRAYS(1, ARR2(word32, rh_msg_evacuate, n_src, n_dst, regions,
                                            "sources and destinations"))},
        [RH_MSG_EVAC_REFS] = {.name = "EVAC_REFS",
                              FIELDS(FD(U64, rh_msg_evac_refs, id, "the `EVACUATE`'s"),
                                     F(U32, rh_msg_evac_refs, n)),
                              ARRAYS(1, ARR(rh_ref_pair, rh_msg_evac_refs, n, pairs, "pairs"))},
        [RH_MSG_EVACUATED] = {.name = "EVACUATED",
                              FIELDS(FD(U64, rh_msg_evacuated, id, "the `EVACUATE`'s"),
                                     F(U32, rh_msg_evacuated, n_src),
                                     F(U32, rh_msg_evacuated, n_dst),
                                     F(U64, rh_msg_evacuated, remark_ns),
                                     F(U64, rh_msg_evacuated, evac_ns),
                                     F(U64, rh_msg_evacuated, bytes_copied),
                                     F(U64, rh_msg_evacuated, objects_copied),
                                     F(U64, rh_msg_evacuated, pages_rescanned)),
                              ARRAYS(2, ARR(rh_evac_src, rh_msg_evacuated, n_src, src, "sources"),
                                     ARR(rh_evac_dst, rh_msg_evacuated, n_dst, dst,
                                         "destinations"))},
        [RH_MSG_MARK_REFS] = {.name = "MARK_REFS",
                              FIELDS(FD(U32, rh_msg_mark_refs, partition,
                                        "the tracer that owns the addresses"),
                                     FD(U32, rh_msg_mark_refs, flags, "1 `ROOTS`"),
                                     F(U32, rh_msg_mark_refs, n)),
                              ARRAYS(1, ARR(word64, rh_msg_mark_refs, n, addrs, "addresses"))},
        [RH_MSG_MARK_ACK] = {.name = "MARK_ACK",
                             FIELDS(FD(U32, rh_msg_mark_ack, batches, "at least 1"))},
        [RH_MSG_FULL] = {.name = "FULL",
                         FIELDS(FD(U64, rh_msg_full, id, "echoed by `EVAC_REFS` and `FULL_DONE`"),
                                FD(U32, rh_msg_full, phase,
                                   "0 `BEGIN`, 1 `END`, 2 `BEGIN_CONCURRENT`"),
                                RESERVED)},
        [RH_MSG_FULL_DONE] = {.name = "FULL_DONE",
                              FIELDS(FD(U64, rh_msg_full_done, id, "the `FULL`'s"),
                                     F(U64, rh_msg_full_done, bytes_marked),
                                     F(U64, rh_msg_full_done, mark_ns),
                                     FD(U32, rh_msg_full_done, flags, "1 `FIRST`, 2 `LAST`"),
                                     F(U32, rh_msg_full_done, n)),
                              ARRAYS(1, ARR(rh_region_live, rh_msg_full_done, n, ents, "entries"))},
        [RH_MSG_FIX_CARDS] =
                {
                        .name = "FIX_CARDS",
                        FIELDS(FD(U64, rh_msg_fix_cards, id, "echoed by `CARDS_FIXED`"),
                               F(U32, rh_msg_fix_cards, n_moved), F(U32, rh_msg_fix_cards, n_cards),
                               F(U32, rh_msg_fix_cards, n_writes), RESERVED),
                        ARRAYS(3, ARR(word64, rh_msg_fix_cards, n_cards, cards, "cards"),
                               ARR(rh_slot_write, rh_msg_fix_cards, n_writes, writes, "writes"),
                               ARR(word32, rh_msg_fix_cards, n_moved, moved, "moved regions"))},
        [RH_MSG_CARDS_FIXED] = {.name = "CARDS_FIXED",
                                FIELDS(FD(U64, rh_msg_cards_fixed, id, "the `FIX_CARDS`'s"),
                                       FD(U32, rh_msg_cards_fixed, flags, "1 `LAST`"),
                                       F(U32, rh_msg_cards_fixed, n)),
                                ARRAYS(1, ARR(rh_fix_ent, rh_msg_cards_fixed, n, ents, "entries"))},
};

/* Bytes on the wire of n fields, and of one array element. */
static inline size_t fixed_size(const field *f, unsigned n)
{
	size_t s = 0;
	for (unsigned i = 0; i < n; i++)
		s += WIDTH(f[i].kind);
	return s;
}

static inline size_t elem_size(const elem *e)
{
	return fixed_size(e->f, e->n);
}

#endif
