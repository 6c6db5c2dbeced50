/* One instruction written on one line as XLA prints it, scanned in one pass.
 *
 * The reader's fast path (``_reader``) reads runs of such lines with ``read_lines`` (below)
 * and every other text with its general reader; the fast path decides only how quickly a
 * line is read. Its scanner takes a line only in this form (white space is ' ' or '\t'
 * alone):
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
 * lexer reads as an attribute's name) are declined (None) for the general reader to read.
 *
 *   scan_line(text, pos, last) -> tuple | None
 *
 * is that scanner, as ``read_lines`` uses it, for checking against the form; it gives, for
 * the line starting at ``pos``: (end, root, column, name, opcode, shape,
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
#include "_slots.h"

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

/* tuple, no longer followed by the cyclic garbage collector: it holds strings or numbers
 * alone, which make no cycles (the collector would find that out itself, later). */
static PyObject *
untracked(PyObject *tuple)
{
    if (tuple != NULL && PyObject_GC_IsTracked(tuple))
        PyObject_GC_UnTrack(tuple);
    return tuple;
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
    return untracked(found);
}

static PyObject *
span_or_none(PyObject *text, Py_ssize_t start, Py_ssize_t stop)
{
    if (start < 0)
        Py_RETURN_NONE;
    return PyUnicode_Substring(text, start, stop);
}

/* The texts a line's spans name, each built in one place for scan_line and read_lines. */

static PyObject *
name_text(PyObject *text, const Spans *s) /* the name without '%' */
{
    return PyUnicode_Substring(text, s->start + (PyUnicode_READ_CHAR(text, s->start) == '%'),
                               s->name_end);
}

static PyObject *
opcode_text(PyObject *text, const Spans *s) /* interned: a dump has few */
{
    PyObject *opcode = PyUnicode_Substring(text, s->opcode_start, s->opcode_end);
    if (opcode != NULL)
        PyUnicode_InternInPlace(&opcode);
    return opcode;
}

static PyObject *
operands_text(PyObject *text, const Spans *s) /* between the parentheses */
{
    return PyUnicode_Substring(text, s->opcode_end + 1, s->attributes - 1);
}

static PyObject *
names_tuple(PyObject *text, const Spans *s) /* when the operands are names alone */
{
    return operand_names(text, s->opcode_end + 1, s->attributes - 1);
}

static PyObject *
rest_text(PyObject *text, const Spans *s) /* after channel and groups, to the metadata */
{
    return PyUnicode_Substring(text, s->rest, s->cut >= 0 ? s->cut : s->end);
}

