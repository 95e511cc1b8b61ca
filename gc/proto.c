#include <string.h>

#include "common/common.h"
#include "gc/proto.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}
static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

const char *rh_msg_type_name(unsigned type)
{
	static const char *const names[] = {"?",    "HELLO", "TYPES", "HELLO_OK", "ERROR",
	                                    "FREE", "PING",  "PONG",  "BYE",      "FREE_OK"};
	return type <= RH_MSG_TYPE_MAX ? names[type] : "?";
}

size_t rh_msg_encode(const rh_msg *m, uint8_t *buf, size_t cap)
{
	uint8_t *p = buf + RH_PROTO_HDR;
	size_t len;
	switch (m->type) {
	case RH_MSG_HELLO:
		len = 48;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put32(p, m->u.hello.partition);
		put32(p + 4, m->u.hello.types_len);
		put64(p + 8, m->u.hello.heap_base);
		put64(p + 16, m->u.hello.heap_size);
		put64(p + 24, m->u.hello.region_size);
		put64(p + 32, m->u.hello.part_base);
		put64(p + 40, m->u.hello.part_size);
		break;
	case RH_MSG_TYPES:
		len = 12 + (size_t)m->u.types.len;
		if (cap < RH_PROTO_HDR + len || m->u.types.len > RH_PROTO_CHUNK)
			return 0;
		put32(p, m->u.types.offset);
		put32(p + 4, m->u.types.total);
		put32(p + 8, m->u.types.len);
		memcpy(p + 12, m->u.types.bytes, m->u.types.len);
		break;
	case RH_MSG_HELLO_OK:
		len = 20;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put64(p, m->u.hello_ok.meta_base);
		put64(p + 8, m->u.hello_ok.meta_size);
		put32(p + 16, m->u.hello_ok.pid);
		break;
	case RH_MSG_ERROR: {
		size_t n = strnlen(m->u.error.text, sizeof m->u.error.text - 1);
		len = 8 + n;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put32(p, m->u.error.code);
		put32(p + 4, (uint32_t)n);
		memcpy(p + 8, m->u.error.text, n);
		break;
	}
	case RH_MSG_FREE: {
		if (m->u.free.n > RH_PROTO_MAX_FREE)
			return 0;
		len = 4 + 4 * (size_t)m->u.free.n;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put32(p, m->u.free.n);
		const uint32_t *r = (const uint32_t *)(const void *)m->u.free.regions;
		for (uint32_t i = 0; i < m->u.free.n; i++)
			put32(p + 4 + 4 * i, r[i]);
		break;
	}
	case RH_MSG_PING:
	case RH_MSG_PONG:
		len = 16;
		if (cap < RH_PROTO_HDR + len)
			return 0;
		put64(p, m->u.ping.seq);
		put64(p + 8, m->u.ping.time_ns);
		break;
	case RH_MSG_BYE:
	case RH_MSG_FREE_OK:
		len = 0;
		if (cap < RH_PROTO_HDR)
			return 0;
		break;
	default:
		return 0;
	}
	put16(buf, RH_PROTO_MAGIC);
	buf[2] = RH_PROTO_VERSION;
	buf[3] = m->type;
	put32(buf + 4, (uint32_t)len);
	put32(buf + 8, m->seq);
	return RH_PROTO_HDR + len;
}

#define BAD(...) rh_err_set(err, RH_EPEER, "protocol: " __VA_ARGS__)

