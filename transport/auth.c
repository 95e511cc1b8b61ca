#include <sodium.h>
#include <string.h>

#include "common/common.h"
#include "transport/auth.h"

static const char hello_magic[8] = {'R', 'H', 'T', 'P', 'H', 'E', 'L', 'O'};
static const char chal_magic[8] = {'R', 'H', 'T', 'P', 'C', 'H', 'A', 'L'};
/* Key derivation context: a fixed 16-byte BLAKE2b key, so the MAC key is
 * never the raw secret and secrets of any length work. */
static const uint8_t kdf_ctx[16] = "rheap-tp-auth-v1";

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* proof = HMAC-SHA-512-256(K, label || nonce_c || nonce_l) */
static void proof(const struct rh_auth *a, enum rh_auth_role who, uint8_t out[RH_AUTH_MAC])
{
	const char *label = who == RH_AUTH_LISTENER ? "rheap-tp-listener" : "rheap-tp-connector";
	size_t ll = strlen(label);
	uint8_t msg[32 + 2 * RH_AUTH_NONCE];
	memcpy(msg, label, ll);
	memcpy(msg + ll, a->nonce_c, RH_AUTH_NONCE);
	memcpy(msg + ll + RH_AUTH_NONCE, a->nonce_l, RH_AUTH_NONCE);
	crypto_auth(out, msg, ll + 2 * RH_AUTH_NONCE, a->key);
}

int rh_auth_init(struct rh_auth *a, enum rh_auth_role role, const uint8_t *secret,
                 size_t secret_len, rh_error *err)
{
	memset(a, 0, sizeof *a);
	if (!secret || secret_len == 0)
		return rh_err_set(err, RH_EINVAL, "transport: empty shared secret");
	if (sodium_init() < 0)
		return rh_err_set(err, RH_EIO, "transport: libsodium failed to initialise");
	a->role = role;
	crypto_generichash(a->key, sizeof a->key, secret, secret_len, kdf_ctx, sizeof kdf_ctx);
	randombytes_buf(role == RH_AUTH_CONNECTOR ? a->nonce_c : a->nonce_l, RH_AUTH_NONCE);
	return RH_OK;
}

void rh_auth_fini(struct rh_auth *a)
{
	sodium_memzero(a, sizeof *a);
}

void rh_auth_hello(const struct rh_auth *a, uint8_t out[RH_AUTH_HELLO_LEN])
{
	memcpy(out, hello_magic, 8);
	put32(out + 8, RH_AUTH_VERSION);
	put32(out + 12, 0);
	memcpy(out + 16, a->nonce_c, RH_AUTH_NONCE);
}

int rh_auth_challenge(struct rh_auth *a, const uint8_t hello[RH_AUTH_HELLO_LEN],
                      uint8_t out[RH_AUTH_CHALLENGE_LEN], rh_error *err)
{
	if (memcmp(hello, hello_magic, 8) != 0)
		return rh_err_set(err, RH_EPEER,
		                  "transport: peer is not an rheap transport client");
	if (get32(hello + 8) != RH_AUTH_VERSION)
		return rh_err_set(err, RH_EPEER,
		                  "transport: peer speaks handshake version %u, not %u",
		                  get32(hello + 8), RH_AUTH_VERSION);
	memcpy(a->nonce_c, hello + 16, RH_AUTH_NONCE);
	memcpy(out, chal_magic, 8);
	put32(out + 8, RH_AUTH_VERSION);
	put32(out + 12, 0);
	memcpy(out + 16, a->nonce_l, RH_AUTH_NONCE);
	proof(a, RH_AUTH_LISTENER, out + 16 + RH_AUTH_NONCE);
	return RH_OK;
}

int rh_auth_respond(struct rh_auth *a, const uint8_t chal[RH_AUTH_CHALLENGE_LEN],
                    uint8_t out[RH_AUTH_PROOF_LEN], rh_error *err)
{
	memset(out, 0, RH_AUTH_PROOF_LEN);
	if (memcmp(chal, chal_magic, 8) != 0 || get32(chal + 8) != RH_AUTH_VERSION)
		return rh_err_set(err, RH_EPEER, "transport: malformed handshake challenge");
	memcpy(a->nonce_l, chal + 16, RH_AUTH_NONCE);
	const uint8_t *theirs = chal + 16 + RH_AUTH_NONCE;
	uint8_t expect[RH_AUTH_MAC];
	proof(a, RH_AUTH_LISTENER, expect);
	int ok = sodium_memcmp(expect, theirs, RH_AUTH_MAC) == 0;
	sodium_memzero(expect, sizeof expect);
	if (!ok)
		return rh_err_set(
		        err, RH_EAUTH,
		        "transport: authentication failed: the listener does not know the "
		        "shared secret (secrets differ)");
	proof(a, RH_AUTH_CONNECTOR, out);
	return RH_OK;
}

