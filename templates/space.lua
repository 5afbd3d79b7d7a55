-- space.lua — the tuning space: every knob with its values, the rules that make a config valid
-- for a problem, the configs worth sweeping for a problem, and how each one is launched.
-- The C tuner is generic: it asks for the list, renders each config, and launches it as
-- launch() says. A problem P is {rows, cols, dtype, op, arch} plus device limits.
--
-- Families (one template each):
--   row.cu    split=1: a group of G = threads/rows threads per row, several rows per block
--   split.cu  split>1: one row across `split` blocks that swap (max, sum): a thread-block cluster
--             through distributed shared memory (xchg=dsmem, sm_90+), or any number of blocks
--             of a persistent cooperative grid through global memory (xchg=global)

local M = {}

local ESIZE = { f32 = 4, f16 = 2, bf16 = 2 }
local CTYPE = { f32 = "float", f16 = "u16", bf16 = "u16" }
local OPS = { softmax = true, log_softmax = true, softmax_backward = true, log_softmax_backward = true,
              cross_entropy = true, cross_entropy_loss = true, attention_softmax = true, attention_softmax_backward = true }

-- Device limits per arch, for commands run without a GPU (the GPU of each, by its SMs: T4, A100,
-- RTX 3090, Orin, ..., L40/RTX 4090, H100 SXM, B200, ..., RTX 5090); the tuner passes the real ones
-- (SMs, opt-in shared memory per block, cluster size). Registers are 64K per SM on every one;
-- threads_sm, resident threads per SM, is 2048 where not given (what __launch_bounds__ may ask).
local KB = 1024
local ARCH = {
  [75]  = { sms = 40,  smem_block = 64 * KB, cluster = 1, threads_sm = 1024 },
  [80]  = { sms = 108, smem_block = 163 * KB, cluster = 1 },
  [86]  = { sms = 84,  smem_block = 99 * KB, cluster = 1 },
  [87]  = { sms = 16,  smem_block = 163 * KB, cluster = 1 },
  [88]  = { sms = 16,  smem_block = 99 * KB, cluster = 1 },
  [89]  = { sms = 128, smem_block = 99 * KB, cluster = 1 },
  [90]  = { sms = 132, smem_block = 227 * KB, cluster = 16 },
  [100] = { sms = 148, smem_block = 227 * KB, cluster = 16 },
  [103] = { sms = 148, smem_block = 227 * KB, cluster = 16 },
  [110] = { sms = 20,  smem_block = 227 * KB, cluster = 8 },
  [120] = { sms = 84,  smem_block = 99 * KB, cluster = 8 },
  [121] = { sms = 48,  smem_block = 99 * KB, cluster = 8 },
}