static PyObject *
groups_span(const Spans *s) /* (start, stop) from the name, or None */
{
    if (s->groups < 0)
        Py_RETURN_NONE;
    return untracked(Py_BuildValue("(nn)", s->groups - s->start, s->groups_end - s->start));
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
        int has_attributes = s.end > s.attributes;
        items[0] = PyLong_FromSsize_t(s.end);
        items[1] = PyLong_FromSsize_t(s.root < 0 ? -1 : s.root - pos + 1);
        items[2] = PyLong_FromSsize_t(s.start - pos + 1);
        items[3] = name_text(text, &s);
        items[4] = opcode_text(text, &s);
        items[5] = PyUnicode_Substring(text, s.shape_start, s.shape_end);
        items[6] = operands_text(text, &s);
        items[7] = s.names ? names_tuple(text, &s) : Py_NewRef(Py_None);
        items[8] = PyLong_FromSsize_t(s.attributes - s.start);
        items[9] = span_or_none(text, s.channel, s.channel_end);
        items[10] = groups_span(&s);
        items[11] = has_attributes ? rest_text(text, &s) : Py_NewRef(Py_None);
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

/* ---- reading runs of lines --------------------------------------------------------------
 *
 * read_lines(text, pos, line, reader, computation, most, kept) -> (instructions, pos, line)
 *
 * reads the instructions of at most ``most`` lines after pos (a '\n') while scan_line takes
 * them, the reader takes their attributes and they pass XLA's checks between instructions,
 * into Instruction records, as ``_reader.Reader.instructions`` describes; it stops before the
 * first line it does not take, for the general reader, and gives the offset and line count
 * after the last one read. Records of opcodes not in ``kept`` are left out of the cyclic
 * collector (they hold only strings, numbers, tuples of them and a shared layout). What it
 * asks of the reader (its caches and the checks of an attribute text, a metadata attribute
 * and operands) and the types and sets it uses are Python's: ``configure`` names them once.
 */

#define FIELDS 19 /* of an Instruction, in the order its constructor takes them */

static PyObject *instruction_type, *opcode_names, *type_names, *literal_opcodes, *no_layout,
    *syntax_fault, *no_names, *controls_key, *shared_key, *has_metadata_key, *operand_counts;
static Py_ssize_t field_offsets[FIELDS];

static PyObject *
configure(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject **slots[] = {&instruction_type, &opcode_names, &type_names, &literal_opcodes,
                          &no_layout, &syntax_fault, &operand_counts};
    if (nargs != 8 || !PyType_Check(args[0]) || !PyTuple_Check(args[1]) ||
        PyTuple_GET_SIZE(args[1]) != FIELDS || !PyDict_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError, "configure(instruction, its 19 fields, opcodes, "
                                         "type_names, literal_opcodes, no_layout, syntax_fault, "
                                         "operand_counts)");
        return NULL;
    }
    if (slot_offsets((PyTypeObject *)args[0], args[1], field_offsets) < 0)
        return NULL;
    for (Py_ssize_t k = 0; k < 7; k++)
        Py_XSETREF(*slots[k], Py_NewRef(args[k == 0 ? 0 : k + 1]));
    if ((no_names == NULL && (no_names = PyTuple_New(0)) == NULL) ||
        (controls_key == NULL && (controls_key = PyUnicode_InternFromString("controls")) == NULL) ||
        (shared_key == NULL && (shared_key = PyUnicode_InternFromString("shared")) == NULL) ||
        (has_metadata_key == NULL &&
         (has_metadata_key = PyUnicode_InternFromString("has_metadata")) == NULL))
        return NULL; /* the layout's attributes read on every line, named once */
    Py_RETURN_NONE;
}

/* An Instruction with fields (new references, stolen), as its constructor would set them
 * (it only stores them), or NULL. */
static PyObject *
new_instruction(PyObject **fields)
{
    PyTypeObject *type = (PyTypeObject *)instruction_type;
    PyObject *instruction = type->tp_alloc(type, 0);
    for (int k = 0; k < FIELDS; k++) {
        if (instruction != NULL)
            SLOT(instruction, field_offsets[k]) = fields[k];
        else
            Py_DECREF(fields[k]);
        fields[k] = NULL;
    }
    return instruction;
}

typedef struct {
    PyObject *reader, *computation, *layouts, *metadata, *names, *known, *owner, *shapes, *kept;
} Context;

#define SHAPES_KEPT 4096

static PyObject *
call(PyObject *object, const char *method, PyObject *const *args, size_t nargs)
{
    PyObject *bound = PyObject_GetAttrString(object, method), *found;
    if (bound == NULL)
        return NULL;
    found = PyObject_Vectorcall(bound, args, nargs, NULL);
    Py_DECREF(bound);
    return found;
}

/* The shape text text[start:stop], as the one string the reader keeps for it (a dump
 * repeats few shapes on many lines), or NULL: without an exception set when the reader
 * finds a shape it has not met before refused (the general reader reports it). */
