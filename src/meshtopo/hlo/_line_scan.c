/* One instruction written on one line as XLA prints it, scanned in one pass.
 *
 * The reader's fast path (``_reader``) reads runs of such lines through this scanner and
 * every other text through its general reader; the scanner decides only how quickly a line
 * is read. It takes a line only in this form (white space is ' ' or '\t' alone):
 *
 *   line  := ws* [ 'ROOT' ws+ ] name ws* '=' ws* shape ws+ opcode '(' operands ')' attrs '\n'
 *   shape := type '[' (not ']' or '\n')* ']' [ group ]  |  '(' items ')'
 *   name  := '%' namechar+  |  (letter | '_') namechar*       namechar := [A-Za-z0-9_.-]
 *   attrs := [ ',' ws* 'channel_id=' ws* 1-18 digits ws* ] (not '\n')*
 *
 * where a group is a bracketed run on the line, at most 4 brackets deep, with strings and
 * comments as the lexer reads them (an unterminated one, or '//', is not in the form), and
 * the channel id counts only when a ',' or the end of the line follows it. The next line
 * must start another statement: after ws*, '%', '}', a letter or '_' (a word starting with
 * 'T' only when '=' follows it, which no iota's 'T(' continuation is). Anything else, and a
 * line whose name is the keyword ROOT, is declined (None) for the general reader to read.
 *
 *   scan_line(text, pos, last) -> tuple | None
 *
 * gives, for the line starting at ``pos``: (end, root, column, name, opcode, shape,
 * operands, names, attributes, channel, groups, rest, tail, written). ``end`` is where the
 * instruction ends (the line without trailing ' ', '\t', '\r'), ``root`` the 1-based column
 * of ROOT (-1 without), ``column`` that of the name, ``name`` the name without '%' and
 * ``opcode`` the opcode (interned: a dump has few), ``operands`` the text between the
 * parentheses, ``names`` the operand names without '%' when the operands are names alone
 * (comma-separated, ws after commas) and None otherwise, ``attributes`` the offset from the
 * name to just past ')', ``channel`` the digits of a leading channel id or None. ``groups``
 * is the (start, stop), from the name, of explicit replica groups in XLA's printed form
 * written right after it as ", replica_groups=" and followed by ',' or the end (compared
 * first with ``last``, the (start, stop) in the text of the line before's), else None.
 * ``rest`` is the attribute text after those and ``tail`` its last ", metadata={" attribute
 * onwards (None when it has none); ``rest`` is None when the instruction has no attributes.
 * ``written`` is the instruction's text, from its name to ``end``.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_explicit_form.h"

#define GROUP_DEPTH 3 /* brackets allowed inside a group */

typedef struct {
    Py_ssize_t end, root, start, name_end, shape_start, shape_end, opcode_start, opcode_end,
        attributes, channel, channel_end, groups, groups_end, rest, cut;
    int names; /* the operands are names alone */
} Spans;

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
    if (c != '%' && !is_letter(c) && c != '_')
        return -1;
    while (is_name_char(CH(j)))
        j++;
    return (c == '%' && j == i + 1) ? -1 : j;
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
same_text(const void *d, int kind, Py_ssize_t a, Py_ssize_t b, Py_ssize_t length)
{
    return memcmp((const char *)d + a * kind, (const char *)d + b * kind,
                  (size_t)(length * kind)) == 0;
}

/* The line at pos in the form, its spans in s; 0 when it is not in the form. */
INLINE int
scan(const void *d, int kind, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t last,
     Py_ssize_t last_stop, Spans *s)
{
    Py_ssize_t i = pos, j;
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
        for (i++; i < n && CH(i) != ']' && CH(i) != '\n'; i++)
            ;
        if (i >= n || CH(i) != ']')
            return 0;
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
    s->names = names_alone(d, kind, i + 1, j - 1);
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
    for (j = s->rest; j < n && CH(j) != '\n'; j++)
        ;
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
        Py_ssize_t at = s->rest + 17, stop, after, count, groups;
        if (last >= 0 && at + (last_stop - last) <= j &&
            same_text(d, kind, last, at, last_stop - last))
            stop = at + (last_stop - last);
        else
            stop = explicit_form(d, kind, at, NULL, NULL, &count, &groups);
        for (after = stop; after < j && is_blank(CH(after)); after++)
            ;
        if (stop > 0 && stop <= j && (after == j || CH(after) == ',')) {
            s->groups = at;
            s->groups_end = stop;
            s->rest = after;
        }
    }
    for (i = j - 12; i >= s->rest; i--) { /* the last ", metadata={" */
        if (CH(i) == ',' && starts_with(d, kind, j, i, ", metadata={")) {
            s->cut = i;
            break;
        }
    }
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

