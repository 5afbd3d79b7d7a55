/*
** gen.c — the generator's C side: one Lua state running generator/gen.lua over the templates
** (built into the binary, or read from a folder), and the calls that cross into it.
*/
#include "gen.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "embedded.h"

struct gen_State {
  lua_State *L;
  char *dir;                /* templates folder, or NULL for the built-in ones */
  int entry;                /* registry ref of gen.lua's table of entry points */
  int untuned;              /* registry ref of untuned.lua's choose(), 0 until first used */
  char err[1024];
};

static const char *const DTYPES[] = { "f32", "f16", "bf16" };
static const gen_Op OPS[GEN_NOP] = {
  { "softmax", 1, 1, 0, 2, 0, "st_fill", "st_check", GEN_FLOOR_COPY, "a copy of the tensor" },
  { "log_softmax", 1, 1, 0, 2, 0, "st_fill", "st_check", GEN_FLOOR_COPY, "a copy of the tensor" },
  { "softmax_backward", 2, 1, 0, 3, 0, "st_fill_bw", "st_check_bw", GEN_FLOOR_ADD, "a kernel adding two tensors into a third" },
  { "log_softmax_backward", 2, 1, 0, 3, 0, "st_fill_bw", "st_check_bw", GEN_FLOOR_ADD,
    "a kernel adding two tensors into a third" },
  { "cross_entropy", 1, 1, 16, 5, 1, "st_fill_ce", "st_check_ce", GEN_FLOOR_COPY, "a copy of the logits" },
  { "cross_entropy_loss", 1, 0, 16, 5, 1, "st_fill_ce", "st_check_ce", GEN_FLOOR_READ,
    "a kernel reading the logits and writing a float a row" },
  { "attention_softmax", 1, 1, 0, 2, 2, "st_fill_attn_scores", "st_check_attn", GEN_FLOOR_MASKED,
    "a copy over the mask: the visible scores read, every one written" },
  { "attention_softmax_backward", 2, 1, 0, 4, 2, "st_fill_attn_bw", "st_check_attn_bw", GEN_FLOOR_MASKED_BW,
    "a kernel over the mask: the visible y and dy (and x under a softcap) read, all of dx written" },
};
static const char *const MASKS[GEN_NMASK] = { "none", "causal", "window", "causal_window", "padding", "padding_causal",
                                              "padding_window", "padding_causal_window" };
static const char *const BIASES[GEN_NBIAS] = { "none", "alibi", "tensor" };
static const char *const BIAS_TYPES[] = { "f32", "f16", "bf16", "bool" };   /* gen_Problem.bias_type */

static void seterr(char *err, size_t n, const char *fmt, ...)
{
  va_list ap;
  if (!err || !n) return;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
  for (char *p = err; *p; p++)   /* one line, always */
    if (*p == '\n' || *p == '\r') *p = ' ';
}

static const gen_Embedded *embedded(const char *path)
{
  for (int i = 0; i < gen_nembedded; i++)
    if (strcmp(gen_embedded[i].name, path) == 0) return &gen_embedded[i];
  return NULL;
}

static char *read_file(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  long n;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
    buf[n] = '\0';
    *len = (size_t)n;
  } else {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  return buf;
}

/* source(name) -> text, chunkname: templates/<name> from the folder or the binary. */
static int l_source(lua_State *L)
{
  gen_State *g = lua_touserdata(L, lua_upvalueindex(1));
  const char *name = luaL_checkstring(L, 1);
  if (strchr(name, '/')) return luaL_error(L, "template name '%s' has a '/'", name);
  if (g->dir) {
    size_t len;
    const char *path = lua_pushfstring(L, "%s/%s", g->dir, name);
    char *text = read_file(path, &len);
    if (!text) return luaL_error(L, "cannot read template '%s': %s", path, strerror(errno));
    lua_pushlstring(L, text, len);
    free(text);
    lua_pushfstring(L, "@%s", path);
    return 2;
  }
  const char *path = lua_pushfstring(L, "templates/%s", name);
  const gen_Embedded *e = embedded(path);
  if (!e) return luaL_error(L, "no template '%s' in this build", name);
  lua_pushlstring(L, (const char *)e->data, e->size);
  lua_pushfstring(L, "@%s", path);
  return 2;
}

/* Take the error on top of the stack into g->err; returns 1 for the caller to return. */
static int lua_fail(gen_State *g)
{
  const char *msg = lua_tostring(g->L, -1);
  seterr(g->err, sizeof g->err, "%s", msg ? msg : "error in the generator (not a string)");
  lua_pop(g->L, 1);
  return 1;
}

