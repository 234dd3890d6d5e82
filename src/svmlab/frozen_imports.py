"""Imported last by the parallel launcher's fork server, after the ``preload`` modules.

It moves every object alive in the fork server (the imported training path: MLflow,
scikit-learn, the solvers) to the garbage collector's permanent generation. The workers forked
from it then neither scan those objects in their own collections nor write to the memory pages
that hold them, which would copy each page into every worker (copy-on-write). Measured on a
48-job sweep with 2 workers: 34 CPU-seconds in all before, 30-31 after (docs/benchmarks.md).
This is the recipe of the ``gc.freeze`` documentation for processes that fork without exec.
"""

import gc

gc.freeze()
