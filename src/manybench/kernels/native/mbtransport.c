/* What carried a rank's messages, as its MPI library says: part of libmbrank.so (mbrank.c).
 *
 * Read from the library, never guessed from the environment (OMPI_MCA_*, UCX_* say what was
 * asked for, not what was selected):
 *   device MPICH's "MPICH Device:" (ch4:ucx, ch4:ofi), from MPI_Get_library_version; the
 *          same text tells the two handle ABIs apart (below)
 *   pml, mtl   Open MPI's selected components: its own component structures
 *          (mca_pml_base_selected_component, ompi_mtl_base_selected_component), checked to
 *          read "ompi" and the framework's name before their component name is believed
 *   btl    per peer, the btl Open MPI's bml chose for sends: its own report, "mca: bml: Using
 *          %s btl for send to %s on node %s", taken from the call that would print it at
 *          btl_base_verbose >= 1 (opal_output_verbose, interposed here: nothing is printed
 *          that the user did not ask for)
 *   ucx    each UCP endpoint's lanes ("posix/memory", "tcp/eth0"): ucp_ep_print_info on the
 *          endpoints the rank made (ucp_ep_create, interposed here), read at MPI_Finalize
 *   ofi    each libfabric provider the rank opened a fabric of ("tcp;ofi_rxm", "verbs"):
 *          fi_fabric's attributes (interposed here), for Open MPI's mtl ofi, btl ofi and
 *          MPICH's ch4:ofi
 *   node   the world ranks the library counts on this rank's node (MPI_COMM_TYPE_SHARED):
 *          where MPICH's ch4 and Open MPI's vader use shared memory; with MPICH's
 *          MPIR_CVAR_NOLOCAL (MPI_T) set, it does not
 * Sent to the slot at MPI_Finalize's entry, after the end stamp, as one line of key:value
 * words (kernels/rank_link.py parses it). Only the node's ranks are found by an MPI call
 * (collective, right after PMPI_Init returns, before the rank is held): everything else
 * reads memory the library already holds.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mbtransport.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_PEERS 256   /* btl choices kept; a larger job's first peers stand for it */
#define MAX_EPS 1024
#define WORDS 3000      /* room for the words of one line (the slot's line is 4096) */

static char btl_words[WORDS];   /* " btl:PEER:NAME" ... */
static int btl_peers = 0;
static void *eps[MAX_EPS];      /* UCP endpoints alive, made by this rank */
static int neps = 0;
static char node_words[WORDS];  /* " node:R,R,..." */

/* -- Open MPI's bml, through the call that would print its choice ------------------------ */
typedef void (*vverbose_fn)(int, int, const char *, va_list);

static void keep_btl(va_list ap)
{
    /* "mca: bml: Using %s btl for send to %s on node %s": NAME, "[[JOB,VPID],RANK]", HOST */
    va_list cp;
    va_copy(cp, ap);
    const char *name = va_arg(cp, const char *);
    const char *peer = va_arg(cp, const char *);
    va_end(cp);
    const char *comma = peer ? strrchr(peer, ',') : NULL;
    if (!name || !comma || btl_peers >= MAX_PEERS || strpbrk(name, " :\t\n"))
        return;
    int rank = atoi(comma + 1);
    size_t used = strlen(btl_words);
    int n = snprintf(btl_words + used, sizeof btl_words - used, " btl:%d:%.32s", rank, name);
    if (n < 0 || (size_t)n >= sizeof btl_words - used)
        btl_words[used] = '\0';   /* no room: the words so far stand */
    else
        btl_peers++;
}

EXPORT void opal_output_verbose(int level, int output_id, const char *format, ...)
{
    static vverbose_fn real;
    if (!real)
        real = (vverbose_fn)dlsym(RTLD_NEXT, "opal_output_vverbose");
    va_list ap;
    va_start(ap, format);
    if (format && strncmp(format, "mca: bml: Using %s btl for send to", 34) == 0)
        keep_btl(ap);
    if (real)
        real(level, output_id, format, ap);
    va_end(ap);
}

/* -- UCX's endpoints ---------------------------------------------------------------------- */
typedef int (*ep_create_fn)(void *, const void *, void **);
typedef void *(*ep_close_fn)(void *, ...);

