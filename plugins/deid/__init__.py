"""The Airflow-facing side of the pipeline: warehouse I/O, staging, validation,
load and audit.  DAG files call the functions in ``deid.steps``."""

import pyarrow as _pa

# Arrow's default allocator, mimalloc, keeps what the Parquet reader's threads
# allocated: reading one screening range (a 44 MB table) left 134 MB resident
# and the screening step peaked at 525 MB; with jemalloc, 68 MB and 449 MB.
# The C library's allocator matched jemalloc there but held 657 MB instead of
# 451 MB in the threaded CSV extract.  Every task process imports this package
# (DAG parse) before it allocates an Arrow buffer.
try:
    _pa.set_memory_pool(_pa.jemalloc_memory_pool())
except NotImplementedError:  # a pyarrow build without jemalloc keeps its default
    pass
