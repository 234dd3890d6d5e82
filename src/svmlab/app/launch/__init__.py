"""Running many training runs: a sweep's parent run and its jobs' outcomes (`sweep`), the
SLURM launcher (`slurm`) and the thread budget of parallel workers (`threads`)."""
