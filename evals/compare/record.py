"""The base of comparison.json's models: a key no model declares is an error, so a field renamed on
one side of the file is caught where it is read, not read as missing."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")
