/* gcbench's trees on rheap, built as a precise VM would: rheap moves
 * objects, so every node that must survive an allocation lives in a
 * shadow-stack slot and is re-read from it afterwards. The builders keep
 * their pending nodes in slots the caller provides (sp, inside a frame it
 * pushed) instead of pushing a frame per call. Shared by gcbench_rheap.c
 * and benchmarks/suite/gcbench.c, so both run the same code. */
#ifndef GCB_TREES_RHEAP_H
#define GCB_TREES_RHEAP_H

#include "rheap/rheap.h"

/* Where the trees are allocated. */
typedef struct gcb_trees {
	rh_mutator *m;
	rh_type_id node;    /* registered from gb_node_desc */
	void (*oom)(void);  /* must not return */
	uint64_t bad_nodes; /* gb_count: nodes whose fields were wrong */
} gcb_trees;

typedef struct gb_node {
	uint64_t rh_header; /* owned by rheap */
	struct gb_node *left, *right;
	int32_t i, j; /* i = height of the subtree, j = a function of it */
} gb_node;

extern const rh_type_desc gb_node_desc;
/* The long-lived array: 8-byte elements without pointers, so rheap never
 * scans it. */
extern const rh_type_desc gb_doubles_desc;

/* A node of the given height, no children yet. */
gb_node *gb_new_node(gcb_trees *t, uint64_t height);
/* Top-down: gives the node in sp[0] its subtrees. Uses sp[0 .. 3 * height]. */
void gb_populate(gcb_trees *t, void **sp, uint64_t height);
/* Bottom-up: children first, the parent last. Uses sp[0 .. 2 * height - 1]. */
gb_node *gb_make(gcb_trees *t, void **sp, uint64_t height);
/* Nodes in the tree, each checked against its height; a wrong one is
 * counted in t->bad_nodes and its subtree not visited. */
uint64_t gb_count(gcb_trees *t, const gb_node *n, uint64_t height);
/* One iteration of gcbench's inner loop: a tree of the given height built
 * top-down and one bottom-up, each counted and dropped. Uses sp[0 ..
 * 3 * height] (sp[0] is cleared at the end). Returns the nodes counted. */
uint64_t gb_iteration(gcb_trees *t, void **sp, uint64_t height);

#endif