EXPORT int ucp_ep_create(void *worker, const void *params, void **ep_p)
{
    static ep_create_fn real;
    if (!real)
        real = (ep_create_fn)dlsym(RTLD_NEXT, "ucp_ep_create");
    if (!real)
        return -1;   /* UCS_ERR_NO_MESSAGE */
    int rc = real(worker, params, ep_p);
    if (rc == 0 && ep_p && *ep_p && neps < MAX_EPS)
        eps[neps++] = *ep_p;
    return rc;
}

static void forget_ep(void *ep)
{
    for (int i = 0; i < neps; i++)
        if (eps[i] == ep) {
            eps[i] = eps[--neps];
            return;
        }
}

/* The closing calls take the endpoint first; what follows is passed on as it came. */
EXPORT void *ucp_ep_close_nb(void *ep, unsigned mode)
{
    static void *(*real)(void *, unsigned);
    if (!real)
        real = (void *(*)(void *, unsigned))dlsym(RTLD_NEXT, "ucp_ep_close_nb");
    forget_ep(ep);
    return real ? real(ep, mode) : NULL;
}

EXPORT void *ucp_ep_close_nbx(void *ep, const void *param)
{
    static void *(*real)(void *, const void *);
    if (!real)
        real = (void *(*)(void *, const void *))dlsym(RTLD_NEXT, "ucp_ep_close_nbx");
    forget_ep(ep);
    return real ? real(ep, param) : NULL;
}

EXPORT void ucp_ep_destroy(void *ep)
{
    static void (*real)(void *);
    if (!real)
        real = (void (*)(void *))dlsym(RTLD_NEXT, "ucp_ep_destroy");
    forget_ep(ep);
    if (real)
        real(ep);
}

/* Each lane's "TL/DEVICE" from ucp_ep_print_info's "lane[N]:  IDX:TL/DEVICE.PATH md[M] ..." */
static void ucx_words(char *out, size_t room)
{
    void (*print)(void *, FILE *) = (void (*)(void *, FILE *))dlsym(RTLD_DEFAULT,
                                                                       "ucp_ep_print_info");
    if (!print || !neps)
        return;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    for (int i = 0; i < neps; i++)
        print(eps[i], f);
    fclose(f);
    for (char *p = text; p && (p = strstr(p, "lane[")) != NULL; p++) {
        char *colon = strchr(p, ':');
        if (!colon)
            break;
        char *q = colon + 1;
        while (*q == ' ')
            q++;
        while (*q >= '0' && *q <= '9')
            q++;
        if (*q != ':')
            continue;
        q++;
        char word[96];
        size_t n = strcspn(q, " \t\n");
        if (n == 0 || n >= sizeof word - 5)
            continue;
        memcpy(word, q, n);
        word[n] = '\0';
        char *dot = strrchr(word, '.');       /* the path index: not a fact of the transport */
        char *slash = strchr(word, '/');
        if (dot && slash && dot > slash)
            *dot = '\0';
        char key[112];
        snprintf(key, sizeof key, " ucx:%s", word);
        size_t used = strlen(out);
        if (!strstr(out, key) && used + strlen(key) < room)
            strcat(out, key);
    }
    free(text);
}

/* -- libfabric's providers ------------------------------------------------------------------- */
static char ofi_words[512];   /* " ofi:PROVIDER" ... */

/* struct fi_fabric_attr's head, unchanged since libfabric 1.0 */
struct fabric_attr_head {
    void *fabric;
    char *name;
    char *prov_name;
};

typedef int (*fabric_fn)(void *, void **, void *);

EXPORT int fi_fabric(void *attr, void **fabric, void *context)
{
    static fabric_fn real;
    if (!real)
        real = (fabric_fn)dlsym(RTLD_NEXT, "fi_fabric");
    if (!real)
        return -38;   /* -FI_ENOSYS */
    int rc = real(attr, fabric, context);
    const struct fabric_attr_head *a = attr;
    if (rc == 0 && a && a->prov_name && !strpbrk(a->prov_name, " \t\n")) {
        char key[80];
        snprintf(key, sizeof key, " ofi:%.64s", a->prov_name);
        size_t used = strlen(ofi_words);
        if (!strstr(ofi_words, key) && used + strlen(key) < sizeof ofi_words)
            strcat(ofi_words, key);
    }
    return rc;
}

