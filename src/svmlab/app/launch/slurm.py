"""The SLURM launcher of svmlab sweeps (``hydra/launcher=submitit_slurm``).

Hydra's submitit plugin submits the sweep as one SLURM job array and then waits for each job's
result in turn; a job that SLURM ended without one (``scancel``, its time limit, a lost node)
raises there and would abandon the jobs still running. This launcher waits the same way, but
counts such a job as KILLED with SLURM's word for it (``its SLURM job 7_3 ended CANCELLED``):
its run, if it was left RUNNING, ends KILLED with that reason, its outcome goes where the jobs
report theirs (``svmlab.app.launch.sweep``), and the sweep goes on to its summary, where the parent run
records it (metric ``jobs_killed``, the job's line in ``jobs.tsv``). A sweep stopped by
Ctrl-C or SIGTERM cancels its jobs that have not ended (the plugin leaves them running).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, filter_overrides
from hydra_plugins.hydra_submitit_launcher import submitit_launcher
from omegaconf import OmegaConf

from svmlab.app.launch import sweep

#: SLURM's states of a job that it ended before the job's own end.
ENDED_BY_SLURM = frozenset(
    {"CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}
)


class SlurmLauncher(submitit_launcher.SlurmLauncher):
    """Hydra's submitit SLURM launcher; a job SLURM ended without a result is KILLED, not the
    end of the sweep."""

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        """Submit the jobs as one array (as the plugin does) and collect every job's return."""
        import submitit

        executor = submitit.AutoExecutor(
            cluster="slurm",
            folder=self.params["submitit_folder"],
            slurm_max_num_timeout=self.params["max_num_timeout"],
        )
        common = set(OmegaConf.structured(submitit_launcher.BaseQueueConf).keys())
        executor.update_parameters(
            **{
                key if key in common else f"slurm_{key}": value
                for key, value in self.params.items()
                if key not in ("submitit_folder", "max_num_timeout")
            }
        )
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        if "mode" in self.config.hydra.sweep:
            sweep_dir.chmod(int(str(self.config.hydra.sweep.mode), 8))
        nums = range(initial_job_idx, initial_job_idx + len(job_overrides))
        jobs = executor.map_array(
            self,
            *zip(
                *[
                    (
                        list(overrides),
                        "hydra.sweep.dir",
                        num,
                        f"job_id_for_{num}",
                        Singleton.get_state(),
                    )
                    for num, overrides in zip(nums, job_overrides)
                ]
            ),
        )
        try:
            return [
                self._collect(job, num, list(overrides))
                for job, num, overrides in zip(jobs, nums, job_overrides)
            ]
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the sweep's jobs must not outlive it
            for job in jobs:
                if not job.done():
                    job.cancel(check=False)
            raise

    def _collect(self, job, job_num: int, overrides: list[str]) -> JobReturn:
        """The job's return; for a job that SLURM ended without one, a KILLED outcome,
        reported."""
        from submitit.core.utils import FailedJobError, UncompletedJobError

        job.wait()  # until its result exists or SLURM's accounting says it ended
        state = (job.state or "UNKNOWN").split()[0]  # "CANCELLED by 0": CANCELLED
        if job.paths.result_pickle.exists() or state not in ENDED_BY_SLURM:
            try:
                return job.results()[0]
            except FailedJobError:  # the job raised: not SLURM's doing
                raise
            except UncompletedJobError:  # it ended without a result all the same
                pass
        from svmlab.tracking.liveness import end_job_run

        reason = f"its SLURM job {job.job_id} ended {state}"
        sweep_dir = Path(str(self.config.hydra.sweep.dir)).resolve()
        started = sweep.read_state(sweep_dir)
        run = end_job_run(self.config.tracking.uri, started["parent_run_id"], job_num, reason)
        outcome = {
            "job_num": job_num,
            "overrides": overrides,
            "status": "KILLED",
            "run_id": run.info.run_id if run else None,
            "error": reason,
            "metrics": {},
            "time_s": 0.0,
            "name": run.info.run_name if run else " ".join(filter_overrides(overrides)),
        }
        done = sweep.record_outcome(sweep_dir, outcome)
        print(sweep.progress_line(outcome, done, started["jobs"]), flush=True)
        return JobReturn(overrides=overrides, status=JobStatus.COMPLETED, _return_value=outcome)
