/* Remembered sets, one per region (the target region).
 *
 * The source queue is a set of cards (RH_CARD_SHIFT-byte spans of other
 * regions) that may hold references into this region; it stays on the CPU
 * server. The target queue is a bitmap over this region's words, one bit per
 * referenced address; it is what a tracer receives as roots.
 *
 * Invariant (checked by the verifier after every collection): for every
 * reference slot s outside region R that holds an address a inside R, and
 * whose source region is not eden, card(s) is in R's source queue and, on
 * a heap with offloading (rset.D3), a's bit is set in R's target queue.
 * Entries may be stale (over-approximate); they are never missing.
 */
#ifndef RH_GC_REMSET_H
#define RH_GC_REMSET_H

#include <stddef.h>
#include <stdint.h>

#define RH_CARD_SHIFT 9 /* 512-byte cards */

typedef struct rh_remset {
	uint64_t *cards; /* open addressing; slot value card+1, 0 = empty */
	size_t n_cards;
	size_t cap;        /* power of two or 0 */
	uint64_t *targets; /* bitmap over the region's words, or NULL */
} rh_remset;

/* A card's home slot in a table of cap (a power of two) slots. Cards of
 * one source region are consecutive: the multiply mixes them. */
static inline size_t rh_remset_slot(uint64_t card, size_t cap)
{
	uint64_t h = card * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 17) & (cap - 1);
}

/* Add <card, target word index>. Returns 1 if the card was new, 0 if it was
 * already present, -1 on allocation failure. */
int rh_remset_add(rh_remset *rs, uint64_t card, size_t target_word, size_t region_words);
/* Add the card alone, the target queue left as it is (rset.D3); the same
 * results. */
int rh_remset_add_card(rh_remset *rs, uint64_t card);
/* Set the bit of target_word in the target queue (allocated at region_words
 * bits if need be), leaving the cards alone. 1 if the bit is new, 0 if it
 * was set, -1 on allocation failure. */
int rh_remset_set_target(rh_remset *rs, size_t target_word, size_t region_words);
/* Start loading the lines rh_remset_add(rs, card, target_word, ...) will
 * touch first, its card's home slot and its target word (if the set keeps
 * a target queue): filing a buffer, both miss the cache nearly every time.
 * A hint only: the table may grow before the add. */
static inline void rh_remset_prefetch(const rh_remset *rs, uint64_t card, size_t target_word)
{
	if (rs->targets)
		__builtin_prefetch(&rs->targets[target_word / 64], 1);
	if (rs->cap)
		__builtin_prefetch(&rs->cards[rh_remset_slot(card, rs->cap)], 1);
}
int rh_remset_has_card(const rh_remset *rs, uint64_t card);
int rh_remset_has_target(const rh_remset *rs, size_t target_word);
void rh_remset_free(rh_remset *rs);
/* Keep only the cards for which keep(ctx, card) returns non-zero. */
void rh_remset_filter(rh_remset *rs, int (*keep)(void *ctx, uint64_t card), void *ctx);
/* Keep exactly the n distinct cards in keep, all of them in the set now
 * (the filter's result for a keep that names them, without a lookup per
 * card). On allocation failure the set is left as it was: stale cards
 * are safe. */
void rh_remset_keep(rh_remset *rs, const uint64_t *keep, size_t n);

/* Iterate: for (size_t i = 0; i < rs->cap; i++) if (rs->cards[i]) card = rs->cards[i] - 1; */

#endif
