/* Control-path messages between librheap and rheap-tracerd (docs/protocol.md).
 *
 * Every message is a 12-byte header followed by a payload, little-endian:
 *   u16 magic 0x5248 ("RH"), u8 version, u8 type, u32 payload length,
 *   u32 sequence number.
 * Decoders check the header, the exact payload length each type requires,
 * and every count and string bound; a malformed message is an RH_EPEER
 * error naming what was wrong, never a crash.
 */
#ifndef RH_GC_PROTO_H
#define RH_GC_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "rheap/rheap.h"

#define RH_PROTO_MAGIC 0x5248u
#define RH_PROTO_VERSION 1u
#define RH_PROTO_HDR 12u
#define RH_PROTO_MAX 65536u /* a whole message, header included */
#define RH_PROTO_CHUNK (RH_PROTO_MAX - RH_PROTO_HDR - 16u)
#define RH_PROTO_MAX_FREE ((RH_PROTO_MAX - RH_PROTO_HDR - 4u) / 4u)

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
	RH_MSG_TYPE_MAX = 9,
};

typedef struct rh_msg_hello {
	uint32_t partition; /* index of the tracer in the config */
	uint32_t types_len; /* reserved, 0: TYPES chunks carry the table's size */
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

#endif
