/*
** fuzz_config.c — libFuzzer target for config parsing and validation: gen_canon() and
** gen_render() (generator/gen.c, gen.lua, templates/space.lua) on one gen_State opened once
** with the built-in templates. No NVRTC: compiling takes far too long per input.
**
** Input: 5 bytes make the problem, the rest (cut at its first NUL) is the config string.
**   byte 0: dtype (f32, f16, bf16), op (softmax, log_softmax), arch (80 or 90)
**   byte 1: rows = 1 + b1 * 257;  bytes 2-4: cols = (b2 | b3 << 8) << (b4 % 16), at least 1
** Checks (abort on violation):
**  - on failure the state's message is non-empty and one line;
**  - on success the canonical string is non-empty, canonical again (same string back), and
**    renders: non-empty source that names the kernel, the same canonical config, and a launch
**    with threads 32..1024, rows per block 1..1024, blocks per row 1..128, cluster 0 or blocks
**    per row, coop 0 or 1 (and then workspace groups), no negative sizes.
** The rules live in Lua, which libFuzzer's coverage cannot see: the target is linked with
** --wrap=luaL_newstate to put a line hook on the generator's Lua state, and each (chunk, line)
** run bumps a counter in libFuzzer's extra-counters section, so new Lua lines count as coverage.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>

#include "gen.h"
#include "fuzz.h"


static gen_State *g;

/* ---- Lua line coverage ---- */

static uint8_t lua_lines[1 << 16] __attribute__((used, section("__libfuzzer_extra_counters")));

static void line_hook(lua_State *L, lua_Debug *ar)
{
  if (!lua_getinfo(L, "S", ar)) return;
  uintptr_t h = ((uintptr_t)ar->source >> 3) * 2654435761u ^ (uintptr_t)ar->currentline * 40503u;
  uint8_t *c = &lua_lines[h % sizeof lua_lines];
  if (*c < 255) (*c)++;
}

lua_State *__real_luaL_newstate(void);
lua_State *__wrap_luaL_newstate(void)
{
  lua_State *L = __real_luaL_newstate();
  if (L) lua_sethook(L, line_hook, LUA_MASKLINE, 0);
  return L;
}

static void check_error(void)
{
  const char *e = gen_error(g);
  REQUIRE(e[0] != '\0');
  REQUIRE(strchr(e, '\n') == NULL && strchr(e, '\r') == NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  char err[1024];
  if (gen_open(&g, NULL, err, sizeof err) != 0) {
    fprintf(stderr, "gen_open: %s\n", err);
    abort();
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 5) return 0;
  gen_Problem p = { 0 };
  p.dtype = data[0] % 3;
  p.op = data[0] / 3 % 2;
  p.arch = data[0] / 6 % 2 ? 90 : 80;
  p.rows = 1 + (int64_t)data[1] * 257;
  p.cols = (int64_t)(data[2] | data[3] << 8) << (data[4] % 16);
  if (p.cols < 1) p.cols = 1;

  char *config = malloc(size - 5 + 1);
  if (!config) return 0;
  memcpy(config, data + 5, size - 5);
  config[size - 5] = '\0';

  char out[256], again[256];
  if (gen_canon(g, &p, config, out, sizeof out) != 0) {
    check_error();
  } else {
    REQUIRE(out[0] != '\0');
    REQUIRE(gen_canon(g, &p, out, again, sizeof again) == 0 && strcmp(out, again) == 0);
    gen_Kernel k;
    if (gen_render(g, &p, config, &k) != 0) {   /* a config that canonicalizes must render */
      fprintf(stderr, "canon accepted '%s' but render failed: %s\n", out, gen_error(g));
      abort();
    }
    REQUIRE(k.source && k.source[0] && k.name[0] && strstr(k.source, k.name));
    REQUIRE(strcmp(k.config, out) == 0);
    REQUIRE(k.launch.threads >= 32 && k.launch.threads <= 1024);
    REQUIRE(k.launch.rows_per_block >= 1 && k.launch.rows_per_block <= 1024);
    REQUIRE(k.launch.blocks_per_row >= 1 && k.launch.blocks_per_row <= 128);
    REQUIRE(k.launch.cluster == 0 || k.launch.cluster == k.launch.blocks_per_row);
    REQUIRE(k.launch.coop >= 0 && k.launch.coop <= 2);
    REQUIRE(k.launch.smem >= 0 && k.launch.workspace >= 0 && k.launch.ws_groups >= 0);
    REQUIRE(!k.launch.coop || k.launch.ws_groups > 0);
    gen_kernel_free(&k);
  }
  free(config);
  return 0;
}
