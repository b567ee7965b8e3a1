"""Who may drive a cluster's nodes: its credentials (TLS through Dask's Security) and the
run's secret (an HMAC on every message of a run, auth.py)."""