/* The operand names of text[i:stop] (names alone), without '%'. */
static PyObject *
operand_names(PyObject *text, Py_ssize_t i, Py_ssize_t stop)
{
    const void *d = PyUnicode_DATA(text);
    int kind = PyUnicode_KIND(text);
    PyObject *names = PyList_New(0), *name, *found;
    if (names == NULL)
        return NULL;
    while (1) {
        Py_ssize_t end = name_end(d, kind, i);
        name = PyUnicode_Substring(text, i + (CH(i) == '%'), end);
        if (name == NULL || PyList_Append(names, name) < 0) {
            Py_XDECREF(name);
            Py_DECREF(names);
            return NULL;
        }
        Py_DECREF(name);
        if (end >= stop)
            break;
        for (i = end + 1; is_blank(CH(i)); i++)
            ;
    }
    found = PyList_AsTuple(names);
    Py_DECREF(names);
    return found;
}

static PyObject *
span_or_none(PyObject *text, Py_ssize_t start, Py_ssize_t stop)
{
    if (start < 0)
        Py_RETURN_NONE;
    return PyUnicode_Substring(text, start, stop);
}

static PyObject *
scan_line(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos, last = -1, last_stop = -1, k;
    PyObject *text, *found, *items[14];
    Spans s;
    if (nargs != 3 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError,
                        "scan_line(text: str, pos: int, last: tuple[int, int] | None)");
        return NULL;
    }
    text = args[0];
    pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    if (args[2] != Py_None) {
        if (!PyArg_ParseTuple(args[2], "nn", &last, &last_stop))
            return NULL;
    }
    if (!scan_any(text, pos, last, last_stop, &s))
        Py_RETURN_NONE;
    {
        const void *d = PyUnicode_DATA(text);
        int kind = PyUnicode_KIND(text);
        int percent = CH(s.start) == '%';
        int has_attributes = s.end > s.attributes;
        items[0] = PyLong_FromSsize_t(s.end);
        items[1] = PyLong_FromSsize_t(s.root < 0 ? -1 : s.root - pos + 1);
        items[2] = PyLong_FromSsize_t(s.start - pos + 1);
        items[3] = PyUnicode_Substring(text, s.start + percent, s.name_end);
        items[4] = PyUnicode_Substring(text, s.opcode_start, s.opcode_end);
        if (items[4] != NULL)
            PyUnicode_InternInPlace(&items[4]);
        items[5] = PyUnicode_Substring(text, s.shape_start, s.shape_end);
        items[6] = PyUnicode_Substring(text, s.opcode_end + 1, s.attributes - 1);
        if (s.names)
            items[7] = operand_names(text, s.opcode_end + 1, s.attributes - 1);
        else
            items[7] = Py_NewRef(Py_None);
        items[8] = PyLong_FromSsize_t(s.attributes - s.start);
        items[9] = span_or_none(text, s.channel, s.channel_end);
        if (s.groups >= 0)
            items[10] = Py_BuildValue("(nn)", s.groups - s.start, s.groups_end - s.start);
        else
            items[10] = Py_NewRef(Py_None);
        if (has_attributes)
            items[11] = PyUnicode_Substring(text, s.rest, s.cut >= 0 ? s.cut : s.end);
        else
            items[11] = Py_NewRef(Py_None);
        items[12] = span_or_none(text, has_attributes ? s.cut : -1, s.end);
        items[13] = PyUnicode_Substring(text, s.start, s.end);
    }
    found = PyTuple_New(14);
    for (k = 0; k < 14; k++) {
        if (items[k] == NULL || found == NULL) {
            for (k = 0; k < 14; k++)
                Py_XDECREF(items[k]);
            Py_XDECREF(found);
            return NULL;
        }
    }
    for (k = 0; k < 14; k++)
        PyTuple_SET_ITEM(found, k, items[k]);
    return found;
}

static PyMethodDef methods[] = {
    {"scan_line", (PyCFunction)(void (*)(void))scan_line, METH_FASTCALL,
     "scan_line(text, pos, last): the spans and texts of the one-line instruction at pos in "
     "XLA's printed form, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_line_scan",
    "One instruction written on one line as XLA prints it, scanned in one pass.", -1, methods,
};

PyMODINIT_FUNC
PyInit__line_scan(void)
{
    return PyModule_Create(&module_def);
}
