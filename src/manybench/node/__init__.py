"""The node side: protocol (what crosses to a node), agent (a node's slot pool), slot (one
pinned worker process), server (the agent as its own process, for Dask), dask_plugin (the
Dask worker's handlers), worker (`manybench worker`), clock (echo for offsets), scratch."""
