-- gen.lua — the generator's Lua side: a small template engine and the entry points the C
-- code calls (space, canon, render, aux).
--
-- A template is CUDA text. A line whose first non-blank character is '%' is Lua; $(expr) in
-- any other line is replaced by the value of expr. Each template line becomes exactly one
-- line of the Lua chunk it compiles to, so an error reports the template's file and line.
--
-- The C side calls this chunk with one argument, a function source(name) that returns the
-- text of templates/<name> and its chunk name; the chunk returns the table of entry points.

local source = ...

local function quote(s)
  return '"' .. s:gsub('[\\"]', '\\%0'):gsub('\r', '\\r') .. '"'
end

-- Translate template text into Lua source, one output line per input line.
local function translate(text)
  local out, pos = {}, 1
  while pos <= #text do
    local nl = text:find("\n", pos, true) or #text + 1
    local line = text:sub(pos, nl - 1)
    pos = nl + 1
    local code = line:match("^%s*%%(.*)$")
    if code then
      out[#out + 1] = code
    else
      local parts, at = {}, 1
      while true do
        local s, e = line:find("%$%b()", at)
        if not s then break end
        if s > at then parts[#parts + 1] = quote(line:sub(at, s - 1)) end
        parts[#parts + 1] = "_str(" .. line:sub(s + 2, e - 1) .. ")"
        at = e + 1
      end
      parts[#parts + 1] = quote(line:sub(at)) .. '.."\\n"'
      out[#out + 1] = "_put(" .. table.concat(parts, ",") .. ")"
    end
  end
  return table.concat(out, "\n")
end

local compiled = {}   -- name -> Lua function taking the template's environment

local function compile(name)
  local fn = compiled[name]
  if fn then return fn end
  local text, chunkname = source(name)
  -- the environment comes per render as the chunk's argument; the prefix keeps line numbers
  local f, err = load("local _ENV = ...; " .. translate(text), chunkname, "t")
  if not f then error(err, 0) end
  compiled[name] = f
  return f
end

-- Names every template may use besides the problem and the config.
local SAFE = {
  math = math, string = string, table = table, ipairs = ipairs, pairs = pairs,
  tostring = tostring, tonumber = tonumber, type = type, select = select,
  error = error, assert = assert,
}

local function tostr(v)
  local t = type(v)
  if t == "string" then return v end
  if math.type(v) == "integer" then return string.format("%d", v) end
  if t == "number" then return string.format("%.9g", v) end
  if t == "boolean" then return v and "true" or "false" end
  error("template expression gave " .. t, 2)
end

-- Render template `name` with variables `vars`; returns the text.
local function render(name, vars)
  local buf = {}
  local env = {}
  env._put = function(...) for i = 1, select("#", ...) do buf[#buf + 1] = select(i, ...) end end
  env._str = tostr
  env.include = function(other) compile(other)(env) end
  setmetatable(env, { __index = function(_, k)
    local v = vars[k]
    if v == nil then v = SAFE[k] end
    if v == nil then error("template uses unknown name '" .. tostring(k) .. "'", 2) end
    return v
  end })
  compile(name)(env)
  return table.concat(buf)
end

-- The space is plain Lua, not a template: it returns its module table. space_bw.lua (the
-- backward ops' space) returns a function space.lua calls with its rules.
local function module(name, ...)
  local text, chunkname = source(name)
  local f, err = load(text, chunkname, "t", setmetatable({}, { __index = SAFE }))
  if not f then error(err, 0) end
  return f(...)
end
-- (a templates folder without it, as an older one: space.lua runs without backward ops)
local function optional(name) return pcall(source, name) and module(name) or nil end
local S = module("space.lua", optional("space_bw.lua"), optional("space_ce.lua"), optional("space_attn.lua"))

local E = {}

-- Every config string of the space of problem P, in order; with P.full, then the rest of the
-- full grid, so one sweep measures both.
function E.space(P)
  P = S.problem(P)
  if P.only then return { E.canon(P, P.only) } end   -- one config, checked (softmax-tune --config)
  local list, seen = {}, {}
  for _, cfgs in ipairs({ S.enumerate(P), P.full and S.full(P) or {} }) do
    for _, cfg in ipairs(cfgs) do
      local str = S.format(cfg)
      if not seen[str] then list[#list + 1], seen[str] = str, true end
    end
  end
  return list
end

-- Parse and validate a config string; returns the canonical string.
function E.canon(P, str)
  P = S.problem(P)
  local cfg = S.parse(str)
  local why = S.check(cfg, P)
  if why then error("config '" .. str .. "' is not valid here: " .. why, 0) end
  return S.format(cfg)
end

-- Render the kernel of a config: source text, kernel name, launch description.
function E.render(P, str)
  P = S.problem(P)
  local cfg = S.parse(str)
  local why = S.check(cfg, P)
  if why then error("config '" .. str .. "' is not valid here: " .. why, 0) end
  local vars = S.vars(cfg, P)
  local src = render(vars.template, vars)
  return src, vars.kernel, S.launch(cfg, P), S.format(cfg)
end

-- The heuristic config for P (see space.lua), canonical.
function E.heuristic(P, unaligned)
  P = S.problem(P)
  return S.format(S.heuristic(P, unaligned))
end

-- Render an auxiliary kernel (fill, check) for problem P.
function E.aux(P, name)
  P = S.problem(P)
  local vars = S.vars(nil, P)
  return render(name .. ".cu", vars)
end

-- The knob table, for --help and the docs.
function E.knobs()
  return S.knobs
end

return E
