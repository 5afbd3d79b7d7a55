#include "cli.h"
int cli_tune(cli_Options *o) { (void)o; cli_fail("tuning is not built yet"); return 2; }
int cli_log(cli_Options *o) { (void)o; cli_fail("log is not built yet"); return 2; }
int cli_cache(cli_Options *o) { (void)o; cli_fail("cache is not built yet"); return 2; }