int gen_open(gen_State **out, const char *dir, char *err, size_t errlen)
{
  gen_State *g = calloc(1, sizeof *g);
  const gen_Embedded *e = embedded("generator/gen.lua");
  *out = NULL;
  if (!g || !(g->L = luaL_newstate()) || (dir && !(g->dir = strdup(dir)))) {
    seterr(err, errlen, "out of memory starting Lua");
    gen_close(g);
    return 1;
  }
  if (!e) {
    seterr(err, errlen, "generator/gen.lua is missing from this build");
    gen_close(g);
    return 1;
  }
  luaL_openlibs(g->L);
  if (luaL_loadbuffer(g->L, (const char *)e->data, e->size, "@generator/gen.lua") != LUA_OK) goto fail;
  lua_pushlightuserdata(g->L, g);
  lua_pushcclosure(g->L, l_source, 1);
  if (lua_pcall(g->L, 1, 1, 0) != LUA_OK) goto fail;
  if (!lua_istable(g->L, -1)) {
    lua_pushstring(g->L, "generator/gen.lua did not return its entry points");
    goto fail;
  }
  g->entry = luaL_ref(g->L, LUA_REGISTRYINDEX);
  *out = g;
  return 0;
fail:
  lua_fail(g);
  seterr(err, errlen, "%s", g->err);
  gen_close(g);
  return 1;
}

void gen_close(gen_State *g)
{
  if (!g) return;
  if (g->L) lua_close(g->L);
  free(g->dir);
  free(g);
}

const char *gen_error(const gen_State *g)
{
  return g->err;
}

int gen_check_problem(const gen_Problem *p, char *err, size_t errlen)
{
  const int attn = gen_op_is_attn(p->op);
  if (p->mask < 0 || p->mask >= GEN_NMASK || p->bias < 0 || p->bias >= GEN_NBIAS || (!attn && (p->mask || p->bias))) {
    seterr(err, errlen, "mask %d and bias %d: kinds of attention_softmax only, not of %s", p->mask, p->bias, gen_op_name(p->op));
    return 1;
  }
  if (p->op == GEN_ATTN_BW && p->bias) {   /* a bias adds a constant to a score: no derivative sees it */
    seterr(err, errlen, "bias %s: attention_softmax_backward has no bias kind (none)", gen_bias_name(p->bias));
    return 1;
  }
  if (p->op < 0 || p->op >= GEN_NOP || OPS[p->op].params != 1 || p->cols != 1) return 0;
  seterr(err, errlen, "%s needs 2 or more classes: cols must be >= 2, got '%lld'", OPS[p->op].name, (long long)p->cols);
  return 1;
}

static int bad_problem(gen_State *g, const gen_Problem *p) { return gen_check_problem(p, g->err, sizeof g->err); }

void gen_width_class(int64_t cols, int64_t *lo, int64_t *hi)
{
  int64_t step = 1;
  if (cols > 64) step = (int64_t)1 << (60 - __builtin_clzll((unsigned long long)(cols - 1)));   /* 2^(k-3), cols in (2^k, 2^(k+1)] */
  *hi = (cols + step - 1) / step * step;
  *lo = *hi - step + 1;
  if (*hi > 0x7fffffff) *hi = 0x7fffffff;
}

/* Push entry point `fn` and the problem table (its width class too); the caller pushes more and
** calls pcall. */
static void push_call(gen_State *g, const char *fn, const gen_Problem *p)
{
  lua_State *L = g->L;
  int64_t lo, hi;
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->entry);
  lua_getfield(L, -1, fn);
  lua_remove(L, -2);
  lua_createtable(L, 0, 12);
  lua_pushinteger(L, p->rows);
  lua_setfield(L, -2, "rows");
  lua_pushinteger(L, p->cols);
  lua_setfield(L, -2, "cols");
  gen_width_class(p->cols, &lo, &hi);
  if (p->any_width) lo = 1, hi = 0x7fffffff;
  lua_pushboolean(L, p->any_width);
  lua_setfield(L, -2, "any_width");
  lua_pushinteger(L, lo);
  lua_setfield(L, -2, "lo");
  lua_pushinteger(L, hi);
  lua_setfield(L, -2, "hi");
  lua_pushstring(L, gen_dtype_name(p->dtype));
  lua_setfield(L, -2, "dtype");
  lua_pushstring(L, gen_op_name(p->op));
  lua_setfield(L, -2, "op");
  lua_pushinteger(L, p->arch);
  lua_setfield(L, -2, "arch");
