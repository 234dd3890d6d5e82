"""Errors a user can cause. Each message says what was wrong and what is allowed."""


class SvmlabError(ValueError):
    """Base class for every error svmlab raises on bad user input."""


class ConfigError(SvmlabError):
    """An invalid configuration: unknown name, misspelt key, or value out of range."""


class DataError(SvmlabError):
    """A dataset that cannot be used: unknown name, malformed file, bad labels, NaN/inf."""


class DownloadError(DataError):
    """A dataset file that could not be downloaded or failed its checksum."""


class TrainingError(SvmlabError):
    """Training produced an unusable result, for example NaN or inf in the model or trace."""
