/* Collectives that share one decoding, built from it.
 *
 * Collective instructions the reader's fast path read whose attributes read the same but
 * for a leading channel id and explicit groups (``Instruction.shared_attributes``), with the
 * same opcode and as many operands, decode the same (``_decode``): a dump repeats a few such
 * texts on thousands of lines. The first is decoded in full and kept as the template of its
 * key; every other is a copy of the template with its own instruction, channel id, callee
 * and explicit groups:
 *
 *   decoding_key(instruction) -> tuple | None
 *       (opcode, operand count, has a leading channel id, has explicit groups, shared text),
 *       or None when the fast path did not read the instruction (nothing is shared then);
 *   copy_decoded(instruction, templates, explicit_groups) -> Collective | None
 *       the copy of templates[decoding_key(instruction)] for instruction, or None when there
 *       is no such template; explicit_groups(instruction) gives the (device list, text as
 *       written) of the instruction's own explicit groups;
 *   configure(instruction, instruction_fields, collective, collective_fields)
 *       the two classes and the slots read and set (see ``_decode``), named once.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_slots.h"

/* Instruction: opcode, operands, leading_channel, groups_span, shared_attributes,
 * called_computations. Collective: _instruction, channel_id, to_apply, replica_groups,
 * _groups_text. */
enum { OPCODE, OPERANDS, CHANNEL, GROUPS, SHARED, CALLED, INSTRUCTION_FIELDS };
enum { OWNER, CHANNEL_ID, TO_APPLY, REPLICA_GROUPS, GROUPS_TEXT, COLLECTIVE_FIELDS };
#define MOST_SLOTS 64

static PyTypeObject *instruction_type, *collective_type;
static Py_ssize_t instruction_at[INSTRUCTION_FIELDS], collective_at[COLLECTIVE_FIELDS],
    slots[MOST_SLOTS], slot_count;

static PyObject *
configure(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyType_Check(args[0]) || !PyTuple_Check(args[1]) ||
        PyTuple_GET_SIZE(args[1]) != INSTRUCTION_FIELDS || !PyType_Check(args[2]) ||
        !PyTuple_Check(args[3]) || PyTuple_GET_SIZE(args[3]) != COLLECTIVE_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "configure(instruction, its 6 fields, collective, "
                                         "its 5 fields)");
        return NULL;
    }
    if (slot_offsets((PyTypeObject *)args[0], args[1], instruction_at) < 0 ||
        slot_offsets((PyTypeObject *)args[2], args[3], collective_at) < 0)
        return NULL;
    slot_count = 0;
    for (PyMemberDef *member = ((PyTypeObject *)args[2])->tp_members; member && member->name;
         member++) {
        if (member->type != T_OBJECT_EX)
            continue;
        if (slot_count == MOST_SLOTS) {
            PyErr_Format(PyExc_TypeError, "%R has more than %d slots", args[2], MOST_SLOTS);
            return NULL;
        }
        slots[slot_count++] = member->offset;
    }
    Py_XSETREF(instruction_type, (PyTypeObject *)Py_NewRef(args[0]));
    Py_XSETREF(collective_type, (PyTypeObject *)Py_NewRef(args[2]));
    Py_RETURN_NONE;
}

/* The decoding key of instruction (a new reference; None when nothing is shared), or NULL
 * with an exception set. */
static PyObject *
key_of(PyObject *instruction)
{
    PyObject *shared = SLOT(instruction, instruction_at[SHARED]), *operands, *count, *key;
    if (shared == NULL || shared == Py_None)
        return Py_NewRef(Py_None);
    operands = SLOT(instruction, instruction_at[OPERANDS]);
    if (operands == NULL || !PyTuple_Check(operands) ||
        SLOT(instruction, instruction_at[OPCODE]) == NULL ||
        SLOT(instruction, instruction_at[CHANNEL]) == NULL ||
        SLOT(instruction, instruction_at[GROUPS]) == NULL) {
        PyErr_SetString(PyExc_TypeError, "an instruction without its fields");
        return NULL;
    }
    if ((count = PyLong_FromSsize_t(PyTuple_GET_SIZE(operands))) == NULL)
        return NULL;
    key = PyTuple_Pack(5, SLOT(instruction, instruction_at[OPCODE]), count,
                       SLOT(instruction, instruction_at[CHANNEL]) != Py_None ? Py_True : Py_False,
                       SLOT(instruction, instruction_at[GROUPS]) != Py_None ? Py_True : Py_False,
                       shared);
    Py_DECREF(count);
    return key;
}

static int
is_instruction(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t expected)
{
    if (nargs != expected || instruction_type == NULL ||
        !PyObject_TypeCheck(args[0], instruction_type)) {
        PyErr_SetString(PyExc_TypeError, expected == 1
                                             ? "decoding_key(instruction), once configured"
                                             : "copy_decoded(instruction, templates: dict, "
                                               "explicit_groups), once configured");
        return 0;
    }
    return 1;
}

