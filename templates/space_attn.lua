-- space_attn.lua — the tuning space of attention_softmax (templates/attn.cu): softmax over the
-- last dim of mask(bias + softcap(scale * x)), and of its backward attention_softmax_backward
-- (templates/attn_bw.cu): dx = k * y * (dy - sum(dy * y)) over the visible keys, k the scale and
-- the softcap's derivative. gen.lua hands this chunk to space.lua, which calls it with its rules
-- and helpers and sends an attention problem's check, enumerate, heuristic, launch and vars here.
-- The forward's knobs, and two of its own that every config string of it names last: mask and
-- bias, the problem's kinds (P.mask, P.bias), so a config is one kind's. The backward's bias is
-- always none: ALiBi adds a constant to a score, which no derivative sees.
--
-- Families (the forward's row family, split=1):
--   row  passes=1 hold=reg: a group of G = threads/rows threads holds its row's scores in
--        registers (as floats: each is computed from its input before the reduction); one read
--        of the visible keys
--   packed  passes=1 hold=packed (16-bit, bias=none): the row's inputs held as the loads' raw
--        words, two a register (half the registers: twice the rows in flight), each score made
--        again in the max, sum and output passes
--   two  passes=2 hold=none: statistics over the visible keys in one read, the outputs in a
--        second (masked vectors written as zeros, not read): rows no block holds, any length
-- The backward's are the same three: y and dy of the row held in registers (2 * items * vec
-- values a thread, or as raw words: packed, any mask) with one read, or a sum pass over the
-- visible vectors and a second read for dx.
-- pair=mirror (both ops, 16-bit, mask=causal, rows a multiple of K): twins of the row family's
-- reduce=shfl configs whose group holds two mirrored rows (query q and Q-1-q: K + 1 visible keys
-- together) in the slots of one (the backward: y and dy of both), so twice the bytes in flight
-- where a causal row sees half its keys on average; where the launch's offset is not 0 or Q != K
-- the kernel runs one row a group. Its launch covers 2 * rows rows a block. A config string
-- names pair last, and only as mirror.
-- split=2 or 4 xchg=dsmem (the backward, 16-bit, causal masks, sm_90+: y and dy 32 KB a row or more):
-- a row over a cluster of blocks, each holding y and dy of its share of the row's visible vectors
-- as words (hold=packed), the blocks' sums swapped through distributed shared memory.
-- Not yet: packed mirror twins; the forward's shares (measured slower than two reads, below).

