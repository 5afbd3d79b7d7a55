// aux.cu — the tuner's own kernels, one module: st_fill (random inputs, fill.cu) and st_check
// (float64 verification, check.cu). Uses: dtype, op, cols.
% include("types.cu")
% include("fill.cu")
% include("check.cu")
