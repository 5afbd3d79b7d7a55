-- untuned.lua — the kernel of a shape nobody tuned: the nearest tuned problems (the user's cache
-- and the default table of the GPU's arch, templates/defaults/sm_XX.tsv), each adapted to the new
-- row length and checked by the space's rules, else space.lua's heuristic. Not hashed into the
-- cache key (it changes no kernel, only which one an untuned shape gets). docs/untuned.md.
--
-- Called by gen.c with gen.lua's entry points E (canon: parse and check; heuristic) and returns
-- choose(P, unaligned, table_text, hash, user) -> config, source, note.

local E = ...

local ORDER = { "threads", "items", "vec", "reduce", "passes", "hold", "rows", "split", "xchg", "hint" }
local ESIZE = { f32 = 4, f16 = 2, bf16 = 2 }
local W_ROWS = 0.35     -- a 2x step in rows counts a third of one in cols (leave-one-out, docs)
local WIDE = 256         -- rows of 256 bytes and more take 16-byte vectors
local USER_BONUS = 1.0  -- a user's entry wins over a table entry up to one 2x step nearer
local FILL = 8           -- split family: blocks a SM that keep every SM busy, waves over
local CE_OCTAVES = 2     -- cross-entropy: entries at most 2 octaves of row length away

local function log2(x) return math.log(x, 2) end
local function ceil(a, b) return (a + b - 1) // b end

local function parse(str)
  local c = {}
  for k, v in str:gmatch("([%w_]+)=([%w_]+)") do c[k] = math.tointeger(tonumber(v)) or v end
  return c
end

local function format(c)
  local t = {}
  for i, k in ipairs(ORDER) do t[i] = k .. "=" .. tostring(c[k]) end
  return table.concat(t, ",")
end

local function copy(c, changes)
  local d = {}
  for k, v in pairs(c) do d[k] = v end
  for k, v in pairs(changes or {}) do d[k] = v end
  return d
end

-- The table's text: "# key<TAB>value" lines, a column header, then one problem a line.
local function parse_table(text)
  local t = { meta = {}, entries = {} }
  local n, header = 0, false
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    local k, v = line:match("^#%s*(%w+)\t(.*)$")
    if k then
      t.meta[k] = v
    elseif line:match("^dtype\t") then
      header = true
    elseif line ~= "" and not line:match("^#") then
      local dt, op, r, c, frac, cfg = line:match("^(%w+)\t([%w_]+)\t(%d+)\t(%d+)\t([%d.]+)\t(%S+)$")
      if not dt or not ESIZE[dt] or not header then error(string.format("default table line %d: '%s' is not dtype, op, rows, cols, frac, config", n, line), 0) end
      t.entries[#t.entries + 1] = { dtype = dt, op = op, rows = math.tointeger(tonumber(r)), cols = math.tointeger(tonumber(c)),
                                    frac = tonumber(frac), config = cfg }
    end
  end
  return t
end

-- How far entry e is from P: log2 steps in cols, half-weighted in rows; other dtype (same size)
-- or op a hair further; the user's own entries nearer by USER_BONUS.
local function distance(P, e)
  local d = math.abs(log2(P.cols) - log2(e.cols)) + W_ROWS * math.abs(log2(P.rows) - log2(e.rows))
  if e.dtype ~= P.dtype then d = d + 0.01 end
  if e.op ~= P.op then d = d + 0.01 end
  return d - (e.user and USER_BONUS or 0)
end

-- A config of entry e's family for P's shape: 16-byte vectors for rows of WIDE bytes (both P's and
-- e's), within the row, 1 when unaligned; the row family keeping its values per thread (rows per
-- block change); the split family keeping threads and as many blocks as e had (split scaled by
-- e.rows / P.rows), items changed to hold the block's part.
local function pow2(x)
  local p = 1
  while p * 2 <= x * 1.4142 do p = p * 2 end   -- the nearest power of two (geometrically)
  return p
end

-- The row family's threads a row: G, or fewer (each with up to `most` vectors of `vec` values,
-- 32 values at most) where they leave fewer of their slots idle, by 5 points at least: a row of
-- 99 f32 takes 8 threads of 3 vectors (24 of 24 slots), not 32 of 1 (24 of 32), as the tuner
-- finds for such odd lengths.
local function fewer_threads(nv, G, most, vec)
  local function used(g) return nv / (g * ceil(nv, g)) end
  local best, g = G, G // 2
  while g >= 1 and ceil(nv, g) <= most and ceil(nv, g) * vec <= 32 do
    if used(g) > used(best) + 0.05 then best = g end
    g = g // 2
  end
  return best