#define LIMIT(f) if (p->f) { lua_pushinteger(L, p->f); lua_setfield(L, -2, #f); }
  LIMIT(sms) LIMIT(smem_block) LIMIT(cluster)
#undef LIMIT
  lua_pushboolean(L, p->full);
  lua_setfield(L, -2, "full");
  lua_pushstring(L, gen_mask_name(p->mask));
  lua_setfield(L, -2, "mask");
  lua_pushstring(L, gen_bias_name(p->bias));
  lua_setfield(L, -2, "bias");
  lua_pushstring(L, p->bias_type >= 0 && p->bias_type < 4 ? BIAS_TYPES[p->bias_type] : "?");
  lua_setfield(L, -2, "bias_type");
  lua_pushboolean(L, p->capped);
  lua_setfield(L, -2, "capped");
  if (p->only) {
    lua_pushstring(L, p->only);
    lua_setfield(L, -2, "only");
  }
}

int gen_capped_name(const char *name)
{
  const size_t n = strlen(name);
  return n > 4 && strcmp(name + n - 4, "_cap") == 0;
}

int gen_space(gen_State *g, const gen_Problem *p, char ***configs, int *n)
{
  lua_State *L = g->L;
  *configs = NULL;
  *n = 0;
  if (bad_problem(g, p)) return 1;
  push_call(g, "space", p);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) return lua_fail(g);
  int count = (int)luaL_len(L, -1);
  char **list = calloc((size_t)count + 1, sizeof *list);
  for (int i = 0; list && i < count; i++) {
    lua_rawgeti(L, -1, i + 1);
    list[i] = strdup(lua_tostring(L, -1));
    lua_pop(L, 1);
    if (!list[i]) {
      gen_free_list(list, i);
      list = NULL;
    }
  }
  lua_pop(L, 1);
  if (!list) {
    seterr(g->err, sizeof g->err, "out of memory listing the space");
    return 1;
  }
  *configs = list;
  *n = count;
  return 0;
}

void gen_free_list(char **list, int n)
{
  if (!list) return;
  for (int i = 0; i < n; i++) free(list[i]);
  free(list);
}

/* lua_fail for a config refused for p: where p's width class has several widths, the message
** says it (a kernel is sized for the class's widest row, not p's). */
static int config_fail(gen_State *g, const gen_Problem *p)
{
  int64_t lo, hi;
  char why[sizeof g->err];
  lua_fail(g);
  gen_width_class(p->cols, &lo, &hi);
  if (lo == hi || strncmp(g->err, "config '", 8)) return 1;
  snprintf(why, sizeof why, "%s", g->err);
  seterr(g->err, sizeof g->err, "%s (cols %lld is in the width class %lld..%lld: a kernel holds its widest row)", why,
         (long long)p->cols, (long long)lo, (long long)hi);
  return 1;
}

int gen_canon(gen_State *g, const gen_Problem *p, const char *config, char *out, size_t outlen)
{
  if (bad_problem(g, p)) return 1;
  push_call(g, "canon", p);
  lua_pushstring(g->L, config);
  if (lua_pcall(g->L, 2, 1, 0) != LUA_OK) return config_fail(g, p);
  snprintf(out, outlen, "%s", lua_tostring(g->L, -1));
  lua_pop(g->L, 1);
  return 0;
}

int gen_heuristic(gen_State *g, const gen_Problem *p, int unaligned, char *out, size_t outlen)
{
  if (bad_problem(g, p)) return 1;
  push_call(g, "heuristic", p);
  lua_pushboolean(g->L, unaligned);
  if (lua_pcall(g->L, 2, 1, 0) != LUA_OK) return lua_fail(g);
  snprintf(out, outlen, "%s", lua_tostring(g->L, -1));
  lua_pop(g->L, 1);
  return 0;
}

/* Text of templates/<name> from the folder, else the binary; NULL when neither has it. */
static char *template_text(gen_State *g, const char *name, size_t *len)
{
  char path[4096];
  if (g->dir) {
    snprintf(path, sizeof path, "%s/%s", g->dir, name);
    char *t = read_file(path, len);
    if (t) return t;
  }
  snprintf(path, sizeof path, "templates/%s", name);
  const gen_Embedded *e = embedded(path);
  char *t = e ? malloc(e->size + 1) : NULL;
  if (!t) return NULL;
  memcpy(t, e->data, e->size);
  t[e->size] = '\0';
  *len = e->size;
  return t;
}

