/* Line input for the REPL. On a terminal: libedit's readline interface with history
 * in ~/.nnrepl_history (NNREPL_HISTORY overrides) and tab completion from
 * complete.c. Otherwise plain reads from stdin with no prompt echo.
 *
 * Ctrl-C at the prompt: our SIGINT handler (installed without SA_RESTART) only sets
 * a flag. libedit's own handler runs first, puts the terminal back in cooked mode and
 * re-raises the signal to ours; the interrupted read makes readline() return NULL,
 * and the flag tells that apart from Ctrl-D. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>

#include "interp.h"

#define HISTORY_MAX 1000

static lua_State *complete_L;
static int use_editor;
static char *history_path;
static volatile sig_atomic_t got_sigint;

static void on_sigint(int sig) {
  (void)sig;
  got_sigint = 1;
}

/* Lua-aware word boundaries: '.', ':' and '_' stay inside a word so that the whole
 * path `torch.nn.Li` reaches the completer. */
static const char word_breaks[] = " \t\n\"'`@$><=;|&{}()[],+-*/%^#~";

static char **attempt_completion(const char *text, int start, int end) {
  (void)end;
  rl_attempted_completion_over = 1; /* never fall back to file names */
  if (text[0] == '\0' && rl_line_buffer != NULL && start >= 0 &&
      strspn(rl_line_buffer, " \t") >= (size_t)start) { /* TAB to indent a body */
    char **out = calloc(3, sizeof *out);
    if (out != NULL && (out[0] = strdup("  ")) == NULL) { free(out); out = NULL; }
    return out;
  }
  size_t n = 0;
  char **list = interp_complete(complete_L, text, &n);
  if (list == NULL) return NULL;
  /* readline's convention: [0] is the common prefix, then the matches. */
  char **out = malloc((n + 2) * sizeof *out);
  if (out == NULL) goto fail;
  size_t common = strlen(list[0]);
  for (size_t i = 1; i < n; i++) {
    size_t j = 0;
    while (j < common && list[i][j] == list[0][j]) j++;
    common = j;
  }
  out[0] = strndup(list[0], common); /* every match starts with `text` */
  if (out[0] == NULL) { free(out); goto fail; }
  for (size_t i = 0; i < n; i++) out[i + 1] = list[i];
  out[n + 1] = NULL;
  free(list);
  return out;
fail:
  for (size_t i = 0; i < n; i++) free(list[i]);
  free(list);
  return NULL;
}

static char *default_history_path(void) {
  const char *env = getenv("NNREPL_HISTORY");
  if (env != NULL) return *env ? strdup(env) : NULL;
  const char *home = getenv("HOME");
  if (home == NULL || !*home) return NULL;
  size_t n = strlen(home) + sizeof "/.nnrepl_history";
  char *p = malloc(n);
  if (p != NULL) snprintf(p, n, "%s/.nnrepl_history", home);
  return p;
}

int le_is_terminal(void) { return isatty(0); }

void le_init(lua_State *L) {
  complete_L = L;
  use_editor = isatty(0);
  if (!use_editor) return;
  rl_readline_name = "nnrepl";
  rl_basic_word_break_characters = word_breaks;
  rl_attempted_completion_function = attempt_completion;
  rl_completion_append_character = '\0';
  rl_initialize();
  using_history();
  stifle_history(HISTORY_MAX);
  history_path = default_history_path();
  if (history_path != NULL) read_history(history_path);
}

static int plain_readline(char **line) {
  size_t cap = 0;
  char *buf = NULL;
  errno = 0;
  ssize_t n = getline(&buf, &cap, stdin);
  if (n < 0) {
    free(buf);
    if (got_sigint || errno == EINTR) { clearerr(stdin); return LE_INTERRUPT; }
    return LE_EOF;
  }
  if (n > 0 && buf[n - 1] == '\n') buf[--n] = '\0';
  *line = buf;
  return LE_LINE;
}

int le_readline(const char *prompt, char **line) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  got_sigint = 0;
  sigaction(SIGINT, &sa, &old);
  int r;
  *line = NULL;
  if (use_editor) {
    fflush(stdout);
    fflush(stderr);
    char *s = readline(prompt);
    if (s != NULL) { *line = s; r = LE_LINE; }
    else r = got_sigint ? LE_INTERRUPT : LE_EOF;
  } else {
    r = plain_readline(line);
  }
  /* A Ctrl-C between a line's last key and here is taken as that line's. */
  if (r == LE_LINE && got_sigint) { free(*line); *line = NULL; r = LE_INTERRUPT; }
  sigaction(SIGINT, &old, NULL);
  return r;
}

void le_add_history(const char *entry) {
  if (!use_editor || entry[0] == '\0') return;
  add_history(entry);
  /* Saved at once, so a session that is killed keeps what it ran. */
  if (history_path != NULL) write_history(history_path);
}

void le_finish(void) {
  free(history_path);
  history_path = NULL;
}
