"""The shape of a hostile-corpus case (tests/corpus/hostile/README.md).

A case writes its inputs into a fresh work directory, then runs stitchopt commands
against them; hostile_test.py checks each command's exit code and message and
that nothing outside the case's output directories changed.
"""
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional


@dataclass
class Step:
    """One stitchopt command. `argv` excludes the binary; these placeholders are
    replaced: {model} the model path, {model_dir} its directory, {out} the case's
    output directory (WORK/out), {work} the work directory."""
    argv: list
    exit: int = 0
    # Substrings stderr (or stdout) must contain.
    message: tuple = ()
    # Runs before the command with the work directory's Path: a mutation such as
    # deleting OUT/kernels/kernels.json. Paths it touches count as outputs.
    before: Optional[Callable[[Path], None]] = None
    # Runs after the command with (work, completed process); returns None or the
    # reason the step failed (e.g. "the .cu holds a raw newline from a name").
    check: Optional[Callable[[Path, object], Optional[str]]] = None
    # Files and directories (relative to work) this step may create, change or
    # remove besides {out}.
    may_change: tuple = ()
    cwd: str = "."  # relative to work
    # Environment variables for this command (placeholders replaced), e.g. an opt-in
    # STITCH_BUILD_CACHE; every other command runs without it.
    env: dict = field(default_factory=dict)


@dataclass
class Case:
    name: str          # unique, [a-z0-9_]
    finding: str       # the finding it pins, e.g. "issue 12 #4: SIGFPE on a zero-size reduction"
    # Writes the model (and side files) into the given model directory; returns the
    # model's path.
    write: Callable[[Path], Path]
    steps: list = field(default_factory=list)
    # Extra seconds of budget (the default per command is 60 s, the hang bound).
    timeout: int = 60
    # Set by hostile_test.py for the cases about numerics, shapes, names and codegen:
    # their `run --emulate` steps share one build cache outside every WORK (the
    # emulation layer compiled once, not once per case). The cases about output
    # directories and the runtime keep the default, no cache, and so check that
    # nothing outside OUT is written by default.
    shared_build_cache: bool = False
