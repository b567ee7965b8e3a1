"""Results: contract (the typed rows of results.db), schema (tables, version, migrations),
store (reading and writing results.db), export (records as CSV or JSON)."""