-- What each architecture has, by the first one that has it; the space's rules and the templates
-- ask P.has (vars' `has`), never the arch number.
local FEATURES = {
  -- thread-block clusters, distributed shared memory, bulk copies (TMA) completing on mbarriers:
  -- xchg=dsmem, hold=ring
  { name = "bulk",  since = 90 },
  -- cp.async, L2 cache policies (hint=keep's createpolicy, ld.L2::cache_hint), redux.sync
  { name = "async", since = 80 },
  -- bf16 arithmetic and conversions (cvt.rn.bf16, max.bf16x2), 16-bit pair conversions from f32
  -- and max.f16x2. Before: f32 and f16 native, bf16 stored as bf16 but computed in f32 (rounded
  -- to bf16 with integer operations) and pairs converted one by one
  { name = "bf16",  since = 80 },
}

function M.features(arch)
  local has = {}
  for _, f in ipairs(FEATURES) do has[f.name] = arch >= f.since end
  return has
end

local function range(a, b, step)
  local t = {}
  for v = a, b, step or 1 do t[#t + 1] = v end
  return t
end

-- Knobs in canonical order. Every config string names all of them.
M.knobs = {
  { name = "threads", values = range(32, 1024, 32), doc = "threads per block" },
  { name = "items",   values = range(1, 64),
    doc = "vectors per thread: held (passes=1; with hold=mix, the held share) or loaded per step (passes=2, hold=smem)" },
  { name = "vec",     values = { 1, 2, 4, 8 }, doc = "elements per access; vec*size <= 16 bytes" },
  { name = "reduce",  values = { "shfl", "smem" },
    doc = "shfl: warp shuffle, one cross-warp step; smem: shared-memory tree" },
  { name = "passes",  values = { 1, 2 },
    doc = "1: row read once and held on chip; 2: online max/sum pass, then a normalize pass" },
  { name = "hold",    values = { "reg", "packed", "pipe", "smem", "none", "mix", "ahead", "ring" },
    doc = "where a one-pass row is held; packed: registers as raw 16-bit words; pipe: registers, next row prefetched (split only); mix (passes=2, split only): the part's last items vectors held, the rest read twice; ahead (xchg=global): mix, the next row's streamed pass run while the pairs travel; ring (xchg=global): a ring of row stages in shared memory, rows loaded several ahead, rows finished a few behind their post" },
  { name = "rows",    values = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 },
    doc = "rows per block; threads/rows threads share a row" },
  { name = "split",   values = { 1, 2, 4, 8, 16, 32, 64, 66, 74, 128, 132, 148 },
    doc = "blocks per row; >1 share the row's max and sum (see xchg); 66, 74, 132, 148 (hold=ring): a block on each SM of a 132- or 148-SM GPU, or on each of half of them" },
  { name = "xchg",    values = { "none", "dsmem", "global", "claim" },
    doc = "how split blocks swap max/sum: cluster shared memory (sm_90+) or global memory; claim (hold=ring): global memory, each block claiming its next part of any row from a counter" },
  { name = "hint",    values = { "none", "stream", "keep" },
    doc = "stream: last-use loads and stores marked evict-first (.lu/.cs); keep (passes=2): as stream, and pass 1's loads evict-last in L2, so pass 2 finds them" },
}

-- attention_softmax's own knobs (space_attn.lua): its mask and bias kinds, which its config strings
-- name after the others, and pair, named last and only when it is not `omit` (so a config string
-- without it means pair=none, as every one before it did); no other op's do.
M.attn_knobs = {
  { name = "mask", values = { "none", "causal", "window", "causal_window", "padding", "padding_causal",
                                "padding_window", "padding_causal_window" },
    doc = "attention_softmax only: the keys a row sees (attn_mask.h); masked keys are not read, written as 0" },
  { name = "bias", values = { "none", "alibi", "tensor" },
    doc = "attention_softmax only: ALiBi, -slope[h] * |q + offset - k| added; or a float32 tensor [B|1, H|1, Q|1, K] added" },
  { name = "pair",  values = { "none", "mirror" }, omit = "none",
    doc = "attention_softmax only, mask=causal hold=reg: mirror, a group holds query q's row and query Q-1-q's (Q == K, offset 0; else one row a group)" },
}

-- hold values that keep the row (or a block's part) in registers: items must cover it
local IN_REGS = { reg = true, packed = true, pipe = true }
local MIXED = { mix = true, ahead = true }

-- Values a thread can hold without spilling: the SM's 64K registers shared by a block of
-- `threads` (at most 255 each), less about 32 for addresses, loop state and the reduction.
local function fits(threads, values, cap)
  return values <= (cap or 64) and values <= math.min(255, 65536 // threads) - 32
end

local KNOB = {}
for i, k in ipairs(M.knobs) do
  KNOB[k.name] = k
  k.index = i
end
for _, k in ipairs(M.attn_knobs) do KNOB[k.name] = k end

local function isvalue(k, v)
  for _, x in ipairs(k.values) do if x == v then return true end end
  return false
end

-- "32..1024 step 32" for an arithmetic run of numbers, else "1|2|4".
local function describe(k)
  local v = k.values
  local step = type(v[1]) == "number" and #v > 2 and v[2] - v[1]
  for i = 3, #v do if step and v[i] - v[i - 1] ~= step then step = nil end end
  if step then
    return string.format("%d..%d", v[1], v[#v]) .. (step > 1 and (" step " .. step) or "")
  end
  local t = {}
  for i, x in ipairs(v) do t[i] = tostring(x) end
  return table.concat(t, "|")
end

-- The width class of w, as gen_width_class (generator/gen.c) computes it on the call path: widths
-- up to 64 alone, then 8 classes an octave (docs/width-classes.md). Kept here too so that a change
-- of the rule changes the templates' hash, and with it every cache key.
function M.width_class(w)
  if w <= 64 then return w, w end
  local k = 0
  while (1 << (k + 1)) < w do k = k + 1 end   -- w in (2^k, 2^(k+1)]
  local step = 1 << (k - 3)
  local hi = (w + step - 1) // step * step
  return hi - step + 1, math.min(hi, 0x7fffffff)
end

-- Fill in and check a problem table coming from C.
function M.problem(P)
  if P.checked then return P end
  local function bad(what, v) error(what .. " '" .. tostring(v) .. "'", 0) end
  if not ESIZE[P.dtype] then bad("unknown dtype (f32, f16, bf16)", P.dtype) end
  if not OPS[P.op] then bad("unknown op (softmax, log_softmax, softmax_backward, log_softmax_backward, cross_entropy, cross_entropy_loss, attention_softmax, attention_softmax_backward)", P.op) end
  P.mask, P.bias = P.mask or "none", P.bias or "none"
  if not isvalue(KNOB.mask, P.mask) or not isvalue(KNOB.bias, P.bias) or (not M.ATTN[P.op] and (P.mask ~= "none" or P.bias ~= "none")) then
    bad("mask and bias kinds are attention_softmax's (mask none|causal|window|causal_window|padding|padding_causal|padding_window|padding_causal_window, bias none|alibi|tensor), got", P.mask .. "/" .. P.bias)
  end
  -- the bias tensor's element type: a source of its own, not a knob (configs and cache keys are the
  -- float32 tensor's; the tuner times that one)
  P.bias_type = P.bias_type or "f32"
  if not ({ f32 = 1, f16 = 1, bf16 = 1, bool = 1 })[P.bias_type] or P.bias_type ~= "f32" and P.bias ~= "tensor" then
    bad("bias_type is a bias tensor's: f32, f16, bf16 or bool, got", P.bias_type .. " (bias " .. P.bias .. ")")
  end
  -- capped: a softcap, the kernel of it a source of its own (its value a launch argument); the
  -- attention backward then reads x too
  P.capped = P.capped == true
  if P.capped and not (M.CE[P.op] or M.ATTN[P.op]) then
    bad("capped (a softcap) is the cross-entropy and attention ops', got op", P.op)
  end
  if math.type(P.rows) ~= "integer" or P.rows < 1 then bad("rows must be >= 1, got", P.rows) end
  if math.type(P.cols) ~= "integer" or P.cols < 1 or P.cols > 0x7fffffff then
    bad("cols must be in 1..2147483647, got", P.cols)
  end
  -- The width class (gen_width_class, from the C side): one kernel serves every width in
  -- [lo, hi]. The rules size a config for the widest row (P.cols = hi: items, stages, shared
  -- memory) and check its vectors against the narrowest (P.lo); P.width is the width asked, for
  -- choices only (enumerate, heuristic), never for what a kernel's text or launch depends on.
  P.width = P.width or P.cols
  local lo, hi = M.width_class(P.width)
  if P.any_width then lo, hi = 1, 0x7fffffff end   -- a stand-in (kset): every width, vec=1
  if (P.lo or lo) ~= lo or (P.hi or hi) ~= hi then
    bad("the generator's width class (gen_width_class) is not the templates' " .. lo .. ".." .. hi .. " for width " ..
        P.width .. ": rebuild, got", tostring(P.lo) .. ".." .. tostring(P.hi))
  end
  P.lo, P.hi, P.cols = lo, hi, hi
  local d = ARCH[P.arch]
  if not d then
    local known = {}
    for a in pairs(ARCH) do known[#known + 1] = a end
    table.sort(known)
    bad("unsupported arch (sm_" .. table.concat(known, ", sm_") .. ")", "sm_" .. tostring(P.arch))
  end
  for k, v in pairs(d) do if P[k] == nil then P[k] = v end end
  P.threads_sm = d.threads_sm or 2048
  P.has = M.features(P.arch)
  if not P.has.bulk then P.cluster = 1 end   -- no clusters whatever the caller says
  P.es = ESIZE[P.dtype]
  P.checked = true
  return P
end

function M.parse(str)
  local cfg, seen = {}, {}
  if str == "" then error("empty config", 0) end
  for item in (str .. ","):gmatch("([^,]*),") do
    local name, value = item:match("^([%w_]+)=([%w_]+)$")
    if not name then error("config item '" .. item .. "' is not knob=value", 0) end
    local k = KNOB[name]
    if not k then error("unknown knob '" .. name .. "'", 0) end
    if seen[name] then error("duplicate knob '" .. name .. "'", 0) end
    seen[name] = true
    local v = value
    if type(k.values[1]) == "number" then v = value:match("^%d+$") and math.tointeger(tonumber(value)) end
    if v == nil or not isvalue(k, v) then
      error("knob '" .. name .. "' takes " .. describe(k) .. ", got '" .. value .. "'", 0)
    end
    cfg[name] = v
  end
  for _, k in ipairs(M.knobs) do
    if cfg[k.name] == nil then error("missing knob '" .. k.name .. "'", 0) end
  end
  return cfg
end

function M.format(cfg)
  local t = {}
  for i, k in ipairs(M.knobs) do t[i] = k.name .. "=" .. tostring(cfg[k.name]) end
  for _, k in ipairs(M.attn_knobs) do
    if cfg[k.name] ~= nil and cfg[k.name] ~= k.omit then t[#t + 1] = k.name .. "=" .. tostring(cfg[k.name]) end
  end
  return table.concat(t, ",")
end

-- Shape facts every rule and template uses.
local function facts(cfg, P)
  local f = {}
  f.G = cfg.threads // cfg.rows                  -- threads per row
  f.NVMAX = P.cols // cfg.vec                    -- full vectors in a row whose start is aligned
  f.CV = (f.NVMAX + cfg.split - 1) // cfg.split  -- vectors per block of a split row
  local per = cfg.split > 1 and cfg.threads or f.G
  f.need = (f.CV + per - 1) // per               -- items to hold a row (or chunk) in registers
  f.STAGE = (P.cols * P.es + 15) // 16 * 16 // P.es  -- elements per row in the smem stage
  f.NB = 2                                       -- xchg=global pair buffers: even and odd rows
  if cfg.hold == "ring" then
    -- hold=ring: DEPTH stages of a block's part in shared memory (a 1024-thread block has the
    -- SM's, smaller ones a share); a block's reducers run at most DEPTH rows ahead of its
    -- finishers, so a block may post row k while another's finishers still read row k-2*DEPTH-1.
    -- Parts end on 128-byte lines of memory (LV vectors), so a part takes at most RV vectors (a
    -- line more where rows are not whole lines, MIDLINE: a body may begin inside one). A backward
    -- op's stage holds the part of y and that of dy: twice the bytes. But for f32 where that
    -- leaves fewer than 4 stages, log_softmax_backward's (whose sum is over dy alone) holds
    -- dy's, and the finishers read y directly (YDIRECT): f32 256x1048576 on an H100, 3 stages
    -- of the pair 0.926 of the floor, 7 of dy 0.988. Not for 16-bit types: their winners' pairs
    -- fit 7 stages (bf16 there: 0.988, dy alone in 8 0.930, the y loads' latency then showing
    -- in each finisher's row), and where a pair fits fewer the finishers' y vectors spill
    f.LV = 128 // (cfg.vec * P.es)
    f.MIDLINE = P.lo ~= P.hi or P.cols * P.es % 128 ~= 0   -- a class's rows: not all whole lines
    f.RV = ((f.NVMAX + (f.MIDLINE and 2 * f.LV - 2 or f.LV - 1)) // f.LV + cfg.split - 1) // cfg.split * f.LV
    f.BUDGET = P.smem_block * math.min(cfg.threads, 1024) // 1024 - KB
    local part = f.RV * cfg.vec * P.es
    f.YDIRECT = P.op == "log_softmax_backward" and P.es == 4 and f.BUDGET // (2 * part) < 4
    f.RINGB = part * (M.BACKWARD[P.op] and not f.YDIRECT and 2 or 1)
    f.DEPTH = math.min(8, f.BUDGET // math.max(f.RINGB, 1))
    -- EARLY: where the stages are few (3), each finisher copies its share of the stage into
    -- registers (a part at most a third of the block's shared memory: 7 vectors a thread, 28
    -- words) and frees the stage before it waits for the row's pairs or sums, so the loader
    -- refills it meanwhile. 256x1048576, committed templates / EARLY, pinned: bf16 forward
    -- split=32 on an H200 0.837 -> 0.917, f32 softmax_backward split=128 on an H100 0.907 ->
    -- 0.990; with 7 stages it costs (bf16 forward split=64 0.825 -> 0.805, f32 split=128 0.942
    -- -> 0.935). Not for forward blocks under 1024 threads: their copies spill in some configs
    -- (512 threads, log_softmax: 4-20 bytes)
    f.EARLY = f.DEPTH < 4 and not f.YDIRECT and (M.BACKWARD[P.op] == true or cfg.threads == 1024)
    -- xchg=global: a row's pairs are read before its buffer comes round again; claim: rows in
    -- flight reach (resident blocks) x DEPTH / split, and a post waits for the row NB back to be
    -- read (H100, bf16 256x1048576 claim split=32, 3 stages: NB 2 * DEPTH + 2 = 8 0.935-0.940 of
    -- copy, 32 0.983)
    f.NB = cfg.xchg == "claim" and 32 or 2 * f.DEPTH + 2
  end
  return f
end

-- nil if cfg is valid for P, else the reason.
function M.check(cfg, P)
  local f = facts(cfg, P)
  local vb = cfg.vec * P.es
  if vb > 16 then return string.format("vec=%d is %d bytes per access (max 16)", cfg.vec, vb) end
  if cfg.vec > P.lo then return string.format("vec=%d is wider than the row (cols=%d)", cfg.vec, P.lo) end
  if cfg.threads % cfg.rows ~= 0 then
    return string.format("rows=%d does not divide threads=%d", cfg.rows, cfg.threads)
  end
  if not ((f.G <= 32 and 32 % f.G == 0) or f.G % 32 == 0) then
    return string.format("threads/rows=%d must be a power of two up to 32 or a multiple of 32", f.G)
  end
  if (cfg.split == 1) ~= (cfg.xchg == "none") then return "split=1 goes with xchg=none, split>1 with dsmem or global" end
  if cfg.split > 1 then
    if cfg.rows ~= 1 then return "split>1 needs rows=1" end
    if cfg.xchg == "dsmem" and P.cluster < cfg.split then
      return string.format("split=%d xchg=dsmem needs clusters of %d blocks (sm_%d allows %d)", cfg.split, cfg.split, P.arch, P.cluster)
    end
    if cfg.hold == "smem" then return "split>1 holds in registers (hold=reg, pipe) or re-reads (passes=2)" end
  end
  if (cfg.passes == 1) == (cfg.hold == "none" or MIXED[cfg.hold] == true) then
    return "passes=1 needs hold=reg, packed, pipe, smem or ring; passes=2 needs hold=none, mix or ahead"
  end
  if cfg.hold == "ahead" and cfg.xchg ~= "global" then return "hold=ahead needs xchg=global" end
  if cfg.xchg == "claim" and cfg.hold ~= "ring" then return "xchg=claim needs hold=ring" end
  if cfg.split > 1 and cfg.split & (cfg.split - 1) ~= 0 and cfg.hold ~= "ring" then
    return string.format("split=%d (a block per SM) is for hold=ring", cfg.split)
  end
  if cfg.hold == "ring" then
    if cfg.xchg ~= "global" and cfg.xchg ~= "claim" then return "hold=ring needs xchg=global or claim" end
    if not P.has.bulk then return string.format("hold=ring needs bulk copies (sm_90+), not sm_%d", P.arch) end
    if vb ~= 16 then return string.format("hold=ring copies 16-byte vectors: vec=%d is %d bytes", cfg.vec, vb) end
    if cfg.items ~= f.need then return string.format("hold=ring needs items=%d for a block's part of the row", f.need) end
    if cfg.threads < 256 then return "hold=ring needs threads>=256" end
    if f.DEPTH < 3 then
      return string.format("hold=ring needs 3 stages of %d bytes in shared memory (%d per block of %d threads)",
                           f.RINGB, f.BUDGET, cfg.threads)
    end
  end
  if MIXED[cfg.hold] then
    if cfg.split == 1 then return "hold=" .. cfg.hold .. " needs split>1 (a block's part of a long row)" end
    -- a quarter of a thread's registers: the streamed steps take as many again (ptxas spills
    -- beyond); 16-bit values are held two to a register, as hold=packed holds them
    local regs = cfg.items * cfg.vec // ((P.es == 2 and vb >= 4) and 2 or 1)
    if regs > 16384 // cfg.threads then
      return string.format("hold=%s holds %d registers of values per thread (max %d with %d threads)", cfg.hold, regs, 16384 // cfg.threads, cfg.threads)
    end
  end
  if cfg.hint == "keep" and cfg.passes ~= 2 then return "hint=keep marks the first of two passes: it needs passes=2" end
  if cfg.hint == "keep" and not P.has.async then return string.format("hint=keep needs L2 cache policies (sm_80+), not sm_%d", P.arch) end
  if cfg.hold == "packed" and (P.es ~= 2 or vb < 4) then
    return "hold=packed holds 16-bit words: f16 or bf16 with vec>=2"
  end
  if cfg.hold == "pipe" and cfg.split == 1 then return "hold=pipe needs split>1 (a row's blocks that swap pairs)" end
  if IN_REGS[cfg.hold] then
    if cfg.items < f.need then
      return string.format("hold=%s needs items>=%d to hold %s", cfg.hold, f.need, cfg.split > 1 and "a block's part of the row" or "the row")
    end
    local held = cfg.items * cfg.vec * (cfg.hold == "pipe" and 2 or 1)
    local max = cfg.hold == "reg" and 64 or 128
    if held > max or cfg.items * cfg.vec > 128 then
      return string.format("%d values held per thread (max 64, 128 with pipe or packed)", held)
    end
  elseif cfg.hold ~= "ring" then
    if cfg.items > 16 then return "items>16 only with hold=reg" end
  end
  if cfg.hold == "smem" then
    local bytes = cfg.rows * f.STAGE * P.es
    if bytes > P.smem_block then
      return string.format("hold=smem needs %d bytes of shared memory (max %d)", bytes, P.smem_block)
    end
  end
  if f.G == 1 and cfg.split == 1 and cfg.reduce ~= "shfl" then
    return "one thread per row reduces nothing: use reduce=shfl"
  end
  return nil
end

local function push(list, P, cfg)
  if M.check(cfg, P) == nil then list[#list + 1] = cfg end
end

-- push() cfg once for each of `reduces`, each with every one of `hints` (the order of the lists).
local function push_each(list, P, cfg, reduces, hints)
  for _, reduce in ipairs(reduces) do
    for _, hint in ipairs(hints) do
      local c = { reduce = reduce, hint = hint }
      for k, v in pairs(cfg) do c[k] = v end
      push(list, P, c)
    end
  end
end

local function vecs(P)
  local t = {}
  for _, v in ipairs({ 8, 4, 2, 1 }) do
    -- 2-byte accesses never beat 4-byte ones: skip vec=1 for 16-bit types when vec=2 fits
    if v * P.es <= 16 and v <= P.lo and not (v * P.es < 4 and 2 * v <= P.lo) then t[#t + 1] = v end
  end
  return t
end

local POW2 = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 }

-- Blocks of `threads` a SM that `regs` registers a thread allow (1 at least, the SM's thread limit
-- at most): the register caps' minb (__launch_bounds__), here and in the op spaces.
local function blocks(P, threads, regs)
  return math.max(1, math.min(P.threads_sm // threads, 65536 // (threads * regs)))
end
local WS_GROUPS = 8192   -- counters at the front of an xchg=global workspace: groups at most

-- hold=packed twins of a register-held shape (f16, bf16): raw words take half the registers,
-- so shapes whose floats do not fit come in too; worth it only where a thread holds 16+ values.
-- In the row family both reductions (the full grid found a shared-memory tree ahead on bf16
-- 4096x4096).
local function packed(list, P, threads, items, vec, rows, split, xchg)
  if P.es ~= 2 or items * vec < 16 or not fits(threads, items * vec // 2) then return end
  push_each(list, P, { threads = threads, items = items, vec = vec, passes = 1, hold = "packed", rows = rows,
                       split = split, xchg = xchg },
            split == 1 and threads > rows and { "shfl", "smem" } or { "shfl" }, { "none", "stream" })
end

-- Row family, row held in registers: every group size whose share of the row fits; with
-- hint=stream and packed twins as well for the widest vector.
local function row_reg(list, P, vec, widest)
  local nv = P.cols // vec
  for _, G in ipairs(POW2) do
    local items = (nv + G - 1) // G
    if G <= nv then
      for _, threads in ipairs({ 128, 256, 512, 1024 }) do
        local shaped = threads >= G and (G >= 32 or threads <= 512)
        if widest and shaped then packed(list, P, threads, items, vec, threads // G, 1, "none") end
        if shaped and fits(threads, items * vec) then
          local cfg = { threads = threads, items = items, vec = vec, passes = 1, hold = "reg", rows = threads // G,
                        split = 1, xchg = "none" }
          push_each(list, P, cfg, { "shfl" }, widest and { "none", "stream" } or { "none" })
          if G > 1 then push_each(list, P, cfg, { "smem" }, { "none" }) end
        end
      end
    end
  end
end

-- Row family, row staged in shared memory: medium rows that do not fit in registers.
local function row_smem(list, P, vec)
  if P.cols * P.es < 16 * KB then return end
  for _, G in ipairs({ 256, 512, 1024 }) do
    for _, items in ipairs({ 4, 8 }) do
      push(list, P, { threads = G, items = items, vec = vec, reduce = "shfl", passes = 1,
                      hold = "smem", rows = 1, split = 1, xchg = "none", hint = "none" })
    end
  end
end

-- Two passes: long rows, one block per row (split=1) or `split` blocks per row; hint=keep
-- where a row's blocks share it, so the rows in flight between the passes can fit in L2. Split
-- blocks also come as hold=mix twins, holding their part's last `items` vectors per thread in
-- registers so the rows in flight keep less in L2: where the held share is a quarter of the
-- part or more (a smaller one changes little), with marked loads only (hint=none measured
-- 10-20% slower); with xchg=global also as hold=ahead, mix with the next row's streamed pass
-- run while this row's pairs travel.
local function two_pass(list, P, vec, split, xchg)
  if P.cols * P.es < 8 * KB then return end
  local cv = (P.cols // vec + split - 1) // split
  for _, G in ipairs({ 256, 512, 1024 }) do
    for _, items in ipairs({ 2, 4, 8 }) do
      local mix = split > 1 and G >= 512 and items >= 4 and cv > items * G and cv <= 4 * items * G
      for _, hold in ipairs(mix and (xchg == "global" and { "none", "mix", "ahead" } or { "none", "mix" }) or { "none" }) do
        if hold ~= "none" or P.cols // vec >= G * items * split then
          push_each(list, P, { threads = G, items = items, vec = vec, passes = 2, hold = hold, rows = 1, split = split,
                               xchg = xchg },
                    split == 1 and { "shfl", "smem" } or { "shfl" },
                    hold ~= "none" and { "stream", "keep" } or split > 1 and KNOB.hint.values or { "none", "stream" })
        end
      end
    end
  end
end

-- Split family, each block holds its part of the row in registers (as floats, or packed); with
-- hold=pipe also the next row's part, when a group has more than one row to do.
local function split_reg(list, P, vec, split, xchg)
  local cv = (P.cols // vec + split - 1) // split
  for _, threads in ipairs({ 64, 128, 256, 512, 1024 }) do
    local items = (cv + threads - 1) // threads
    if threads <= cv then packed(list, P, threads, items, vec, 1, split, xchg) end
    if threads <= cv and fits(threads, items * vec) then
      local cfg = { threads = threads, items = items, vec = vec, passes = 1, hold = "reg", rows = 1, split = split,
                    xchg = xchg }
      push_each(list, P, cfg, { "shfl" }, { "none", "stream" })
      push_each(list, P, cfg, { "smem" }, { "none" })
    end
    if threads <= cv and fits(threads, 2 * items * vec, 128) and P.rows * split > P.sms * 2 then
      push(list, P, { threads = threads, items = items, vec = vec, reduce = "shfl", passes = 1, hold = "pipe",
                      rows = 1, split = split, xchg = xchg, hint = "none" })
    end
  end
end

-- Split family, hold=ring: a block's part of each row bulk-copied (TMA) into a ring of stages in
-- shared memory by one lane, reduced by some warps and written out by the others once the row's
-- pairs are in, so no load waits for the slowest block of a row. Parts of 8 KB and more; a
-- block on every SM (split = SMs or half of them) where that is a knob value. `reduce` means
-- nothing to the ring (its roles reduce by shuffles): shfl only.
local function ring(list, P, vec)
  if vec * P.es ~= 16 then return end
  local bytes, seen = P.cols * P.es, {}
  for _, split in ipairs({ 16, 32, 64, 128, P.sms // 2, P.sms }) do
    if isvalue(KNOB.split, split) and bytes // split >= 8 * KB and not seen[split] then
      seen[split] = true
      for _, threads in ipairs({ 256, 512, 1024 }) do
        local need = facts({ threads = threads, vec = vec, rows = 1, split = split }, P).need
        for _, xchg in ipairs({ "global", "claim" }) do
          push_each(list, P, { threads = threads, items = need, vec = vec, passes = 1, hold = "ring", rows = 1,
                               split = split, xchg = xchg }, { "shfl" }, { "none", "stream" })
        end
      end
    end
  end
end

-- The configs worth sweeping for P, most promising family first.
function M.enumerate(P)
  local list = {}
  local vs = vecs(P)
  for i, vec in ipairs(vs) do
    row_reg(list, P, vec, i == 1)
    if i == 1 then row_smem(list, P, vec) end
    if i <= 2 then two_pass(list, P, vec, 1, "none") end
  end
  local bytes = P.cols * P.es
  if bytes >= 16 * KB then
    for _, split in ipairs({ 2, 4, 8, 16 }) do   -- clusters
      if split <= P.cluster then
        split_reg(list, P, vs[1], split, "dsmem")
        two_pass(list, P, vs[1], split, "dsmem")
      end
    end
  end
  if bytes >= 256 * KB or (bytes >= 16 * KB and P.cluster < 2) then   -- global exchange
    for _, split in ipairs({ 8, 16, 32, 64, 128 }) do
      if bytes // split >= 8 * KB then
        split_reg(list, P, vs[1], split, "global")
        two_pass(list, P, vs[1], split, "global")
      end
    end
    ring(list, P, vs[1])
  end
  return list
end

-- The grid the pruning rules of enumerate() are checked against (`--space full`): every valid
-- config with threads 64..1024 and the two widest vectors, every value of the other knobs,
-- except items: the least that holds the row where it is held in registers (more only leaves
-- slots empty), else 2, 4 or 8; and a warp or more per row where the row is not held in
-- registers. That is 1-3 thousand configs, a sweep of a minute or two per shape.
function M.full(P)
  local list = {}
  local forms = { { 1, "reg" }, { 1, "packed" }, { 1, "pipe" }, { 1, "smem" }, { 2, "none" }, { 2, "mix" }, { 2, "ahead" },
                  { 1, "ring" } }
  local vs = vecs(P)
  for _, threads in ipairs({ 64, 128, 256, 512, 1024 }) do
    for _, vec in ipairs({ vs[1], vs[2] }) do
      for _, rows in ipairs(POW2) do
        for _, split in ipairs(rows <= threads and KNOB.split.values or {}) do
          for _, xchg in ipairs(split == 1 and { "none" } or { "dsmem", "global" }) do
            local need = facts({ threads = threads, vec = vec, rows = rows, split = split }, P).need
            for _, form in ipairs(forms) do
              local items = (IN_REGS[form[2]] or form[2] == "ring") and { math.max(1, need) } or threads // rows >= 32 and { 2, 4, 8 } or {}
              if MIXED[form[2]] then items = threads >= 512 and { 4, 8 } or {} end   -- as two_pass()
              for _, it in ipairs(items) do
                -- mix, ahead: their two-pass twin, hold=none, has both reductions in the grid already;
                -- ring reduces by shuffles whatever `reduce` says
                push_each(list, P, { threads = threads, items = it, vec = vec, passes = form[1], hold = form[2],
                                     rows = rows, split = split, xchg = xchg },
                          (MIXED[form[2]] or form[2] == "ring") and { "shfl" } or { "shfl", "smem" }, KNOB.hint.values)
              end
            end
          end
        end
      end
    end
  end
  return list
end

-- A config chosen without measuring, for shapes nobody tuned: 16-byte vectors (vec=1 when the
-- caller's input and output are not equally aligned), the row in a group's registers when it
-- fits in at most 32 values per thread, else two passes with one 512-thread block per row.
function M.heuristic(P, unaligned)
  local vec = unaligned and 1 or 16 // P.es
  while vec > P.lo do vec = vec // 2 end
  local nv = P.cols // vec
  for _, G in ipairs(POW2) do
    local items = (nv + G - 1) // G
    if G <= math.max(nv, 1) and items * vec <= 32 then
      local threads = math.max(G, 256)
      local cfg = { threads = threads, items = items, vec = vec, reduce = "shfl", passes = 1, hold = "reg",
                    rows = threads // G, split = 1, xchg = "none", hint = "none" }
      if M.check(cfg, P) == nil then return cfg end
    end
  end
  return { threads = 512, items = 4, vec = vec, reduce = "shfl", passes = 2, hold = "none", rows = 1, split = 1,
           xchg = "none", hint = "none" }
end

-- Everything a template needs: the problem, the knobs, and the derived sizes.
function M.vars(cfg, P)
  local v = {
    dtype = P.dtype, op = P.op, cols = P.cols, es = P.es, ctype = CTYPE[P.dtype], arch = P.arch, has = P.has,
    -- COLS in a kernel: its width argument (the launch's, or the parameter block's for the ops
    -- that have one), so one kernel serves the class; the tuner's own kernels (cfg nil) are
    -- compiled for the one width they fill and check
    COLSX = not cfg and tostring(P.width) or (M.CE[P.op] or M.ATTN[P.op]) and "p.cols" or "cols",
  }
  -- The attention forward's width held to its class [lo, hi] (the runtime launches no other), so
  -- the compiler knows its range as it knew a239e9c's literal: a mask's lo of 0 stays 0 (no lo
  -- test a vector), a row has at most hi / vec vectors (masked_fill's loop short, a packed row's
  -- slot tests folded); a class of one width takes the literal. NVRTC 13.0, sm_90, bf16: the
  -- 1024-key packed row 2086 -> 1657 SASS instructions (a239e9c's 1609), no spill
  -- (docs/design/width-classes.md).
  if cfg and P.op == "attention_softmax" then
    v.COLSX = P.lo == P.hi and tostring(P.hi) or string.format("((i64)min(max((int)p.cols, %d), %d))", P.lo, P.hi)
  end
  if cfg then
    local f = facts(cfg, P)
    for k, x in pairs(cfg) do v[k] = x end
    v.R, v.rows = cfg.rows, nil      -- rows per block; the problem's rows are a kernel argument
    v.G, v.NVMAX, v.CV, v.STAGE = f.G, f.NVMAX, f.CV, f.STAGE
    v.DEPTH, v.NB, v.LV, v.RV, v.MIDLINE, v.YDIRECT, v.EARLY = f.DEPTH, f.NB, f.LV, f.RV, f.MIDLINE, f.YDIRECT, f.EARLY
    v.VB = cfg.vec * P.es
    v.template = cfg.split > 1 and "split.cu" or "row.cu"
    v.WS_GROUPS = WS_GROUPS
    -- cache operators: the last read of a line and every write leave L2 first with hint=stream
    -- or keep; with keep, pass 1's loads take an evict-last policy
    local marked = cfg.hint ~= "none"
    v.ld_final = marked and (cfg.passes == 2 and ".lu" or ".cs") or ""
    v.st_op = marked and ".cs" or ""
    v.kernel = "st_softmax"
    -- blocks per SM the register budget of fits() allows: without it ptxas spends every register
    -- the block size leaves, and a packed row gains no room for more rows in flight
    v.minb = 1
    -- held vectors kept as the loaded words: hold=packed, and hold=mix for 16-bit types
    v.words = cfg.hold == "packed" or (MIXED[cfg.hold] == true and P.es == 2 and v.VB >= 4)
    -- registers of values most live: packed, the held words; mix and ahead, a streamed step's floats
    local live = cfg.hold == "packed" and cfg.items * cfg.vec * P.es // 4 or v.words and cfg.items * cfg.vec
    if live then v.minb = blocks(P, cfg.threads, live + 32) end
  end
  return v
end

-- How the C side launches the kernel of cfg(in, out, rows, workspace): block size, rows per
-- block, blocks per row, cluster size, dynamic shared memory; coop: a persistent cooperative
-- grid (at most the blocks that fit on the GPU at once) whose workspace holds 8 bytes of
-- counters for each of ws_groups groups (zeroed before the first launch; kernels leave them
-- zeroed), then `workspace` bytes per group of split blocks. coop 1: the grid is whole groups
-- of split blocks; 2 (xchg=claim): every resident block, the first group's workspace shared.
local COOP = { global = 1, claim = 2 }
function M.launch(cfg, P)
  local f = facts(cfg, P)
  return {
    threads = cfg.threads,
    rows_per_block = cfg.rows,
    blocks_per_row = cfg.split,
    cluster = cfg.xchg == "dsmem" and cfg.split or 0,
    coop = COOP[cfg.xchg] or 0,
    workspace = COOP[cfg.xchg] and 8 * f.NB * cfg.split or 0,   -- per group, after the counters
    ws_groups = COOP[cfg.xchg] and WS_GROUPS or 0,
    smem = cfg.hold == "smem" and cfg.rows * f.STAGE * P.es or cfg.hold == "ring" and f.DEPTH * f.RINGB or 0,
  }
end

-- The backward ops and the cross-entropy ops have spaces of their own (space_bw.lua,
-- space_ce.lua, handed in by gen.lua, built on the rules above): each entry point sends their
-- problems there.
M.BACKWARD = { softmax_backward = true, log_softmax_backward = true }
M.CE = { cross_entropy = true, cross_entropy_loss = true }
M.ATTN = { attention_softmax = true, attention_softmax_backward = true }
local make_bw, make_ce, make_attn = ...
local function missing(what)   -- a templates folder without that file (an older one)
  local function no() error("these templates have no " .. what, 0) end
  return function() return { check = no, enumerate = no, full = no, heuristic = no, launch = no, vars = no } end
end
local HELP = { check = M.check, launch = M.launch, vars = M.vars, heuristic = M.heuristic, fits = fits, vecs = vecs, blocks = blocks,
               POW2 = POW2, KB = KB, is_split = function(v) return isvalue(KNOB.split, v) end }
local BW = (make_bw or missing("space_bw.lua: no backward ops"))(HELP)
local CE = (make_ce or missing("space_ce.lua: no cross-entropy ops"))(HELP)
local ATTN = (make_attn or missing("space_attn.lua: no attention_softmax"))(HELP)
for name, at in pairs({ check = 2, enumerate = 1, full = 1, heuristic = 1, launch = 2, vars = 2 }) do
  local fwd, bw, ce, attn = M[name], BW[name], CE[name], ATTN[name]
  M[name] = function(...)
    local op = select(at, ...).op
    if M.ATTN[op] then return attn(...) end
    local cfg = select(1, ...)
    if name == "check" and (cfg.mask ~= nil or cfg.bias ~= nil) then
      return "mask and bias are knobs of attention_softmax only"
    end
    if name == "check" and cfg.pair ~= nil then return "pair is a knob of attention_softmax only" end
    if M.BACKWARD[op] then return bw(...) end
    if M.CE[op] then return ce(...) end
    return fwd(...)
  end
end

return M
