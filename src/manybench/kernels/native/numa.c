/* Memory policy of the calling thread (set_mempolicy / get_mempolicy, as numactl --membind
 * sets them), through the raw system calls: no libnuma needed at build or run time. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "native.h"

/* The kernel's maxnode is one more than the bits it reads or writes (mm/mempolicy.c: get_nodes
 * drops one, copy_nodes_to_user copies ALIGN(maxnode - 1, 64) / 8 bytes): the whole mask. */
#define MAXNODE (8 * sizeof(((nb_nodemask *)0)->bits) + 1)

int nb_set_mempolicy(int mode, const nb_nodemask *nodes)
{
    if (syscall(SYS_set_mempolicy, mode, mode ? nodes->bits : NULL, mode ? MAXNODE : 0) != 0)
        return errno;
    return 0;
}

int nb_get_mempolicy(int *mode, nb_nodemask *nodes)
{
    memset(nodes, 0, sizeof *nodes);
    if (syscall(SYS_get_mempolicy, mode, nodes->bits, MAXNODE, NULL, 0UL) != 0)
        return errno;
    return 0;
}
