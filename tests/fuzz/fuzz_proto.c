/* libFuzzer harness for the control-path message decoder (gc/proto.c).
 *
 * Both ends of the control path decode whatever arrives, so the decoder
 * must reject malformed messages with RH_EPEER and accept only canonical
 * ones: re-encoding a decoded message must give back the input bytes. The
 * one sanctioned difference is ERROR text, where the decoder replaces bytes
 * outside printable ASCII with '?' (the text ends up in logs).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "gc/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int printable(uint8_t c)
{
	return c >= 0x20 && c < 0x7f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rh_msg m;
	rh_error err = {0};
	int rc = rh_msg_decode(data, size, &m, &err);
	if (rc != RH_OK) {
		if (rc != RH_EPEER || err.code != rc || strncmp(err.msg, "protocol: ", 10) != 0)
			rh_panic("fuzz_proto: rejected with status %d and message \"%s\"", rc,
			         err.msg);
		return 0;
	}
	if (m.type == 0 || m.type > RH_MSG_TYPE_MAX)
		rh_panic("fuzz_proto: accepted unknown type %u", m.type);

	uint32_t *regions = NULL;
	if (m.type == RH_MSG_FREE) {
		/* The decoder points into the buffer (little-endian); the encoder wants
		 * host-order values. */
		regions = malloc(((size_t)m.u.free.n + 1) * sizeof *regions);
		if (!regions)
			return 0;
		for (uint32_t i = 0; i < m.u.free.n; i++)
			regions[i] = rh_msg_free_region(&m.u.free, i);
		m.u.free.regions = (const uint8_t *)regions;
	}
	/* Room to spare, so an encoding longer than the input shows as such. */
	size_t cap = size + 64;
	uint8_t *out = malloc(cap);
	if (!out)
		rh_panic("fuzz_proto: out of memory");
	size_t n = rh_msg_encode(&m, out, cap);
	if (n != size)
		rh_panic("fuzz_proto: decoded %s of %zu bytes re-encodes to %zu bytes",
		         rh_msg_type_name(m.type), size, n);
	size_t text = m.type == RH_MSG_ERROR ? RH_PROTO_HDR + 8 : size;
	if (memcmp(out, data, text) != 0)
		rh_panic("fuzz_proto: decoded %s re-encodes to different bytes",
		         rh_msg_type_name(m.type));
	for (size_t i = text; i < size; i++) {
		if (out[i] != (printable(data[i]) ? data[i] : '?'))
			rh_panic("fuzz_proto: ERROR text byte %zu: sent 0x%02x, re-encoded 0x%02x",
			         i - text, data[i], out[i]);
	}
	free(out);
	free(regions);
	return 0;
}
