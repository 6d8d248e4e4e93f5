"""The parts of the Quantize tool (workbench.modeltools.quantize): reading and preparing the
ONNX model, feeding calibration data, the three conversions, and the per-layer error table.

Qt-free; onnx and onnxruntime are imported inside the functions that need them.
"""