end

local function adapt(c0, P, unaligned, e, grow)
  local c = copy(c0)
  local es = ESIZE[P.dtype]
  if P.cols * es >= WIDE and e.cols * es >= WIDE then c.vec = 16 // es end
  c.vec = math.min(c.vec, unaligned and 1 or 16 // es)
  if c.split > 1 and c.split & (c.split - 1) == 0 then
    -- as many blocks in flight as the entry had: fewer rows, more blocks per row
    local max = c.xchg == "dsmem" and 16 or 128
    local s = math.max(2, pow2(c.split * e.rows / P.rows))
    -- but raised only until the grid holds FILL blocks a SM: the entry's many rows gave it waves of
    -- blocks a shorter problem need not copy (f32 584x4194 from 4096x4096 split=2: split=16 with
    -- one vector a thread, 0.47 of tuned; split=2 as tuned)
    local sms = P.sms or 132
    if s > c.split then s = math.min(s, math.max(c.split, pow2(FILL * sms / P.rows))) end
    if s * P.rows < (P.sms or 132) then
      -- a grid short of the GPU: blocks no longer than the entry's (bf16 7x12931 from 4x16384
      -- split=8: split=4 0.74 of copy, split=8 0.82 on an H200)
      s = math.max(s, pow2(c.split * P.cols / e.cols))
    end
    c.split = math.min(max, s)
  end
  if es == 4 and c.vec == 1 and not unaligned and P.cols * es < WIDE and P.lo >= 4 and not P.op:find("_backward$") then
    -- narrow float32 rows: 8-byte vectors where the entry (tuned at 256 or 4096 rows, launch-bound)
    -- had 4-byte ones (H100, bench/shapes/narrow-20261127.txt: the tuner took vec=2 at 6, 7 and 14
    -- columns of 5521-192307 rows, where vec=1 ran 0.75-0.92 of it)
    c.vec = 2
  end
  while c.vec > P.lo do c.vec = c.vec // 2 end
  if c.split == 1 and P.cols < 4 * c.vec and P.cols % c.vec ~= 0 and c.vec >= 4 and P.cols % (c.vec // 2) == 0 then
    -- a row of a few vectors that do not tile it: half-width vectors that do, so no row starts
    -- or ends in a partial vector (bf16 16x6 from a vec=4 entry: 0.96 of torch, vec=2 tuned 0.99)
    c.vec = c.vec // 2
  end
  -- 16-bit rows under 32 bytes that end inside a vector (most rows start unaligned): a thread
  -- holds few values, and a forward 4-byte vectors (H100, lab/odd_rows.sh: f16 684634x13 one
  -- thread of 3x4 values 0.52 of tuned, two of 3x2 as tuned; bf16 1000000x7 and 800000x5 vec=2,
  -- 1.5x vec=4; the backward's best keeps vec=4 with two vectors a thread: 0.78, three 0.55)
  local short = c.split == 1 and es == 2 and P.cols * es < 32 and P.cols % c.vec ~= 0
  local backward = P.op:find("_backward$") ~= nil
  if short and not backward then c.vec = math.min(c.vec, 2) end
  local nv = math.max(P.cols // c.vec, 1)
  if c.split == 1 and (c.hold == "reg" or c.hold == "packed") then
    local per = math.max(1, c0.items * c0.vec // c.vec)
    local G = 1
    while ceil(nv, G) > per and G < 1024 do G = G * 2 end
    if grow and G > c0.threads // c0.rows and ceil(nv, G // 2) <= per * 3 // 2 then
      -- a row a little past the entry's: its group, each thread up to 1.5x its vectors (fit()
      -- tries this first for cross-entropy: bf16 65536x1400 loss-only from the 1024 entry, 64
      -- threads of 3 ran 0.633 of tuned, 32 of 6 0.886; 26 rows, lab/shapes/ce-adapt-grow-20261330.txt)
      G = G // 2
    end
    local G0 = G
    if short then   -- the fewest threads whose values stay under the cap
      local cap = backward and 8 or 6
      G = 1
      while ceil(nv, G) * c.vec > cap and G < 32 do G = G * 2 end
      G0 = math.max(G0, G)
    else
      G = fewer_threads(nv, G, math.max(4, 2 * per), c.vec)
    end
    c.threads = math.max(c.threads, G)
    if G < G0 then
      -- more rows a block now: fewer of them, but not under two a SM where the rows allow
      local R = c.threads // G
      while R > 1 and ceil(P.rows, R) < 2 * (P.sms or 132) do R = R // 2 end
      c.threads = math.max(32, G * R)
    end
    c.rows, c.items = c.threads // G, ceil(nv, G)
  elseif c.split > 1 and (c.hold == "reg" or c.hold == "packed" or c.hold == "pipe" or c.hold == "ring") then
    c.items = ceil(ceil(nv, c.split), c.threads)
  end
  if c.hold == "reg" and c.xchg == "global" and es == 2 and P.op == "log_softmax" and e.op ~= P.op then
    -- a 16-bit log_softmax keeps its values and their exps live: held as floats it takes more
    -- registers than the softmax entry did (73 against 51 at 512 threads), so half the blocks
    -- a SM, and the cooperative grid needs two rounds where the entry's took one. Held as words
    -- it takes 64 (16x241878 bf16, H100: 0.835 -> 1.037 of copy)
    c.hold = "packed"
  end
  if P.op == "cross_entropy_loss" and es == 2 and P.cols > 32768 and P.rows >= 1024 and c.passes == 1 and c.split > 1
     and c.hint == "none" then
    -- a 16-bit loss-only row of 64 KB or more held over a cluster: its one read streamed. The H100's
    -- table took stream at 512 rows of 65536 classes, none at 8192 (its entry here); pinned on an
    -- H200 (2026-11-29, lab/shapes/ce-loss-many-rows-pinned-20261240.txt), stream ran 2-12% faster
    -- at 1079-5611 rows of 36669-63864 classes and within 1% at 8192-11994 rows. The set's many-row
    -- band (1024 rows up, runtime/kset.c) serves all of them with one kernel.
    c.hint = "stream"
  end
  if c.hint == "stream" and (P.lo ~= P.hi or P.cols * es % 32 ~= 0) and P.cols * es < 4096 then
    -- short rows that end inside a 32-byte sector: two rows write each such sector, and an
    -- evict-first store (.cs) can send it out half written, to be read back (f32 246102x99
    -- log_softmax, 97 MB, H200: 0.92 of copy with hint=stream, 1.00 with none; in problems that
    -- fit the L2 the twins were within 1%, and the tuner took none in 7 of 8 such); a width class
    -- of several widths has such rows
    c.hint = "none"
  end
  return c
end

-- adapt()'s config, then repairs for what the new row length breaks, in order.
local function variants(c, P)
  local t = { c, copy(c, { reduce = "shfl" }) }
  local function add(x) t[#t + 1] = x end
  if c.split > 1 then
    local nv = math.max(P.cols // c.vec, 1)
    local maxsplit = c.xchg == "dsmem" and 16 or 128
    local function try(hold, s, threads)
      if threads > 1024 then return end
      local items = (hold == "reg" or hold == "packed" or hold == "pipe" or hold == "ring") and ceil(ceil(nv, s), threads)
        or c.items   -- the block's part, at this split (bf16 391x207912: packed at split=16 held 13, not split=8's 26)
      add(copy(c, { hold = hold, split = s, threads = threads, items = items }))
    end
    local splits, s = {}, c.split
    while s <= maxsplit do
      splits[#splits + 1] = s
      s = (s & (s - 1)) == 0 and s * 2 or maxsplit + 1
    end
    -- a global exchange's part too long for a block under 256 threads: twice the threads before
    -- twice the split (twice the blocks, each waiting on twice the pairs). H100, from the H200
    -- table: f32 18x322762 (entry of 128) split=64 0.89 of tuned, split=32 at 256 0.95; bf16
    -- 25x691036 0.79 -> 0.87. Not from 256 (f16 30x1302937 at 512: 0.81 -> 0.69) nor for
    -- clusters (bf16 518x68005 split=8 at 256: 0.82, split=4 at 512: 0.61)
    local wide = c.xchg == "global" and c.threads < 256
    for _, hold in ipairs({ c.hold, c.hold == "ring" and "ring" or "reg" }) do
      for _, sp in ipairs(splits) do
        try(hold, sp, c.threads)
        if wide then try(hold, sp, 2 * c.threads) end
      end
      for _, m in ipairs(wide and { 4 } or { 2, 4 }) do
        for _, sp in ipairs(splits) do try(hold, sp, m * c.threads) end
      end
    end
  elseif c.hold == "reg" and ESIZE[P.dtype] == 2 and c.vec >= 2 then
    add(copy(c, { hold = "packed" }))
  end
  return t
end

-- The first valid variant of entry e for P, canonical, or nil.
local function fit(e, P, unaligned)
  local c0 = parse(e.config)
  for _, k in ipairs(ORDER) do
    if c0[k] == nil then return nil end   -- not a config of these knobs: of no use
  end
  for _, grow in ipairs(P.op:find("^cross_entropy") and { true, false } or { false }) do
    for _, c in ipairs(variants(adapt(c0, P, unaligned, e, grow), P)) do
      local ok, str = pcall(E.canon, P, format(c))
      if ok then return str end
    end
  end
  return nil
end

-- Since a held float row keeps r (ce.cu, 2026-11-28), the 16-bit gradient's rows that a
-- cluster of up to 16 blocks of 128 threads holds as floats (8 vectors of 8 a thread at most)
-- are held: the tuner's picks at bf16 4096x128256 and f16 8192x50257 are these configs (912.8
-- and 738.6 us, H200), two reads ran 1195 us at the former.
local function held_capped(P)
  if ESIZE[P.dtype] ~= 2 or P.op ~= "cross_entropy" then return nil end
  local split = 1
  while split < 16 and P.cols > split * 8192 do split = split * 2 end
  for items = (P.cols + split * 1024 - 1) // (split * 1024), 8 do
    local c = { threads = 128, items = items, vec = 8, reduce = "shfl", passes = 1, hold = "reg", rows = 1, split = split,
                xchg = split > 1 and "dsmem" or "none", hint = "none" }
    local ok, str = pcall(E.canon, P, format(c))
    if ok then return str end
  end
  return nil
end

-- A softcap's cross-entropy kernel (P.capped) is compute-bound (a tanh an element): where the
-- table (tuned without a softcap) holds the row (passes=1), two reads with a block's many threads
-- a row, the row streamed twice at full occupancy: float32 1024 threads of 4 vectors, 16-bit 512
-- of 2, the row split over a cluster into parts of at most 64K elements. On the 8 rows of
-- bench/shapes/untuned-ce-softcap.txt (H200, 2026-11-28) the held rows ran 0.61-1.0 of tuned,
-- these 0.85-1.05; the table's own two-read configs (loss-only) 1.08-1.16, so they stay. Rows of
-- over 16K classes (the measured ones had 32000 and more); nil for narrower ones or where the
-- space refuses it. held_capped's config first, where it gives one.
local function capped_rule(P, unaligned)
  local es = ESIZE[P.dtype]
  if P.cols <= 16384 then return nil end
  local held = not unaligned and held_capped(P)
  if held then return held end
  local split = 1
  while es == 2 and P.cols > split * 65536 and split < 4 do split = split * 2 end
  local c = { threads = es == 4 and 1024 or 512, items = es == 4 and 4 or 2, vec = unaligned and 1 or 16 // es,
              reduce = "shfl", passes = 2, hold = "none", rows = 1, split = split, xchg = split > 1 and "dsmem" or "none",
              hint = "stream" }
  if es == 4 and P.op == "cross_entropy" and P.cols <= 65536 and P.rows >= 64 and not unaligned then
    -- float32 rows of up to 64K classes: 256 threads of 2 vectors over 2 blocks, kept in L2 for
    -- the second read (the tuner's pick at 8192x32768). Pinned on an H200 (2026-11-29, 1849-11414
    -- rows, lab/shapes/ce-f32-softcap-*-20261242.txt): 1.18-1.19x the 1024 threads' speed at
    -- 32768 classes, 1.05-1.06x at 50257 (within 2.5% of the tuner's held rows there); past 65536
    -- the 1024 threads were the tuner's pick (100352, 131072)
    c.threads, c.items, c.split, c.xchg, c.hint = 256, 2, 2, "dsmem", "keep"
  end
  local ok, str = pcall(E.canon, P, format(c))
  return ok and str or nil
end

-- A softcap's loss-only kernel (cross_entropy_loss, P.capped: r by the polynomial, MUFU-bound):
-- two reads by 256 threads of 4 vectors, streamed, the row split over 2 blocks past 32768
-- classes (the tuner's pick at bf16 2500x32000 was this unsplit). Pinned beside the rule before
-- on 10 problems of 335-15951 rows and 32000-262144 classes (H200, 2026-11-29,
-- lab/shapes/ce-loss-softcap-cands.txt): split 2 ran 1.009 of a tune (worst 0.862, at 32000
-- classes), split 4 0.904, 512 threads 0.888, the rule before (capped_rule, or the table's entry
-- adapted) 0.876 (worst 0.764: f32 335x200064, the table's split 16). Rows of over 16K classes, 64
-- rows or more (the few-row band was not measured); nil where unaligned or the space refuses it.
local function capped_loss(P, unaligned)
  if P.op ~= "cross_entropy_loss" or not P.capped or P.cols <= 16384 or P.rows < 64 or unaligned then return nil end
  local split = P.cols > 32768 and 2 or 1
  local c = { threads = 256, items = 4, vec = 16 // ESIZE[P.dtype], reduce = "shfl", passes = 2, hold = "none", rows = 1,
              split = split, xchg = split > 1 and "dsmem" or "none", hint = "stream" }
  local ok, str = pcall(E.canon, P, format(c))
  return ok and str or nil
end

local function describe(e)
  return string.format("%dx%d %s %s", e.rows, e.cols, e.dtype, e.op)
end

local parsed_text, parsed   -- the last table parsed: a process asks with the same text every time

-- P's config and where it came from; note says what the caller should know (a stale table).
return function(P, unaligned, table_text, name, hash, user)
  local cands, note = {}, ""
  if table_text then
    if table_text ~= parsed_text then parsed_text, parsed = table_text, parse_table(table_text) end
    local t = parsed
    if t.meta.templates ~= hash then
      note = string.format("default table %s was made for templates %.12s, these are %.12s: stale, its configs are each checked before use (regenerate: softmax-tune pretune)",
                           name, tostring(t.meta.templates), hash)
    end
    for _, e in ipairs(t.entries) do
      if ESIZE[e.dtype] == ESIZE[P.dtype] then e.from = "default table " .. name; cands[#cands + 1] = e end
    end
  end
  for _, e in ipairs(user or {}) do
    if ESIZE[e.dtype] == ESIZE[P.dtype] then e.user, e.from = true, "your cache"; cands[#cands + 1] = e end
  end
  for _, e in ipairs(cands) do e.d = distance(P, e) end
  -- softmax, backward and cross-entropy kernels are different templates: an entry serves its
  -- own kind only (cross_entropy and cross_entropy_loss share ce.cu and its space)
  local function kind(op)
    return op:find("^attention") and op or op:find("^cross_entropy") and "ce" or op:find("_backward$") and "backward"
           or "forward"
  end
  -- cross-entropy entries serve rows within CE_OCTAVES of theirs: its grid starts at 1024 classes,
  -- and a vocabulary's cluster config says nothing of a row of 10 classes (the rule's then)
  local function far(e) return kind(P.op) == "ce" and math.abs(log2(P.cols) - log2(e.cols)) > CE_OCTAVES end
  for i = #cands, 1, -1 do
    if kind(cands[i].op) ~= kind(P.op) or far(cands[i]) then table.remove(cands, i) end
  end
  table.sort(cands, function(a, b)
    if a.d ~= b.d then return a.d < b.d end
    return describe(a) < describe(b)
  end)
  -- a softcap's loss-only kernel: capped_loss's; a softcap's cross-entropy kernel where the
  -- choice would hold the row: capped_rule's
  local function uncapped(cfg, source)
    local l = capped_loss(P, unaligned)
    if l then return l, "rule (a softcap's loss-only kernel: two reads of 256 threads, not " .. source .. ")", note end
    local c = P.capped and kind(P.op) == "ce" and cfg:find("passes=1", 1, true) and capped_rule(P, unaligned)
    local how = c and (c:find("passes=2", 1, true) and "two reads" or "r held as floats")
    if c then return c, "rule (a softcap's cross-entropy: " .. how .. ", not " .. source .. "'s held row)", note end
    return cfg, source, note
  end
  if P.op:find("^attention") then   -- its kinds' entries are not adapted yet: the rule
    return E.heuristic(P, unaligned), "rule (" .. P.op .. ": tuned entries of other shapes are not adapted yet)", note
  end
  for _, e in ipairs(cands) do
    local cfg = fit(e, P, unaligned)
    if cfg then return uncapped(cfg, string.format("%s entry %s (%s), adapted", e.from, describe(e), e.config)) end
  end
  local none = "rule (no tuned entry of this element size and kind of op" ..
               (kind(P.op) == "ce" and string.format(" within %d octaves of this row)", CE_OCTAVES) or ")")
  return uncapped(E.heuristic(P, unaligned), #cands > 0 and "rule (no nearby tuned entry fits)" or none)
end
