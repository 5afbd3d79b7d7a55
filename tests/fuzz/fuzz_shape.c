/*
** fuzz_shape.c — libFuzzer target for the string parsers shared by the CLI and the library
** (generator/gen.c): gen_parse_shape() above all, and gen_parse_arch/dtype/op.
**
** The input, cut at its first NUL, is the string. Checks (abort on violation):
**  - gen_parse_shape accepts exactly ROWSxCOLS, each 1..18 decimal digits with a value >= 1,
**    cols <= 2^31-1 and rows*cols*8 in int64 (a reference parser written here decides);
**  - on success rows and cols are those values, and printing them back parses to the same;
**  - on failure the message is non-empty, one line, NUL-terminated inside err, and also fits
**    (truncated, no overflow) in small buffers and a NULL one;
**  - gen_parse_arch gives -1 or 1..1000, gen_parse_dtype/op an index whose name gives it back.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "fuzz.h"


/* 1..18 decimal digits, value >= 1: the grammar gen.h promises for each side. */
static int ref_count(const char *s, size_t n, int64_t *v)
{
  int64_t x = 0;
  if (n < 1 || n > 18) return 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    x = x * 10 + (s[i] - '0');
  }
  *v = x;
  return x >= 1;
}

static int ref_shape(const char *s, int64_t *rows, int64_t *cols)
{
  const char *x = strchr(s, 'x');
  if (!x || !ref_count(s, (size_t)(x - s), rows) || !ref_count(x + 1, strlen(x + 1), cols)) return 0;
  return *cols <= INT32_MAX && *rows <= INT64_MAX / 8 / *cols;
}

static void check_message(const char *err, size_t errlen)
{
  REQUIRE(memchr(err, '\0', errlen) != NULL);
  REQUIRE(errlen == 1 || err[0] != '\0');
  REQUIRE(strchr(err, '\n') == NULL && strchr(err, '\r') == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = '\0';

  char err[512];
  int64_t rows = -1, cols = -1, rr, rc;
  int ok = gen_parse_shape(s, &rows, &cols, err, sizeof err) == 0;
  REQUIRE(ok == ref_shape(s, &rr, &rc));
  if (ok) {
    REQUIRE(rows == rr && cols == rc);
    char again[64];
    int64_t r2, c2;
    snprintf(again, sizeof again, "%lldx%lld", (long long)rows, (long long)cols);
    REQUIRE(gen_parse_shape(again, &r2, &c2, err, sizeof err) == 0 && r2 == rows && c2 == cols);
  } else {
    check_message(err, sizeof err);
    for (size_t n = 1; n <= 16; n *= 2) {   /* exact-size heap buffers: ASan sees any overflow */
      char *small = malloc(n);
      REQUIRE(small && gen_parse_shape(s, &rows, &cols, small, n) != 0);
      check_message(small, n);
      free(small);
    }
    REQUIRE(gen_parse_shape(s, &rows, &cols, NULL, 0) != 0);
  }

  int arch = gen_parse_arch(s);
  REQUIRE(arch == -1 || (arch >= 1 && arch <= 1000));
  int d = gen_parse_dtype(s), o = gen_parse_op(s);
  REQUIRE(d == -1 || (d < GEN_NDTYPE && strcmp(gen_dtype_name(d), s) == 0));
  REQUIRE(o == -1 || (o < GEN_NOP && strcmp(gen_op_name(o), s) == 0));
  free(s);
  return 0;
}
