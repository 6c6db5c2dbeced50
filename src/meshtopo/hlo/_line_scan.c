/* Instructions written one a line as XLA prints them, scanned into their texts and spans.
 *
 * The scanner reads characters only: it gives the pieces of each line and decides nothing
 * that needs the reader's state. The reader's fast path (``_reader``) takes a scanned line
 * when its names, shapes, attributes and XLA's checks between instructions allow, and reads
 * every other text with its general reader; the fast path decides only how quickly a line is
 * read. The scanner takes a line only in this form (white space is ' ' or '\t' alone):
 *
 *   line  := ws* [ 'ROOT' ws+ ] name ws* '=' ws* shape ws+ opcode '(' operands ')' attrs '\n'
 *   shape := type '[' (no bracket, '"', '/' or '\n')* ']' [ group ]  |  '(' items ')'
 *   name  := '%' namechar+  |  (letter | '_') namechar*       namechar := [A-Za-z0-9_.-]
 *   attrs := [ ',' ws* 'channel_id=' ws* 1-18 digits ws* ] (not '\n')*
 *
 * where a group is a bracketed run on the line, at most 4 brackets deep, with strings and
 * comments as the lexer reads them (an unterminated one, or '//', is not in the form), and
 * the channel id counts only when a ',' or the end of the line follows it. The next line
 * must start another statement: after ws*, '%', '}', a letter or '_' (a word starting with
 * 'T' only when '=' follows it, which no iota's 'T(' continuation is). Anything else, a
 * line whose name is the keyword ROOT and a name without '%' right before '=' (which XLA's
 * lexer reads as an attribute's name), and a name starting "__" but not "__xla_" (one XLA
 * renames) end the scan, for the general reader to read.
 *
 *   scan_lines(text, pos, most) -> list of scanned lines
 *
 * scans the line after the '\n' at ``pos``, and then each next one while the one before
 * ended at a '\n' (at most ``most``); it gives, for each line in the form, the tuple
 * (end, root, column, name, opcode, shape, operands, names, shapes, attributes, channel,
 * groups, rest, tail, written, callees). ``end`` is where the instruction ends (the line without trailing
 * ' ', '\t', '\r'), ``root`` the 1-based column of ROOT (-1 without), ``column`` that of the
 * name, ``name`` the name without '%' and ``opcode`` the opcode (interned: a dump has few),
 * ``operands`` the text between the parentheses; ``names`` the operand names without '%'
 * when the operands are names alone (comma-separated, ws after commas) or as XLA prints them
 * with operand shapes (each [shape ' '] '%' name, the shape an array 'type[dims]{layout}' of
 * digits and commas or a tuple of them, joined by ", " and an optional "/\*index=N*\/"), and
 * None otherwise; ``shapes`` the operand shapes as written (None where an operand has none;
 * empty when none has one, or ``names`` is None),
 * ``attributes`` the offset from the name to just past ')', ``channel`` the digits of a
 * leading channel id or None. ``groups`` is the (start, stop), from the name, of explicit
 * replica groups in XLA's printed form written right after it as ", replica_groups=" and
 * followed by ',' or the end (compared first with the groups of the line before in the same
 * scan, which dumps often repeat), else None. ``tail`` is the first ", metadata={...}"
 * attribute after those, outside strings and brackets and before any comment, its value
 * closed and followed by ',' or the end (None when there is none; in attributes longer than
 * 1,024 characters, only a last one that ends them is cut, and no name); ``callees`` the names
 * (without '%') that "calls=" and "to_apply=" attributes there name, each a name alone
 * followed by ',' or the end (None when there are none, or more than four); ``rest`` the
 * attribute text after those without ``tail`` and with each of those names written '%'
 * (so that lines calling different computations share it). ``rest`` and ``callees`` are
 * None when the instruction has no attributes. ``written`` is the instruction's text,
 * from its name to ``end``.
 *
 * A computation's head on one line as XLA prints it is scanned in this form, after any
 * ' ', '\t', '\r' and '\n':
 *
 *   head  := [ 'ENTRY' ws+ ] name ws* [ '(' [ param (',' ws* param)* ] ')' ws* '->' ws*
 *            result ] ws* '{' ws* '\n'
 *   param := (letter | '_') namechar* ':' ws* type '[' (no ']' or '\n')* ']'
 *            [ '{' (no '}' or '\n')* '}' ]                     type := [a-z][a-z0-9]*
 *
 * where ``result`` is the rest of the line up to its last '{' (which only ws follows), ws
 * around it left out, and not empty.
 *
 *   scan_head(text, pos) -> (end, entry, name, name_end, signature, result, result_end,
 *                            shapes) or None
 *
 * gives the offsets of the head's '\n', of ENTRY (-1 without), of its name and past it,
 * of the signature's '(' and its result and past it (-1 without a signature), and the
 * parameters' shapes as written (the reader judges them).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_explicit_form.h"

#define GROUP_DEPTH 3 /* brackets allowed inside a group */
#define MAX_CALLEES 4 /* names of called computations cut from a line's attributes */
#define LONG_ATTRIBUTES 1024 /* attributes longer are cut at a last metadata attribute alone */

