"""manybench: synchronized many-task benchmarks across slots and nodes."""
__version__ = "0.1.0"
