/* What carried a rank's messages, as its MPI library says (mbtransport.c). */
#ifndef MBTRANSPORT_H
#define MBTRANSPORT_H
#include <stddef.h>

/* Right after PMPI_Init returns, on every rank of the job (one collective call). */
void nb_transport_init(void);
/* The "transport ..." line for the slot, newline included; 0 when it does not fit. */
int nb_transport_line(char *out, size_t room);

#endif
