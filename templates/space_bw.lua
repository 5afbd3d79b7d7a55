-- space_bw.lua — the tuning space of the backward ops: softmax_backward, dx = y * (dy - sum(dy * y)),
-- and log_softmax_backward, dx = dy - exp(y) * sum(dy), from the forward's output y and the
-- gradient dy (two inputs, one output: the floor is a kernel reading two tensors and writing a
-- third). gen.lua hands this chunk to space.lua, which calls it with its own rules and helpers
-- and sends a backward problem's check, enumerate, heuristic, launch and vars here. Same knobs
-- and config strings as the forward; the kernels are templates/backward.cu.
--
-- Families (a subset of the forward's knob values):
--   row    split=1 passes=1 hold=reg: a group of G = threads/rows threads per row holds its y and
--          dy vectors in registers (2*items*vec values per thread), one sum, then dx; hold=packed
--          (f16, bf16): as raw 16-bit words, two to a register, so twice the row fits
--   row    split=1 passes=2 hold=none: a block per row, a sum pass, then a pass that reads y and
--          dy again for the write (log_softmax_backward's sum pass reads dy only): long rows
--   split  split=2..16 xchg=dsmem (sm_90+): a cluster per row, each block a part, one float per
--          block exchanged through distributed shared memory; passes=1 hold=reg (or packed)
--          holds the part, passes=2 hold=none reads it again (rows too long for the cluster's registers)
--   ring   split=32..132 xchg=global passes=1 hold=ring (sm_90+): a persistent cooperative grid,
--          a block per SM or more per row; each block bulk-copies its part of y and of dy into a
--          ring of stages in shared memory, posts its sum to a workspace in global memory and
--          writes dx once the row's sums are in: long rows (y and dy 256 KB a row and more) that
--          a cluster cannot hold (256x1048576)

return function(H)   -- H: space.lua's forward rules (check, launch, vars) and helpers
  local B = {}
  local KB = H.KB

  -- nil if cfg is valid for backward problem P, else the reason.
  function B.check(cfg, P)
    local why = H.check(cfg, P)
    if why then return why end
    if cfg.hold ~= "reg" and cfg.hold ~= "packed" and cfg.hold ~= "none" and cfg.hold ~= "ring" then
      return "backward ops hold y and dy in registers (hold=reg or packed), in a ring of stages (hold=ring) or re-read them (hold=none)"
    end
    if cfg.xchg == "claim" then return "backward ops exchange through global memory with xchg=global, not claim" end
    if cfg.xchg == "global" and cfg.hold ~= "ring" then
      return "backward ops exchange through a cluster (xchg=dsmem), through global memory with hold=ring, or not at all"
    end
    if cfg.hint == "keep" and cfg.hold ~= "none" then return "backward ops take hint=keep only with passes=2 hold=none" end
    if cfg.hold == "reg" and 2 * cfg.items * cfg.vec > 64 then
      return string.format("hold=reg holds y and dy: %d values per thread (max 64)", 2 * cfg.items * cfg.vec)
    end
    if cfg.hold == "packed" and 2 * cfg.items * cfg.vec * P.es // 4 > 64 then
      return string.format("hold=packed holds y and dy: %d words per thread (max 64)", 2 * cfg.items * cfg.vec * P.es // 4)
    end
    return nil
  end

  local function push(list, P, cfg, hints)
    for _, hint in ipairs(hints) do
      local c = { reduce = "shfl", hint = hint, xchg = "none", split = 1, rows = 1 }
      for k, v in pairs(cfg) do c[k] = v end
      if B.check(c, P) == nil then list[#list + 1] = c end
    end
  end

  -- y and dy of a row (or of a block's part, split > 1) held in registers: threads sharing it
  -- hold 2 * items * vec values each, as floats (hold=reg) or, for 16-bit types, as the raw
  -- words (hold=packed: half the registers, so fewer threads a row or more rows in flight;
  -- where a thread holds 8 words and more).
  local function held(list, P, vec, split, hints)
    local nv = (P.cols // vec + split - 1) // split
    for _, G in ipairs(split == 1 and H.POW2 or { 64, 128, 256, 512, 1024 }) do
      local items = (nv + G - 1) // G
      for _, threads in ipairs(split == 1 and { 128, 256, 512, 1024 } or { G }) do
        -- a split part may leave a few threads of the block idle (G < 2 * nv)
        if (G <= nv or split > 1 and G < 2 * nv) and threads >= G and (G >= 32 or threads <= 512) then
          local words = 2 * items * vec * P.es // 4
          for _, hold in ipairs(P.es == 2 and words >= 8 and { "reg", "packed" } or { "reg" }) do
            if H.fits(threads, hold == "reg" and 2 * items * vec or words) then
              push(list, P, { threads = threads, items = items, vec = vec, passes = 1, hold = hold, rows = threads // G,
                              split = split, xchg = split > 1 and "dsmem" or "none" }, hints)
            end
          end
        end
      end
    end
  end

  -- A sum pass, then a pass reading y and dy again: a block per row, or a cluster; hint=keep
  -- marks the sum pass's lines evict-last so that the second pass finds them in L2.
  local function two_pass(list, P, vec, split)
    local nv = (P.cols // vec + split - 1) // split
    for _, threads in ipairs({ 256, 512, 1024 }) do
      for _, items in ipairs({ 2, 4, 8 }) do
        if nv >= threads * items then
          push(list, P, { threads = threads, items = items, vec = vec, passes = 2, hold = "none", split = split,
                          xchg = split > 1 and "dsmem" or "none" }, { "none", "stream", "keep" })
        end
      end
    end
  end

  -- The ring (H.check's rules: sm_90+, 16-byte vectors, stages that fit): a block's stage (its
  -- part of y and of dy) of 8 KB and more, a block on every SM or half of them where that is a
  -- knob value.
  local function ring(list, P, vec)
    local bytes, seen = 2 * P.cols * P.es, {}
    for _, split in ipairs({ 32, 64, 128, P.sms // 2, P.sms }) do
      if H.is_split(split) and bytes // split >= 8 * KB and not seen[split] then
        seen[split] = true
        for _, threads in ipairs({ 256, 512, 1024 }) do
          local items = (P.cols // vec + split - 1) // split
          push(list, P, { threads = threads, items = (items + threads - 1) // threads, vec = vec, passes = 1,
                          hold = "ring", split = split, xchg = "global" }, { "none", "stream" })
        end
      end
    end
  end

  function B.enumerate(P)
    local list, vs = {}, H.vecs(P)
    for i, vec in ipairs(vs) do
      if i <= 2 then held(list, P, vec, 1, i == 1 and { "none", "stream" } or { "none" }) end
    end
    local bytes = P.cols * P.es
    if bytes >= 8 * KB then two_pass(list, P, vs[1], 1) end
    if bytes >= 16 * KB then
      for _, split in ipairs({ 2, 4, 8, 16 }) do
        if split <= P.cluster then
          held(list, P, vs[1], split, { "none", "stream" })
          two_pass(list, P, vs[1], split)
        end
      end
    end
    if 2 * bytes >= 256 * KB then ring(list, P, vs[1]) end
    return list
  end

  -- Rows whose y and dy take 256 KB and more, aligned, on sm_90+: the ring with the most blocks a
  -- row whose stages are still 12 KB, 1024 threads from 24 KB (the H100's backward winners:
  -- 256x1048576 split 128-132, 2048x128256 split 32-66 with 512 threads).
  local function ring_rule(P, vec)
    local list, pick = {}, nil
    if 2 * P.cols * P.es < 256 * KB then return nil end
    ring(list, P, vec)
    for _, c in ipairs(list) do
      local stage = 2 * P.cols * P.es // c.split
      if c.hint == "none" and stage >= 12 * KB and c.threads == (stage >= 24 * KB and 1024 or 512) and
         (not pick or c.split > pick.split) then pick = c end
    end
    return pick
  end

  -- Without measuring: the held family's row in a group's registers when y and dy fit in 32
  -- values a thread (threads = max(G, 256)), else two passes with one 512-thread block per row.
  function B.heuristic(P, unaligned)
    local vec = unaligned and 1 or 16 // P.es
    while vec > P.lo do vec = vec // 2 end
    local r = not unaligned and ring_rule(P, vec)
    if r then return r end
    local list = {}
    held(list, P, vec, 1, { "none" })
    for _, c in ipairs(list) do
      if c.hold == "reg" and 2 * c.items * c.vec <= 32 and c.threads == math.max(256, c.threads // c.rows) then return c end
    end
    return { threads = 512, items = 4, vec = vec, reduce = "shfl", passes = 2, hold = "none", rows = 1, split = 1,
             xchg = "none", hint = "none" }
  end

  B.full = B.enumerate   -- no wider grid: --space full sweeps the space
  B.launch = H.launch    -- as the forward's (inputs = 2 comes from the op, in C)

  function B.vars(cfg, P)
    local v = H.vars(cfg, P)
    if cfg then
      v.template = "backward.cu"
      v.kernel = "st_softmax_backward"
    end
    return v
  end

  return B
end
