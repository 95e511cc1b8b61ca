/* libFuzzer harness for the transport handshake (transport/auth.c).
 *
 * The first input byte picks a scenario; the rest is the attacker's script.
 *
 *   0, 1  Impostor: one real side (listener for 0, connector for 1) runs
 *         rh_auth_run() against a peer that does not know the secret. Every
 *         byte the real side receives is spliced from input bytes and from
 *         replays of what the real side itself sent earlier (reflection).
 *         The real side must never report success, a connector must never
 *         send a non-zero proof it could not justify, and the status must be
 *         RH_EPEER or RH_EAUTH.
 *   2, 3  Man in the middle: two real sides (same secret for 2, different
 *         secrets for 3) exchange the four messages through the byte-buffer
 *         API, each message XORed with a mask from the input. A side that
 *         accepts the other's proof must agree with it on both nonces, and
 *         with different secrets nobody may accept.
 */
#include <stdint.h>
#include <string.h>

#include "common/common.h"
#include "transport/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t secret_a[] = "fuzzing-only-secret-A-0123456789";
static const uint8_t secret_b[] = "fuzzing-only-secret-B-0123456789";

struct script {
	const uint8_t *p;
	size_t left;
	uint8_t sent[256]; /* what the real side sent, for replays */
	size_t n_sent;
	size_t proof_at; /* offset of the connector's proof in sent[], or SIZE_MAX */
};

static int take(struct script *s, uint8_t *b)
{
	if (s->left == 0)
		return -1;
	*b = *s->p++;
	s->left--;
	return 0;
}

static int io_send(void *ctx, const void *buf, size_t len, rh_error *err)
{
	struct script *s = ctx;
	if (len > sizeof s->sent - s->n_sent)
		rh_panic("fuzz_auth: the handshake sent more than %zu bytes", sizeof s->sent);
	if (len == RH_AUTH_PROOF_LEN && s->n_sent == RH_AUTH_HELLO_LEN)
		s->proof_at = s->n_sent;
	memcpy(s->sent + s->n_sent, buf, len);
	s->n_sent += len;
	return RH_OK;
}

/* Each segment: a control byte c; (c >> 1) + 1 bytes, from the input if c is
 * even, else replayed from sent[] starting at the offset in the next byte. */
static int io_recv(void *ctx, void *buf, size_t len, rh_error *err)
{
	struct script *s = ctx;
	uint8_t *out = buf;
	size_t got = 0;
	while (got < len) {
		uint8_t c, off = 0, b;
		if (take(s, &c) || ((c & 1) && take(s, &off)))
			return rh_err_set(err, RH_EPEER, "transport: peer closed the connection");
		size_t k = (size_t)(c >> 1) + 1;
		for (size_t i = 0; i < k && got < len; i++) {
			if (!(c & 1)) {
				if (take(s, &b))
					return rh_err_set(err, RH_EPEER, "transport: peer closed");
				out[got++] = b;
			} else if (s->n_sent) {
				out[got++] = s->sent[(off + i) % s->n_sent];
			} else {
				out[got++] = 0;
			}
		}
	}
	return RH_OK;
}

static void impostor(enum rh_auth_role role, const uint8_t *data, size_t size)
{
	struct script s = {.p = data, .left = size, .proof_at = SIZE_MAX};
	struct rh_auth_io io = {io_send, io_recv, &s};
	rh_error err = {0};
	int rc = rh_auth_run(role, secret_a, sizeof secret_a - 1, &io, &err);
	if (rc == RH_OK)
		rh_panic("fuzz_auth: %s accepted a peer that does not know the secret",
		         role == RH_AUTH_LISTENER ? "listener" : "connector");
	if ((rc != RH_EPEER && rc != RH_EAUTH) || err.code != rc || !err.msg[0])
		rh_panic("fuzz_auth: failed with status %d and message \"%s\"", rc, err.msg);
	if (role == RH_AUTH_CONNECTOR && s.proof_at != SIZE_MAX) {
		/* The impostor cannot have proved itself, so the proof sent must be
		 * the all-zero refusal, not a MAC it could reuse. */
		for (size_t i = 0; i < RH_AUTH_PROOF_LEN; i++)
			if (s.sent[s.proof_at + i] != 0)
				rh_panic("fuzz_auth: connector sent a proof to an impostor");
	}
}

static void tamper(uint8_t *msg, size_t len, const uint8_t **p, size_t *left)
{
	size_t k = len < *left ? len : *left;
	for (size_t i = 0; i < k; i++)
		msg[i] ^= (*p)[i];
	*p += k;
	*left -= k;
}

static void man_in_the_middle(int same_secret, const uint8_t *p, size_t left)
{
	struct rh_auth c, l;
	rh_error err = {0};
	if (rh_auth_init(&c, RH_AUTH_CONNECTOR, secret_a, sizeof secret_a - 1, &err) ||
	    rh_auth_init(&l, RH_AUTH_LISTENER, same_secret ? secret_a : secret_b,
	                 sizeof secret_b - 1, &err))
		rh_panic("fuzz_auth: init: %s", err.msg);
	uint8_t hello[RH_AUTH_HELLO_LEN], chal[RH_AUTH_CHALLENGE_LEN], proof[RH_AUTH_PROOF_LEN];
	uint8_t verdict[RH_AUTH_VERDICT_LEN];
	rh_auth_hello(&c, hello);
	tamper(hello, sizeof hello, &p, &left);
	int rc = rh_auth_challenge(&l, hello, chal, &err);
	if (rc != RH_OK) {
		if (rc != RH_EPEER)
			rh_panic("fuzz_auth: challenge failed with status %d", rc);
		goto out;
	}
	tamper(chal, sizeof chal, &p, &left);
	int crc = rh_auth_respond(&c, chal, proof, &err);
	if (crc != RH_OK && crc != RH_EPEER && crc != RH_EAUTH)
		rh_panic("fuzz_auth: respond failed with status %d", crc);
	int agree = memcmp(c.nonce_c, l.nonce_c, RH_AUTH_NONCE) == 0 &&
	            memcmp(c.nonce_l, l.nonce_l, RH_AUTH_NONCE) == 0;
	if (crc == RH_OK && (!same_secret || !agree))
		rh_panic("fuzz_auth: connector accepted a tampered or foreign challenge");
	tamper(proof, sizeof proof, &p, &left);
	int lrc = rh_auth_verify(&l, proof, verdict, &err);
	if (lrc != RH_OK && lrc != RH_EAUTH)
		rh_panic("fuzz_auth: verify failed with status %d", lrc);
	if (lrc == RH_OK && (!same_secret || !agree))
		rh_panic("fuzz_auth: listener accepted a tampered or foreign proof");
	tamper(verdict, sizeof verdict, &p, &left);
	rc = rh_auth_verdict(verdict, &err);
	if (rc != RH_OK && rc != RH_EAUTH)
		rh_panic("fuzz_auth: verdict failed with status %d", rc);
out:
	rh_auth_fini(&c);
	rh_auth_fini(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	switch (data[0] & 3) {
	case 0:
		impostor(RH_AUTH_LISTENER, data + 1, size - 1);
		break;
	case 1:
		impostor(RH_AUTH_CONNECTOR, data + 1, size - 1);
		break;
	default:
		man_in_the_middle((data[0] & 3) == 2, data + 1, size - 1);
		break;
	}
	return 0;
}
