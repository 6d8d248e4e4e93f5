"""The parts of the Convert tool (workbench.modeltools.convert): loading the PyTorch model, the
inputs it is traced and verified with, the two exporters, the ONNX file (simplify, check, save)
and the verification against PyTorch.

Qt-free. torch, onnx, onnxruntime and onnxslim are imported inside the functions: the tool's
declaration (workbench.modeltools.convert.SPEC) must stay cheap to import.
"""
