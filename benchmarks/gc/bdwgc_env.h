/* bdwgc side of the comparison: GC_INIT with default settings and the
 * collection-event hooks that feed the shared pause recorder. Comparison
 * target only: nothing here may ever link into librheap. */
#ifndef BDWGC_ENV_H
#define BDWGC_ENV_H

#include "gcb_pauses.h"
#include "gcb_report.h"

/* Initialises the collector and starts recording pauses into p. */
void bdw_env_init(gcb_pauses *p);
/* Adds bdwgc's own view (collections, heap size, markers, settings). */
void bdw_env_report(gcb_json *j);
_Noreturn void bdw_oom(void);

#endif
