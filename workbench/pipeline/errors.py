"""The pipeline's error: its message says what is wrong and what to do."""


class PipelineError(Exception):
    """A declaration that does not check out, a step that failed, an iteration that cannot
    start or go on."""


class NoPipelineDeclared(PipelineError):
    """The project's workbench.toml has no [pipeline] at all."""