int gen_default_table(gen_State *g, int arch, char **text, char *name, size_t namelen)
{
  size_t len;
  snprintf(name, namelen, "defaults/sm_%d.tsv", arch);
  *text = template_text(g, name, &len);
  return 0;
}

/* untuned.lua's choose() on the stack, loaded once with gen.lua's entry points. */
static int push_untuned(gen_State *g)
{
  lua_State *L = g->L;
  size_t len;
  if (g->untuned) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, g->untuned);
    return 0;
  }
  char *text = template_text(g, "untuned.lua", &len);
  if (!text) return seterr(g->err, sizeof g->err, "templates/untuned.lua is missing from this build"), 1;
  int rc = luaL_loadbuffer(L, text, len, "@templates/untuned.lua");
  free(text);
  if (rc != LUA_OK) return lua_fail(g);
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->entry);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) return lua_fail(g);
  lua_pushvalue(L, -1);
  g->untuned = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

int gen_untuned(gen_State *g, const gen_Problem *p, int unaligned, const char *table, const char *table_name,
                const char *hash, const gen_Tuned *user, int nuser, gen_Choice *out)
{
  lua_State *L = g->L;
  memset(out, 0, sizeof *out);
  if (bad_problem(g, p)) return 1;
  if (push_untuned(g)) return 1;
  push_call(g, "canon", p);   /* the problem table, after canon, which is dropped */
  lua_remove(L, -2);
  lua_pushboolean(L, unaligned);
  if (table) lua_pushstring(L, table);
  else lua_pushnil(L);
  lua_pushstring(L, table_name ? table_name : "");
  lua_pushstring(L, hash ? hash : "");
  lua_createtable(L, nuser, 0);
  for (int i = 0; i < nuser; i++) {
    lua_createtable(L, 0, 5);
    lua_pushinteger(L, user[i].rows);
    lua_setfield(L, -2, "rows");
    lua_pushinteger(L, user[i].cols);
    lua_setfield(L, -2, "cols");
    lua_pushstring(L, gen_dtype_name(user[i].dtype));
    lua_setfield(L, -2, "dtype");
    lua_pushstring(L, gen_op_name(user[i].op));
    lua_setfield(L, -2, "op");
    lua_pushstring(L, user[i].config);
    lua_setfield(L, -2, "config");
    lua_rawseti(L, -2, i + 1);
  }
  if (lua_pcall(L, 6, 3, 0) != LUA_OK) return lua_fail(g);
  snprintf(out->config, sizeof out->config, "%s", lua_tostring(L, -3));
  seterr(out->source, sizeof out->source, "%s", lua_tostring(L, -2));
  seterr(out->note, sizeof out->note, "%s", lua_tostring(L, -1));
  lua_pop(L, 3);
  return 0;
}

