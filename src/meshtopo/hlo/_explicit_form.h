/* XLA's printed form of explicit replica groups, scanned in one pass: the one definition of
 * that form, shared by the scanner of groups (_explicit_scan.c) and of lines (_line_scan.c).
 *
 * The form: '{' group (',' group)* '}', group := '{' number (',' number)* '}', number := 1 to
 * 18 ASCII digits (so every number fits in int64). Anything else (white space, comments,
 * signs, empty groups, longer numbers, non-ASCII digits) is not in the form.
 *
 *   explicit_form(data, kind, pos, ids, sizes, &n_ids, &n_groups) -> end or -1
 *
 * scans the characters of a str's data (of its kind) from pos; ids and sizes, when not NULL,
 * receive every id and each group's size (with room for the counts a scan without them
 * gave).
 */

#ifndef MESHTOPO_EXPLICIT_FORM_H
#define MESHTOPO_EXPLICIT_FORM_H

#include <Python.h>
#include <stdint.h>

#define MAX_DIGITS 18

/* Scan the form at s[pos:] (characters of type CHAR; the string's terminating NUL, which
 * CPython keeps after every str's data, ends any scan that runs to the end); returns the end
 * offset or -1. Counts ids and groups, and writes them to ids/sizes when those are not NULL
 * (with room for the counts a scan without them gave). */
#define DEFINE_SCAN(NAME, CHAR)                                                              \
    static Py_ssize_t NAME(const CHAR *s, Py_ssize_t pos, int64_t *ids, int64_t *sizes,      \
                           Py_ssize_t *n_ids, Py_ssize_t *n_groups)                          \
    {                                                                                        \
        const CHAR *p = s + pos;                                                             \
        Py_ssize_t count = 0, groups = 0, in_group;                                          \
        if (*p++ != '{')                                                                     \
            return -1;                                                                       \
        do { /* a group: '{' number (',' number)* '}' */                                     \
            if (*p++ != '{')                                                                 \
                return -1;                                                                   \
            in_group = 0;                                                                    \
            do { /* a number */                                                              \
                const CHAR *start = p;                                                       \
                while ((Py_UCS4)(*p - '0') < 10)                                             \
                    p++;                                                                     \
                if (p == start || p - start > MAX_DIGITS)                                    \
                    return -1;                                                               \
                if (ids != NULL) {                                                           \
                    int64_t value = 0;                                                       \
                    for (const CHAR *digit = start; digit < p; digit++)                      \
                        value = value * 10 + (int64_t)(*digit - '0');                        \
                    ids[count] = value;                                                      \
                }                                                                            \
                count++;                                                                     \
                in_group++;                                                                  \
            } while (*p == ',' && ++p);                                                      \
            if (*p++ != '}')                                                                 \
                return -1;                                                                   \
            if (sizes != NULL)                                                               \
                sizes[groups] = in_group;                                                    \
            groups++;                                                                        \
        } while (*p == ',' && ++p);                                                          \
        if (*p++ != '}')                                                                     \
            return -1;                                                                       \
        *n_ids = count;                                                                      \
        *n_groups = groups;                                                                  \
        return p - s;                                                                        \
    }

DEFINE_SCAN(scan_ucs1, Py_UCS1)
DEFINE_SCAN(scan_ucs2, Py_UCS2)
DEFINE_SCAN(scan_ucs4, Py_UCS4)

static Py_ssize_t
explicit_form(const void *data, int kind, Py_ssize_t pos, int64_t *ids, int64_t *sizes,
              Py_ssize_t *n_ids, Py_ssize_t *n_groups)
{
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        return scan_ucs1((const Py_UCS1 *)data, pos, ids, sizes, n_ids, n_groups);
    case PyUnicode_2BYTE_KIND:
        return scan_ucs2((const Py_UCS2 *)data, pos, ids, sizes, n_ids, n_groups);
    default:
        return scan_ucs4((const Py_UCS4 *)data, pos, ids, sizes, n_ids, n_groups);
    }
}

#endif