static PyObject *
shared_shape(Context *c, PyObject *text, Py_ssize_t start, Py_ssize_t stop)
{
    PyObject *shape = PyUnicode_Substring(text, start, stop), *kept, *taken;
    int found;
    if (shape == NULL)
        return NULL;
    kept = PyDict_GetItemWithError(c->shapes, shape);
    if (kept != NULL || PyErr_Occurred()) {
        Py_DECREF(shape);
        return Py_XNewRef(kept);
    }
    taken = call(c->reader, "_fast_shape", &shape, 1);
    found = taken == NULL ? -1 : PyObject_IsTrue(taken);
    Py_XDECREF(taken);
    if (found <= 0) {
        Py_DECREF(shape);
        return NULL;
    }
    if (PyDict_GET_SIZE(c->shapes) >= SHAPES_KEPT)
        PyDict_Clear(c->shapes);
    if (PyDict_SetItem(c->shapes, shape, shape) < 0)
        Py_CLEAR(shape);
    return shape;
}

/* 1 when container holds item, 0 when not, -1 on error (sets, dicts and the stream's
 * NameSet alike). */
static int
holds(PyObject *container, PyObject *item)
{
    return PyAnySet_Check(container) ? PySet_Contains(container, item)
                                     : PySequence_Contains(container, item);
}

/* 1 when every item of the tuple is in container. */
static int
holds_all(PyObject *container, PyObject *items)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(items); k++) {
        int found = holds(container, PyTuple_GET_ITEM(items, k));
        if (found <= 0)
            return found;
    }
    return 1;
}

/* names.add(name); -1 on error. */
static int
add_name(PyObject *names, PyObject *name)
{
    PyObject *added;
    if (PyAnySet_Check(names))
        return PySet_Add(names, name);
    added = call(names, "add", &name, 1);
    Py_XDECREF(added);
    return added == NULL ? -1 : 0;
}

static int
truth_of(PyObject *object, PyObject *attribute)
{
    PyObject *value = PyObject_GetAttr(object, attribute);
    int found = value == NULL ? -1 : PyObject_IsTrue(value);
    Py_XDECREF(value);
    return found;
}

/* The Instruction of the line at pos with spans s (a new reference), or NULL: with an
 * exception set on an error, without one when the line is left to the general reader. */
