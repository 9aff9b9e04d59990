"""The names of the pipeline's steps, stage by stage: what faults
(`inject_fault=STEP:crash`), crash reports, `--stop-after` and
`--dump-after` may name besides a stage. The passes they run are bound in
the stage table (pipeline.py), which checks that it runs exactly these.

A step marked whole leaves a whole module of its stage (the later steps
only add to it: library calls chosen, split factors, launch configs), so
it may be stopped after, dumped as `NN-STAGE.STEP.tir` and re-fed; the
other steps' results are parts of their stage's work (the schedule without
its facts), which its check would reject."""

from __future__ import annotations

# stage -> ((step, whole), ...), in the order they run.
STEPS = {
    "capture": (),
    "lower": (("lower.ops", True), ("lower.select-externs", True)),
    "schedule": (
        ("schedule.factor-reductions", False),
        ("schedule.inline", False),
        ("schedule.dead-nodes", False),
        ("schedule.facts", True),
    ),
    "fusion": (("fusion.fuse", True), ("fusion.split-reductions", True)),
    "memplan": (("memplan.plan-memory", True), ("memplan.tune-launches", True)),
}
STEP_NAMES = tuple(name for steps in STEPS.values() for name, _ in steps)
WHOLE_STEPS = tuple(name for steps in STEPS.values() for name, whole in steps if whole)


def stage_of(name: str) -> str:
    """The stage a step or stage name belongs to."""
    return name.partition(".")[0]
