/* Memory policy of the calling thread (set_mempolicy / get_mempolicy, as numactl --membind
 * sets them), through the raw system calls: no libnuma needed at build or run time. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "native.h"

int nb_set_mempolicy(int mode, const unsigned long *mask, unsigned long maxnode)
{
    if (syscall(SYS_set_mempolicy, mode, mode ? mask : NULL, mode ? maxnode : 0) != 0)
        return errno;
    return 0;
}

int nb_get_mempolicy(int *mode, unsigned long *mask, unsigned long maxnode)
{
    memset(mask, 0, (maxnode + 8 * sizeof(unsigned long) - 1) / 8);
    if (syscall(SYS_get_mempolicy, mode, mask, maxnode, NULL, 0UL) != 0)
        return errno;
    return 0;
}
