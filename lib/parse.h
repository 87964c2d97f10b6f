/* Parsing helpers for the console shell and the kernel command line.
 * Numbers: decimal, or hexadecimal with a 0x prefix; no sign, no spaces.
 * Sizes: a number with an optional K, M, G or T suffix (powers of 1024, any
 * case), optionally followed by B or iB. Every parser rejects empty input,
 * trailing junk and values that do not fit in 64 bits. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool parse_u64(const char *s, uint64_t *out);
bool parse_size(const char *s, uint64_t *out);
/* The same, also rejecting values outside [min, max]: every console argument
 * with a range goes through these, so no caller multiplies an unchecked value. */
bool parse_u64_in(const char *s, uint64_t min, uint64_t max, uint64_t *out);
bool parse_size_in(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* "on" or "off"; false for anything else (*on untouched). */
bool parse_on_off(const char *s, bool *on);
/* A comma-separated list of 1 to max_n numbers, each in [min, max] ("1,2,4");
 * *n gets the count. */
bool parse_u64_list(const char *s, uint64_t min, uint64_t max, uint64_t *out, unsigned max_n,
		    unsigned *n);

/* Names of VMs, clones and images: 1 to NAME_LEN_MAX characters of
 * A-Z a-z 0-9 _ -, checked the same way everywhere and never cut. */
#define NAME_LEN_MAX 15
#define NAME_RULE "1-15 characters of A-Z a-z 0-9 _ -"
bool name_valid(const char *s);

/* Split line in place into words separated by blanks (space, tab, CR, LF).
 * Returns the word count, or -1 when there are more than max words. */
int split_words(char *line, char **argv, int max);

/* The value of the last "key=value" word in argv, "" for a bare "key" word,
 * NULL when key does not appear. */
const char *opt_value(int argc, char **argv, const char *key);

/* Split a run= value in place on ';' into commands with surrounding blanks
 * trimmed, skipping empty ones. Returns the count, or -1 when more than max. */
int split_commands(char *s, char **cmds, int max);

/* Kernel command line as GRUB 2 delivers it: words separated by blanks, where a
 * word containing a space arrives wrapped in double quotes and \ ' " are
 * escaped with a backslash ("run=mem; cpus" for run=mem; cpus). Words are
 * unquoted: a backslash takes the next character literally, and quotes (" or ')
 * group blanks into the word and are dropped. */
enum cmdline_status {
	CMDLINE_ABSENT,   /* no such key; out is "" */
	CMDLINE_FOUND,    /* out holds the value */
	CMDLINE_TOO_LONG, /* the value does not fit in out; out is "" */
};

/* Look up key: the last word "key=value" gives value, a bare "key" gives "". */
enum cmdline_status cmdline_get(const char *cmdline, const char *key, char *out, size_t outlen);

/* Copy the next word at or after p, unquoted, into word (cut to len - 1 and
 * always terminated when len > 0). Returns where to continue, or NULL when no
 * word is left. full_len (may be NULL) receives the word's unquoted length, so
 * *full_len >= len means it was cut. */
const char *cmdline_next_word(const char *p, char *word, size_t len, size_t *full_len);
