#include <stdlib.h>
#include <string.h>

#include "gc/remset.h"

static int insert(uint64_t *tab, size_t cap, uint64_t card)
{
	for (size_t i = rh_remset_slot(card, cap);; i = (i + 1) & (cap - 1)) {
		if (tab[i] == card + 1)
			return 0;
		if (tab[i] == 0) {
			tab[i] = card + 1;
			return 1;
		}
	}
}

static int grow(rh_remset *rs)
{
	size_t cap = rs->cap ? rs->cap * 2 : 64;
	uint64_t *tab = calloc(cap, sizeof *tab);
	if (!tab)
		return -1;
	for (size_t i = 0; i < rs->cap; i++)
		if (rs->cards[i])
			insert(tab, cap, rs->cards[i] - 1);
	free(rs->cards);
	rs->cards = tab;
	rs->cap = cap;
	return 0;
}

int rh_remset_set_target(rh_remset *rs, size_t target_word, size_t region_words)
{
	if (!rs->targets) {
		rs->targets = calloc((region_words + 63) / 64, sizeof(uint64_t));
		if (!rs->targets)
			return -1;
	}
	uint64_t bit = 1ull << (target_word % 64);
	if (rs->targets[target_word / 64] & bit)
		return 0;
	rs->targets[target_word / 64] |= bit;
	return 1;
}

int rh_remset_add(rh_remset *rs, uint64_t card, size_t target_word, size_t region_words)
{
	if (rh_remset_set_target(rs, target_word, region_words) < 0)
		return -1;
	return rh_remset_add_card(rs, card);
}

int rh_remset_add_card(rh_remset *rs, uint64_t card)
{
	/* Keep the load under 1/2 so probes stay short. */
	if ((rs->n_cards + 1) * 2 > rs->cap && grow(rs) < 0)
		return -1;
	int added = insert(rs->cards, rs->cap, card);
	rs->n_cards += (size_t)added;
	return added;
}

int rh_remset_has_card(const rh_remset *rs, uint64_t card)
{
	if (!rs->cap)
		return 0;
	for (size_t i = rh_remset_slot(card, rs->cap);; i = (i + 1) & (rs->cap - 1)) {
		if (rs->cards[i] == card + 1)
			return 1;
		if (rs->cards[i] == 0)
			return 0;
	}
}

int rh_remset_has_target(const rh_remset *rs, size_t target_word)
{
	return rs->targets && (rs->targets[target_word / 64] >> (target_word % 64)) & 1;
}

void rh_remset_free(rh_remset *rs)
{
	free(rs->cards);
	free(rs->targets);
	memset(rs, 0, sizeof *rs);
}

void rh_remset_filter(rh_remset *rs, int (*keep)(void *ctx, uint64_t card), void *ctx)
{
	if (!rs->cap)
		return;
	uint64_t *old = rs->cards;
	size_t cap = rs->cap;
	uint64_t *tab = calloc(cap, sizeof *tab);
	if (!tab)
		return; /* keeping stale cards is safe */
	size_t n = 0;
	for (size_t i = 0; i < cap; i++)
		if (old[i] && keep(ctx, old[i] - 1))
			n += (size_t)insert(tab, cap, old[i] - 1);
	free(old);
	rs->cards = tab;
	rs->n_cards = n;
}

void rh_remset_keep(rh_remset *rs, const uint64_t *keep, size_t n)
{
	if (!rs->cap)
		return;
	uint64_t *tab = calloc(rs->cap, sizeof *tab);
	if (!tab)
		return;
	size_t added = 0;
	for (size_t i = 0; i < n; i++)
		added += (size_t)insert(tab, rs->cap, keep[i]);
	free(rs->cards);
	rs->cards = tab;
	rs->n_cards = added;
}