/* -- the library's own names ---------------------------------------------------------------- */
/* Open MPI's mca_base_component_t: project name at 12 (16 bytes), framework name at 40 (32),
 * component name at 84 (64). Believed only when the first two read as expected. */
static void component_word(char *out, size_t room, const char *key, const char *framework,
                           const char *c)
{
    if (!c || strncmp(c + 12, "ompi", 16) != 0 || strncmp(c + 40, framework, 32) != 0)
        return;
    char name[65];
    snprintf(name, sizeof name, "%.64s", c + 84);
    if (!name[0] || strpbrk(name, " \t\n:"))
        return;
    size_t used = strlen(out);
    snprintf(out + used, room - used, " %s:%s", key, name);
}

/* The library's version text (MPI_Get_library_version), read once. */
static const char *library_text(void)
{
    static char text[8192];   /* MPI_MAX_LIBRARY_VERSION_STRING: MPICH's 8192, Open MPI's 256 */
    static int read_once;
    if (!read_once) {
        read_once = 1;
        int (*version)(char *, int *) = (int (*)(char *, int *))dlsym(
            RTLD_DEFAULT, "PMPI_Get_library_version");
        int len = 0;
        if (!version || version(text, &len) != 0 || len <= 0 || len >= (int)sizeof text)
            len = 0;
        text[len] = '\0';
    }
    return text;
}

static void library_words(char *out, size_t room)
{
    const char *dev = strstr(library_text(), "MPICH Device:");
    if (dev) {
        dev += strlen("MPICH Device:");
        dev += strspn(dev, " \t");
        size_t n = strcspn(dev, " \t\n");
        if (n && n < 64) {
            size_t used = strlen(out);
            snprintf(out + used, room - used, " device:%.*s", (int)n, dev);
        }
    }
    component_word(out, room, "pml", "pml",
                   (const char *)dlsym(RTLD_DEFAULT, "mca_pml_base_selected_component"));
    const char **mtl = (const char **)dlsym(RTLD_DEFAULT, "ompi_mtl_base_selected_component");
    if (mtl)
        component_word(out, room, "mtl", "mtl", *mtl);
}

/* -- the ranks on this rank's node, as the library counts them ---------------------------- */
/* The two ABIs' handles: MPICH's (and Intel MPI's, MVAPICH's) are ints with fixed values,
 * Open MPI's are addresses of its predefined objects. */
typedef intptr_t handle;

