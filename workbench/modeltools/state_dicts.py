"""A model's weights read from a file, and fitted to a model.

The file is a state_dict saved with ``torch.save(model.state_dict())`` (.pt, .pth), a checkpoint
holding one (the training helpers' under "model", PyTorch Lightning's under "state_dict"), or a
``.safetensors`` file. Its names may carry a wrapper's prefix the model does not have, or lack
one it has: "model." of a LightningModule holding the network as ``self.model``, "module." of
DataParallel, "_orig_mod." of torch.compile; ``fitted`` finds the spelling that fits.
Imports torch: call only from a tool's run function.
"""

from __future__ import annotations

from pathlib import Path

from workbench.modeltools.errors import ModelToolError

SAFETENSORS_SUFFIX = ".safetensors"
# Where checkpoints keep the state_dict: the training helpers' "model", Lightning's "state_dict".
CHECKPOINT_KEYS = ("model", "state_dict")
WRAPPER_PREFIXES = ("model.", "module.", "_orig_mod.")


def read_state_dict(path: Path) -> dict:
    """The name → tensor mapping ``path`` holds; ModelToolError naming the file and saying how to
    save weights that load when it holds none."""
    path = Path(path)
    if not path.exists():
        raise ModelToolError(f"{path} does not exist")
    if path.suffix.lower() == SAFETENSORS_SUFFIX or _starts_like_safetensors(path):
        return _read_safetensors(path)
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ModelToolError(
            f"{path} is not a PyTorch checkpoint or state_dict ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}); give the weights saved with "
            "torch.save(model.state_dict())") from None
    for key in CHECKPOINT_KEYS:
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
            break
    if not isinstance(state, dict) or not state or not all(isinstance(k, str) for k in state):
        raise ModelToolError(f"{path} holds no state_dict; save one with "
                             "torch.save(model.state_dict(), path)")
    return {name: value for name, value in state.items() if hasattr(value, "shape")}


def _starts_like_safetensors(path: Path) -> bool:
    from workbench.modeltools.model_files import _is_safetensors

    with open(path, "rb") as file:
        return _is_safetensors(file.read(16))


def _read_safetensors(path: Path) -> dict:
    try:
        from safetensors.torch import load_file
    except ImportError:
        raise ModelToolError(f"{path} is a .safetensors file and the safetensors package is not "
                             "installed; install it (pip install safetensors)") from None
    try:
        return load_file(str(path), device="cpu")
    except Exception as exc:
        raise ModelToolError(
            f"{path} is not a readable .safetensors file ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}); save it again with "
            "safetensors.torch.save_file(model.state_dict(), path)") from None


def spellings(state: dict):
    """``state`` as saved, then with each wrapper prefix that all its names share removed (one
    after the other: "module.model.conv" → "model.conv" → "conv")."""
    yield state
    current = state
    removed = True
    while removed:
        removed = False
        for prefix in WRAPPER_PREFIXES:
            if current and all(name.startswith(prefix) for name in current):
                current = {name[len(prefix):]: value for name, value in current.items()}
                removed = True
                yield current
                break


def shapes(state: dict) -> dict[str, tuple]:
    return {name: tuple(value.shape) for name, value in state.items()}


def fitted(state: dict, expected: dict[str, tuple]) -> dict | None:
    """The spelling of ``state`` whose names and shapes are ``expected``'s, or None."""
    for spelling in spellings(state):
        if shapes(spelling) == expected:
            return spelling
    return None


def mismatch(state: dict, expected: dict[str, tuple]) -> str:
    """What keeps ``state`` (in its closest spelling) from fitting ``expected``: the missing,
    unexpected and wrongly shaped names, three of each at most."""
    closest = max(spellings(state), key=lambda s: len(set(s) & set(expected)))
    missing = [k for k in expected if k not in closest]
    unexpected = [k for k in closest if k not in expected]
    wrong = [f"{k} {tuple(closest[k].shape)} vs {shape}" for k, shape in expected.items()
             if k in closest and tuple(closest[k].shape) != shape]
    problems = []
    for label, names in (("missing", missing), ("unexpected", unexpected), ("wrong shape", wrong)):
        if names:
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            problems.append(f"{label}: {', '.join(names[:3])}{more}")
    return "; ".join(problems)


def load_into(model, weights: Path, factory: str = "the model") -> None:
    """Load the weights file ``weights`` into ``model``; ModelToolError naming the file and the
    mismatched tensors when they do not fit."""
    state = read_state_dict(weights)
    expected = shapes(model.state_dict())
    spelling = fitted(state, expected)
    if spelling is None:
        raise ModelToolError(
            f"{weights} does not match the model factory {factory!r}: "
            f"{mismatch(state, expected)}. Choose the factory the model was trained with "
            "(--model-factory), or the matching weights")
    model.load_state_dict(spelling)
