"""What ``load`` returns (a train/test split) and what ``list_datasets`` reports (a summary)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True, eq=False, repr=False)
class Dataset:
    """A train/test split ready for a solver.

    Features are float64: CSR with int32 indices for LIBSVM files, dense for embedded and
    synthetic data. Labels are exactly +1.0 / -1.0; ``classes`` holds the original label values
    (negative, positive), the smaller one having become -1. ``digest`` (sha256 hex) identifies the
    source data, and ``params`` the resolved loading parameters: with the seed they determine the
    arrays exactly. ``source`` says where the data came from (file paths, or the generator).
    ``unverified`` says how a file differs from the official one when it was used anyway (the
    dataset parameter ``verify`` false); None when the data is what it should be.
    """

    name: str
    X_train: np.ndarray | sp.csr_matrix
    y_train: np.ndarray
    X_test: np.ndarray | sp.csr_matrix
    y_test: np.ndarray
    classes: tuple
    digest: str
    source: str
    params: dict
    unverified: str | None = None

    @property
    def n_features(self) -> int:
        return self.X_train.shape[1]

    @property
    def n_train(self) -> int:
        return self.X_train.shape[0]

    @property
    def n_test(self) -> int:
        return self.X_test.shape[0]

    def __repr__(self) -> str:
        layout = "CSR" if sp.issparse(self.X_train) else "dense"
        return (
            f"Dataset({self.name!r}, {self.n_train} train + {self.n_test} test rows x "
            f"{self.n_features} features, {layout}, classes={self.classes}, "
            f"digest={self.digest[:12]}...)"
        )


@dataclass(frozen=True)
class DatasetInfo:
    """One dataset as ``list_datasets`` reports it, without loading it.

    Sizes are those ``load`` gives with the default parameters (None where not known before
    loading). ``location`` is "embedded" or "generated", or for LIBSVM files where they are:
    "local: <folder>", "cache: <folder>", "local+cache: <folders>", "not downloaded", or
    "missing <file>; local: <folder>" when only some were found.
    """

    name: str
    kind: str
    n_train: int | None
    n_test: int | None
    n_features: int | None
    location: str