static int field_int(lua_State *L, const char *name)
{
  lua_getfield(L, -1, name);
  int v = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

int gen_render(gen_State *g, const gen_Problem *p, const char *config, gen_Kernel *k)
{
  lua_State *L = g->L;
  memset(k, 0, sizeof *k);
  if (bad_problem(g, p)) return 1;
  push_call(g, "render", p);
  lua_pushstring(L, config);
  if (lua_pcall(L, 2, 4, 0) != LUA_OK) return config_fail(g, p);
  k->source = strdup(lua_tostring(L, -4));
  snprintf(k->name, sizeof k->name, "%s", lua_tostring(L, -3));
  snprintf(k->config, sizeof k->config, "%s", lua_tostring(L, -1));
  lua_pop(L, 1);
  k->launch.threads = field_int(L, "threads");
  k->launch.rows_per_block = field_int(L, "rows_per_block");
  k->launch.blocks_per_row = field_int(L, "blocks_per_row");
  k->launch.cluster = field_int(L, "cluster");
  k->launch.smem = field_int(L, "smem");
  k->launch.coop = field_int(L, "coop");
  k->launch.workspace = field_int(L, "workspace");
  k->launch.ws_groups = field_int(L, "ws_groups");
  k->launch.op = p->op;
  lua_pop(L, 3);
  if (!k->source) {
    seterr(g->err, sizeof g->err, "out of memory rendering '%s'", config);
    return 1;
  }
  return 0;
}

int gen_aux(gen_State *g, const gen_Problem *p, const char *name, char **source)
{
  if (bad_problem(g, p)) return 1;
  push_call(g, "aux", p);
  lua_pushstring(g->L, name);
  if (lua_pcall(g->L, 2, 1, 0) != LUA_OK) return lua_fail(g);
  *source = strdup(lua_tostring(g->L, -1));
  lua_pop(g->L, 1);
  if (!*source) {
    seterr(g->err, sizeof g->err, "out of memory rendering '%s'", name);
    return 1;
  }
  return 0;
}

void gen_kernel_free(gen_Kernel *k)
{
  if (!k) return;
  free(k->source);
  k->source = NULL;
}

int gen_sources(gen_State *g, char **text, size_t *len)
{
  luaL_Buffer b;
  lua_State *L = g->L;
  luaL_buffinit(L, &b);
  for (int i = 0; i < gen_nembedded; i++) {
    const gen_Embedded *e = &gen_embedded[i];
    const char *base = strrchr(e->name, '/') + 1;
    /* which kernel an untuned shape gets changes no kernel: its rules and table stay out */
    if (strcmp(e->name, "templates/untuned.lua") == 0 || strncmp(e->name, "templates/defaults/", 19) == 0) continue;
    const char *data = (const char *)e->data;
    size_t n = e->size;
    char *t = NULL;
    if (g->dir && strncmp(e->name, "templates/", 10) == 0) {
      t = read_file(lua_pushfstring(L, "%s/%s", g->dir, base), &n);
      lua_pop(L, 1);
      if (!t) continue;   /* a file the folder lacks (one older than this build): left out, as its own build did */
      data = t;
    } else if (g->dir) {   /* generator/gen.lua of the tree the folder came from, where it is beside it */
      t = read_file(lua_pushfstring(L, "%s/../%s", g->dir, e->name), &n);
      lua_pop(L, 1);
      data = t ? t : data;
      n = t ? n : e->size;
    }
    luaL_addstring(&b, e->name);
    luaL_addchar(&b, '\0');
    luaL_addlstring(&b, data, n);
    luaL_addchar(&b, '\0');
    free(t);
  }
  luaL_pushresult(&b);
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  *text = malloc(n);
  if (*text) memcpy(*text, s, n);
  *len = n;
  lua_pop(L, 1);
  if (!*text) {
    seterr(g->err, sizeof g->err, "out of memory fingerprinting templates");
    return 1;
  }
  return 0;
}

int gen_knobs(gen_State *g, char **text)
{
  static const char *const code =
    "local E = ...; local t = {}\n"
    "for _, k in ipairs(E.knobs()) do\n"
    "  local v = {}; for i, x in ipairs(k.values) do v[i] = tostring(x) end\n"
    "  local s = #v > 8 and (v[1] .. '..' .. v[#v]) or table.concat(v, '|')\n"
    "  t[#t + 1] = string.format('  %-8s %-22s %s', k.name, s, k.doc)\n"
    "end\n"
    "return table.concat(t, '\\n') .. '\\n'\n";
  lua_State *L = g->L;
  if (luaL_loadstring(L, code) != LUA_OK) return lua_fail(g);
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->entry);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) return lua_fail(g);
  *text = strdup(lua_tostring(L, -1));
  lua_pop(L, 1);
  return *text ? 0 : 1;
}

/* ---- parsing ---- */

/* A positive decimal integer of at most 18 digits (no sign, space or exponent). */
static int parse_count(const char *s, size_t n, int64_t *v)
{
  int64_t x = 0;
  if (n == 0 || n > 18) return 1;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return 1;
    x = x * 10 + (s[i] - '0');
  }
  if (x < 1) return 1;
  *v = x;
  return 0;
}

int gen_parse_shape(const char *s, int64_t *rows, int64_t *cols, char *err, size_t errlen)
{
  const char *x = s ? strchr(s, 'x') : NULL;
  if (!x || parse_count(s, (size_t)(x - s), rows) || parse_count(x + 1, strlen(x + 1), cols)) {
    seterr(err, errlen, "bad shape '%s': expected ROWSxCOLS, two positive integers such as 32000x16384", s ? s : "");
    return 1;
  }
  if (*cols > 0x7fffffff) {
    seterr(err, errlen, "bad shape '%s': cols must be at most 2147483647", s);
    return 1;
  }
  if (*rows > INT64_MAX / 8 / *cols) {
    seterr(err, errlen, "bad shape '%s': rows*cols overflows", s);
    return 1;
  }
  return 0;
}

