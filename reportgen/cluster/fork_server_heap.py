"""The last module the local Dask workers' fork server imports (``cluster.client.LOCAL_PRELOAD``): Dask and
the trace reader are imported by then, and their objects are frozen (``reportgen.garbage_collector``), so
every worker forked from the server starts with them out of its collector's scans. Imported by the fork
server only: importing it anywhere else would freeze that process's objects."""

from reportgen.garbage_collector import freeze_imported_objects

freeze_imported_objects()