int rh_auth_verify(struct rh_auth *a, const uint8_t pr[RH_AUTH_PROOF_LEN],
                   uint8_t verdict[RH_AUTH_VERDICT_LEN], rh_error *err)
{
	uint8_t expect[RH_AUTH_MAC];
	proof(a, RH_AUTH_CONNECTOR, expect);
	int ok = sodium_memcmp(expect, pr, RH_AUTH_MAC) == 0;
	sodium_memzero(expect, sizeof expect);
	put32(verdict, ok ? RH_OK : RH_EAUTH);
	if (!ok)
		return rh_err_set(err, RH_EAUTH,
		                  "transport: authentication failed: the connecting peer does not "
		                  "know the shared secret (secrets differ)");
	return RH_OK;
}

int rh_auth_verdict(const uint8_t v[RH_AUTH_VERDICT_LEN], rh_error *err)
{
	if (get32(v) != RH_OK)
		return rh_err_set(
		        err, RH_EAUTH,
		        "transport: authentication failed: the listener refused our proof "
		        "of the shared secret");
	return RH_OK;
}

static int run_connector(struct rh_auth *a, const struct rh_auth_io *io, rh_error *err)
{
	uint8_t hello[RH_AUTH_HELLO_LEN], chal[RH_AUTH_CHALLENGE_LEN], pr[RH_AUTH_PROOF_LEN];
	uint8_t verdict[RH_AUTH_VERDICT_LEN];
	rh_auth_hello(a, hello);
	int rc = io->send(io->ctx, hello, sizeof hello, err);
	if (rc == RH_OK)
		rc = io->recv(io->ctx, chal, sizeof chal, err);
	if (rc != RH_OK)
		return rc;
	rh_error mine = {0};
	int vrc = rh_auth_respond(a, chal, pr, &mine);
	if (vrc == RH_EPEER)
		return rh_err_set(err, vrc, "%s", mine.msg);
	/* Send the (possibly zero) proof even on failure: the listener then
	 * reports RH_EAUTH as well instead of a mere disconnect. */
	rc = io->send(io->ctx, pr, sizeof pr, err);
	if (rc == RH_OK)
		rc = io->recv(io->ctx, verdict, sizeof verdict, err);
	if (vrc != RH_OK)
		return rh_err_set(err, vrc, "%s", mine.msg);
	if (rc != RH_OK)
		return rc;
	return rh_auth_verdict(verdict, err);
}

static int run_listener(struct rh_auth *a, const struct rh_auth_io *io, rh_error *err)
{
	uint8_t hello[RH_AUTH_HELLO_LEN], chal[RH_AUTH_CHALLENGE_LEN], pr[RH_AUTH_PROOF_LEN];
	uint8_t verdict[RH_AUTH_VERDICT_LEN];
	int rc = io->recv(io->ctx, hello, sizeof hello, err);
	if (rc == RH_OK)
		rc = rh_auth_challenge(a, hello, chal, err);
	if (rc == RH_OK)
		rc = io->send(io->ctx, chal, sizeof chal, err);
	if (rc == RH_OK)
		rc = io->recv(io->ctx, pr, sizeof pr, err);
	if (rc != RH_OK)
		return rc;
	rh_error mine = {0};
	int vrc = rh_auth_verify(a, pr, verdict, &mine);
	rc = io->send(io->ctx, verdict, sizeof verdict, err);
	if (vrc != RH_OK)
		return rh_err_set(err, vrc, "%s", mine.msg);
	return rc;
}

int rh_auth_run(enum rh_auth_role role, const uint8_t *secret, size_t secret_len,
                const struct rh_auth_io *io, rh_error *err)
{
	struct rh_auth a;
	int rc = rh_auth_init(&a, role, secret, secret_len, err);
	if (rc == RH_OK)
		rc = role == RH_AUTH_CONNECTOR ? run_connector(&a, io, err)
		                               : run_listener(&a, io, err);
	rh_auth_fini(&a);
	return rc;
}
