"""The Airflow-facing side of the pipeline: warehouse I/O, staging, validation,
load and audit.  DAG files call the functions in ``deid.steps``."""

import os as _os

import pyarrow as _pa

# Arrow's default allocator, mimalloc, keeps what the Parquet and CSV readers'
# threads allocated.  jemalloc with decay 0 for the arenas made after this call
# (``jemalloc_set_decay_ms`` reaches only those: the reader threads' arenas;
# the main thread's keeps Arrow's default decay) holds the least; measured under
# Airflow at 113,000 members (parallelism 2):
# the disassociation release's largest task 696 -> 629 MB, the extract
# 537 -> 419 MB, a screening task 639 -> 484 MB, the HHP release's
# hhp_prepare 1,165 -> 1,083 MB.  The price is the time spent handing pages
# back: that disassociation run took 94 s against 84 s.  With pyarrow's
# default decay, jemalloc kept more than mimalloc in the threaded CSV reads
# (hhp_prepare 1,640 MB).  Every task process imports this package (DAG
# parse) before it allocates an Arrow buffer.  A deployment that names its
# pool in ARROW_DEFAULT_MEMORY_POOL keeps it.
if not _os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
    try:
        _pa.set_memory_pool(_pa.jemalloc_memory_pool())
        _pa.jemalloc_set_decay_ms(0)
    except NotImplementedError:  # a pyarrow build without jemalloc keeps its default
        pass
