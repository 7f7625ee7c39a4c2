/* Internal interface between the files of the nnrepl executable (interp/). */
#ifndef NNREPL_INTERP_H
#define NNREPL_INTERP_H

#include <stddef.h>
#include <lua.h>

#ifndef NNREPL_VERSION
#define NNREPL_VERSION "0.1.0"
#endif

#define INTERP_PROGNAME "nnrepl"

/* run.c: running chunks with a traceback handler and Ctrl-C turned into a Lua error. */
int interp_docall(lua_State *L, int narg, int nres);
/* Whether Ctrl-C came during the last interp_docall. */
int interp_interrupted(void);
/* Prints the error on top of the stack to stderr as "nnrepl: <msg>" and pops it. */
int interp_report(lua_State *L, int status);
/* Whether `status`/message on top of the stack is a syntax error at end of input. */
int interp_incomplete(lua_State *L, int status);

/* repl.c: the read-eval-print loop; returns when the user ends the session. */
void interp_repl(lua_State *L, int banner);
void interp_print_banner(void);

/* lineedit.c: line input (libedit on a terminal, plain stdin otherwise) and history. */
enum { LE_LINE, LE_EOF, LE_INTERRUPT };
void le_init(lua_State *L);
/* Reads one line without its newline into a malloc'd *line (LE_LINE). */
int le_readline(const char *prompt, char **line);
void le_add_history(const char *entry);
void le_finish(void);
int le_is_terminal(void);

/* complete.c: identifier-path completion that never runs user code. Returns a sorted
 * NULL-terminated malloc'd array of malloc'd full completions of `word` (NULL if none). */
char **interp_complete(lua_State *L, const char *word, size_t *count);
/* Registers package.preload["nnrepl.complete"] (a Lua view of the completer, for tests). */
void interp_register_complete(lua_State *L);

/* help.c: the global help(). */
void interp_register_help(lua_State *L);

/* launch.c: `nnrepl --nproc-per-node N script.lua` starts N ranks and watches them. */
#include <stdbool.h>
bool interp_launch_requested(char **argv); /* a launcher option comes before the script */
int interp_launch(int argc, char **argv);  /* returns the exit status */
void interp_launch_child_init(void);       /* in a rank the launcher started: line-buffered stdout */

/* Colour on stdout/stderr: only when both are terminals and NO_COLOR is unset or empty. */
int interp_use_color(void);

#endif
