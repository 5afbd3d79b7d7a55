-- space_ce.lua — the tuning space of the cross-entropy ops (templates/ce.cu): cross_entropy (loss,
-- lse and the gradient of the logits: one read, one write) and cross_entropy_loss (loss and lse:
-- one read). gen.lua hands this chunk to space.lua, which calls it with its rules and helpers
-- and sends a cross-entropy problem's check, enumerate, heuristic, launch and vars here. Same
-- knobs and config strings as softmax.
--
-- Families (a subset of the forward's knob values):
--   row    split=1 passes=1 hold=reg (or packed, f16/bf16): a group of G = threads/rows threads
--          holds its row in registers: short and medium rows, one read
--   block  the same with G = threads: a block per row
--   split  split=2..16 xchg=dsmem (sm_90+): a cluster per row, each block holds its part and posts
--          (max, sum, sum of logits) to the others: LLM vocabularies (32000..256000), one read
--   two    passes=2 hold=none: statistics in one read, outputs in a second (split=1, or a cluster
--          of blocks each re-reading its part): the second read mostly from L2 where the rows in
--          flight fit there (H200, bf16 16384x32000: 0.835 of copy against 0.755 for the best
--          one-read config); rows no cluster holds, and every arch without clusters

return function(H)   -- H: space.lua's forward rules (check, launch, vars) and helpers
  local C = {}
  local KB = H.KB

  -- nil if cfg is valid for cross-entropy problem P, else the reason.
  function C.check(cfg, P)
    local why = H.check(cfg, P)
    if why then return why end
    if cfg.hold ~= "reg" and cfg.hold ~= "packed" and cfg.hold ~= "none" then
      return "cross-entropy ops hold the row in registers (hold=reg or packed) or read it twice (passes=2 hold=none)"
    end
    if cfg.split > 1 and cfg.xchg ~= "dsmem" then return "cross-entropy ops split a row over a cluster (xchg=dsmem) only" end
    if cfg.split > 16 then return "cross-entropy clusters hold at most 16 blocks" end
    if cfg.hint == "keep" and cfg.passes ~= 2 then return "cross-entropy ops take hint=keep with passes=2 only" end
    return nil
  end

  local function push(list, P, cfg)
    if C.check(cfg, P) == nil then list[#list + 1] = cfg end
  end

  -- configs of a row or a block's part held in registers: floats, and words for 16-bit types
  local function held(list, P, threads, nv, rows, split, vec)
    local per = split > 1 and threads or threads // rows
    local items = (nv + per - 1) // per
    for _, hold in ipairs(P.es == 2 and vec * P.es >= 4 and { "reg", "packed" } or { "reg" }) do
      local values = hold == "packed" and items * vec // 2 or items * vec
      if H.fits(threads, values) then
        for _, hint in ipairs({ "none", "stream" }) do
          push(list, P, { threads = threads, items = items, vec = vec, reduce = "shfl", passes = 1, hold = hold,
                          rows = rows, split = split, xchg = split > 1 and "dsmem" or "none", hint = hint })
        end
      end
    end
  end

  function C.enumerate(P)
    local list = {}
    local vs = H.vecs(P)
    local vec = vs[1]
    local nv = P.cols // vec
    for _, G in ipairs(H.POW2) do   -- a group per row, up to a block
      if G <= math.max(nv, 1) * 2 then
        for _, threads in ipairs({ 128, 256, 512, 1024 }) do
          if threads >= G and (G >= 32 or threads <= 512) then held(list, P, threads, nv, threads // G, 1, vec) end
        end
      end
    end
    for _, split in ipairs({ 2, 4, 8, 16 }) do   -- a cluster per row
      if split <= P.cluster and P.cols * P.es >= 16 * KB then
        local cv = (nv + split - 1) // split
        for _, threads in ipairs({ 128, 256, 512, 1024 }) do   -- 128: more rows in flight a SM
          if threads <= cv then held(list, P, threads, cv, 1, split, vec) end
        end
      end
    end
    -- two reads: a block a row, or a cluster a row (a block re-reads only its part, so the rows in
    -- flight between the passes stay in L2 where a block's whole long row would not); pass 1's
    -- loads kept in L2 (hint=keep) or not
    if P.cols * P.es >= 8 * KB or #list == 0 then
      for _, split in ipairs({ 1, 2, 4, 8, 16 }) do
        if split == 1 or (split <= P.cluster and P.cols * P.es // split >= 16 * KB) then
          for _, threads in ipairs({ 256, 512, 1024 }) do
            for _, items in ipairs({ 2, 4 }) do
              for _, hint in ipairs({ "stream", "keep" }) do
                push(list, P, { threads = threads, items = items, vec = vec, reduce = "shfl", passes = 2, hold = "none",
                                rows = 1, split = split, xchg = split > 1 and "dsmem" or "none", hint = hint })
              end
            end
          end
        end
      end
    end
    return list
  end

  function C.full(P)
    return C.enumerate(P)
  end

  -- Without measuring: the row in a group's registers where it fits in 32 values a thread, a
  -- cluster's where one holds it, else two reads with a 512-thread block a row.
  function C.heuristic(P, unaligned)
    local vec = unaligned and 1 or 16 // P.es
    while vec > P.lo do vec = vec // 2 end
    local nv = P.cols // vec
    for _, G in ipairs(H.POW2) do
      local items = (nv + G - 1) // G
      if G <= math.max(nv, 1) and items * vec <= 32 then
        local threads = math.max(G, 256)
        local cfg = { threads = threads, items = items, vec = vec, reduce = "shfl", passes = 1, hold = "reg",
                      rows = threads // G, split = 1, xchg = "none", hint = "none" }
        if C.check(cfg, P) == nil then return cfg end
      end
    end
    for _, split in ipairs({ 2, 4, 8, 16 }) do
      local items = ((nv + split - 1) // split + 1023) // 1024
      local cfg = { threads = 1024, items = items, vec = vec, reduce = "shfl", passes = 1, hold = "reg", rows = 1,
                    split = split, xchg = "dsmem", hint = "none" }
      if items * vec <= 32 and C.check(cfg, P) == nil then return cfg end
    end
    return { threads = 512, items = 4, vec = vec, reduce = "shfl", passes = 2, hold = "none", rows = 1, split = 1,
             xchg = "none", hint = "none" }
  end

  function C.launch(cfg, P)
    local l = H.launch(cfg, P)
    l.smem = 0
    return l
  end

  function C.vars(cfg, P)
    local v = H.vars(cfg, P)
    if cfg then
      v.template = "ce.cu"
      -- a softcap is a source of its own (P.capped), as a bias tensor's type is attention's
      v.capped = P.capped
      v.kernel = P.capped and "st_cross_entropy_cap" or "st_cross_entropy"
      -- float rows held in registers: capped as softmax caps words, at the blocks a SM that the
      -- held values + 24 registers allow (space.lua's vars set the cap of packed rows); the
      -- gradient's rows in one block (split=1) at values + 40, 64 at least: at + 24 every config
      -- of 8-12 classes spilled (NVRTC 13.0 sm_90; the tuner, which refuses local memory, had no
      -- winner there) and 28-44 classes spilled 8-80 bytes
      local values = cfg.items * cfg.vec
      local held = P.op == "cross_entropy" and cfg.split == 1
      if cfg.hold == "reg" and P.es == 4 then
        v.minb = H.blocks(P, cfg.threads, held and math.max(values + 40, 64) or values + 24)
      end
      -- the softcap gradient's register cap (ce.cu), 16-bit only: rows held as floats keep r, at
      -- the held values + 32 registers (72 at least in one block: under that rows of 2-100
      -- classes spilled 16-72 bytes); two reads of steps of 16 elements or fewer at 64
      local regs = P.capped and P.es == 2 and P.op == "cross_entropy" and
        (cfg.hold == "reg" and (held and math.max(values + 32, 72) or values + 32) or cfg.hold == "none" and values <= 16 and 64)
      v.capminb = regs and H.blocks(P, cfg.threads, regs) or 1
    end
    return v
  end

  return C
end
