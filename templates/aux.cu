// aux.cu — the tuner's own kernels, one module: st_fill (random inputs, fill.cu) and st_check
// (float64 verification, check.cu); for the backward ops also st_fill_bw, st_check_bw and
// the two-read-one-write floor st_add (backward_aux.cu). Uses: dtype, op, cols.
% include("types.cu")
% include("fill.cu")
% include("check.cu")
% if op:match("_backward$") then
% include("backward_aux.cu")
% end
