"""Shared fixtures: a digits project with a trained model in a run folder, and that model as ONNX.

Built once per test session (training 3 epochs in-process takes about two seconds) and copied
where a test writes beside them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

RUN_ID = "20261130-120000-digits"


def train_digits(project: Path, epochs: int = 3):
    """The digits model trained in-process for ``epochs`` epochs through the project's own code."""
    import torch

    from workbench.modeltools.project_code import ProjectCode

    code = ProjectCode(project)
    hparams = code.hparams()
    # One thread: on a busy 2-core machine torch's second thread makes this 3x slower.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = code.build_model("digits_net", hparams).train()
    splits = code.dataset_splits(hparams)
    loader = torch.utils.data.DataLoader(splits.train, batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        for images, labels in loader:
            optimizer.zero_grad()
            loss_fn(model(images), labels).backward()
            optimizer.step()
    torch.set_num_threads(threads)
    return model.eval()


@pytest.fixture(scope="session")
def trained_digits_project(tmp_path_factory) -> Path:
    """A digits project whose run folder runs/<RUN_ID>/ holds the hyper-parameters as used and
    outputs/model.pt, a trained state_dict (about 95 % test accuracy). Do not write into it:
    copy it with ``copy_project`` first."""
    import torch

    from workbench.project import create_from_template

    root = tmp_path_factory.mktemp("trained") / "digits"
    create_from_template("digits", root)
    model = train_digits(root)
    run = root / "runs" / RUN_ID
    (run / "outputs").mkdir(parents=True)
    shutil.copy(root / "hparams" / "digits.hparams", run / "digits.hparams")
    torch.save(model.state_dict(), run / "outputs" / "model.pt")
    return root


@pytest.fixture
def digits_project(trained_digits_project, tmp_path) -> Path:
    """A private copy of the trained digits project, free to write into."""
    return copy_project(trained_digits_project, tmp_path / "digits")


def copy_project(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def model_path(project: Path) -> Path:
    return project / "runs" / RUN_ID / "outputs" / "model.pt"


@pytest.fixture(scope="session")
def digits_onnx(trained_digits_project, tmp_path_factory) -> Path:
    """The trained digits model as one fp32 ONNX file with a dynamic batch axis, exported with
    torch directly (independent of the convert tool). Read-only: copy before writing beside it."""
    import torch

    from workbench.modeltools.project_code import ProjectCode

    code = ProjectCode(trained_digits_project)
    model = code.build_model("digits_net", code.hparams(), model_path(trained_digits_project))
    target = tmp_path_factory.mktemp("onnx") / "digits.onnx"
    torch.onnx.export(model, (torch.zeros(1, 1, 8, 8),), str(target), input_names=["images"],
                      output_names=["logits"], dynamo=True, external_data=False,
                      dynamic_shapes={"images": {0: torch.export.Dim("batch")}})
    return target


@pytest.fixture(scope="session")
def digits_npz(trained_digits_project, tmp_path_factory) -> Path:
    """The digits test split as digits-test.npz (x: float32 (N,1,8,8), y: int64 (N,))."""
    from workbench.modeltools.data import from_project
    from workbench.modeltools.project_code import ProjectCode

    data = from_project(ProjectCode(trained_digits_project), "test")
    target = tmp_path_factory.mktemp("npz") / "digits-test.npz"
    np.savez(target, x=data.x, y=data.y)
    return target


@pytest.fixture
def fresh_project_imports(tmp_path_factory):
    """Lets a test import a project's own modules (model.py, data.py, ...) afresh, for a project
    whose code the test changes. The modules that projects in this session's temporary folders
    put in sys.modules, and the factories registered with workbench_trainkit, are set aside for
    the test and put back after it."""
    import importlib
    import sys

    from workbench_trainkit.registry import datasets, models, preprocessing

    base = Path(tmp_path_factory.getbasetemp()).resolve()

    def from_a_project(module) -> bool:
        file = getattr(module, "__file__", None)
        return bool(file) and Path(file).resolve().is_relative_to(base)

    saved_modules = {name: module for name, module in sys.modules.items() if from_a_project(module)}
    saved_path = list(sys.path)
    registries = (datasets, models, preprocessing)
    saved_factories = [dict(registry._factories) for registry in registries]
    for name in saved_modules:
        del sys.modules[name]
    for registry in registries:
        registry._factories.clear()
    importlib.invalidate_caches()
    yield
    for name, module in list(sys.modules.items()):
        if from_a_project(module):
            del sys.modules[name]
    sys.modules.update(saved_modules)
    sys.path[:] = saved_path
    for registry, factories in zip(registries, saved_factories):
        registry._factories.clear()
        registry._factories.update(factories)
