/*
** untuned.h — the kernel config for a shape the cache lacks (miss policy heuristic, and input
** and output aligned differently): the nearest tuned problems of the user's cache and of the
** default table built in for the GPU's arch, adapted and checked (templates/untuned.lua), else
** the space's heuristic. Shared by the runtime and `softmax-tune explain`. docs/untuned.md.
*/
#ifndef UNTUNED_H
#define UNTUNED_H

#include "cache.h"
#include "gen.h"

/* The config for p on the GPU of base (its gpu, arch, sms, templates); db may be NULL (no
** cache). The table is $SOFTMAX_TUNE_TABLE (a file; "none": no table) when set, else the one
** built in for p->arch. 0, or 1 with err. */
int untuned_choose(gen_State *g, cache_Db *db, const cache_Key *base, const gen_Problem *p, int unaligned,
                   gen_Choice *out, char *err, size_t errlen);

/* The config an untuned call of p runs with no cache of its own (the kernel set's, chosen for
** p's row band and the widest row of its class), for tune_Options.untuned: 0, or 1 when none. */
int untuned_sweep_config(gen_State *g, const gen_Problem *p, char *config, size_t n);

/* The table the choice uses for arch: its text (malloc'ed, NULL when none) and a name for it. */
int untuned_table(gen_State *g, int arch, char **text, char *name, size_t namelen, char *err, size_t errlen);

#endif
