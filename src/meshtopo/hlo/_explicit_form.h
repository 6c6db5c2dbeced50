/* XLA's printed form of explicit replica groups, scanned in one pass: the one definition of
 * that form, shared by the scanner of groups (_explicit_scan.c) and of lines (_line_scan.c).
 *
 * The form: '{' group (',' group)* '}', group := '{' number (',' number)* '}', number := 1 to
 * 18 ASCII digits (so every number fits in int64). Anything else (white space, comments,
 * signs, empty groups, longer numbers, non-ASCII digits) is not in the form.
 *
 *   explicit_form(data, kind, n, pos, ids, sizes, &n_ids, &n_groups) -> end or -1
 *
 * scans the characters of a str's data (of its kind and length n) from pos, counting ids and
 * groups; ids and sizes, when not NULL, receive every id and each group's size, with room
 * for *n_ids and *n_groups of them as given (a text with more is not taken: -1).
 *
 * Without ids, 1-byte text is checked 64 characters at a time where SSE2 is at hand (every
 * x86-64): the form is then the same as a set of rules on each character and the one or two
 * before it, which bit masks of the characters' classes check at once. From the "{{" at pos to
 * the first "}}" (the form's end), every character is a digit, ',', '{' or '}', and
 *
 *   a digit follows a digit, '{' or a ',' that follows a digit (not "},");
 *   ',' follows a digit or '}';   '{' follows "},";   '}' follows a digit (or '}', at the end);
 *
 * with no run of more than 18 digits. Those rules allow exactly the texts of the form: a group
 * opens only after "{{" or "},", holds numbers joined by single commas, and closes after a
 * digit, followed by ",{" (the next group) or '}' (the end).
 */

#ifndef MESHTOPO_EXPLICIT_FORM_H
#define MESHTOPO_EXPLICIT_FORM_H

#include <Python.h>
#include <stdint.h>

#define MAX_DIGITS 18

/* Scan the form at s[pos:] (characters of type CHAR; the string's terminating NUL, which
 * CPython keeps after every str's data, ends any scan that runs to the end); returns the end
 * offset or -1. Counts ids and groups into *n_ids and *n_groups, and writes them to ids and
 * sizes when those are not NULL (with room for as many as *n_ids and *n_groups say). */
#define DEFINE_SCAN(NAME, CHAR)                                                              \
    static Py_ssize_t NAME(const CHAR *s, Py_ssize_t pos, int64_t *ids, int64_t *sizes,      \
                           Py_ssize_t *n_ids, Py_ssize_t *n_groups)                          \
    {                                                                                        \
        const CHAR *p = s + pos;                                                             \
        Py_ssize_t count = 0, groups = 0, in_group, ids_room = *n_ids, sizes_room = *n_groups; \
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
                    if (count >= ids_room)                                                   \
                        return -1;                                                           \
                    for (const CHAR *digit = start; digit < p; digit++)                      \
                        value = value * 10 + (int64_t)(*digit - '0');                        \
                    ids[count] = value;                                                      \
                }                                                                            \
                count++;                                                                     \
                in_group++;                                                                  \
            } while (*p == ',' && ++p);                                                      \
            if (*p++ != '}')                                                                 \
                return -1;                                                                   \
            if (sizes != NULL) {                                                             \
                if (groups >= sizes_room)                                                    \
                    return -1;                                                               \
                sizes[groups] = in_group;                                                    \
            }                                                                                \
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

#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#include <string.h>

#define FAST_FORM 1

/* Bit k of each: whether s[k] is a digit, ',', '{' or '}' (64 characters). */
typedef struct {
    uint64_t digit, comma, open, close;
} Classes;

/* The 16 bits, from bit k, of the bytes of v that are ch (or, for BITS, whose byte is 0xFF). */
#define BITS(v, k) ((uint64_t)(uint16_t)_mm_movemask_epi8(v) << (k))
#define EQUAL_BITS(v, ch, k) BITS(_mm_cmpeq_epi8((v), _mm_set1_epi8(ch)), k)

static inline Classes
classes64(const Py_UCS1 *s)
{
    Classes c = {0, 0, 0, 0};
    for (int k = 0; k < 64; k += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + k));
        __m128i from_zero = _mm_sub_epi8(v, _mm_set1_epi8('0')); /* a digit: 0 to 9 */
        __m128i digit = _mm_cmpeq_epi8(_mm_min_epu8(from_zero, _mm_set1_epi8(9)), from_zero);
        c.digit |= BITS(digit, k);
        c.comma |= EQUAL_BITS(v, ',', k);
        c.open |= EQUAL_BITS(v, '{', k);
        c.close |= EQUAL_BITS(v, '}', k);
    }
    return c;
}

