"""Secrets masked out of every text svmlab writes: params, tags, artifacts, printed lines.

A URI may carry a password (``postgresql://user:password@host/db``,
``http://user:password@host:5000``) or a token in its query (``?password=...``,
``?access_token=...``, a signed URL's ``sig=``). :func:`mask` replaces each such secret by
``***`` wherever it stands in a text, so that a value, a YAML file or an error message can be
passed through it whole; :class:`MaskingFilter` does it to log records (Hydra's lines, which
name a sweep's overrides). Standard library only: every layer may use it.
"""

from __future__ import annotations

import logging
import re

MASK = "***"
# scheme://user:password@ : the password runs to the first '@', as SQLAlchemy and requests
# read it (a '/' in it is taken as part of the secret: better masked too much than too little);
# also in Hydra's escaped form of an override, scheme\://user\:password@ (and in JSON, \\:)
_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.\-]*\\*://[^\s:/?#@'\"\\]*\\*:)[^\s@'\"]+@")
# a query parameter whose name says it is a secret: ?password=..., &access_token=..., &sig=...
_QUERY = re.compile(
    r"([?&;][\w.\-]*(?:pass|pwd|secret|token|key|sig|credential)[\w.\-]*=)"
    r"[^&;\s'\"#]+",
    re.IGNORECASE,
)


def mask(text: str) -> str:
    """``text`` with every password or token of a URI in it replaced by ``***``."""
    return _QUERY.sub(rf"\g<1>{MASK}", _USERINFO.sub(rf"\g<1>{MASK}@", text))


class MaskingFilter(logging.Filter):
    """Masks the secrets of every record a logging handler emits (svmlab's Hydra config puts
    it on Hydra's handlers)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = mask(record.getMessage()), None
        return True
