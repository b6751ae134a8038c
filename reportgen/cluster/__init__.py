"""Cluster execution: where the work of ``--scheduler`` runs, apart from what that work reads.

* ``scheduler``: the ``--scheduler`` value (``local``, ``local:N``, ``tcp://host:port``) and whether Dask
  is installed;
* ``client``: the Dask client, a local cluster's settings and its workers' fork server;
* ``handshake``: a ``tcp://`` scheduler's handshake read with a deadline before a Client is made;
* ``fork_server_heap``: the fork server's last import (freezes what the workers inherit);
* ``s3_objects``: raw-data objects in S3 that each worker downloads itself;
* ``task_stats``: what a worker reports of one task (files, bytes, seconds, pid, peak memory).

The readers (``readers/distributed.py``: system metrics and framework traces by pieces) and the trace
analysis (``trace_analysis/job.py``: one task per rank) submit their own tasks to the client made here;
nothing here knows what a task reads, and Dask is imported only inside ``client``'s functions.
"""