typedef struct {
    Py_ssize_t end, root, start, name_end, shape_start, shape_end, opcode_start, opcode_end,
        attributes, channel, channel_end, groups, groups_end, rest, cut, cut_end;
    int names; /* the operands' form: NAMES_ALONE, PRINTED_OPERANDS or 0 (neither) */
    int callees;
    Py_ssize_t callee_at[MAX_CALLEES], callee_end[MAX_CALLEES];
} Spans;

enum { NAMES_ALONE = 1, PRINTED_OPERANDS = 2 };

#define CH(i) (kind == PyUnicode_1BYTE_KIND   ? (Py_UCS4)((const Py_UCS1 *)d)[i]              \
               : kind == PyUnicode_2BYTE_KIND ? (Py_UCS4)((const Py_UCS2 *)d)[i]              \
                                              : ((const Py_UCS4 *)d)[i])
#define INLINE static inline __attribute__((always_inline))

INLINE int
is_letter(Py_UCS4 c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

INLINE int
is_name_char(Py_UCS4 c)
{
    return is_letter(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* A bracket, quote or '/': what may open a group, string or comment. */
INLINE int
is_special(Py_UCS4 c)
{
    return c == '{' || c == '}' || c == '(' || c == ')' || c == '[' || c == ']' || c == '"' ||
           c == '/';
}

INLINE int
is_blank(Py_UCS4 c)
{
    return c == ' ' || c == '\t';
}

/* The end of the name at i, or -1. (Reading at n gives the string's NUL, which ends any
 * run of name characters.) */
INLINE Py_ssize_t
name_end(const void *d, int kind, Py_ssize_t i)
{
    Py_ssize_t j = i + 1;
    Py_UCS4 c = CH(i);
    if (c == '%' && (is_letter(CH(j)) || CH(j) == '_'))
        j++;
    else if (!is_letter(c) && c != '_')
        return -1;
    while (is_name_char(CH(j)))
        j++;
    return j;
}

INLINE Py_UCS4
closer(Py_UCS4 c)
{
    return c == '{' ? '}' : c == '(' ? ')' : ']';
}

/* Where the items of a group opened just before i stop (at its closer, if in the form), or
 * -1 when a string or comment in them is not in the form; ``depth`` more brackets may open. */
static Py_ssize_t
items_stop(const void *d, int kind, Py_ssize_t n, Py_ssize_t i, int depth)
{
    while (i < n) {
        Py_UCS4 c = CH(i);
        if (c == '\n' || c == '}' || c == ')' || c == ']')
            return i;
        if (c == '"') {
            for (i++;; i++) {
                if (i >= n || CH(i) == '\n')
                    return -1;
                if (CH(i) == '"')
                    break;
                if (CH(i) == '\\' && (++i >= n || CH(i) == '\n'))
                    return -1;
            }
            i++;
        } else if (c == '/') {
            if (i + 1 < n && CH(i + 1) == '/')
                return -1;
            if (i + 1 < n && CH(i + 1) == '*') {
                for (i += 2;; i++) {
                    if (i >= n || CH(i) == '\n')
                        return -1;
                    if (CH(i) == '*' && i + 1 < n && CH(i + 1) == '/')
                        break;
                }
                i += 2;
            } else {
                i++;
            }
        } else if (c == '{' || c == '(' || c == '[') {
            Py_ssize_t stop;
            if (depth == 0)
                return -1;
            stop = items_stop(d, kind, n, i + 1, depth - 1);
            if (stop < 0 || stop >= n || CH(stop) != closer(c))
                return -1;
            i = stop + 1;
        } else {
            i++;
        }
    }
    return i;
}

/* The end of the group opening at i, or -1. */
INLINE Py_ssize_t
group_end(const void *d, int kind, Py_ssize_t n, Py_ssize_t i)
{
    Py_ssize_t stop = items_stop(d, kind, n, i + 1, GROUP_DEPTH);
    return (stop < 0 || stop >= n || CH(stop) != closer(CH(i))) ? -1 : stop + 1;
}

INLINE int
starts_with(const void *d, int kind, Py_ssize_t n, Py_ssize_t i, const char *prefix)
{
    for (; *prefix; prefix++, i++)
        if (i >= n || CH(i) != (Py_UCS4)(unsigned char)*prefix)
            return 0;
    return 1;
}

/* True when the operands text[i:stop] are names alone, joined by ',' and ws after it. */
INLINE int
names_alone(const void *d, int kind, Py_ssize_t i, Py_ssize_t stop)
{
    while (1) {
        i = name_end(d, kind, i);
        if (i < 0 || i > stop)
            return 0;
        if (i == stop)
            return 1;
        if (CH(i) != ',')
            return 0;
        for (i++; is_blank(CH(i)); i++)
            ;
    }
}

INLINE int
is_digit(Py_UCS4 c)
{
    return c >= '0' && c <= '9';
}

/* The end of the array shape at i as XLA prints an operand's (type '[' [0-9,]* ']' and an
 * optional layout '{' [0-9,]* '}'), or -1. */
INLINE Py_ssize_t
array_end(const void *d, int kind, Py_ssize_t i)
{
    if (!(CH(i) >= 'a' && CH(i) <= 'z'))
        return -1;
    for (i++; (CH(i) >= 'a' && CH(i) <= 'z') || is_digit(CH(i)); i++)
        ;
    if (CH(i) != '[')
        return -1;
    for (i++; is_digit(CH(i)) || CH(i) == ','; i++)
        ;
    if (CH(i) != ']')
        return -1;
    if (CH(++i) != '{')
        return i;
    for (i++; is_digit(CH(i)) || CH(i) == ','; i++)
        ;
    return CH(i) == '}' ? i + 1 : -1;
}

/* Past the ", " and optional "/\*index=N*\/" XLA prints between two items at i, or -1. */
INLINE Py_ssize_t
next_item(const void *d, int kind, Py_ssize_t n, Py_ssize_t i)
{
    Py_ssize_t digits;
    if (CH(i) != ',' || CH(i + 1) != ' ')
        return -1;
    i += 2;
    if (!starts_with(d, kind, n, i, "/*index="))
        return i;
    for (digits = i += 8; is_digit(CH(i)); i++)
        ;
    return i > digits && starts_with(d, kind, n, i, "*/") ? i + 2 : -1;
}

/* The end of the operand shape at i as XLA prints it (an array, or a tuple of arrays), or
 * -1. */
INLINE Py_ssize_t
operand_shape_end(const void *d, int kind, Py_ssize_t n, Py_ssize_t i)
{
    if (CH(i) != '(')
        return array_end(d, kind, i);
    if (CH(++i) == ')')
        return i + 1;
    while (1) {
        if ((i = array_end(d, kind, i)) < 0)
            return -1;
        if (CH(i) == ')')
            return i + 1;
        if ((i = next_item(d, kind, n, i)) < 0)
            return -1;
    }
}

/* Where the name of the operand at i starts, past its shape and one ' ' when XLA printed
 * one there; i otherwise. */
INLINE Py_ssize_t
past_operand_shape(const void *d, int kind, Py_ssize_t n, Py_ssize_t i)
{
    Py_ssize_t j = operand_shape_end(d, kind, n, i);
    return j >= 0 && CH(j) == ' ' ? j + 1 : i;
}

/* True when the operands text[i:stop] are as XLA prints them with operand shapes: each
 * [shape ' '] '%' name, joined by ", " and an optional "/\*index=N*\/". */
INLINE int
printed_operands(const void *d, int kind, Py_ssize_t n, Py_ssize_t i, Py_ssize_t stop)
{
    while (1) {
        i = past_operand_shape(d, kind, n, i);
        if (CH(i) != '%' || (i = name_end(d, kind, i)) < 0 || i > stop)
            return 0;
        if (i == stop)
            return 1;
        if ((i = next_item(d, kind, n, i)) < 0)
            return 0;
    }
}

/* The offset of the first '\n' at or after i, or n. */
INLINE Py_ssize_t
line_end(const void *d, int kind, Py_ssize_t n, Py_ssize_t i)
{
    if (kind == PyUnicode_1BYTE_KIND) {
        const char *found = i < n ? memchr((const char *)d + i, '\n', (size_t)(n - i)) : NULL;
        return found == NULL ? n : found - (const char *)d;
    }
    while (i < n && CH(i) != '\n')
        i++;
    return i;
}

INLINE int
same_text(const void *d, int kind, Py_ssize_t a, Py_ssize_t b, Py_ssize_t length)
{
    return memcmp((const char *)d + a * kind, (const char *)d + b * kind,
                  (size_t)(length * kind)) == 0;
}

/* True when text[i:stop] holds ``needle`` (ASCII). */
INLINE int
has_text(const void *d, int kind, Py_ssize_t i, Py_ssize_t stop, const char *needle)
{
    Py_ssize_t length = (Py_ssize_t)strlen(needle);
    if (kind == PyUnicode_1BYTE_KIND) { /* memchr finds each candidate first character */
        const char *at = (const char *)d + i, *end = (const char *)d + stop;
        while (end - at >= length && (at = memchr(at, needle[0], (size_t)(end - at))) != NULL) {
            if (end - at >= length && memcmp(at, needle, (size_t)length) == 0)
                return 1;
            at++;
        }
        return 0;
    }
    for (; i + length <= stop; i++)
        if (starts_with(d, kind, stop, i, needle))
            return 1;
    return 0;
}

/* The end of the name of a computation called by "calls=" or "to_apply=" at the ',' at i
 * (the key after ws*, the name after ws* as name_end reads it, followed by ',' or stop), its
 * start in *at; -1 when there is none. */
INLINE Py_ssize_t
callee_end(const void *d, int kind, Py_ssize_t i, Py_ssize_t stop, Py_ssize_t *at)
{
    Py_ssize_t j;
    for (i++; i < stop && is_blank(CH(i)); i++)
        ;
    if (starts_with(d, kind, stop, i, "calls="))
        i += 6;
    else if (starts_with(d, kind, stop, i, "to_apply="))
        i += 9;
    else
        return -1;
    while (i < stop && is_blank(CH(i)))
        i++;
    *at = i;
    if (i >= stop || (j = name_end(d, kind, i)) < 0 || j > stop)
        return -1;
    return j == stop || CH(j) == ',' ? j : -1;
}

/* In the attribute text text[i:stop], outside strings and brackets and before any comment:
 * the first ", metadata={...}" attribute, its value closed on the line and followed by ','
 * or stop (its span into s->cut and s->cut_end; none leaves s->cut at -1), and the names
 * called by "calls=" and "to_apply=" (at most MAX_CALLEES, their spans into s->callee_at and
 * s->callee_end; s->callees counts them, 0 when there are more). */
INLINE void
attribute_cuts(const void *d, int kind, Py_ssize_t i, Py_ssize_t stop, Spans *s)
{
    while (i < stop) {
        Py_UCS4 c = CH(i);
        Py_ssize_t end, at;
        if (c == ',' && s->cut < 0 && starts_with(d, kind, stop, i, ", metadata={")) {
            end = group_end(d, kind, stop, i + 11);
            if (end < 0)
                return;
            if (end == stop || CH(end) == ',') {
                s->cut = i;
                s->cut_end = end;
            }
            i = end;
        } else if (c == ',' && (end = callee_end(d, kind, i, stop, &at)) >= 0) {
            if (s->callees == MAX_CALLEES) {
                s->callees = 0;
                return;
            }
            s->callee_at[s->callees] = at;
            s->callee_end[s->callees++] = end;
            i = end;
        } else if (c == '{' || c == '(' || c == '[') {
            if ((i = group_end(d, kind, stop, i)) < 0)
                return;
        } else if (c == '"') {
            for (i++; i < stop && CH(i) != '"'; i++)
                if (CH(i) == '\\')
                    i++;
            if (i++ >= stop)
                return;
        } else if (c == '/' && i + 1 < stop && (CH(i + 1) == '/' || CH(i + 1) == '*')) {
            return; /* a comment */
        } else {
            i++;
        }
    }
}

/* The line at pos in the form, its spans in s; 0 when it is not in the form. */
INLINE int
scan(const void *d, int kind, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t last,
     Py_ssize_t last_stop, Spans *s)
{
    Py_ssize_t i = pos, j;
    int ends;
    while (is_blank(CH(i)))
        i++;
    s->root = -1;
    if (starts_with(d, kind, n, i, "ROOT") && is_blank(CH(i + 4))) {
        s->root = i;
        for (i += 4; is_blank(CH(i)); i++)
            ;
    }
    s->start = i;
    if ((s->name_end = i = name_end(d, kind, i)) < 0)
        return 0;
    if (i - s->start == 4 && starts_with(d, kind, n, s->start, "ROOT"))
        return 0; /* a keyword, not a name */
    j = s->start + (CH(s->start) == '%');
    if (starts_with(d, kind, n, j, "__") && !starts_with(d, kind, n, j, "__xla_"))
        return 0; /* a name XLA renames (its prefix is the backends'): the general reader's */
    if (CH(s->start) != '%' && CH(i) == '=')
        return 0; /* the lexer reads "name=" as an attribute's name */
    while (is_blank(CH(i)))
        i++;
    if (CH(i) != '=')
        return 0;
    for (i++; is_blank(CH(i)); i++)
        ;
    s->shape_start = i;
    if (CH(i) == '(') {
        if ((i = group_end(d, kind, n, i)) < 0)
            return 0;
    } else {
        if (!(CH(i) >= 'a' && CH(i) <= 'z'))
            return 0;
        for (i++; (CH(i) >= 'a' && CH(i) <= 'z') || (CH(i) >= '0' && CH(i) <= '9'); i++)
            ;
        if (CH(i) != '[')
            return 0;
        for (i++; i < n && !is_special(CH(i)) && CH(i) != '\n'; i++)
            ;
        if (i >= n || CH(i) != ']')
            return 0; /* a bracket, string or comment in the dimensions is the general reader's */
        i++;
        if (CH(i) == '{' && (i = group_end(d, kind, n, i)) < 0)
            return 0;
    }
    s->shape_end = i;
    if (!is_blank(CH(i)))
        return 0;
    while (is_blank(CH(i)))
        i++;
    s->opcode_start = i;
    if (!(CH(i) >= 'a' && CH(i) <= 'z'))
        return 0;
    for (i++; (CH(i) >= 'a' && CH(i) <= 'z') || (CH(i) >= '0' && CH(i) <= '9') || CH(i) == '-';
         i++)
        ;
    s->opcode_end = i;
    if (CH(i) != '(' || (j = group_end(d, kind, n, i)) < 0 || CH(j - 1) != ')')
        return 0;
    s->names = names_alone(d, kind, i + 1, j - 1)           ? NAMES_ALONE
               : printed_operands(d, kind, n, i + 1, j - 1) ? PRINTED_OPERANDS
                                                             : 0;
    s->attributes = s->rest = i = j;
    s->channel = -1;
    if (CH(i) == ',') { /* a leading channel id */
        for (j = i + 1; is_blank(CH(j)); j++)
            ;
        if (starts_with(d, kind, n, j, "channel_id=")) {
            Py_ssize_t digits;
            for (j += 11; is_blank(CH(j)); j++)
                ;
            for (digits = j; CH(j) >= '0' && CH(j) <= '9'; j++)
                ;
            if (j > digits && j - digits <= MAX_DIGITS) {
                Py_ssize_t after = j, k;
                while (is_blank(CH(after)))
                    after++;
                for (k = after; is_blank(CH(k)) || CH(k) == '\r'; k++)
                    ;
                if (CH(after) == ',' || (k < n && CH(k) == '\n')) {
                    s->channel = digits;
                    s->channel_end = j;
                    s->rest = after;
                }
            }
        }
    }
    j = line_end(d, kind, n, s->rest);
    if (j >= n)
        return 0;
    /* The next line starts another statement. */
    for (i = j + 1; is_blank(CH(i)); i++)
        ;
    if (CH(i) == 'T') {
        for (i++; is_name_char(CH(i)); i++)
            ;
        while (is_blank(CH(i)))
            i++;
        if (CH(i) != '=')
            return 0;
    } else if (!(CH(i) == '%' || CH(i) == '}' || CH(i) == '_' || is_letter(CH(i)))) {
        return 0;
    }
    while (j > s->attributes && (is_blank(CH(j - 1)) || CH(j - 1) == '\r'))
        j--;
    s->end = j;
    s->groups = -1;
    s->cut = -1;
    if (s->rest > j)
        s->rest = j;
    if (s->end == s->attributes)
        return 1;
    if (starts_with(d, kind, j, s->rest, ", replica_groups=")) {
        Py_ssize_t at = s->rest + 17, stop, after, count = 0, groups = 0;
        if (last >= 0 && at + (last_stop - last) <= j &&
            same_text(d, kind, last, at, last_stop - last))
            stop = at + (last_stop - last);
        else
            stop = explicit_form(d, kind, n, at, NULL, NULL, &count, &groups);
        for (after = stop; after < j && is_blank(CH(after)); after++)
            ;
        if (stop > 0 && stop <= j && (after == j || CH(after) == ',')) {
            s->groups = at;
            s->groups_end = stop;
            s->rest = after;
        }
    }
    /* Long attributes, and those calling no computation by name whose last metadata
     * attribute ends them (most lines), are cut at that metadata alone without reading the
     * rest. */
    for (i = j - 12; i >= s->rest; i--) {
        if (CH(i) == ',' && starts_with(d, kind, j, i, ", metadata={"))
            break;
    }
    ends = i >= s->rest && group_end(d, kind, j, i + 11) == j; /* a metadata ends them */
    if (j - s->rest > LONG_ATTRIBUTES ||
        (!has_text(d, kind, s->rest, j, "calls=") && !has_text(d, kind, s->rest, j, "to_apply=") &&
         (i < s->rest || ends))) {
        if (ends) {
            s->cut = i;
            s->cut_end = j;
        }
        return 1;
    }
    attribute_cuts(d, kind, s->rest, j, s);
    return 1;
}

static int
scan_any(PyObject *text, Py_ssize_t pos, Py_ssize_t last, Py_ssize_t last_stop, Spans *s)
{
    const void *d = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (pos < 0 || pos > n || last < -1 || last_stop < last || last_stop > n)
        return 0;
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        return scan(d, PyUnicode_1BYTE_KIND, n, pos, last, last_stop, s);
    case PyUnicode_2BYTE_KIND:
        return scan(d, PyUnicode_2BYTE_KIND, n, pos, last, last_stop, s);
    default:
        return scan(d, PyUnicode_4BYTE_KIND, n, pos, last, last_stop, s);
    }
}

/* The start of the operand after the one whose name ends at end, in the operands' form. */
INLINE Py_ssize_t
next_operand(const void *d, int kind, Py_ssize_t n, Py_ssize_t end, int form)
{
    if (form == PRINTED_OPERANDS)
        return next_item(d, kind, n, end);
    for (end++; is_blank(CH(end)); end++)
        ;
    return end;
}

/* The operand names (without '%') and shapes of text[i:stop] in the form ``form``, into the
 * new tuples *names and *shapes (empty when no shape is written), and into *printed whether
 * the text is the names as XLA prints them ('%' before each, ", " between); -1 on error. */
static int
operand_list(PyObject *text, Py_ssize_t i, Py_ssize_t stop, int form, PyObject **names,
             PyObject **shapes, int *printed)
{
    const void *d = PyUnicode_DATA(text);
    int kind = PyUnicode_KIND(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), count = 0, shaped = 0, at, end, k;
    for (at = i;; at = next_operand(d, kind, n, end, form), count++) { /* count them first */
        Py_ssize_t name = form == PRINTED_OPERANDS ? past_operand_shape(d, kind, n, at) : at;
        shaped |= name > at;
        if ((end = name_end(d, kind, name)) >= stop) {
            count++;
            break;
        }
    }
    *names = PyTuple_New(count);
    *shapes = PyTuple_New(shaped ? count : 0);
    *printed = !shaped;
    for (k = 0, at = i; *names != NULL && *shapes != NULL && k < count; k++) {
        Py_ssize_t name = form == PRINTED_OPERANDS ? past_operand_shape(d, kind, n, at) : at;
        PyObject *item;
        end = name_end(d, kind, name);
        *printed &= CH(name) == '%' &&
                    (k == count - 1 ? end == stop : CH(end) == ',' && CH(end + 1) == ' ' &&
                                                        end + 2 < stop && CH(end + 2) == '%');
        if ((item = PyUnicode_Substring(text, name + (CH(name) == '%'), end)) == NULL)
            break;
        PyTuple_SET_ITEM(*names, k, item);
        if (shaped) {
            if ((item = name > at ? PyUnicode_Substring(text, at, name - 1)
                                  : Py_NewRef(Py_None)) == NULL)
                break;
            PyTuple_SET_ITEM(*shapes, k, item);
        }
        at = next_operand(d, kind, n, end, form);
    }
    if (k == count && *names != NULL && *shapes != NULL)
        return 0;
    Py_CLEAR(*names);
    Py_CLEAR(*shapes);
    return -1;
}

/* Texts a dump repeats on many lines (opcodes, shapes, attribute lists, metadata), kept by
 * content: a span equal to one kept is that string again, so it is neither allocated again
 * nor hashed again by the dictionaries that look it up. A slot holds the last text whose
 * content hashed to it. */
#define KEPT_SLOTS 4096
#define KEPT_LONGEST 256
static PyObject *kept_texts[KEPT_SLOTS];

/* text[start:stop] (a new reference): the kept string of that content, else a new one,
 * kept. */
static PyObject *
kept_span(PyObject *text, Py_ssize_t start, Py_ssize_t stop)
{
    const Py_UCS1 *in;
    Py_ssize_t length = stop - start, k;
    size_t hash = 2166136261u;
    PyObject **slot, *found;
    if (!PyUnicode_IS_ASCII(text) || length <= 0 || length > KEPT_LONGEST)
        return PyUnicode_Substring(text, start, stop);
    in = PyUnicode_1BYTE_DATA(text) + start;
    for (k = 0; k < length; k++)
        hash = (hash ^ in[k]) * 16777619u;
    slot = &kept_texts[(hash ^ (size_t)length) % KEPT_SLOTS];
    found = *slot;
    if (found != NULL && PyUnicode_GET_LENGTH(found) == length &&
        memcmp(PyUnicode_1BYTE_DATA(found), in, (size_t)length) == 0)
        return Py_NewRef(found);
    if ((found = PyUnicode_Substring(text, start, stop)) == NULL)
        return NULL;
    Py_XSETREF(*slot, Py_NewRef(found));
    return found;
}

static PyObject *
span_or_none(PyObject *text, Py_ssize_t start, Py_ssize_t stop)
{
    if (start < 0)
        Py_RETURN_NONE;
    return kept_span(text, start, stop);
}

/* The spans of text[s->rest:s->end] kept around the metadata attribute and the called
 * names s cuts, into kept (start, stop pairs, in order; a called name follows each span
 * but the last that ends where one starts); their count of numbers. */
static Py_ssize_t
kept_spans(const Spans *s, Py_ssize_t *kept)
{
    Py_ssize_t at = s->rest, count = 0;
    int c = 0, cut_done = s->cut < 0;
    while (1) {
        Py_ssize_t next = c < s->callees ? s->callee_at[c] : s->end;
        if (!cut_done && s->cut < next) {
            kept[count++] = at;
            kept[count++] = s->cut;
            at = s->cut_end;
            cut_done = 1;
            continue;
        }
        kept[count++] = at;
        kept[count++] = next;
        if (c == s->callees)
            return count;
        at = s->callee_end[c++];
    }
}

/* The attribute text text[s->rest:s->end] without the metadata attribute s->cut cuts, each
 * called name written '%' (a new string; an ASCII text's written into it at once), or
 * NULL. */
static PyObject *
open_rest(PyObject *text, const Spans *s)
{
    Py_ssize_t kept[2 * (MAX_CALLEES + 2)], count, length = 0, k;
    int c = 0;
    PyObject *open = NULL, *pieces, *piece, *joined = NULL;
    if (s->cut < 0 && s->callees == 0)
        return kept_span(text, s->rest, s->end);
    count = kept_spans(s, kept);
    if (PyUnicode_IS_ASCII(text)) {
        const Py_UCS1 *in = PyUnicode_1BYTE_DATA(text);
        Py_UCS1 *out;
        for (k = 0; k < count; k += 2)
            length += kept[k + 1] - kept[k];
        if ((open = PyUnicode_New(length + s->callees, 127)) == NULL)
            return NULL;
        out = PyUnicode_1BYTE_DATA(open);
        for (k = 0; k < count; k += 2) {
            memcpy(out, in + kept[k], (size_t)(kept[k + 1] - kept[k]));
            out += kept[k + 1] - kept[k];
            if (c < s->callees && kept[k + 1] == s->callee_at[c]) { /* a name written '%' */
                *out++ = '%';
                c++;
            }
        }
        return open;
    }
    if ((pieces = PyList_New(0)) == NULL)
        return NULL;
    for (k = 0; k < count; k += 2) {
        if ((piece = PyUnicode_Substring(text, kept[k], kept[k + 1])) == NULL ||
            PyList_Append(pieces, piece) < 0) {
            Py_XDECREF(piece);
            Py_DECREF(pieces);
            return NULL;
        }
        Py_DECREF(piece);
        if (c < s->callees && kept[k + 1] == s->callee_at[c]) {
            if ((piece = PyUnicode_FromString("%")) == NULL || PyList_Append(pieces, piece) < 0) {
                Py_XDECREF(piece);
                Py_DECREF(pieces);
                return NULL;
            }
            Py_DECREF(piece);
            c++;
        }
    }
    if ((open = PyUnicode_New(0, 0)) != NULL)
        joined = PyUnicode_Join(open, pieces);
    Py_XDECREF(open);
    Py_DECREF(pieces);
    return joined;
}

/* The names s->callee_at/s->callee_end span, without '%' (a new tuple), or None. */
static PyObject *
callee_names(PyObject *text, const Spans *s)
{
    PyObject *names;
    int k;
    if (s->callees == 0)
        Py_RETURN_NONE;
    if ((names = PyTuple_New(s->callees)) == NULL)
        return NULL;
    for (k = 0; k < s->callees; k++) {
        Py_ssize_t at = s->callee_at[k];
        PyObject *name = PyUnicode_Substring(
            text, at + (PyUnicode_READ_CHAR(text, at) == '%'), s->callee_end[k]);
        if (name == NULL) {
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, k, name);
    }
    return names;
}

#define ITEMS 16 /* of a scanned line */

/* The scanned line of the spans s of the line starting at pos (a new tuple), or NULL. */
static PyObject *
scanned_line(PyObject *text, Py_ssize_t pos, const Spans *s)
{
    int has_attributes = s->end > s->attributes, printed = 0;
    Py_ssize_t k;
    PyObject *found, *items[ITEMS], *opcode;
    opcode = kept_span(text, s->opcode_start, s->opcode_end);
    items[0] = PyLong_FromSsize_t(s->end);
    items[1] = PyLong_FromSsize_t(s->root < 0 ? -1 : s->root - pos + 1);
    items[2] = PyLong_FromSsize_t(s->start - pos + 1);
    items[3] = PyUnicode_Substring(text, s->start + (PyUnicode_READ_CHAR(text, s->start) == '%'),
                                   s->name_end);
    items[4] = opcode;
    items[5] = kept_span(text, s->shape_start, s->shape_end);
    if (!s->names) {
        items[7] = Py_NewRef(Py_None);
        items[8] = PyTuple_New(0);
    } else if (operand_list(text, s->opcode_end + 1, s->attributes - 1, s->names, &items[7],
                            &items[8], &printed) < 0) {
        items[7] = items[8] = NULL;
    }
    /* None when the names as printed are the text (the instruction joins them on use) */
    items[6] = printed ? Py_NewRef(Py_None)
                       : PyUnicode_Substring(text, s->opcode_end + 1, s->attributes - 1);
    items[9] = PyLong_FromSsize_t(s->attributes - s->start);
    items[10] = span_or_none(text, s->channel, s->channel_end);
    items[11] = s->groups < 0 ? Py_NewRef(Py_None)
                              : Py_BuildValue("(nn)", s->groups - s->start,
                                              s->groups_end - s->start);
    items[12] = has_attributes ? open_rest(text, s) : Py_NewRef(Py_None);
    items[13] = span_or_none(text, has_attributes ? s->cut : -1, s->cut_end);
    items[14] = PyUnicode_Substring(text, s->start, s->end);
    items[15] = has_attributes ? callee_names(text, s) : Py_NewRef(Py_None);
    found = PyTuple_New(ITEMS);
    for (k = 0; k < ITEMS; k++) {
        if (items[k] == NULL || found == NULL) {
            for (k = 0; k < ITEMS; k++)
                Py_XDECREF(items[k]);
            Py_XDECREF(found);
            return NULL;
        }
    }
    for (k = 0; k < ITEMS; k++)
        PyTuple_SET_ITEM(found, k, items[k]);
    return found;
}

static PyObject *
scan_lines(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos, most, last = -1, last_stop = -1, n;
    PyObject *text, *found;
    if (nargs != 3 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "scan_lines(text: str, pos: int, most: int)");
        return NULL;
    }
    text = args[0];
    n = PyUnicode_GET_LENGTH(text);
    pos = PyLong_AsSsize_t(args[1]);
    most = PyLong_AsSsize_t(args[2]);
    if ((pos == -1 || most == -1) && PyErr_Occurred())
        return NULL;
    if ((found = PyList_New(0)) == NULL)
        return NULL;
    while (pos >= 0 && pos < n && PyUnicode_READ_CHAR(text, pos) == '\n' &&
           PyList_GET_SIZE(found) < most) {
        Spans s = {0};
        PyObject *line;
        if (!scan_any(text, pos + 1, last, last_stop, &s))
            break;
        if ((line = scanned_line(text, pos + 1, &s)) == NULL || PyList_Append(found, line) < 0) {
            Py_XDECREF(line);
            Py_DECREF(found);
            return NULL;
        }
        Py_DECREF(line);
        if (s.groups >= 0) { /* the next line's groups are compared with these first */
            last = s.groups;
            last_stop = s.groups_end;
        }
        pos = s.end;
    }
    return found;
}

/* The end of the array shape at i as a computation's head cuts a parameter's (a type
 * [a-z][a-z0-9]*, '[', anything but ']' or '\n', ']', and an optional layout '{', anything
 * but '}' or '\n', '}'), or -1. */
INLINE Py_ssize_t
parameter_shape_end(const void *d, int kind, Py_ssize_t n, Py_ssize_t i)
{
    if (!(CH(i) >= 'a' && CH(i) <= 'z'))
        return -1;
    for (i++; (CH(i) >= 'a' && CH(i) <= 'z') || is_digit(CH(i)); i++)
        ;
    if (CH(i) != '[')
        return -1;
    for (i++; i < n && CH(i) != ']'; i++)
        if (CH(i) == '\n')
            return -1;
    if (i >= n)
        return -1;
    if (CH(++i) != '{')
        return i;
    for (i++; i < n && CH(i) != '}'; i++)
        if (CH(i) == '\n')
            return -1;
    return i < n ? i + 1 : -1;
}

/* scan_head(text, pos): the computation head at pos in its form (see the top), or None.
 * (Reading at n gives the string's NUL, which only a parameter shape's brackets may hold:
 * they stop at n.) */
static PyObject *
scan_head(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos, n, i, entry = -1, name, name_stop, signature = -1, result = -1,
                          result_stop = -1, line_end, k;
    const void *d;
    int kind;
    PyObject *shapes, *found;
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "scan_head(text: str, pos: int)");
        return NULL;
    }
    n = PyUnicode_GET_LENGTH(args[0]);
    pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    if (pos < 0 || pos > n)
        Py_RETURN_NONE;
    d = PyUnicode_DATA(args[0]);
    kind = PyUnicode_KIND(args[0]);
    for (i = pos; i < n && (is_blank(CH(i)) || CH(i) == '\r' || CH(i) == '\n'); i++)
        ;
    if (i < n && starts_with(d, kind, n, i, "ENTRY") && is_blank(CH(i + 5))) {
        entry = i;
        for (i += 5; is_blank(CH(i)); i++)
            ;
    }
    if (entry >= 0 && (i >= n || name_end(d, kind, i) < 0))
        i = entry, entry = -1; /* no name after it: ENTRY is the name */
    name = i;
    if (i >= n || (name_stop = name_end(d, kind, i)) < 0)
        Py_RETURN_NONE;
    for (i = name_stop; is_blank(CH(i)); i++)
        ;
    if ((shapes = PyList_New(0)) == NULL)
        return NULL;
    if (CH(i) == '(') {
        signature = i++;
        while (CH(i) != ')') {
            Py_ssize_t shape;
            PyObject *text;
            if (!is_letter(CH(i)) && CH(i) != '_')
                goto none;
            for (i++; is_name_char(CH(i)); i++)
                ;
            if (CH(i) != ':')
                goto none;
            for (i++; is_blank(CH(i)); i++)
                ;
            shape = i;
            if ((i = parameter_shape_end(d, kind, n, i)) < 0)
                goto none;
            if ((text = kept_span(args[0], shape, i)) == NULL || PyList_Append(shapes, text) < 0) {
                Py_XDECREF(text);
                Py_DECREF(shapes);
                return NULL;
            }
            Py_DECREF(text);
            if (CH(i) == ')')
                break;
            if (CH(i) != ',')
                goto none;
            for (i++; is_blank(CH(i)); i++)
                ;
            if (CH(i) == ')')
                goto none;
        }
        for (i++; is_blank(CH(i)); i++)
            ;
        if (CH(i) != '-' || CH(i + 1) != '>')
            goto none;
        for (i += 2; is_blank(CH(i)); i++)
            ;
        result = i;
    }
    for (line_end = i; line_end < n && CH(line_end) != '\n'; line_end++)
        ;
    if (line_end >= n)
        goto none;
    for (k = line_end; k > i && is_blank(CH(k - 1)); k--)
        ;
    if (k == i || CH(k - 1) != '{')
        goto none;
    if (result >= 0) {
        for (result_stop = k - 1; result_stop > result && is_blank(CH(result_stop - 1));
             result_stop--)
            ;
        if (result_stop == result)
            goto none;
    }
    else if (CH(i) != '{' || k != i + 1)
        goto none; /* the brace alone after the name */
    {
        Py_ssize_t offsets[] = {line_end, entry, name, name_stop, signature, result, result_stop};
        if ((found = PyTuple_New(8)) == NULL) {
            Py_DECREF(shapes);
            return NULL;
        }
        for (k = 0; k < 7; k++) {
            PyObject *offset = PyLong_FromSsize_t(offsets[k]);
            if (offset == NULL) {
                Py_DECREF(found);
                Py_DECREF(shapes);
                return NULL;
            }
            PyTuple_SET_ITEM(found, k, offset);
        }
        PyTuple_SET_ITEM(found, 7, PyList_AsTuple(shapes));
        Py_DECREF(shapes);
        if (PyTuple_GET_ITEM(found, 7) == NULL) {
            Py_DECREF(found);
            return NULL;
        }
        return found;
    }
none:
    Py_DECREF(shapes);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"scan_lines", (PyCFunction)(void (*)(void))scan_lines, METH_FASTCALL,
     "scan_lines(text, pos, most): the scanned lines after the '\\n' at pos, one after the "
     "other while each is in the form (at most most)."},
    {"scan_head", (PyCFunction)(void (*)(void))scan_head, METH_FASTCALL,
     "scan_head(text, pos): the computation head after white space at pos when in the form, "
     "else None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_line_scan",
    "Instructions written one a line as XLA prints them, scanned into their texts and spans.",
    -1, methods,
};

PyMODINIT_FUNC
PyInit__line_scan(void)
{
    return PyModule_Create(&module_def);
}
