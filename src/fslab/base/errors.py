"""Errors fslab reports to the user.

Library code raises these; only the CLI turns them into messages and exit codes,
so every function stays callable from tests and notebooks.
"""


class FslabError(Exception):
    """An error with a message meant for the user (no traceback)."""

    exit_code = 1


class UsageError(FslabError):
    """Bad input from the user: a spec, an override, an option."""

    exit_code = 2


class SpecError(UsageError):
    """The experiment spec is invalid; the message names the field."""


class GuardRefusal(FslabError):
    """The device guard refused a target before anything was written to it."""

    exit_code = 3

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"refused by rule '{rule}': {message}")
        self.rule = rule


class ToolError(FslabError):
    """An external tool (mkfs, mount, fio, perf ...) is missing or failed."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr
