"""The config of a run before any solver is imported: the typed schema and the checks of
the composed config (`schema`), the solver options read from the solvers' source (`options`)
and their declared constraints (`solver_constraints`), override lists (`overrides`) and
tuning's search spaces (`search_space`)."""
