#include <stddef.h>

#include "bt_trees_rheap.h"

static const uint32_t bt_ptrs[] = {offsetof(bt_node, left), offsetof(bt_node, right)};
const rh_type_desc bt_node_desc = {.name = "bt_node",
                                   .layout = RH_LAYOUT_FIXED,
                                   .size = sizeof(bt_node),
                                   .ptr_offsets = bt_ptrs,
                                   .n_ptrs = 2};

static bt_node *new_node(bt_trees *t)
{
	bt_node *n = rh_alloc(t->m, t->node);
	if (!n)
		t->oom();
	return n;
}

/* sp[0] and sp[1] hold the subtrees while the sibling and the parent are
 * allocated (either may collect and move them); deeper levels use sp + 2. */
bt_node *bt_make(bt_trees *t, void **sp, uint64_t depth)
{
	if (depth == 0) {
		bt_node *leaf = new_node(t);
		/* rheap hands out zeroed objects; the stores of NULL are what a
		 * VM's constructor (and binary_trees_bdwgc.c) do. */
		rh_write_ref(t->m, (void **)&leaf->left, NULL);
		rh_write_ref(t->m, (void **)&leaf->right, NULL);
		return leaf;
	}
	sp[0] = bt_make(t, sp + 2, depth - 1);
	sp[1] = bt_make(t, sp + 2, depth - 1);
	bt_node *n = new_node(t);
	rh_write_ref(t->m, (void **)&n->left, sp[0]);
	rh_write_ref(t->m, (void **)&n->right, sp[1]);
	/* Dead slots would keep garbage reachable until overwritten. */
	sp[0] = NULL;
	sp[1] = NULL;
	return n;
}

uint64_t bt_count(const bt_node *n)
{
	uint64_t c = 1;
	if (n->left)
		c += bt_count(n->left);
	if (n->right)
		c += bt_count(n->right);
	return c;
}
