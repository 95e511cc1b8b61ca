#include <stddef.h>

#include "gcb_trees_rheap.h"

static const uint32_t gb_ptrs[] = {offsetof(gb_node, left), offsetof(gb_node, right)};
const rh_type_desc gb_node_desc = {.name = "gb_node",
                                   .layout = RH_LAYOUT_FIXED,
                                   .size = sizeof(gb_node),
                                   .ptr_offsets = gb_ptrs,
                                   .n_ptrs = 2};

const rh_type_desc gb_doubles_desc = {.name = "gb_doubles",
                                      .layout = RH_LAYOUT_RECORD_ARRAY,
                                      .size = RH_ARRAY_HEADER_SIZE,
                                      .elem_size = sizeof(double)};

gb_node *gb_new_node(gcb_trees *t, uint64_t height)
{
	gb_node *n = rh_alloc(t->m, t->node);
	if (!n)
		t->oom();
	/* rheap hands out zeroed objects; the stores of NULL are what a VM's
	 * constructor (and gcbench_bdwgc.c) do. */
	rh_write_ref(t->m, (void **)&n->left, NULL);
	rh_write_ref(t->m, (void **)&n->right, NULL);
	n->i = (int32_t)height;
	n->j = (int32_t)(height * 7 + 3);
	return n;
}

/* The children are allocated into sp[1], sp[2] (the second allocation may
 * move the node and the first child), stored into the node, then populated
 * in turn, each becoming sp[0] of the next level at sp + 3. */
void gb_populate(gcb_trees *t, void **sp, uint64_t height)
{
	if (height == 0)
		return;
	sp[1] = gb_new_node(t, height - 1);
	sp[2] = gb_new_node(t, height - 1);
	gb_node *n = sp[0];
	rh_write_ref(t->m, (void **)&n->left, sp[1]);
	rh_write_ref(t->m, (void **)&n->right, sp[2]);
	sp[3] = sp[1];
	sp[1] = NULL;
	gb_populate(t, sp + 3, height - 1);
	sp[3] = sp[2];
	sp[2] = NULL;
	gb_populate(t, sp + 3, height - 1);
	sp[3] = NULL;
}

/* The children are held in sp[0], sp[1] while the parent is allocated. */
gb_node *gb_make(gcb_trees *t, void **sp, uint64_t height)
{
	if (height == 0)
		return gb_new_node(t, 0);
	sp[0] = gb_make(t, sp + 2, height - 1);
	sp[1] = gb_make(t, sp + 2, height - 1);
	gb_node *n = gb_new_node(t, height);
	rh_write_ref(t->m, (void **)&n->left, sp[0]);
	rh_write_ref(t->m, (void **)&n->right, sp[1]);
	sp[0] = NULL;
	sp[1] = NULL;
	return n;
}

uint64_t gb_count(gcb_trees *t, const gb_node *n, uint64_t height)
{
	if ((uint64_t)n->i != height || n->j != (int32_t)(height * 7 + 3) ||
	    (height == 0) != (n->left == NULL) || (height == 0) != (n->right == NULL)) {
		t->bad_nodes++;
		return 1;
	}
	if (height == 0)
		return 1;
	return 1 + gb_count(t, n->left, height - 1) + gb_count(t, n->right, height - 1);
}

uint64_t gb_iteration(gcb_trees *t, void **sp, uint64_t height)
{
	sp[0] = gb_new_node(t, height);
	gb_populate(t, sp, height);
	uint64_t sum = gb_count(t, sp[0], height);
	sp[0] = gb_make(t, sp + 1, height);
	sum += gb_count(t, sp[0], height);
	sp[0] = NULL;
	return sum;
}
