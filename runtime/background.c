/*
** background.c — the worker of background.h: one thread a context, a queue under a mutex.
*/
#include "background.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "untuned.h"

struct bg_Worker {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;        /* a job queued, one done, or stop */
  bg_Job *head, *tail;
  int stop;
  gen_State *g;             /* the worker's own generator (Lua is not shared between threads) */
};

/* Job j's kernel: chosen, rendered, compiled (or read back from the kept cubins): 0, or 1 with j->err. */
static int make(bg_Worker *w, bg_Job *j)
{
  gen_Choice ch;
  if (!w->g && gen_open(&w->g, NULL, j->err, sizeof j->err)) return 1;
  if (untuned_choose(w->g, NULL, &j->base, &j->key, j->unaligned, &ch, j->err, sizeof j->err)) return 1;
  if (gen_render(w->g, &j->p, ch.config, &j->k)) return snprintf(j->err, sizeof j->err, "%s", gen_error(w->g)), 1;
  return cache_compile(j->kept, j->k.source, "softmax.cu", j->p.arch, &j->cb, j->err, sizeof j->err);
}

static void *work(void *arg)
{
  bg_Worker *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->head && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
    if (w->stop) break;
    bg_Job *j = w->head;
    w->head = j->next;
    if (!w->head) w->tail = NULL;
    pthread_mutex_unlock(&w->mu);
    j->rc = make(w, j);
    pthread_mutex_lock(&w->mu);
    atomic_store_explicit(&j->done, 1, memory_order_release);
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

static bg_Worker *start(char *err, size_t errlen)
{
  bg_Worker *w = calloc(1, sizeof *w);
  if (!w) return snprintf(err, errlen, "out of memory"), NULL;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  if (pthread_create(&w->thread, NULL, work, w) == 0) return w;
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  free(w);
  snprintf(err, errlen, "cannot start the background compile thread");
  return NULL;
}

int bg_submit(bg_Worker **w, bg_Job *j, char *err, size_t errlen)
{
  if (!*w && !(*w = start(err, errlen))) return 1;
  j->next = NULL;
  atomic_store(&j->done, 0);
  pthread_mutex_lock(&(*w)->mu);
  if ((*w)->tail) (*w)->tail->next = j;
  else (*w)->head = j;
  (*w)->tail = j;
  pthread_cond_broadcast(&(*w)->cv);
  pthread_mutex_unlock(&(*w)->mu);
  return 0;
}

int bg_done(bg_Job *j) { return atomic_load_explicit(&j->done, memory_order_acquire); }

void bg_wait(bg_Worker *w, bg_Job *j)
{
  pthread_mutex_lock(&w->mu);
  while (!bg_done(j)) pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
}

void bg_stop(bg_Worker *w)
{
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  w->stop = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  gen_close(w->g);
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  free(w);
}

void bg_job_free(bg_Job *j)
{
  if (!j) return;
  gen_kernel_free(&j->k);
  gen_cubin_free(&j->cb);
  free(j);
}