void nb_transport_init(void)
{
    void *ompi_world = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world");
    const char *lib = library_text();
    int mpich = strstr(lib, "MPICH") || strstr(lib, "Intel(R) MPI") || strstr(lib, "MVAPICH");
    handle world, info_null;
    int shared;
    if (ompi_world) {
        world = (handle)ompi_world;
        info_null = (handle)dlsym(RTLD_DEFAULT, "ompi_mpi_info_null");
        shared = 0;            /* MPI_COMM_TYPE_SHARED, the first of Open MPI's enum */
    } else if (mpich) {
        world = 0x44000000;    /* MPICH ABI: MPI_COMM_WORLD, MPI_INFO_NULL, 1 */
        info_null = 0x1c000000;
        shared = 1;
    } else {
        return;                /* an ABI this library does not know: nothing said */
    }
    /* MPICH ABI handles are 32-bit ints passed by value, or written through an int * */
    int (*split)(handle, int, int, handle, void *) =
        (int (*)(handle, int, int, handle, void *))dlsym(RTLD_DEFAULT, "PMPI_Comm_split_type");
    int (*group)(handle, void *) = (int (*)(handle, void *))dlsym(RTLD_DEFAULT,
                                                                 "PMPI_Comm_group");
    int (*size)(handle, int *) = (int (*)(handle, int *))dlsym(RTLD_DEFAULT, "PMPI_Comm_size");
    int (*translate)(handle, int, const int *, handle, int *) =
        (int (*)(handle, int, const int *, handle, int *))dlsym(RTLD_DEFAULT,
                                                               "PMPI_Group_translate_ranks");
    int (*gfree)(void *) = (int (*)(void *))dlsym(RTLD_DEFAULT, "PMPI_Group_free");
    int (*cfree)(void *) = (int (*)(void *))dlsym(RTLD_DEFAULT, "PMPI_Comm_free");
    if (!split || !group || !size || !translate || !gfree || !cfree)
        return;
    /* an Open MPI handle is a pointer; an MPICH one an int: read each back at its width */
    union { handle h; int i; } node = {0}, g = {0}, wg = {0};
    if (split(world, shared, 0, info_null, &node) != 0)
        return;
    handle node_h = ompi_world ? node.h : (handle)node.i;
    int n = 0;
    if (size(node_h, &n) == 0 && n > 0 && n <= 4096 && group(node_h, &g) == 0) {
        if (group(world, &wg) == 0) {
            int *in = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n);
            if (in && out) {
                for (int i = 0; i < n; i++)
                    in[i] = i;
                handle gh = ompi_world ? g.h : (handle)g.i;
                handle wgh = ompi_world ? wg.h : (handle)wg.i;
                if (translate(gh, n, in, wgh, out) == 0) {
                    size_t used = (size_t)snprintf(node_words, sizeof node_words, " node:");
                    int i = 0;
                    for (; i < n && used + 16 < sizeof node_words; i++)
                        used += (size_t)snprintf(node_words + used, sizeof node_words - used,
                                                 i ? ",%d" : "%d", out[i]);
                    if (i < n)   /* no room for all: said, never a shorter list */
                        snprintf(node_words + used, sizeof node_words - used, ",+");
                }
            }
            free(in);
            free(out);
            gfree(&wg);
        }
        gfree(&g);
    }
    cfree(&node);
}

/* MPICH's MPIR_CVAR_NOLOCAL (an int control variable, read through MPI_T): set, its node's
 * ranks talk through the network module, not shared memory. -1 when it cannot be read. */
static int mpich_nolocal(void)
{
    int (*tinit)(int, int *) = (int (*)(int, int *))dlsym(RTLD_DEFAULT, "PMPI_T_init_thread");
    int (*index)(const char *, int *) = (int (*)(const char *, int *))dlsym(
        RTLD_DEFAULT, "PMPI_T_cvar_get_index");
    int (*alloc)(int, void *, void **, int *) = (int (*)(int, void *, void **, int *))dlsym(
        RTLD_DEFAULT, "PMPI_T_cvar_handle_alloc");
    int (*readv)(void *, void *) = (int (*)(void *, void *))dlsym(RTLD_DEFAULT,
                                                                 "PMPI_T_cvar_read");
    int (*hfree)(void **) = (int (*)(void **))dlsym(RTLD_DEFAULT, "PMPI_T_cvar_handle_free");
    int (*tfin)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PMPI_T_finalize");
    if (!tinit || !index || !alloc || !readv || !hfree || !tfin)
        return -1;
    int provided = 0, idx = -1, count = 0, value = -1;
    if (tinit(0, &provided) != 0)
        return -1;
    void *h = NULL;
    if (index("MPIR_CVAR_NOLOCAL", &idx) == 0 && alloc(idx, NULL, &h, &count) == 0) {
        if (count != 1 || readv(h, &value) != 0)
            value = -1;
        hfree(&h);
    }
    tfin();
    return value;
}

int nb_transport_line(char *out, size_t room)
{
    int n = snprintf(out, room, "transport");
    if (n < 0 || (size_t)n >= room)
        return 0;
    library_words(out, room);
    if (strstr(out, " device:")) {
        int nolocal = mpich_nolocal();
        if (nolocal >= 0) {
            size_t used = strlen(out);
            snprintf(out + used, room - used, " nolocal:%d", nolocal);
        }
    }
    size_t used = strlen(out);
    snprintf(out + used, room - used, "%s%s%s", node_words, btl_words, ofi_words);
    ucx_words(out, room - 1);
    used = strlen(out);
    if (used + 1 < room) {
        out[used] = '\n';
        out[used + 1] = '\0';
    }
    return 1;
}
