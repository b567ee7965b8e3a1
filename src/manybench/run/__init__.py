"""The run on the coordinator: placement (which cpu each slot uses), schedule (T0 lead),
coordinator (the phase loop), warnings (stored with the run), progress (the live line)."""
