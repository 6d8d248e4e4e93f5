"""The model tools' figures on the digits model and on a MobileNet-style CNN, as one JSON object.

Everything goes through the tools themselves (``run_tool``, as the CLI's job process does):

- digits: the template project, trained here for --epochs epochs through the project's own
  factories; converted to ONNX (fp32 max abs diff), quantized static int8 (accuracy drop, size
  ratio) and channel-pruned by half with --finetune-epochs of fine-tuning (accuracy drop,
  latency ratio);
- mobilenet_style: a depthwise-separable CNN defined below (3x96x96 input, random weights: only
  sizes and speeds are measured on it), registered as a model factory of the same project;
  converted, quantized static int8 with calibration inputs from a .npz (size ratio, latency
  ratio at batch 1) and channel-pruned by half (latency ratio).

Latency ratios are p50 over p50 at batch 1 on one thread, both sides measured in the same tool
run. int8 speed depends on the CPU's int8 instructions: cpu_int8_flags lists what this one has.

Run: python benchmarks/modeltools.py [--epochs 10] [--finetune-epochs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GOALS = {
    "digits_fp32_max_abs_diff": ("<=", 1e-4),
    "digits_int8_accuracy_drop": ("<=", 0.5),
    "digits_int8_size_ratio": ("<=", 0.35),
    "mobilenet_int8_size_ratio": ("<=", 0.3),
    "mobilenet_int8_latency_ratio": ("<=", 0.7),
    "pruned_latency_ratio": ("<=", 0.7),
    "digits_pruned_finetuned_accuracy_drop": ("<=", 1.0),
}

MOBILENET_MODULE = '''
"""A MobileNet-style CNN (depthwise-separable blocks) registered as "mobilenet_style"."""

from torch import nn
from workbench_trainkit import models


def separable(cin, cout, stride):
    return nn.Sequential(
        nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), nn.BatchNorm2d(cin), nn.ReLU6(),
        nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU6())


class MobileNetStyle(nn.Module):
    def __init__(self, classes=100):
        super().__init__()
        widths = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1),
                  (256, 512, 2), (512, 512, 1), (512, 512, 1), (512, 1024, 2)]
        layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
        layers += [separable(cin, cout, stride) for cin, cout, stride in widths]
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(1024, classes)

    def forward(self, x):
        return self.classifier(self.pool(self.features(x)).flatten(1))


@models.register("mobilenet_style")
def mobilenet_style(hp):
    return MobileNetStyle()
'''

INPUT = (3, 96, 96)


def cpu_int8_flags() -> list[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
    wanted = ("avx2", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8")
    return [flag for flag in wanted if flag in flags]


def tool(name: str, **values):
    from workbench.modeltools.params import ToolInvocation
    from workbench.modeltools.running import run_tool

    started = time.perf_counter()
    report = run_tool(ToolInvocation(name, values))
    print(f"{name}: {report.title} ({time.perf_counter() - started:.1f} s)", file=sys.stderr)
    return report


def make_project(folder: Path, epochs: int) -> tuple[Path, Path, Path]:
    """The digits project with a trained digits model and a random MobileNet-style one, each in
    a run folder of its own; returns (project, digits weights, mobilenet weights)."""
    import torch

    from workbench.modeltools.project_code import ProjectCode
    from workbench.project import create_from_template

    project = folder / "digits"
    create_from_template("digits", project)
    (project / "mobilenet_style.py").write_text(textwrap.dedent(MOBILENET_MODULE))
    train = project / "train.py"
    train.write_text(train.read_text().replace("import model  #", "import mobilenet_style  # noqa: F401\nimport model  #", 1))

    code = ProjectCode(project)
    hparams = code.hparams()
    torch.manual_seed(0)
    net = code.build_model("digits_net", hparams).train()
    loader = torch.utils.data.DataLoader(code.dataset_splits(hparams).train, batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(net.parameters(), lr=0.003)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        for images, labels in loader:
            optimizer.zero_grad()
            loss_fn(net(images), labels).backward()
            optimizer.step()

    paths = []
    for run_id, model in (("digits", net.eval()), ("mobilenet", code.build_model("mobilenet_style", hparams))):
        run = project / "runs" / run_id
        (run / "outputs").mkdir(parents=True)
        shutil.copy(project / "hparams" / "digits.hparams", run / "digits.hparams")
        torch.save(model.state_dict(), run / "outputs" / "model.pt")
        paths.append(run / "outputs" / "model.pt")
    return project, paths[0], paths[1]


def calibration_npz(folder: Path, samples: int = 64) -> Path:
    """Inputs for the MobileNet-style model: smooth random images, no labels."""
    import numpy as np

    rng = np.random.default_rng(0)
    coarse = rng.random((samples, INPUT[0], INPUT[1] // 8, INPUT[2] // 8), dtype=np.float32)
    x = np.repeat(np.repeat(coarse, 8, axis=2), 8, axis=3)
    path = folder / "mobilenet-inputs.npz"
    np.savez(path, x=x.astype(np.float32))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--finetune-epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    results: dict = {"cpu_int8_flags": cpu_int8_flags(), "cpu_count": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="wb-modeltools-") as scratch:
        folder = Path(scratch)
        project, digits_pt, mobilenet_pt = make_project(folder, args.epochs)
        shape = ",".join(str(n) for n in (1, *INPUT))

        converted = tool("convert", model=str(digits_pt))
        digits_onnx = Path(converted.outputs[0])
        results["digits_fp32_max_abs_diff"] = converted.figures["max_abs_diff"]
        results["digits_exporter"] = converted.figures.get("exporter")

        quantized = tool("quantize", model=str(digits_onnx), repeats=args.repeats, layer_report=False)
        results["digits_int8_accuracy_fp32"] = quantized.figures.get("accuracy_fp32")
        results["digits_int8_accuracy_drop"] = quantized.figures["accuracy_drop"]
        results["digits_int8_size_ratio"] = quantized.figures["size_ratio"]
        results["digits_int8_latency_ratio"] = quantized.figures["latency_ratio"]

        pruned = tool("sparsify", model=str(digits_pt), method="channels", sparsity=0.5,
                      finetune_epochs=args.finetune_epochs)
        results["digits_pruned_finetuned_accuracy_drop"] = pruned.figures["accuracy_drop"]
        results["digits_pruned_latency_ratio"] = pruned.figures["latency_ratio"]
        results["digits_pruned_parameters"] = [pruned.figures.get("parameters_before"),
                                               pruned.figures.get("parameters_after")]

        mobilenet = tool("convert", model=str(mobilenet_pt), model_factory="mobilenet_style",
                         input_shape=shape)
        mobilenet_onnx = Path(mobilenet.outputs[0])
        results["mobilenet_fp32_max_abs_diff"] = mobilenet.figures["max_abs_diff"]
        inputs = calibration_npz(folder)
        mobilenet_int8 = tool("quantize", model=str(mobilenet_onnx), data=str(inputs),
                              calibration_data=str(inputs), repeats=args.repeats, layer_report=False)
        results["mobilenet_int8_size_ratio"] = mobilenet_int8.figures["size_ratio"]
        results["mobilenet_int8_latency_ratio"] = mobilenet_int8.figures["latency_ratio"]
        results["mobilenet_int8_agreement"] = mobilenet_int8.figures.get("agreement")

        mobilenet_pruned = tool("sparsify", model=str(mobilenet_pt), method="channels",
                                sparsity=0.5, model_factory="mobilenet_style", input_shape=shape,
                                data=str(inputs))
        results["pruned_latency_ratio"] = mobilenet_pruned.figures["latency_ratio"]
        results["mobilenet_pruned_parameters"] = [mobilenet_pruned.figures.get("parameters_before"),
                                                  mobilenet_pruned.figures.get("parameters_after")]

    results["goals"] = {name: {"goal": f"{op} {limit}", "met": results.get(name) is not None
                               and results[name] <= limit} for name, (op, limit) in GOALS.items()}
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
