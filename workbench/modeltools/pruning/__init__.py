"""The parts of the Sparsify tool: which layers may be pruned, magnitude pruning (in a PyTorch
module or directly in an ONNX graph), structured channel pruning, fine-tuning through the
project's own code, export, and the before/after measurements.

Qt-free. torch, onnx, onnxruntime and torch_pruning are imported inside the functions: the
tool's declaration (workbench.modeltools.sparsify.SPEC) must stay cheap to import.
"""
