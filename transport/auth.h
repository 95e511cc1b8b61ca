/* Mutual challenge-response authentication over any byte channel.
 *
 * Both sides prove knowledge of the shared secret with a keyed hash
 * (libsodium crypto_auth, HMAC-SHA-512-256) over both sides' fresh nonces;
 * the secret never crosses the wire. The proofs are domain-separated by
 * role, so one side's proof cannot be reflected back as the other's. The
 * wire format is in docs/transport.md ("Handshake").
 *
 * The functions below only transform byte buffers, so any provider can run
 * the handshake over its own channel; rh_auth_run() drives the whole
 * exchange over two caller-supplied I/O callbacks.
 */
#ifndef RH_TP_AUTH_H
#define RH_TP_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "rheap/rheap.h"

#define RH_AUTH_NONCE 32
#define RH_AUTH_MAC 32 /* crypto_auth_BYTES */
#define RH_AUTH_KEY 32 /* crypto_auth_KEYBYTES */
#define RH_AUTH_VERSION 1u

/* Wire messages, fixed size (bytes). */
#define RH_AUTH_HELLO_LEN 48     /* connector -> listener */
#define RH_AUTH_CHALLENGE_LEN 80 /* listener -> connector */
#define RH_AUTH_PROOF_LEN 32     /* connector -> listener */
#define RH_AUTH_VERDICT_LEN 4    /* listener -> connector */

enum rh_auth_role { RH_AUTH_CONNECTOR = 0, RH_AUTH_LISTENER = 1 };

struct rh_auth {
	enum rh_auth_role role;
	uint8_t key[RH_AUTH_KEY];
	uint8_t nonce_c[RH_AUTH_NONCE]; /* connector's */
	uint8_t nonce_l[RH_AUTH_NONCE]; /* listener's */
};

/* Derive the MAC key from the secret (any length >= 1) and draw this side's
 * nonce with randombytes_buf. RH_EINVAL if the secret is empty, RH_EIO if
 * libsodium cannot initialise. */
int rh_auth_init(struct rh_auth *a, enum rh_auth_role role, const uint8_t *secret,
                 size_t secret_len, rh_error *err);
/* Wipe the key and nonces. */
void rh_auth_fini(struct rh_auth *a);

/* Connector: build HELLO. */
void rh_auth_hello(const struct rh_auth *a, uint8_t out[RH_AUTH_HELLO_LEN]);
/* Listener: parse HELLO (RH_EPEER if malformed) and build CHALLENGE, which
 * carries the listener's nonce and its proof. */
int rh_auth_challenge(struct rh_auth *a, const uint8_t hello[RH_AUTH_HELLO_LEN],
                      uint8_t out[RH_AUTH_CHALLENGE_LEN], rh_error *err);
/* Connector: parse CHALLENGE and verify the listener's proof; always fills
 * `proof` (all zero when verification failed, so the listener reports
 * RH_EAUTH too). Returns RH_OK, RH_EPEER (malformed) or RH_EAUTH. */
int rh_auth_respond(struct rh_auth *a, const uint8_t chal[RH_AUTH_CHALLENGE_LEN],
                    uint8_t proof[RH_AUTH_PROOF_LEN], rh_error *err);
/* Listener: verify the connector's proof; fills the VERDICT to send back.
 * Returns RH_OK or RH_EAUTH. */
int rh_auth_verify(struct rh_auth *a, const uint8_t proof[RH_AUTH_PROOF_LEN],
                   uint8_t verdict[RH_AUTH_VERDICT_LEN], rh_error *err);
/* Connector: read the listener's VERDICT. RH_OK or RH_EAUTH. */
int rh_auth_verdict(const uint8_t verdict[RH_AUTH_VERDICT_LEN], rh_error *err);

/* Exchange driver: send/recv move exactly len bytes or return an rh_status
 * with err filled (e.g. RH_ETIMEDOUT, RH_EPEER). */
struct rh_auth_io {
	int (*send)(void *ctx, const void *buf, size_t len, rh_error *err);
	int (*recv)(void *ctx, void *buf, size_t len, rh_error *err);
	void *ctx;
};
/* The whole handshake for one role. RH_OK when both sides proved the
 * secret; RH_EAUTH (on both sides) when either did not. */
int rh_auth_run(enum rh_auth_role role, const uint8_t *secret, size_t secret_len,
                const struct rh_auth_io *io, rh_error *err);

#endif