int rh_msg_decode(const uint8_t *buf, size_t len, rh_msg *m, rh_error *err)
{
	if (len > RH_PROTO_MAX)
		return BAD("message of %zu bytes exceeds %u", len, RH_PROTO_MAX);
	if (len < RH_PROTO_HDR)
		return BAD("message of %zu bytes is shorter than the %u-byte header", len,
		           RH_PROTO_HDR);
	if (get16(buf) != RH_PROTO_MAGIC)
		return BAD("bad magic %#x", get16(buf));
	if (buf[2] != RH_PROTO_VERSION)
		return BAD("version %u, this side speaks %u", buf[2], RH_PROTO_VERSION);
	uint32_t plen = get32(buf + 4);
	if (plen != len - RH_PROTO_HDR)
		return BAD("%s: header says %u payload bytes, message has %zu",
		           rh_msg_type_name(buf[3]), plen, len - RH_PROTO_HDR);
	memset(m, 0, sizeof *m);
	m->type = buf[3];
	m->seq = get32(buf + 8);
	const uint8_t *p = buf + RH_PROTO_HDR;
	const char *name = rh_msg_type_name(m->type);
	switch (m->type) {
	case RH_MSG_HELLO:
		if (plen != 48)
			return BAD("HELLO: payload %u bytes, expected 48", plen);
		m->u.hello.partition = get32(p);
		m->u.hello.types_len = get32(p + 4);
		m->u.hello.heap_base = get64(p + 8);
		m->u.hello.heap_size = get64(p + 16);
		m->u.hello.region_size = get64(p + 24);
		m->u.hello.part_base = get64(p + 32);
		m->u.hello.part_size = get64(p + 40);
		if (m->u.hello.types_len > (64u << 20))
			return BAD("HELLO: type table of %u bytes exceeds 64 MiB",
			           m->u.hello.types_len);
		return RH_OK;
	case RH_MSG_TYPES:
		if (plen < 12)
			return BAD("TYPES: payload %u bytes, need at least 12", plen);
		m->u.types.offset = get32(p);
		m->u.types.total = get32(p + 4);
		m->u.types.len = get32(p + 8);
		if (m->u.types.len > RH_PROTO_CHUNK)
			return BAD("TYPES: chunk of %u bytes exceeds %u", m->u.types.len,
			           RH_PROTO_CHUNK);
		if (m->u.types.len != plen - 12)
			return BAD("TYPES: chunk length %u but %u bytes follow", m->u.types.len,
			           plen - 12);
		if (m->u.types.offset > m->u.types.total ||
		    m->u.types.len > m->u.types.total - m->u.types.offset)
			return BAD("TYPES: chunk [%u, +%u) outside the table of %u bytes",
			           m->u.types.offset, m->u.types.len, m->u.types.total);
		m->u.types.bytes = p + 12;
		return RH_OK;
	case RH_MSG_HELLO_OK:
		if (plen != 20)
			return BAD("HELLO_OK: payload %u bytes, expected 20", plen);
		m->u.hello_ok.meta_base = get64(p);
		m->u.hello_ok.meta_size = get64(p + 8);
		m->u.hello_ok.pid = get32(p + 16);
		return RH_OK;
	case RH_MSG_ERROR: {
		if (plen < 8)
			return BAD("ERROR: payload %u bytes, need at least 8", plen);
		uint32_t n = get32(p + 4);
		if (n != plen - 8 || n >= sizeof m->u.error.text)
			return BAD("ERROR: text length %u inconsistent with payload %u", n, plen);
		m->u.error.code = get32(p);
		for (uint32_t i = 0; i < n; i++) /* printable only: it ends up in logs */
			m->u.error.text[i] =
			        p[8 + i] >= 0x20 && p[8 + i] < 0x7f ? (char)p[8 + i] : '?';
		return RH_OK;
	}
	case RH_MSG_FREE:
		if (plen < 4)
			return BAD("FREE: payload %u bytes, need at least 4", plen);
		m->u.free.n = get32(p);
		if (m->u.free.n > RH_PROTO_MAX_FREE || plen != 4 + 4 * (uint64_t)m->u.free.n)
			return BAD("FREE: %u regions inconsistent with payload %u", m->u.free.n,
			           plen);
		m->u.free.regions = p + 4;
		return RH_OK;
	case RH_MSG_PING:
	case RH_MSG_PONG:
		if (plen != 16)
			return BAD("%s: payload %u bytes, expected 16", name, plen);
		m->u.ping.seq = get64(p);
		m->u.ping.time_ns = get64(p + 8);
		return RH_OK;
	case RH_MSG_BYE:
	case RH_MSG_FREE_OK:
		if (plen != 0)
			return BAD("%s: payload %u bytes, expected 0", name, plen);
		return RH_OK;
	default:
		return BAD("unknown message type %u", m->type);
	}
}

uint32_t rh_msg_free_region(const rh_msg_free *f, uint32_t i)
{
	return get32(f->regions + 4 * (size_t)i);
}
