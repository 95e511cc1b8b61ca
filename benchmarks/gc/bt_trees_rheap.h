/* binary-trees' trees on rheap, built as a precise VM would: rheap moves
 * objects, so every reference that must survive an allocation lives in a
 * shadow-stack slot and is re-read from it afterwards. The recursion keeps
 * its pending subtrees in slots the caller provides (two per level, like a
 * VM's operand stack) instead of pushing a frame per call. Shared by
 * binary_trees_rheap.c and benchmarks/suite/binary_trees.c, so both run
 * the same code. */
#ifndef BT_TREES_RHEAP_H
#define BT_TREES_RHEAP_H

#include "rheap/rheap.h"

/* Where the trees are allocated. */
typedef struct bt_trees {
	rh_mutator *m;
	rh_type_id node;   /* registered from bt_node_desc */
	void (*oom)(void); /* must not return */
} bt_trees;

typedef struct bt_node {
	uint64_t rh_header; /* owned by rheap */
	struct bt_node *left, *right;
} bt_node;

extern const rh_type_desc bt_node_desc;

/* Slots bt_make needs for a tree of the given depth. */
#define BT_MAKE_SLOTS(depth) (2 * (depth))

/* Children first, then the parent. Uses sp[0 .. BT_MAKE_SLOTS(depth) - 1]
 * and leaves them NULL. */
bt_node *bt_make(bt_trees *t, void **sp, uint64_t depth);
/* Nodes in the tree. Raw pointers are safe here: counting neither
 * allocates nor polls a safepoint. */
uint64_t bt_count(const bt_node *n);

#endif