return function(H)   -- H: space.lua's forward rules (check, launch, vars, heuristic) and helpers
  local A = {}
  local KB = H.KB

  -- values a thread holds per element slot: the scores (forward), y and dy (backward)
  local function width(P) return P.op == "attention_softmax_backward" and 2 or 1 end

  -- pair=mirror: body vector slots a group needs for two mirrored rows' full visible vectors
  -- (their partly visible ones are edge elements): at most a row's NVMAX, one more where
  -- cols % vec == vec - 1 (vec=1 included), whatever the rows' alignments (counted over all).
  local function mirror_slots(P, vec) return P.cols // vec + (P.cols % vec == vec - 1 and 1 or 0) end

  -- Whether P's hold=reg configs come with pair=mirror twins (either op): 16-bit causal rows, and
  -- Q == K possible (P knows rows = B*H*Q and K only: rows a multiple of K). Not float32: its
  -- forward's causal rows reach 0.98-0.99 of the masked floor alone (H100), and its twins spill at
  -- the cap (NVRTC sm_90, 4096 causal, 256 threads items=8: 32 bytes).
  local function mirrored(P) return P.mask == "causal" and P.es == 2 and P.rows % P.width == 0 end

  -- pair=mirror's blocks per SM, its __launch_bounds__: those of fits()'s budget (values + 32
  -- registers a thread, values counting y and dy in the backward), which the plain row reaches; uncapped, ptxas spends more registers on the
  -- two rows' state and fewer blocks fit (bf16 4096 causal, 256 threads items=4: 80 registers,
  -- 3 blocks; capped 64 with no spill, 4), so the pair would hold no more bytes in flight.
  local function mirror_minb(cfg, P)
    return H.blocks(P, cfg.threads, width(P) * cfg.items * cfg.vec + 32)
  end

  -- hold=packed (16-bit): the raw words of the inputs a thread holds (the scores' x; y and dy),
  -- two values a register
  local function packed_words(cfg, P) return width(P) * cfg.items * cfg.vec * P.es // 4 end

  -- hold=packed's registers a thread beyond its words, and its blocks per SM (its launch bound):
  -- NVRTC 13.0 sm_90, bf16 1024-8192 padding, the forward's 32-word rows spilled 44 bytes at
  -- words + 40 (128 threads; its 16-word rows fit), the backward's 32-word rows 4 bytes at words + 32;
  -- the backward's rows of 16 vectors or fewer 8-16 bytes at words + 40 (4 threads of 3 under
  -- causal masks, 2 threads of 2), none at + 48
  local function packed_margin(cfg, P)
    return (width(P) == 1 and packed_words(cfg, P) > 16 or width(P) == 2 and P.cols // cfg.vec <= 16) and 48 or 40
  end
  local function packed_minb(cfg, P) return H.blocks(P, cfg.threads, packed_words(cfg, P) + packed_margin(cfg, P)) end

  function A.check(cfg, P)
    if cfg.mask ~= P.mask or cfg.bias ~= P.bias then
      return string.format("%s configs name the problem's kinds last: mask=%s,bias=%s", P.op, P.mask, P.bias)
    end
    if width(P) == 2 and P.bias ~= "none" then return "attention_softmax_backward has no bias kind (bias=none)" end
    local why = H.check(cfg, P)
    if why then return why end
    if cfg.split > 1 then
      if width(P) == 1 then return "attention_softmax has the row families only (split=1)" end
      if cfg.xchg ~= "dsmem" then return P.op .. " splits a row over a cluster only (xchg=dsmem)" end
      if cfg.passes ~= 1 then return P.op .. " holds a split row's shares (passes=1)" end
      if cfg.pair == "mirror" then return "pair=mirror holds two rows in one group (split=1)" end
    end
    if cfg.hold == "packed" and width(P) == 1 and P.bias ~= "none" then
      return "hold=packed takes a row's max from its inputs' max: bias=none (a bias moves each score its own way)"
    end
    if cfg.hold ~= "reg" and cfg.hold ~= "none" and cfg.hold ~= "packed" then
      return P.op .. " holds a row in registers (hold=reg or packed) or reads it twice (passes=2 hold=none)"
    end
    if cfg.hold == "reg" and width(P) * cfg.items * cfg.vec > 64 then
      return string.format("hold=reg holds y and dy: %d values per thread (max 64)", 2 * cfg.items * cfg.vec)
    end
    if cfg.hold == "packed" and packed_words(cfg, P) > 64 then
      return string.format("hold=packed holds %d words per thread (max 64)", packed_words(cfg, P))
    end
    if cfg.pair == "mirror" then
      if P.mask ~= "causal" then return "pair=mirror pairs causal rows (mask=causal)" end
      if cfg.hold ~= "reg" then return "pair=mirror holds two rows in registers (passes=1 hold=reg)" end
      local slots = mirror_slots(P, cfg.vec)
      if cfg.items * (cfg.threads // cfg.rows) < slots then
        return string.format("pair=mirror needs %d vector slots a group (items=%d)", slots,
                             (slots + cfg.threads // cfg.rows - 1) // (cfg.threads // cfg.rows))
      end
      if cfg.rows > 512 then return "pair=mirror covers 2*rows rows a block (rows <= 512)" end
    end
    return nil
  end

  local function push(list, P, cfg)
    cfg.mask, cfg.bias = P.mask, P.bias
    if A.check(cfg, P) == nil then list[#list + 1] = cfg end
  end

  function A.enumerate(P)
    return A.list(P, H.vecs(P)[1])
  end

  -- A hold=reg config for G = threads/rows threads a row, and its pair=mirror twin where its
  -- register cap (mirror_minb) leaves room for the pair's state: NVRTC 13.0 (sm_90, bf16 4096 and
  -- 8192 causal) gives the twins 56 registers at least, 64 at 32 values, 114 at 64 (the plain
  -- rows 40, 64, 95). The backward's twins (y and dy: 2 * items * vec values), bf16 and f16, 1024,
  -- 4096 and 8192 causal: 52-64 registers at 16 values, 64 at 32 (cap 64), 108-122 at 64 (cap
  -- 128), none spilling; 128 threads items=4 (64 values, cap 102 at 5 blocks) would spill 4 bytes
  -- and is not offered (the plain rows 91-96). reduce=shfl only: smem's twins spill at the cap.
  local function reg(list, P, cfg)
    push(list, P, cfg)
    if not mirrored(P) or cfg.reduce ~= "shfl" then return end
    local twin = { pair = "mirror" }
    for k, v in pairs(cfg) do twin[k] = v end
    local G = cfg.threads // cfg.rows
    twin.items = (mirror_slots(P, cfg.vec) + G - 1) // G
    -- groups of a warp or more: the pair's edge elements (attn_head.cu's PEDGE, 6 vec - 4 over the
    -- group) are then one a thread, or two at G=32, whose twins need 64 registers over their values
    -- (NVRTC sm_90, bf16 causal 1024: the backward's 256 threads rows=8 fits at 122 of 128, 128
    -- threads rows=4 spilled 36 bytes at 96, the forward's spilled 24 at 64; 1000 columns, G=32:
    -- 72 bytes at the old margin); smaller groups' twins spilled more (64 columns, G=4: 232 bytes)
    if G < 32 then return end
    local values = width(P) * twin.items * cfg.vec
    local cap = math.min(255, 65536 // (cfg.threads * mirror_minb(twin, P)))
    local margin = G < 64 and 64 or values > 32 and 50 or 32
    if H.fits(cfg.threads, values) and cap >= math.max(56, values + margin) then
      push(list, P, twin)
    end
  end

  -- hold=packed configs of a group of G threads (16-bit, 8 words a thread or more; the forward's
  -- without a bias): half hold=reg's registers, so twice the rows in flight, where a mask leaves a
  -- row's registers part empty (key padding) as where it does not. Their own threads loop: a
  -- packed row fits where its floats do not.
  local function packed(list, P, G, items, vec, threads, split)
    if P.es ~= 2 or vec < 2 or width(P) == 1 and P.bias ~= "none" then return end
    local cfg = { threads = threads, items = items, vec = vec, reduce = "shfl", passes = 1, hold = "packed",
                  rows = threads // G, split = split or 1, xchg = split and "dsmem" or "none", hint = "none" }
    local words = packed_words(cfg, P)
    -- 8 words a thread at least; the forward's 64-word rows spilled at 128 registers (3 passes'
    -- state); the block's register cap must leave the margin (1024 threads: 64)
    if words < 8 or width(P) == 1 and words > 32 or not H.fits(threads, words) then return end
    if math.min(255, 65536 // (threads * packed_minb(cfg, P))) < words + packed_margin(cfg, P) then return end
    for _, v in ipairs({ { "shfl", "none" }, { "shfl", "stream" }, { "smem", "none" } }) do
      if v[1] == "shfl" or G > 1 then
        local c = {}
        for k, x in pairs(cfg) do c[k] = x end
        c.reduce, c.hint = v[1], v[2]
        push(list, P, c)
      end
    end
  end

  -- The space with vectors of vec elements.
  function A.list(P, vec)
    local list = {}
    local nv = P.cols // vec
    for _, G in ipairs(H.POW2) do   -- a group per row, up to a block, the row in its registers
      local items = (nv + G - 1) // G
      if G <= math.max(nv, 1) then
        for _, threads in ipairs({ 128, 256, 512, 1024 }) do
          if threads >= G and (G >= 32 or threads <= 512) and H.fits(threads, width(P) * items * vec) then
            for _, hint in ipairs({ "none", "stream" }) do
              reg(list, P, { threads = threads, items = items, vec = vec, reduce = "shfl", passes = 1, hold = "reg",
                             rows = threads // G, split = 1, xchg = "none", hint = hint })
            end
            if G > 1 then
              reg(list, P, { threads = threads, items = items, vec = vec, reduce = "smem", passes = 1, hold = "reg",
                             rows = threads // G, split = 1, xchg = "none", hint = "none" })
            end
          end
          if threads >= G and (G >= 32 or threads <= 512) then packed(list, P, G, items, vec, threads) end
        end
      end
    end
    -- the backward's split family (sm_90+, 16-bit, causal masks): rows whose y and dy take 32 KB
    -- or more, over a cluster of 2 or 4 blocks, each holding its share of the row's visible
    -- vectors as words. H100, bf16 1x1x32768x32768, full sweeps: causal split=2 1611 us against
    -- 1673 (split=1 packed), 4 1674, 8 1791 (the table: 1.675 -> 1.612 ms); key padding never
    -- ahead (1x32768 2102 against 2101, 1x16384 530 against 525), and where the fast sweep took
    -- split=2 the table ran slower (4x8192 0.367 -> 0.419 ms, 8192x1x32768 0.430 -> 0.454); the
    -- backward's hold=reg shares 890-4254 us (spilling at 64 values); the forward's shares (reg
    -- and packed, split 2-8) 1521-2078 against the two reads' 1200 (causal) and 1665 (padding)
    if width(P) == 2 and P.cluster >= 2 and P.mask:find("causal") and 2 * P.cols * P.es >= 32 * KB then
      for _, split in ipairs({ 2, 4 }) do
        local cv = (nv + split - 1) // split
        for _, threads in ipairs({ 128, 256, 512 }) do
          if split <= P.cluster and threads <= cv then packed(list, P, threads, (cv + threads - 1) // threads, vec, threads, split) end
        end
      end
    end
    if P.cols * P.es >= 8 * KB or #list == 0 then   -- two reads, a block a row
      for _, threads in ipairs({ 256, 512, 1024 }) do
        for _, items in ipairs(H.fits(threads, 8 * vec) and { 2, 4, 8 } or { 2, 4 }) do
          for _, reduce in ipairs({ "shfl", "smem" }) do
            for _, hint in ipairs({ "none", "stream", "keep" }) do
              push(list, P, { threads = threads, items = items, vec = vec, reduce = reduce, passes = 2, hold = "none",
                              rows = 1, split = 1, xchg = "none", hint = hint })
            end
          end
        end
      end
    end
    return list
  end
  A.full = A.enumerate   -- no wider grid yet

  -- The hold the packed rules take: packed words, or floats for a 16-bit bias tensor's forward,
  -- whose space has no packed twins. Pinned against a tune at 12 bias-tensor forwards (seed
  -- 20261306, H200, 2026-11-30, lab/shapes/attn-bias-fwd-20261306.txt): the plain rule's shapes as
  -- floats ran 0.99-1.00 of tuned at 5 of 6 prefill rows (the softmax fallback, 256 threads of 3-4:
  -- 0.76-0.94) and at the decode rows decode_fwd holds in 2 a thread.
  local function held(P) return P.bias == "tensor" and P.es == 2 and "reg" or "packed" end

  -- The space's configs the packed rules choose from (held(P)), in its order: reduce=shfl, no
  -- hint, no pair, blocks of max(128, G) threads for groups of G threads a row.
  local function packed(P, vec)
    local out = {}
    for _, c in ipairs(A.list(P, vec)) do
      if c.hold == held(P) and c.reduce == "shfl" and c.hint == "none" and (c.pair or "none") == "none" and
         c.threads == math.max(128, c.threads // c.rows) then out[#out + 1] = c end
    end
    return out
  end

  -- The space's unsplit packed config with the fewest threads a row from G0 that hold the row in
  -- `most` vectors a thread or fewer, the fewest vectors at that group; nil where it has none.
  local function fewest(P, vec, G0, most)
    local best, bg
    for _, c in ipairs(packed(P, vec)) do
      local G = c.threads // c.rows
      if c.split == 1 and c.items <= most and G >= G0 and (not best or G < bg or (G == bg and c.items < best.items)) then
        best, bg = c, G
      end
    end
    return best
  end

  -- The packed rule of either op: the space's hold=packed config (16-bit rows of 16-byte vectors)
  -- with 4 vectors a thread (8 from 1024 vectors a row) and threads = max(G, 128): the shape of
  -- the tuned winners of 2026-11-26 (H100, bf16 and f16, padding and causal 1024-8192; the
  -- backward's decode 1x32768 too); nil where the space has none.
  -- Rows of 1024 vectors or more where no group holds them in 8: the most vectors under 8 a
  -- thread (the backward's decode rows of 16K-28K keys, bf16 and f16, 8-512 rows, took 512
  -- threads of 5-7 vectors, tuned on the H100, 2026-11-27; 8 a thread is a group of 256 holding
  -- 96 words, over the cap). Shorter rows keep 4 a thread or the rule's next family.
  local function packed_rule(P, vec)
    local items, best = P.cols // vec >= 1024 and 8 or 4, nil
    for _, c in ipairs(packed(P, vec)) do
      if c.items == items then return c end
      if items == 8 and c.items < items and (not best or c.items > best.items) then best = c end
    end
    return best
  end

  -- The forward's packed rows of 129-1023 vectors where packed_rule finds no 4 a thread: the
  -- smallest group (32 threads and up) that covers the row in 8 vectors a thread or fewer, with
  -- the fewest at that group. The tuner's picks at bf16 1x16xKxK where those classes lack 4 a
  -- thread, K 1300, 2379, 2870, 4500, 5500 (H200, 2026-11-29, lab/shapes/attn-fwd-packed-widths.txt:
  -- 5 of 5, 5-6 a thread), where the fallback (the row in 256 threads' registers) ran 0.77-0.89
  -- of their speed; nil where the space has none.
  -- Narrow rows take it too (narrow_fwd), in groups of 8 threads or more.
  local function packed_fwd(P, vec)
    local V = P.cols // vec
    if V <= 16 or V >= 1024 then return nil end
    return fewest(P, vec, 8, 8)
  end

  -- The forward's narrow rows (17-128 vectors, 129-1024 16-bit keys): packed_rule's 4 a thread
  -- where they fill the row exactly (32, 64, 128 vectors), else packed_fwd's fewest threads from 8
  -- of at most 8 vectors. The tuner's pick at 8 of 10 rows of 16K-1M rows (H200, 2026-11-29,
  -- lab/shapes/attn-fwd-narrow-20261233.txt): 0.992 of tuned where the rule before (packed_rule's
  -- 4 with idle slots, else the rows as floats in groups of 16-32 threads of 3) ran 0.839.
  local function narrow_fwd(P, vec)
    local V = P.cols // vec
    if V > 128 then return nil end
    local r = packed_rule(P, vec)
    if r and r.items * (r.threads // r.rows) == V then return r end
    return packed_fwd(P, vec) or r
  end

  -- Decode rows' group: the fewest threads from G0 (default 128) that hold V vectors in 2 a thread
  -- (nil past 2048).
  local function decode_group(V, G0)
    local G = G0 or 128
    while G < 1024 and (V + G - 1) // G > 2 do G = 2 * G end
    return (V + G - 1) // G <= 2 and G or nil
  end

  -- The space's config of rows held as `hold` in groups of G threads, blocks of max(128, G),
  -- reduce=shfl, `hint`, no pair; nil where it has none.
  local function grouped(P, vec, hold, G, hint)
    for _, c in ipairs(A.list(P, vec)) do
      if c.hold == hold and c.threads // c.rows == G and c.threads == math.max(128, G) and c.reduce == "shfl" and
         c.hint == hint and (c.pair or "none") == "none" then return c end
    end
    return nil
  end

  -- A softcap's forward (P.capped, 16-bit) is MUFU-bound (a tanh a score, as cross-entropy's):
  -- the row held as floats (hold=reg keeps z, one tanh a score; the packed rules' words take it
  -- twice). Of V vectors a row: under 4096 rows (decoding; an untuned call under 160K threads, as
  -- decode_fwd's), a group of G = 128-1024 threads, the fewest that hold 2 vectors a thread,
  -- streamed (none past 2048 vectors: the plain rule); else
  -- groups of 32 (V <= 160), 128 (V <= 640) or
  -- 256 (V <= 1280) threads of at most 5 vectors, in blocks of 128 threads at least; longer rows
  -- read twice by 256 threads (reduce=smem). The tuner's picks at 11 of the 19 forward rows of
  -- lab/shapes/attn-softcap-rule-20261203.txt and attn-softcap-rule-check-20261204.txt (H200,
  -- 2026-11-29), its group and items at 7 more (another hint or block size), where the packed
  -- rules ran 0.54-0.87 of them; nil where the space has none (float32: not measured).
  local function capped_fwd(P, vec)
    local V = P.cols // vec
    if not P.capped or P.es ~= 2 or vec == 1 then return nil end
    if P.rows < 4096 then   -- longer decode rows: not measured, the plain rule
      local G = decode_group(V)
      return G and grouped(P, vec, "reg", G, "stream")
    end
    local G = V <= 160 and 32 or V <= 640 and 128 or V <= 1280 and 256 or nil
    if G then return grouped(P, vec, "reg", G, "none") end
    for _, c in ipairs(A.list(P, vec)) do
      if c.passes == 2 and c.threads == 256 and c.items == 2 and c.reduce == "smem" and c.hint == "none" then return c end
    end
    return nil
  end

  -- The forward's decode rows (under 4096 rows, 16-bit) of 2048 vectors or fewer: the fewest threads
  -- from 128 that hold the row in 2 vectors a thread or fewer, as packed words, in blocks of
  -- max(128, G), no hint. The tuner's picks there were groups of 256-1024 threads of 1-3 vectors
  -- (8 of 8 rows of lab/shapes/attn-decode-fwd-short-20261207.txt, 8-512 rows, H200, 2026-11-29),
  -- where packed_rule's 4 a thread ran 0.844 of them (geomean, worst 0.775) and this 0.923 (worst
  -- 0.873); nil where the space has none. An untuned call meets it only under 160K threads
  -- (rows x G): past that the kernel set's many-row band takes the row (runtime/kset.c many_rows).
  -- A bias tensor's rows as floats from groups of 32: 85-93 vectors took 64 threads of 2 (2 of 2
  -- tuned, seed 20261306), where the plain rule's 16 of 6 ran 0.73 of them.
  local function decode_fwd(P, vec)
    if P.rows >= 4096 or P.es ~= 2 or vec == 1 then return nil end
    local G = decode_group(P.cols // vec, held(P) == "reg" and 32 or 128)
    return G and grouped(P, vec, held(P), G, "none")
  end

  -- The forward's rule: capped_fwd's for a softcap; decode_fwd's for decode rows; narrow_fwd's up to 128 vectors; packed_rule's (else packed_fwd's) up to 2048 vectors a row (K 16384 in 16-bit; two reads won
  -- at 1x32768); longer 16-bit rows, 256 or more of them, two reads of 512 threads (the decode
  -- rows of 16K-25K keys, 256-512 rows, took two reads of 256 or 512 threads in 4 of 4 tuned:
  -- the registers of a 1024-thread row leave one block a SM; under 256 rows the tuner held the
  -- row in 1024 threads, runtime/kset.c many_rows); a softcap's rows of up to 4096 vectors, 4096
  -- or more of them (held in 1024 threads under that: 0.93-0.94 of a tune at 480-872 rows where
  -- two reads ran 0.85-0.91); else the row in registers up to 32 values a thread, else two reads,
  -- asked of the problem as softmax's (its rules check the configs it tries).
  function A.heuristic(P, unaligned)
    if width(P) == 2 then return A.heuristic_bw(P, unaligned) end
    local vec = unaligned and 1 or H.vecs(P)[1]
    local c = capped_fwd(P, vec) or decode_fwd(P, vec) or narrow_fwd(P, vec) or
              P.cols // vec <= 2048 and (packed_rule(P, vec) or packed_fwd(P, vec))
    if c then return c end
    if P.es == 2 and P.cols // vec > 2048 and P.rows >= (P.capped and P.cols // vec <= 4096 and 4096 or 256) then
      return { threads = 512, items = 2, vec = vec, reduce = "shfl", passes = 2, hold = "none", rows = 1, split = 1,
               xchg = "none", hint = "stream", mask = P.mask, bias = P.bias }
    end
    local Q = {}
    for k, v in pairs(P) do Q[k] = v end
    Q.op, Q.mask, Q.bias = "softmax", "none", "none"
    local cfg = H.heuristic(Q, unaligned)
    cfg.mask, cfg.bias = P.mask, P.bias
    return cfg
  end

  -- The backward's packed rows of 129-1024 vectors: a group of G threads a row by its vectors V
  -- (G 64 to 256 vectors, 128 to 768, else 256), each thread the fewest vectors that cover the row
  -- (3-6). The tuner's picks at bf16 1x16xKxK, K 1300-7800 (H200, 2026-11-29,
  -- lab/shapes/attn-bw-packed-rule.txt): packed_rule's 4 a thread is not in the space at 1300,
  -- 2379-2870, 4500 and 5500 keys, where its fallback (y and dy in registers) ran 1.9-2.3x the
  -- tuned time; nil where the space has no such config. A row in one block: at 1024 vectors
  -- (the class of 7681-8192 keys) the space also splits it, and the fewest a thread was then 1
  -- of a cluster of 4 (f16 8x32x1x8127 causal: 11.8 us where the tuner's 4 a thread ran 8.2, H200).
  local function packed_bw(P, vec)
    local V = P.cols // vec
    if V <= 128 or V > 1024 then return nil end
    local G, best = V <= 256 and 64 or V <= 768 and 128 or 256, nil
    for _, c in ipairs(packed(P, vec)) do
      if c.threads // c.rows == G and c.split == 1 and (not best or c.items < best.items) then best = c end
    end
    return best
  end

  -- The backward's packed rows of 65-128 vectors where packed_rule finds no 4 a thread (65-96:
  -- 520-768 keys in 16-bit): a group of 32 threads of 3. Pinned against a tune at 10 rows of
  -- 536-742 keys, half with a softcap (H200, 2026-11-29, lab/shapes/attn-bw-rule-20261215.txt), it
  -- ran 0.994-1.007 of tuned where the fallback (y and dy as floats in 64 threads of 2) ran
  -- 0.54-0.62; the tuner took 32 of 3, or 16 of 5 with reduce=smem at 536-630 keys.
  local function packed_short(P, vec)
    local V = P.cols // vec
    if V <= 64 or V > 128 then return nil end
    for _, c in ipairs(packed(P, vec)) do
      if c.threads // c.rows == 32 and c.items == (V + 31) // 32 then return c end
    end
    return nil
  end

  -- c with hint `hint`, where the space has that config; else c.
  local function hinted(P, vec, c, hint)
    for _, d in ipairs(A.list(P, vec)) do
      if d.hold == c.hold and d.threads == c.threads and d.items == c.items and d.rows == c.rows and
         d.split == c.split and d.reduce == c.reduce and d.hint == hint and (d.pair or "none") == (c.pair or "none") then
        return d
      end
    end
    return c
  end

  -- A softcap's backward on decode rows (16-bit, 129 vectors a row or more, under 4096 rows): packed
  -- words, streamed, in decode_fwd's group where it holds the row in 2 vectors a thread (2048 vectors
  -- or fewer; an untuned call meets it under 163840 / G rows, runtime/kset.c many_rows), else in
  -- 1024 threads (up to 3072 vectors), else packed_rule's config streamed. Seed 20261250 (H200,
  -- 2026-11-29, lab/shapes/attn-bw-softcap-decode-20261250.txt): under the band's end the group ran
  -- 6-23% faster than packed_rule's 4-8 a thread at 5 of 6 rows (4% slower at 144 rows of 15055
  -- keys), and level or slower past it; at 2049-3072 vectors 1024 threads of 3 ran 1.10-1.21x
  -- packed_rule's 512 of 5-6 at 480-2832 rows (seed 20261241's 512x21622 too; the tuner's pick at 4
  -- of 4); past 3072 the stream 0-5% (the tuner's hint at 4 of 5).
  local function capped_bw(P, vec)
    local V = P.cols // vec
    if not P.capped or P.es ~= 2 or vec == 1 or P.rows >= 4096 or V <= 128 then return nil end
    local G = decode_group(V)
    if G then return grouped(P, vec, "packed", G, "stream") end
    local c = grouped(P, vec, "packed", 1024, "stream")
    if c and c.items * 1024 >= V then return c end
    c = packed_rule(P, vec)
    return c and hinted(P, vec, c, "stream")
  end

  -- The backward's narrow rows (17-64 vectors: 129-512 16-bit keys): packed words in the fewest
  -- threads from 8 that hold the row in 4 vectors a thread or fewer (groups of 8 up to 32 vectors, 16 from 33),
  -- blocks of 128. The tuner's pick at 11 of 11 prefill rows of 16K-1M rows (seeds 20261251 and
  -- 20261252, H200, 2026-11-29, lab/shapes/attn-bw-narrow-20261252.txt), where packed_rule has no
  -- 4 a thread at 33-44 vectors and the fallback (y and dy as floats in groups of 32) ran
  -- 0.56-0.60 of it; the next group (twice the threads) 0.73-0.97.
  -- Rows of 4-16 vectors (32-135 keys): the fewest from 4 of 3 vectors or fewer (4 threads up
  -- to 12 vectors, 8 from 13). The tuner's pick at 10 of 10 prefill rows (seed 20261301, H200,
  -- 2026-11-30, lab/shapes/attn-bw-narrowest-20261301.txt), where packed_rule's 4 a thread in
  -- groups of 1-4 spilled 32-224 bytes at words + 40 (the tuner refuses them; packed_margin now
  -- gives these rows 48) and the fallback ran 0.65-0.78 of it.
  local function narrow_bw(P, vec)
    local V = P.cols // vec
    if V > 64 then return nil end
    if V <= 16 then return fewest(P, vec, 4, 3) end
    return fewest(P, vec, 8, 4)
  end

  -- The backward's rule: capped_bw's, else packed_bw's, else narrow_bw's, else packed_rule's, else packed_short's, else as the softmax backward's
  -- (space_bw.lua): y and dy of the row in a group's registers when they take 32 values a thread
  -- or fewer (threads = max(G, 256)), else two reads with one 512-thread block a row.
  function A.heuristic_bw(P, unaligned)
    local vec = unaligned and 1 or H.vecs(P)[1]
    local c = capped_bw(P, vec) or packed_bw(P, vec) or narrow_bw(P, vec) or packed_rule(P, vec) or packed_short(P, vec)
    if c then return c end
    for _, c in ipairs(A.list(P, vec)) do
      if c.hold == "reg" and c.hint == "none" and c.reduce == "shfl" and 2 * c.items * c.vec <= 32 and
         c.threads == math.max(256, c.threads // c.rows) then return c end
    end
    local cfg = { threads = 512, items = 4, vec = vec, reduce = "shfl", passes = 2, hold = "none", rows = 1, split = 1,
                  xchg = "none", hint = "none", mask = P.mask, bias = P.bias }
    return cfg
  end

  function A.launch(cfg, P)
    local l = H.launch(cfg, P)
    if cfg.pair == "mirror" then l.rows_per_block = 2 * cfg.rows end   -- a group's two rows: half the blocks
    return l
  end

  function A.vars(cfg, P)
    local v = H.vars(cfg, P)
    v.mask, v.bias, v.bias_type = P.mask, P.bias, P.bias_type
    if cfg then
      v.template = width(P) == 2 and "attn_bw.cu" or "attn.cu"
      -- a softcap's kernel is a source of its own (P.capped), as in cross-entropy (attn.cu says
      -- which row loops each kernel holds)
      v.capped = P.capped
      v.kernel = "st_" .. P.op .. (P.capped and "_cap" or "")
      v.pair = cfg.pair or "none"
      if v.pair == "mirror" then v.minb = mirror_minb(cfg, P) end
      if cfg.hold == "packed" then v.minb = packed_minb(cfg, P) end
      -- the forward's few held values (24 or fewer a thread) in 64 registers where the kernel
      -- holds one row loop (attn.cu): left to ptxas it took 67-78 where both loops took 46-64 (a
      -- block a SM fewer at 256 threads: bf16 2048x16x64x16 10% slower, H200)
      if width(P) == 1 and cfg.hold == "reg" and cfg.split == 1 and v.pair == "none" and not P.capped and
         P.bias == "none" and cfg.items * cfg.vec <= 24 then
        v.minb = H.blocks(P, cfg.threads, 64)
      end
      -- the forward's two reads (16-bit): blocks a SM for a step's ITEMS*VEC floats + 24 registers.
      -- Uncapped, ptxas took 40 registers (3 blocks of 512) at a239e9c's literal width and 58-60
      -- (2) with a class's (NVRTC 13.0, sm_90, bf16 decode 32768 and causal 4096, items=2); capped,
      -- 40 with no spill at 512 and at 256 threads (6 blocks; 48 and 5 uncapped), the others as before
      -- A bias tensor's at + 40: at + 24 they spilled 64 bytes (f16 512 threads of 2, 40 registers)
      if width(P) == 1 and cfg.passes == 2 and cfg.split == 1 and P.es == 2 then
        v.minb = H.blocks(P, cfg.threads, cfg.items * cfg.vec + (P.bias == "tensor" and 40 or 24))
      end
    end
    return v
  end

  return A
end