static PyObject *
instruction_at(Context *c, PyObject *text, Py_ssize_t pos, Py_ssize_t line, const Spans *s)
{
    int found, has_attributes = s->end > s->attributes, is_root = s->root >= 0;
    PyObject *opcode = NULL, *rest = NULL, *tail = NULL, *key = NULL, *shared = NULL,
             *operands = NULL, *names = NULL, *shapes = NULL, *name = NULL, *items[FIELDS] = {0},
             *instruction = NULL, *layout, *called, *controls = NULL;

    if ((opcode = opcode_text(text, s)) == NULL)
        goto done;
    if (has_attributes) {
        PyObject *flags[4];
        rest = rest_text(text, s);
        if (rest == NULL)
            goto done;
        if (s->cut >= 0) { /* a metadata attribute the reader takes is checked alone */
            if ((tail = PyUnicode_Substring(text, s->cut, s->end)) == NULL ||
                (found = holds(c->metadata, tail)) < 0)
                goto done;
            if (!found) {
                PyObject *taken = call(c->reader, "_metadata", &tail, 1);
                found = taken == NULL ? -1 : PyObject_IsTrue(taken);
                Py_XDECREF(taken);
                if (found < 0)
                    goto done;
            }
            if (!found) {
                Py_CLEAR(tail);
                Py_SETREF(rest, PyUnicode_Substring(text, s->rest, s->end));
                if (rest == NULL)
                    goto done;
            }
        }
        flags[0] = opcode;
        flags[1] = s->channel >= 0 ? Py_True : Py_False;
        flags[2] = s->groups >= 0 ? Py_True : Py_False;
        flags[3] = rest;
        if ((key = PyTuple_Pack(4, flags[0], flags[1], flags[2], flags[3])) == NULL)
            goto done;
        shared = Py_XNewRef(PyDict_GetItemWithError(c->layouts, key));
        if (shared == NULL && (PyErr_Occurred() ||
                               (shared = call(c->reader, "_layout_of", flags, 4)) == NULL))
            goto done;
        if (shared == Py_None || !PyTuple_Check(shared) || PyTuple_GET_SIZE(shared) != 2)
            goto done; /* no attribute list the fast path takes */
        layout = PyTuple_GET_ITEM(shared, 0);
        called = PyTuple_GET_ITEM(shared, 1);
        if (tail != NULL && (found = truth_of(layout, has_metadata_key)) != 0)
            goto done;
    } else {
        if ((found = holds(opcode_names, opcode)) <= 0)
            goto done; /* the general reader refuses it */
        layout = no_layout;
        called = no_names;
    }
    operands = operands_text(text, s);
    if (operands == NULL || (found = holds(literal_opcodes, opcode)) < 0)
        goto done;
    if (s->names && !found) {
        names = names_tuple(text, s);
        shapes = Py_NewRef(no_names);
    } else {
        PyObject *args[3] = {opcode, operands, PyLong_FromSsize_t(s->opcode_end + 1)}, *split;
        if (args[2] == NULL)
            goto done;
        split = call(c->reader, "_operands", args, 3);
        Py_DECREF(args[2]);
        if (split == NULL) {
            if (PyErr_ExceptionMatches(syntax_fault))
                PyErr_Clear(); /* the general reader reports it */
            goto done;
        }
        names = Py_NewRef(PyTuple_GET_ITEM(split, 0));
        shapes = Py_NewRef(PyTuple_GET_ITEM(split, 1));
        Py_DECREF(split);
    }
    if (names == NULL)
        goto done;
    {
        PyObject *count = PyDict_GetItemWithError(operand_counts, opcode); /* borrowed */
        if ((count == NULL && PyErr_Occurred()) ||
            (count != NULL && PyLong_AsSsize_t(count) != PyTuple_GET_SIZE(names)))
            goto done; /* not as many operands as the opcode takes */
    }
    /* XLA's checks between instructions, when they pass (the general reader says what is
     * wrong otherwise): a new legal name, one ROOT, operands, callees and control
     * predecessors defined before (and above, as many operands as the opcode takes). */
    name = name_text(text, s);
    if (name == NULL || (found = holds(c->names, name)) != 0 ||
        (found = holds(type_names, name)) != 0 || (found = holds_all(c->names, names)) <= 0 ||
        (found = holds_all(c->known, called)) <= 0 ||
        (controls = PyObject_GetAttr(layout, controls_key)) == NULL ||
        !PyTuple_Check(controls) || (found = holds_all(c->names, controls)) <= 0)
        goto done;
    if (is_root) {
        PyObject *root = PyObject_GetAttrString(c->computation, "root");
        int free = root == Py_None;
        Py_XDECREF(root);
        if (root == NULL || !free)
            goto done;
    }
    items[0] = Py_NewRef(name);
    items[1] = Py_NewRef(opcode);
    items[2] = shared_shape(c, text, s->shape_start, s->shape_end);
    items[3] = Py_NewRef(names);
    items[4] = PyLong_FromSsize_t(line);
    items[5] = PyLong_FromSsize_t(s->start - pos + 1);
    items[6] = Py_NewRef(c->owner);
    items[7] = Py_NewRef(is_root ? Py_True : Py_False);
    items[8] = Py_NewRef(operands);
    items[9] = PyUnicode_Substring(text, s->start, s->end);
    items[10] = Py_NewRef(layout);
    items[11] = Py_NewRef(called);
    items[12] = Py_NewRef(controls);
    items[13] = Py_NewRef(shapes);
    items[14] = PyLong_FromSsize_t(s->attributes - s->start);
    items[15] = span_or_none(text, s->channel, s->channel_end);
    items[16] = groups_span(s);
    items[17] = PyObject_GetAttr(layout, shared_key);
    items[18] = Py_NewRef(Py_None); /* its collective, decoded later */
    for (int k = 0; k < FIELDS; k++)
        if (items[k] == NULL)
            goto done;
    if ((instruction = new_instruction(items)) == NULL || (found = holds(c->kept, opcode)) < 0) {
        Py_CLEAR(instruction);
        goto done;
    }
    if (!found) /* it holds only strings, numbers, tuples of them and its shared layout */
        PyObject_GC_UnTrack(instruction);
    if (add_name(c->names, name) < 0 ||
        (is_root && PyObject_SetAttrString(c->computation, "root", instruction) < 0))
        Py_CLEAR(instruction);
done:
    for (int k = 0; k < FIELDS; k++)
        Py_XDECREF(items[k]);
    Py_XDECREF(opcode);
    Py_XDECREF(rest);
    Py_XDECREF(tail);
    Py_XDECREF(key);
    Py_XDECREF(shared);
    Py_XDECREF(operands);
    Py_XDECREF(names);
    Py_XDECREF(shapes);
    Py_XDECREF(name);
    Py_XDECREF(controls);
    return instruction;
}

