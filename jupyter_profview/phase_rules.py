"""Training-phase inference from event names: forward, backward, optimizer,
communication, or other.

Rules are ordered: the first that matches a name wins.  Formats with their own
naming conventions pass extra rules in front of the defaults.  Phases are
inferred once per distinct name (names are categorical), never per event.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

PhaseRule = tuple["re.Pattern[str]", str]


def rule(pattern: str, phase: str) -> PhaseRule:
    return re.compile(pattern, re.IGNORECASE), phase


DEFAULT_RULES: tuple[PhaseRule, ...] = (
    rule(r"nccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|horovod"
         r"|c10d::|gloo|ProcessGroup|send_recv|\bp2p\b", "communication"),
    rule(r"optimizer|\bSGD\b|^SGD/|adam|adagrad|rmsprop|lamb|zero_grad|ApplyGradientDescent"
         r"|ApplyMomentum|ApplyAdam|ResourceApply", "optimizer"),
    rule(r"backward|gradient_tape/|^gradients?/|_grad/|autograd::engine|Backprop|Grad\b"
         r"|GradGrad|Grad$", "backward"),
    rule(r"forward|^nn\.Module:", "forward"),
)


def classify(names: Iterable[str], extra_rules: Sequence[PhaseRule] = ()) -> list[str]:
    """Phase for each name (``"other"`` where no rule matches)."""
    rules = (*extra_rules, *DEFAULT_RULES)
    out = []
    for name in names:
        for pattern, phase in rules:
            if pattern.search(name):
                out.append(phase)
                break
        else:
            out.append("other")
    return out
