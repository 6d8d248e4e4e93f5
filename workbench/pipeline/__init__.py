"""Continual learning: iterations of declared steps (cut a dataset version, train, convert,
quantize, verify on devices, gate, deploy), each iteration's state in
``registry/pipeline/iteration_NNNN.json``. Qt-free; the commands are in ``cli.py``."""

from __future__ import annotations

from workbench.pipeline.declaration import PipelineDeclaration, StepDeclaration, parse_declaration, read_declaration
from workbench.pipeline.errors import PipelineError
from workbench.pipeline.iterations import Iteration, IterationStore, StepState
from workbench.pipeline.service import PipelineService

__all__ = ["Iteration", "IterationStore", "PipelineDeclaration", "PipelineError", "PipelineService",
           "StepDeclaration", "StepState", "parse_declaration", "read_declaration"]
