"""Every MLflow call of svmlab: runs, traces, models, sweep parent runs, the server, queries."""
