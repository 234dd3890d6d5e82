"""svmlab's solver families, one package each (nesvm, pegasos, frank_wolfe, ...) plus the library
baselines. A family imports the estimator and numerics layers, never another family."""