/* The masks m shifted by `by` (1 or 2) bits, the bits of the 64 characters before, m_before,
 * shifted in: bit k says whether the character `by` before s[k] is of m's class. */
#define BEFORE(m, m_before, by) ((m) << (by) | (m_before) >> (64 - (by)))

/* explicit_form without ids for 1-byte text, by the rules above: the same answers and
 * counts. */
static Py_ssize_t
form_end_ucs1(const Py_UCS1 *s, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t *n_ids,
              Py_ssize_t *n_groups)
{
    Classes before = {0, 0, 0, 0};
    uint64_t skip = 3; /* the "{{" at pos, checked here */
    Py_ssize_t ids = 0, opens = 0, run = 0; /* run: the digits ending the characters before */
    if (pos >= n || s[pos] != '{' || s[pos + 1] != '{')
        return -1;
    for (Py_ssize_t at = pos;; at += 64) {
        Py_UCS1 tail[64];
        const Py_UCS1 *block = s + at;
        if (n - at < 64) { /* past the text: NULs, in no class */
            memset(tail, 0, sizeof tail);
            memcpy(tail, s + at, (size_t)(n - at));
            block = tail;
        }
        Classes c = classes64(block);
        uint64_t digit1 = BEFORE(c.digit, before.digit, 1);
        uint64_t comma1 = BEFORE(c.comma, before.comma, 1);
        uint64_t open1 = BEFORE(c.open, before.open, 1);
        uint64_t close1 = BEFORE(c.close, before.close, 1);
        uint64_t ends = c.close & close1;
        uint64_t bad = ~(c.digit | c.comma | c.open | c.close) |
                       (c.digit & ~(digit1 | open1 | comma1)) |
                       (c.digit & comma1 & ~BEFORE(c.digit, before.digit, 2)) |
                       (c.comma & ~(digit1 | close1)) |
                       (c.open & ~(comma1 & BEFORE(c.close, before.close, 2))) |
                       (c.close & ~digit1 & ~ends);
        /* runs of 19 digits or more: within these 64, and those the run before continues */
        uint64_t runs = c.digit & c.digit << 1;  /* 2 digits ending at k */
        uint64_t runs16 = runs & runs << 2;      /* 4 */
        runs16 &= runs16 << 4;                   /* 8 */
        runs16 &= runs16 << 8;                   /* 16 */
        bad |= runs16 & runs << 16 & c.digit << 18;
        if (run > 0 && (c.digit == ~0ULL ? 64 : __builtin_ctzll(~c.digit)) + run > 18)
            bad |= 1ULL << (18 - run);
        bad &= ~skip;
        skip = 0;
        /* the characters up to the first end */
        uint64_t upto = ends ? ((ends & (0 - ends)) << 1) - 1 : ~0ULL;
        if (bad & upto)
            return -1;
        ids += __builtin_popcountll(c.digit & ~digit1 & upto);
        opens += __builtin_popcountll(c.open & upto);
        if (ends) {
            *n_ids = ids;
            *n_groups = opens - 1;
            return at + __builtin_ctzll(ends) + 1;
        }
        run = __builtin_clzll(~c.digit); /* (64 digits have returned: a run too long) */
        before = c;
    }
}
#endif

static Py_ssize_t
explicit_form(const void *data, int kind, Py_ssize_t n, Py_ssize_t pos, int64_t *ids,
              int64_t *sizes, Py_ssize_t *n_ids, Py_ssize_t *n_groups)
{
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
#ifdef FAST_FORM
        if (ids == NULL)
            return form_end_ucs1((const Py_UCS1 *)data, n, pos, n_ids, n_groups);
#endif
        return scan_ucs1((const Py_UCS1 *)data, pos, ids, sizes, n_ids, n_groups);
    case PyUnicode_2BYTE_KIND:
        return scan_ucs2((const Py_UCS2 *)data, pos, ids, sizes, n_ids, n_groups);
    default:
        return scan_ucs4((const Py_UCS4 *)data, pos, ids, sizes, n_ids, n_groups);
    }
}

#endif
