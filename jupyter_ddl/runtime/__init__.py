"""The runtime shim shipped into every replica (see ddl_runtime.py); data files only."""