static PyObject *
decoding_key(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return is_instruction(args, nargs, 1) ? key_of(args[0]) : NULL;
}

/* The int of the digits text (at most 18 of them, as the fast path reads a channel id, are
 * converted here; more, by Python), or NULL. */
static PyObject *
int_of(PyObject *digits)
{
    Py_ssize_t n;
    long long value = 0;
    if (!PyUnicode_Check(digits)) {
        PyErr_SetString(PyExc_TypeError, "a leading channel id is a str");
        return NULL;
    }
    n = PyUnicode_GET_LENGTH(digits);
    if (n == 0 || n > 18 || !PyUnicode_IS_ASCII(digits))
        return PyLong_FromUnicodeObject(digits, 10);
    for (const char *c = (const char *)PyUnicode_DATA(digits), *end = c + n; c < end; c++) {
        if (*c < '0' || *c > '9')
            return PyLong_FromUnicodeObject(digits, 10);
        value = value * 10 + (*c - '0');
    }
    return PyLong_FromLongLong(value);
}

/* Set slot offset of object to value (a new reference, stolen); -1 when value is NULL. */
static int
set_slot(PyObject *object, Py_ssize_t offset, PyObject *value)
{
    if (value == NULL)
        return -1;
    Py_XSETREF(SLOT(object, offset), value);
    return 0;
}

/* The copy of template for instruction (a new reference), or NULL. */
static PyObject *
copy_of(PyObject *template, PyObject *instruction, PyObject *explicit_groups)
{
    PyObject *copy = collective_type->tp_alloc(collective_type, 0), *channel, *called;
    if (copy == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < slot_count; k++)
        SLOT(copy, slots[k]) = Py_XNewRef(SLOT(template, slots[k]));
    if (set_slot(copy, collective_at[OWNER], Py_NewRef(instruction)) < 0)
        goto error;
    channel = SLOT(instruction, instruction_at[CHANNEL]);
    if (channel != Py_None &&
        set_slot(copy, collective_at[CHANNEL_ID], int_of(channel)) < 0)
        goto error;
    called = SLOT(instruction, instruction_at[CALLED]);
    if (SLOT(copy, collective_at[TO_APPLY]) != NULL && SLOT(copy, collective_at[TO_APPLY]) !=
        Py_None && called != NULL && PyTuple_Check(called) && PyTuple_GET_SIZE(called) > 0 &&
        set_slot(copy, collective_at[TO_APPLY], Py_NewRef(PyTuple_GET_ITEM(called, 0))) < 0)
        goto error; /* the fast path keeps the name open: each line's own */
    if (SLOT(instruction, instruction_at[GROUPS]) != Py_None) {
        PyObject *groups = PyObject_CallOneArg(explicit_groups, instruction);
        if (groups == NULL)
            goto error;
        if (!PyTuple_Check(groups) || PyTuple_GET_SIZE(groups) != 2) {
            Py_DECREF(groups);
            PyErr_SetString(PyExc_TypeError, "explicit_groups gives (device list, written)");
            goto error;
        }
        set_slot(copy, collective_at[REPLICA_GROUPS], Py_NewRef(PyTuple_GET_ITEM(groups, 0)));
        set_slot(copy, collective_at[GROUPS_TEXT], Py_NewRef(PyTuple_GET_ITEM(groups, 1)));
        Py_DECREF(groups);
    }
    return copy;
error:
    Py_DECREF(copy);
    return NULL;
}

static PyObject *
copy_decoded(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *key, *template;
    if (!is_instruction(args, nargs, 3))
        return NULL;
    if (!PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "copy_decoded: templates is a dict");
        return NULL;
    }
    if ((key = key_of(args[0])) == NULL)
        return NULL;
    if (key == Py_None)
        return key;
    template = PyDict_GetItemWithError(args[1], key); /* borrowed */
    Py_DECREF(key);
    if (template == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    if (!PyObject_TypeCheck(template, collective_type)) {
        PyErr_SetString(PyExc_TypeError, "copy_decoded: a template is a Collective");
        return NULL;
    }
    return copy_of(template, args[0], args[2]);
}

static PyMethodDef methods[] = {
    {"decoding_key", (PyCFunction)(void (*)(void))decoding_key, METH_FASTCALL,
     "decoding_key(instruction): what collectives sharing its decoding have in common, or "
     "None."},
    {"copy_decoded", (PyCFunction)(void (*)(void))copy_decoded, METH_FASTCALL,
     "copy_decoded(instruction, templates, explicit_groups): the collective of instruction "
     "copied from its template, or None."},
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL,
     "configure(instruction, instruction_fields, collective, collective_fields): the classes "
     "and slots used."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_decoded_copy",
    "Collectives that share one decoding, built from it.", -1, methods,
};

PyMODINIT_FUNC
PyInit__decoded_copy(void)
{
    return PyModule_Create(&module_def);
}