static int lookup(const char *const *names, int n, const char *s)
{
  for (int i = 0; s && i < n; i++)
    if (strcmp(names[i], s) == 0) return i;
  return -1;
}

int gen_parse_dtype(const char *s) { return lookup(DTYPES, GEN_NDTYPE, s); }
int gen_parse_op(const char *s)
{
  for (int i = 0; s && i < GEN_NOP; i++)
    if (strcmp(OPS[i].name, s) == 0) return i;
  return -1;
}
const char *gen_dtype_name(int d) { return d >= 0 && d < GEN_NDTYPE ? DTYPES[d] : "?"; }
const char *gen_op_name(int o) { return o >= 0 && o < GEN_NOP ? OPS[o].name : "?"; }
const gen_Op *gen_op(int o) { return o >= 0 && o < GEN_NOP ? &OPS[o] : NULL; }
int gen_dtype_size(int d) { return d == GEN_F32 ? 4 : 2; }
int gen_op_inputs(int o) { return o >= 0 && o < GEN_NOP ? OPS[o].reads : 1; }

int64_t gen_op_bytes(int o, int64_t rows, int64_t cols, int dtype)
{
  const gen_Op *d = gen_op(o);
  return d ? (d->reads + d->writes) * rows * cols * gen_dtype_size(dtype) + rows * d->row_bytes : 0;
}

int64_t gen_problem_bytes(const gen_Problem *p)
{
  const int64_t all = gen_op_bytes(p->op, p->rows, p->cols, p->dtype);
  const int reads = gen_op_inputs(p->op);
  if (!gen_op_is_attn(p->op) || p->visible <= 0) return all;
  return all - (reads * p->rows * p->cols - (reads + (p->op == GEN_ATTN_BW && p->capped)) * p->visible) * gen_dtype_size(p->dtype);
}

int gen_op_is_attn(int op) { return op == GEN_ATTN || op == GEN_ATTN_BW; }

int gen_parse_mask(const char *s)
{
  int m = lookup(MASKS, GEN_NMASK, s), bits = 0;
  if (m >= 0 || !s || !strchr(s, '+')) return m;
  for (const char *w = s;; w++) {   /* causal, window, padding joined by '+', each once */
    const size_t n = strcspn(w, "+");
    const int bit = n == 6 && !strncmp(w, "causal", 6) ? GEN_MASK_CAUSAL : n == 6 && !strncmp(w, "window", 6) ? GEN_MASK_WINDOW
                    : n == 7 && !strncmp(w, "padding", 7) ? GEN_MASK_PADDING : 0;
    if (!bit || bits & bit) return -1;
    bits |= bit, w += n;
    if (!*w) return bits;
  }
}
int gen_parse_bias(const char *s) { return lookup(BIASES, GEN_NBIAS, s); }
const char *gen_mask_name(int m) { return m >= 0 && m < GEN_NMASK ? MASKS[m] : "?"; }
const char *gen_bias_name(int b) { return b >= 0 && b < GEN_NBIAS ? BIASES[b] : "?"; }

void gen_op_key(int op, int mask, int bias, char *out, size_t n)
{
  if (gen_op_is_attn(op)) snprintf(out, n, "%s:%s:%s", gen_op_name(op), gen_mask_name(mask), gen_bias_name(bias));
  else snprintf(out, n, "%s", gen_op_name(op));
}

int gen_parse_op_key(const char *s, int *op, int *mask, int *bias)
{
  char name[64], m[32], b[32];
  *mask = *bias = 0;
  if (!s || strlen(s) >= sizeof name) return *op = -1, 1;
  if (!strchr(s, ':')) {   /* attention's key always names its kinds */
    if (gen_op_is_attn(*op = gen_parse_op(s))) *op = -1;
    return *op < 0;
  }
  if (sscanf(s, "%63[^:]:%31[^:]:%31s", name, m, b) != 3 || !gen_op_is_attn(*op = gen_parse_op(name)) ||
      (*mask = gen_parse_mask(m)) < 0 || (*bias = gen_parse_bias(b)) < 0) {
    *mask = *bias = 0;
    return *op = -1, 1;
  }
  return 0;
}

int gen_parse_arch(const char *s)
{
  int64_t v;
  if (!s) return -1;
  if (strncmp(s, "sm_", 3) == 0) s += 3;
  if (parse_count(s, strlen(s), &v) || v > 1000) return -1;
  return (int)v;
}
