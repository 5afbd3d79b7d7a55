// aux.cu — the tuner's own kernels, one module: st_fill (random inputs, fill.cu) and st_check
// (float64 verification, check.cu); for the backward ops also st_fill_bw, st_check_bw and
// the two-read-one-write floor st_add (backward_aux.cu); for the cross-entropy ops
// st_fill_ce, st_check_ce and the loss-only floor st_read_rows (ce_aux.cu); for attention_softmax
// st_fill_attn, st_fill_attn_scores, st_check_attn and the masked floor st_attn_floor (attn_aux.cu), and for its backward
// also st_fill_attn_bw, st_check_attn_bw and st_attn_bw_floor (attn_bw_aux.cu). Uses: dtype, op, cols.
% include("types.cu")
% include("fill.cu")
% include("check.cu")
% if op:match("_backward$") and not op:match("^attention") then
% include("backward_aux.cu")
% end
% if op:match("^cross_entropy") then
% include("ce_aux.cu")
% end
% if op:match("^attention_softmax") then
% include("attn_aux.cu")
% end
% if op == "attention_softmax_backward" then
% include("attn_bw_aux.cu")
% end
