/*
** embedded.h — generator/gen.lua and templates/ built into the binary (embedded.c is written
** at build time by cmake/embed.cmake), so an installed softmax-tune needs no data files.
*/
#ifndef GEN_EMBEDDED_H
#define GEN_EMBEDDED_H

#include <stddef.h>

typedef struct gen_Embedded {
  const char *name;               /* path from the source root, "templates/row.cu" */
  const unsigned char *data;
  size_t size;
} gen_Embedded;

extern const gen_Embedded gen_embedded[];
extern const int gen_nembedded;

#endif
