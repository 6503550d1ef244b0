"""Errors a user can act on: they name the problem and where it is."""

from __future__ import annotations


class AnonymizerError(Exception):
    """Base class of every error this library raises on purpose."""


class ParameterError(AnonymizerError, ValueError):
    """A method parameter is out of range or inconsistent.

    ``field`` is the parameter's name as the user wrote it.
    """

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"parameter {field!r}: {problem}")


class InputError(AnonymizerError, ValueError):
    """Input data is malformed.

    ``source`` names the file or table, ``row`` is the 1-based data row
    (header excluded) or None for a whole-file problem, ``field`` the column.
    """

    def __init__(self, source: str, problem: str, row: int | None = None,
                 field: str | None = None):
        self.source, self.problem, self.row, self.field = source, problem, row, field
        where = source
        if row is not None:
            where += f", row {row}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {problem}")


class NotImplementedMethodError(AnonymizerError, NotImplementedError):
    """The method exists in the design but is not finished yet."""
