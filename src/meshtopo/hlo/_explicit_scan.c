/* Explicit replica groups in XLA's printed form, scanned in one pass.
 *
 * XLA prints explicit groups as {{0,1,2,3},{4,5,6,7}}: groups of decimal numbers joined by
 * commas, groups joined by "},{", no white space. Dumps that name thousands of devices per
 * collective repeat such texts, each often different (random permutations), so checking
 * and converting them is most of reading such a dump. This module does both at memory speed:
 *
 *   groups_end(text, pos) -> int
 *       the offset just past the groups starting at text[pos], or -1 when what starts there
 *       is not in that form (the exact reader then reads it and says what is wrong);
 *   groups_arrays(text, pos, end) -> (bytearray, bytearray) | None
 *       all ids and each group's size, as native int64, when text[pos:end] is in that form.
 *
 * The form is defined once, in _explicit_form.h.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_explicit_form.h"

static Py_ssize_t
scan(PyObject *text, Py_ssize_t pos, int64_t *ids, int64_t *sizes, Py_ssize_t *n_ids,
     Py_ssize_t *n_groups)
{
    if (pos < 0 || pos > PyUnicode_GET_LENGTH(text))
        return -1;
    return explicit_form(PyUnicode_DATA(text), PyUnicode_KIND(text), PyUnicode_GET_LENGTH(text),
                         pos, ids, sizes, n_ids, n_groups);
}

static PyObject *
groups_end(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos, n_ids = 0, n_groups = 0;
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "groups_end(text: str, pos: int)");
        return NULL;
    }
    pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromSsize_t(scan(args[0], pos, NULL, NULL, &n_ids, &n_groups));
}

static PyObject *
groups_arrays(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos, end, n_ids = 0, n_groups = 0;
    PyObject *text, *ids, *sizes;
    if (nargs != 3 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "groups_arrays(text: str, pos: int, end: int)");
        return NULL;
    }
    text = args[0];
    pos = PyLong_AsSsize_t(args[1]);
    end = PyLong_AsSsize_t(args[2]);
    if ((pos == -1 || end == -1) && PyErr_Occurred())
        return NULL;
    if (pos < 0 || end < pos || end > PyUnicode_GET_LENGTH(text))
        Py_RETURN_NONE;
    /* A first pass checks the form and counts, so that the second writes exactly that many
     * values, wherever the text's form ends. */
    if (scan(text, pos, NULL, NULL, &n_ids, &n_groups) != end)
        Py_RETURN_NONE;
    ids = PyByteArray_FromStringAndSize(NULL, n_ids * (Py_ssize_t)sizeof(int64_t));
    sizes = PyByteArray_FromStringAndSize(NULL, n_groups * (Py_ssize_t)sizeof(int64_t));
    if (ids == NULL || sizes == NULL) {
        Py_XDECREF(ids);
        Py_XDECREF(sizes);
        return NULL;
    }
    if (scan(text, pos, (int64_t *)PyByteArray_AS_STRING(ids),
             (int64_t *)PyByteArray_AS_STRING(sizes), &n_ids, &n_groups) != end ||
        (Py_ssize_t)sizeof(int64_t) * n_ids != PyByteArray_GET_SIZE(ids) ||
        (Py_ssize_t)sizeof(int64_t) * n_groups != PyByteArray_GET_SIZE(sizes)) {
        Py_DECREF(ids);
        Py_DECREF(sizes);
        PyErr_SetString(PyExc_SystemError, "groups_arrays: the two scans of the form differ");
        return NULL;
    }
    return Py_BuildValue("(NN)", ids, sizes);
}

static PyMethodDef methods[] = {
    {"groups_end", (PyCFunction)(void (*)(void))groups_end, METH_FASTCALL,
     "groups_end(text, pos): the offset just past XLA's printed explicit groups at pos, or -1."},
    {"groups_arrays", (PyCFunction)(void (*)(void))groups_arrays, METH_FASTCALL,
     "groups_arrays(text, pos, end): (ids, sizes) of text[pos:end] as native int64 "
     "bytearrays, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_explicit_scan",
    "Explicit replica groups in XLA's printed form, checked and converted in one pass.", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__explicit_scan(void)
{
    return PyModule_Create(&module_def);
}
