/* Which of the hot loops' clones this cpu runs (clones.h). */
#include "clones.h"

const char *nb_clone_target(void)
{
#ifdef NB_CLONE_TARGETS
    /* NB_CLONE_TARGETS' levels, best first, as gcc's resolver tries them */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4"))
        return "x86-64-v4";
    if (__builtin_cpu_supports("x86-64-v3"))
        return "x86-64-v3";
    return "default";
#else
    return "";
#endif
}
