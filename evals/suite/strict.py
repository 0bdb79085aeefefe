"""The base of every model of ``evalgate.yml``: an unknown key is an error (a misspelt key must
not be silently ignored), and so are NaN and infinity (no tolerance or limit means anything then)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