static PyObject *
read_lines(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos, line, most, last = -1, last_stop = -1, n;
    PyObject *text, *found = NULL, *read = NULL;
    Context c = {0};
    if (nargs != 7 || !PyUnicode_Check(args[0]) || instruction_type == NULL) {
        PyErr_SetString(PyExc_TypeError, "read_lines(text, pos, line, reader, computation, "
                                         "most, kept), once configured");
        return NULL;
    }
    text = args[0];
    n = PyUnicode_GET_LENGTH(text);
    pos = PyLong_AsSsize_t(args[1]);
    line = PyLong_AsSsize_t(args[2]);
    most = PyLong_AsSsize_t(args[5]);
    if ((pos == -1 || line == -1 || most == -1) && PyErr_Occurred())
        return NULL;
    c.reader = args[3];
    c.computation = args[4];
    c.kept = args[6];
    if ((c.layouts = PyObject_GetAttrString(c.reader, "_layouts")) == NULL ||
        (c.metadata = PyObject_GetAttrString(c.reader, "_metadata_seen")) == NULL ||
        (c.names = PyObject_GetAttrString(c.reader, "_names")) == NULL ||
        (c.known = PyObject_GetAttrString(c.reader, "computation_names")) == NULL ||
        (c.owner = PyObject_GetAttrString(c.computation, "name")) == NULL ||
        (c.shapes = PyObject_GetAttrString(c.reader, "_shapes")) == NULL ||
        !PyDict_Check(c.layouts) || !PyDict_Check(c.shapes) || (read = PyList_New(0)) == NULL)
        goto done;
    while (pos >= 0 && pos < n && PyUnicode_READ_CHAR(text, pos) == '\n' &&
           PyList_GET_SIZE(read) < most) {
        Spans s;
        PyObject *instruction;
        if (!scan_any(text, pos + 1, last, last_stop, &s))
            break;
        instruction = instruction_at(&c, text, pos + 1, line + 1, &s);
        if (instruction == NULL) {
            if (PyErr_Occurred())
                goto done;
            break;
        }
        if (PyList_Append(read, instruction) < 0) {
            Py_DECREF(instruction);
            goto done;
        }
        Py_DECREF(instruction);
        if (s.groups >= 0) {
            last = s.groups;
            last_stop = s.groups_end;
        }
        pos = s.end;
        line++;
    }
    found = Py_BuildValue("(Onn)", read, pos, line);
done:
    Py_XDECREF(read);
    Py_XDECREF(c.layouts);
    Py_XDECREF(c.metadata);
    Py_XDECREF(c.names);
    Py_XDECREF(c.known);
    Py_XDECREF(c.owner);
    Py_XDECREF(c.shapes);
    return found;
}

static PyMethodDef methods[] = {
    {"read_lines", (PyCFunction)(void (*)(void))read_lines, METH_FASTCALL,
     "read_lines(text, pos, line, reader, computation, most, kept): the instructions of the "
     "lines after pos the fast path takes (at most most), and the offset and line after them."},
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL,
     "configure(instruction, fields, opcodes, type_names, literal_opcodes, no_layout, "
     "syntax_fault, operand_counts): what read_lines builds and asks."},
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
